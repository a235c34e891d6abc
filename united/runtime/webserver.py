"""The HTTPS server the API server calls: admission reviews and CRD conversion reviews.

Why the rules here:

* **Errors are HTTP 500, never a made-up answer.** A handler that raises (or exceeds its
  time budget) gets no ``allowed: false`` invented for it: the API server then applies the
  webhook's ``failurePolicy`` — with ``Ignore`` the pod is created unmodified, which is the
  whole point of that policy. The failure is logged once, here.
* **Bounded input.** A body over :data:`MAX_BODY_BYTES` (3 MiB, the API server's own request
  limit) is refused with 413 before it is read; JSON nested deeper than the controller reads
  anywhere (``united.api.decode``) is refused with 400, so no handler ever walks it.
* **The reply speaks the request's version.** ``admission.k8s.io/v1beta1`` and ``v1``
  reviews have the same shape, so handlers build one (the helpers below) and the server
  stamps the request's ``apiVersion`` on it; the ``response.uid`` must echo the request's.
* **Certificates rotate without a restart.** :class:`TLS` holds one ``ssl.SSLContext``;
  :meth:`TLS.load` replaces its certificate in place, which every *new* connection uses
  (OpenSSL copies the certificate into each connection when it starts). The PEM never
  touches a file system: it goes through an anonymous ``memfd`` (the pod's root file
  system may be read-only), since Python can load certificates only from a path.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import structlog
from aiohttp import web

from united.api.decode import MAX_DEPTH, within
from united.runtime.metrics import Metrics

JSON = dict[str, Any]
Handler = Callable[[JSON], Awaitable[JSON]]
"""Takes a review (the request body) and returns the review to answer (the response body)."""

MAX_BODY_BYTES = 3 * 1024 * 1024
DEFAULT_REQUEST_TIMEOUT = 10.0
"""Seconds a handler may take; the API server gives up after the configuration's
``timeoutSeconds`` (at most 30) anyway, so this only bounds work nobody waits for."""
ADMISSION_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
CONVERSION_VERSIONS = ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1")
_KINDS = {"AdmissionReview": ADMISSION_VERSIONS, "ConversionReview": CONVERSION_VERSIONS}
# The review wraps the object two levels down (review.request.object).
_REVIEW_DEPTH = MAX_DEPTH + 3

_log = structlog.get_logger(__name__)


# -- answers -------------------------------------------------------------------------------


def _review(response: JSON) -> JSON:
    return {"apiVersion": ADMISSION_VERSIONS[0], "kind": "AdmissionReview", "response": response}


def allow(uid: str, *, warnings: tuple[str, ...] = ()) -> JSON:
    """An AdmissionReview allowing request ``uid`` unchanged."""
    response: JSON = {"uid": uid, "allowed": True}
    if warnings:
        response["warnings"] = list(warnings)
    return _review(response)


def deny(uid: str, message: str, *, code: int = 403, reason: str = "Forbidden") -> JSON:
    """An AdmissionReview refusing request ``uid``: ``message`` is what the user sees."""
    return _review({"uid": uid, "allowed": False, "status": {"code": code, "reason": reason, "message": message}})


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def json_patch(old: Any, new: Any, path: str = "") -> list[JSON]:
    """An RFC 6902 patch turning ``old`` into ``new``: objects are compared key by key,
    anything else (lists included) is replaced whole when it differs — coarse for lists,
    and therefore never wrong about indexes."""
    if isinstance(old, dict) and isinstance(new, dict):
        ops: list[JSON] = [{"op": "remove", "path": f"{path}/{_escape(k)}"} for k in old if k not in new]
        for key, value in new.items():
            here = f"{path}/{_escape(key)}"
            if key not in old:
                ops.append({"op": "add", "path": here, "value": value})
            else:
                ops += json_patch(old[key], value, here)
        return ops
    if old == new and type(old) is type(new):
        return []
    return [{"op": "replace", "path": path, "value": new}]


def patched(uid: str, old: JSON, new: JSON) -> JSON:
    """An AdmissionReview allowing request ``uid`` with the JSON patch from ``old`` to ``new``
    (plainly allowed when they are equal)."""
    ops = json_patch(old, new)
    if not ops:
        return allow(uid)
    patch = base64.b64encode(json.dumps(ops, separators=(",", ":")).encode()).decode()
    return _review({"uid": uid, "allowed": True, "patchType": "JSONPatch", "patch": patch})


# -- TLS -----------------------------------------------------------------------------------


@contextlib.contextmanager
def _pem_path(data: bytes) -> Iterator[str]:
    """A path holding ``data`` for as long as the block runs, in memory where possible."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("united-pem", os.MFD_CLOEXEC)
        try:
            os.write(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    with tempfile.NamedTemporaryFile() as file:  # pragma: no cover - not Linux
        file.write(data)
        file.flush()
        yield file.name


class TLS:
    """The server's TLS settings: one context whose certificate can be replaced while serving."""

    def __init__(self) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self.loaded: bytes | None = None
        """The certificate PEM being served (None before the first :meth:`load`)."""

    def load(self, cert_pem: bytes, key_pem: bytes) -> bool:
        """Serve ``cert_pem`` from the next connection on; False when it is already served."""
        if cert_pem == self.loaded:
            return False
        with _pem_path(cert_pem) as cert, _pem_path(key_pem) as key:
            self.context.load_cert_chain(cert, key)
        self.loaded = cert_pem
        return True


# -- the server ----------------------------------------------------------------------------


class BadReviewError(ValueError):
    """The body is not a review this server answers (HTTP 400)."""


def _parse(body: bytes) -> JSON:
    try:
        review = json.loads(body)
    except RecursionError:
        raise BadReviewError(f"nested deeper than {_REVIEW_DEPTH} levels") from None
    except ValueError as exc:
        raise BadReviewError(f"not JSON: {exc}") from None
    if not isinstance(review, dict):
        raise BadReviewError("not a JSON object")
    if not within(review, _REVIEW_DEPTH):
        raise BadReviewError(f"nested deeper than {_REVIEW_DEPTH} levels")
    kind, version = review.get("kind"), review.get("apiVersion")
    if kind not in _KINDS or version not in _KINDS[kind]:
        raise BadReviewError(f"not an AdmissionReview or ConversionReview: {version}/{kind}")
    request = review.get("request")
    if not isinstance(request, dict) or not isinstance(request.get("uid"), str):
        raise BadReviewError("request.uid missing")
    return review


def _answer(review: JSON, reply: JSON) -> JSON:
    """``reply`` in the request's version; a reply to another request is a bug (500)."""
    response = reply.get("response")
    if reply.get("kind") != review["kind"] or not isinstance(response, dict):
        raise TypeError(f"the handler answered a {review['kind']} with {reply.get('kind')!r}")
    if response.get("uid") != review["request"]["uid"]:
        raise TypeError("the handler answered another request (response.uid differs)")
    return {**reply, "apiVersion": review["apiVersion"]}


class WebhookServer:
    """Serves ``routes`` (path → :data:`Handler`) and ``/healthz`` over HTTPS."""

    def __init__(
        self,
        *,
        host: str,
        port: int,
        tls: TLS,
        routes: Mapping[str, Handler],
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        metrics: Metrics | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.tls = tls
        self._routes = dict(routes)
        self._timeout = request_timeout
        self._metrics = metrics
        self._runner: web.AppRunner | None = None
        self.app = web.Application(client_max_size=MAX_BODY_BYTES)
        self.app.router.add_get("/healthz", self._healthz)
        for path in self._routes:
            self.app.router.add_post(path, self._serve)

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _serve(self, request: web.Request) -> web.Response:
        route = request.path
        started = time.perf_counter()
        response = await self._respond(route, request)
        if self._metrics is not None:
            self._metrics.observe_webhook(route, response.status, time.perf_counter() - started)
        return response

    async def _respond(self, route: str, request: web.Request) -> web.Response:
        try:
            review = _parse(await request.read())
        except web.HTTPRequestEntityTooLarge:
            return web.Response(status=413, text=f"request body larger than {MAX_BODY_BYTES} bytes\n")
        except BadReviewError as exc:
            _log.warning("webhook request refused", route=route, error=str(exc))
            return web.Response(status=400, text=f"{exc}\n")
        try:
            async with asyncio.timeout(self._timeout):
                reply = await self._routes[route](review)
            answer = _answer(review, reply)
        except TimeoutError:
            _log.error("webhook handler timed out", route=route, uid=review["request"]["uid"], seconds=self._timeout)
            return web.Response(status=500, text=f"handler timed out after {self._timeout:g}s\n")
        except Exception as exc:
            _log.exception("webhook handler failed", route=route, uid=review["request"]["uid"])
            return web.Response(status=500, text=f"handler failed: {type(exc).__name__}: {exc}\n")
        return web.json_response(answer)

    async def start(self) -> int:
        """Serve (the TLS certificate must be loaded) and return the bound port (``port=0``: a free one)."""
        if self._runner is not None:
            raise RuntimeError("webhook server already started")
        if self.tls.loaded is None:
            raise RuntimeError("webhook server has no certificate yet")
        runner = web.AppRunner(self.app, handle_signals=False, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        try:
            await web.TCPSite(runner, self.host, self.port, ssl_context=self.tls.context).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        _log.info("webhook server listening", host=self.host, port=self.port, routes=sorted(self._routes))
        return self.port

    async def stop(self) -> None:
        """Stop serving (idempotent)."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()


__all__ = [
    "ADMISSION_VERSIONS",
    "CONVERSION_VERSIONS",
    "DEFAULT_REQUEST_TIMEOUT",
    "MAX_BODY_BYTES",
    "TLS",
    "BadReviewError",
    "Handler",
    "WebhookServer",
    "allow",
    "deny",
    "json_patch",
    "patched",
]
