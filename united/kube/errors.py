"""Typed API errors.

Callers decide what to do from the *kind* of failure (retry, re-list, give up,
treat as done), never from a raw HTTP status scattered through the code base, so
every non-2xx answer of the API server is mapped here, once.
"""

# The Kubernetes reason names (NotFound, Conflict, ...) read better than *Error suffixes.
# ruff: noqa: N818

from __future__ import annotations

import errno
import ssl
from typing import Any

import aiohttp


class ApiError(Exception):
    """A request the API server answered with a non-2xx status (or could not answer).

    ``status`` is the HTTP status (0 when there was no answer at all), ``reason``
    the ``Status.reason`` the server gave (e.g. ``NotFound``, ``AlreadyExists``)
    and ``body`` the decoded ``Status`` object when there was one.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
        reason: str = "",
        body: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.reason = reason
        self.body = body or {}
        self.retry_after = retry_after

    @property
    def unanswered(self) -> bool:
        """No answer came at all (a refused or cut connection, a timeout): the server, or the
        way to it, is down, which says nothing about this request itself."""
        return self.status == 0


class NotFound(ApiError):
    """404: the object (or its namespace, or its API) does not exist."""


class Conflict(ApiError):
    """409 on an update: the resourceVersion we sent is stale; re-read and retry."""


class AlreadyExists(ApiError):
    """409 on a create: an object with that name exists already."""


class Gone(ApiError):
    """410: the resourceVersion is too old for a watch or a continued list; re-list."""


class Invalid(ApiError):
    """422 (or 400): the object or patch was rejected by validation; retrying won't help."""


class Unauthorized(ApiError):
    """401: the credentials were not accepted."""


class Forbidden(ApiError):
    """403: authenticated, but RBAC (or an admission plugin) said no."""


class TooLarge(ApiError):
    """An answer longer than the client reads (a member cluster's: ``MEMBER_MAX_ANSWER``): not
    retried, the same request would get the same answer."""


class TransientError(ApiError):
    """5xx, 429, a timeout or a dropped connection: the same request may succeed later."""


class TooManyRequests(TransientError):
    """429: throttled by API priority and fairness; honour ``retry_after``."""


class ConfigError(Exception):
    """The configuration the program was started with cannot work (a kubeconfig that is
    missing or broken, no in-cluster credentials, a port in use): ``where`` names the flag,
    file or variable to fix, ``message`` what is wrong, so ``str()`` is the one line
    ``where: message`` a person can act on — never a traceback."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


_ERRNO_WORDS = {
    errno.ECONNREFUSED: ("ConnectionRefused", "connection refused"),
    errno.ECONNRESET: ("ConnectionReset", "connection reset"),
    errno.ETIMEDOUT: ("Timeout", "connection timed out"),
    errno.EHOSTUNREACH: ("Unreachable", "host unreachable"),
    errno.ENETUNREACH: ("Unreachable", "network unreachable"),
    errno.EPIPE: ("ConnectionReset", "connection closed"),
}


def transport_error(exc: BaseException, server: str) -> TransientError:
    """The :class:`TransientError` for a request that got no complete answer from ``server``,
    worded for a person (``cannot reach https://127.0.0.1:6443: connection refused``) instead
    of the repr of the HTTP library's internals, with a short ``reason``
    (``ConnectionRefused``, ``Timeout``, ``DNS``, ``TLS``, ``Disconnected``...) for the
    machine-readable ``error_type`` of log lines and for grouping repeated failures."""
    reason, words = _describe(exc)
    return TransientError(f"cannot reach {server}: {words}", reason=reason)


def _describe(exc: BaseException) -> tuple[str, str]:
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return "DNS", "cannot resolve the host name"
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return "TLS", f"its TLS certificate is not trusted ({exc.certificate_error})"
    if isinstance(exc, aiohttp.ClientSSLError | ssl.SSLError):
        return "TLS", f"TLS handshake failed ({getattr(exc, 'reason', None) or exc})"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "Disconnected", "the server closed the connection"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return "Disconnected", "the answer was cut short"
    if isinstance(exc, TimeoutError):
        return "Timeout", "no answer in time"
    os_error = exc.os_error if isinstance(exc, aiohttp.ClientConnectorError) else exc
    if isinstance(os_error, OSError):
        code = os_error.errno
        if code in _ERRNO_WORDS:
            return _ERRNO_WORDS[code]
        if os_error.strerror:
            return "Unreachable", os_error.strerror.lower()
    return type(exc).__name__, str(exc) or type(exc).__name__


class Fenced(Exception):
    """A write this process may no longer make: it is not (or no longer surely) the leader.

    Not an :class:`ApiError`, on purpose: nothing was sent, and no caller may treat it as
    a failed request to retry, report or work around. Whoever catches it stops at once."""


def namespace_terminating(error: ApiError) -> bool:
    """The API server refused a create because the namespace is being deleted (a 403 with
    cause ``NamespaceTerminating``): nothing can be created there any more, and the objects
    we serve there are about to go, so retrying only makes load (Kubernetes' own workload
    controllers drop such errors the same way). A ``StatusCause``'s type is sent as ``reason``."""
    causes = (error.body.get("details") or {}).get("causes") or ()
    return error.status == 403 and any(
        isinstance(c, dict) and c.get("reason") == "NamespaceTerminating" for c in causes
    )


def error_from_status(
    status: int,
    body: Any,
    *,
    retry_after: float | None = None,
    message_only: int | None = None,
) -> ApiError:
    """Build the typed error for a non-2xx answer.

    ``body`` is the decoded response (normally a ``Status`` object, but a proxy may
    answer with anything); the 409 split between ``AlreadyExists`` and ``Conflict``
    needs the ``Status.reason``, which is why it is passed whole. With ``message_only`` (an
    answer of a member cluster, which may be hostile), the message is the ``Status.message``
    alone, clipped to that many characters, never the raw body (a redirect's target or
    whatever else the answer quotes), and the reason is clipped likewise.
    """
    status_body: dict[str, Any] = body if isinstance(body, dict) else {}
    reason = str(status_body.get("reason", ""))
    message = str(status_body.get("message") or body or f"HTTP {status}")
    if message_only is not None:
        said = status_body.get("message")
        message = _clip(said, message_only) if isinstance(said, str) and said else _http_words(status)
        reason = _clip(reason, 64)
        status_body = {k: status_body[k] for k in ("kind", "reason", "code", "details") if k in status_body}
    cls: type[ApiError]
    if status == 404:
        cls = NotFound
    elif status == 409:
        cls = AlreadyExists if reason == "AlreadyExists" else Conflict
    elif status == 410:
        cls = Gone
    elif status in (400, 422):
        cls = Invalid
    elif status == 401:
        cls = Unauthorized
    elif status == 403:
        cls = Forbidden
    elif status == 429:
        cls = TooManyRequests
    elif status >= 500 or status == 0:
        cls = TransientError
    else:
        cls = ApiError
    return cls(
        f"{status} {reason or 'error'}: {message}",
        status=status,
        reason=reason,
        body=status_body,
        retry_after=retry_after,
    )


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _http_words(status: int) -> str:
    if 300 <= status < 400:
        return f"HTTP {status}: a redirect (not followed)"
    return f"HTTP {status}"
