"""Mapping API answers to typed errors."""

import pytest

from united.kube.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    TooManyRequests,
    TransientError,
    Unauthorized,
    error_from_status,
)


def status(code: int, reason: str, message: str = "m") -> dict[str, object]:
    return {"kind": "Status", "code": code, "reason": reason, "message": message}


@pytest.mark.parametrize(("code", "reason", "cls"), [
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
])
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
