"""Mapping API answers to typed errors."""

import asyncio
import errno
import socket

import aiohttp
import pytest

from united.kube.client import KubeClient
from united.kube.errors import (
    AlreadyExists,
    ApiError,
    ConfigError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    TooManyRequests,
    TransientError,
    Unauthorized,
    error_from_status,
    transport_error,
)


def status(code: int, reason: str, message: str = "m") -> dict[str, object]:
    return {"kind": "Status", "code": code, "reason": reason, "message": message}


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (404, "NotFound", NotFound),
        (409, "AlreadyExists", AlreadyExists),
        (409, "Conflict", Conflict),
        (410, "Expired", Gone),
        (422, "Invalid", Invalid),
        (400, "BadRequest", Invalid),
        (401, "Unauthorized", Unauthorized),
        (403, "Forbidden", Forbidden),
        (429, "TooManyRequests", TooManyRequests),
        (500, "InternalError", TransientError),
        (503, "ServiceUnavailable", TransientError),
        (418, "Teapot", ApiError),
    ],
)
def test_status_codes_map_to_types(code: int, reason: str, cls: type[ApiError]) -> None:
    error = error_from_status(code, status(code, reason, "details"))
    assert type(error) is cls
    assert error.status == code and error.reason == reason
    assert "details" in str(error)


def test_throttling_is_transient_and_keeps_retry_after() -> None:
    error = error_from_status(429, status(429, "TooManyRequests"), retry_after=3.0)
    assert isinstance(error, TransientError) and error.retry_after == 3.0


def test_a_non_status_body_still_gives_a_message() -> None:
    error = error_from_status(502, "<html>bad gateway</html>")
    assert isinstance(error, TransientError)
    assert "bad gateway" in str(error) and error.body == {}


# Transport failures: a sentence a person can act on, not the HTTP library's repr


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_members_error_keeps_only_a_clipped_status_message() -> None:
    """A member may be hostile: a raw body (a redirect target's JSON, credentials included) must
    never become the message that lands in the Cluster's condition."""
    leak = {"token": "secret-value", "items": ["x"] * 3}
    error = error_from_status(500, leak, message_only=20)
    assert (error.message, error.body) == ("500 error: HTTP 500", {})
    error = error_from_status(302, "<html>moved to http://10.0.0.1/secret-value</html>", message_only=20)
    assert error.message == "302 error: HTTP 302: a redirect (not followed)"
    status = {"kind": "Status", "reason": "NotFound", "message": "a\nvery long message " * 5, "extra": leak}
    error = error_from_status(404, status, message_only=20)
    assert error.message == "404 NotFound: a very long message…"
    assert "secret-value" not in repr(error.body) and isinstance(error, NotFound)


async def test_a_closed_port_is_connection_refused_in_words() -> None:
    port = _closed_port()
    async with KubeClient.for_server(f"https://127.0.0.1:{port}") as client:
        with pytest.raises(TransientError) as caught:
            await client.get_path("/version")
    assert str(caught.value) == f"cannot reach https://127.0.0.1:{port}: connection refused"
    assert caught.value.reason == "ConnectionRefused"
    assert "ConnectionKey" not in str(caught.value)


async def test_a_server_that_hangs_up_is_described() -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, KubeClient.for_server(f"http://127.0.0.1:{port}") as client:
        with pytest.raises(TransientError) as caught:
            await client.get_path("/version")
    assert str(caught.value) == f"cannot reach http://127.0.0.1:{port}: the server closed the connection"
    assert caught.value.reason == "Disconnected"


@pytest.mark.parametrize(
    ("exc", "reason", "words"),
    [
        (TimeoutError(), "Timeout", "no answer in time"),
        (OSError(errno.EHOSTUNREACH, "No route to host"), "Unreachable", "host unreachable"),
        (OSError(errno.EACCES, "Permission denied"), "Unreachable", "permission denied"),
        (aiohttp.ClientPayloadError("x"), "Disconnected", "the answer was cut short"),
        (RuntimeError("odd"), "RuntimeError", "odd"),
    ],
)
def test_transport_errors_in_words(exc: BaseException, reason: str, words: str) -> None:
    error = transport_error(exc, "https://api:6443")
    assert (error.reason, str(error)) == (reason, f"cannot reach https://api:6443: {words}")
    assert error.unanswered


@pytest.mark.parametrize("code", [429, 500, 503, 403])
def test_an_answer_of_the_server_is_not_unanswered(code: int) -> None:
    assert not error_from_status(code, {"reason": "x"}).unanswered


def test_config_error_is_one_line_naming_where() -> None:
    error = ConfigError("kubeconfig /x", "no such file")
    assert (str(error), error.where, error.message) == ("kubeconfig /x: no such file", "kubeconfig /x", "no such file")
