"""The HTTPS server the API server calls: admission reviews and CRD conversion reviews.

Why the rules here:

* **Errors are HTTP 500, never a made-up answer.** A handler that raises (or exceeds its
  time budget) gets no ``allowed: false`` invented for it: the API server then applies the
  webhook's ``failurePolicy`` — with ``Ignore`` the pod is created unmodified, which is the
  whole point of that policy. The failure is logged once, here.
* **Bounded input.** A body over :data:`MAX_BODY_BYTES` (3 MiB, the API server's own request
  limit) is refused with 413 before it is read; JSON nested deeper than the controller reads
  anywhere (``united.api.decode``) is refused with 400, so no handler ever walks it.
* **A review costs what it asks for.** An admission review is first read only up to the pod
  (:func:`head`): from a namespace that needs nothing (the route's :data:`Screen`, asked on the
  server's thread) or over :data:`MAX_PLACED_BYTES`, it is allowed unchanged without being
  decoded or handed to the controller's loop.
* **Off the controller's loop.** Connections, TLS, reading and decoding run on the server's
  own thread and loop, under :class:`~united.runtime.connections.Limits` (caps per server and
  per peer, handshake, request and idle deadlines); only the admission handlers run on the loop
  that started the server, at most ``concurrency`` at once per route, and a review crosses to it
  once. A :class:`Computed` route never crosses.
* **Callers can be authenticated.** With :meth:`TLS.require_client_certificates` a request to
  a route not named ``unauthenticated`` is refused (401) unless the client presented a
  certificate from that CA (the API server presents one to admission webhooks when its
  admission configuration says so, never to CRD conversion webhooks; see docs/security.md).
* **The reply speaks the request's version.** ``admission.k8s.io/v1beta1`` and ``v1``
  reviews have the same shape, so handlers build one (the helpers below) and the server
  stamps the request's ``apiVersion`` on it; the ``response.uid`` must echo the request's.
* **Certificates rotate without a restart.** :meth:`TLS.load` makes a new ``ssl.SSLContext``,
  which every *new* connection uses. The PEM never
  touches a file system: it goes through an anonymous ``memfd`` (the pod's root file
  system may be read-only), since Python can load certificates only from a path.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import json
import os
import re
import ssl
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog
from aiohttp import web

from united.api.decode import MAX_DEPTH, within
from united.api.document import Json
from united.runtime.connections import Limits, Listener
from united.runtime.metrics import Metrics

Handler = Callable[[Json], Awaitable[Json]]
"""Takes a review (the request body) and returns the review to answer (the response body)."""


@dataclass(frozen=True, slots=True)
class Computed:
    """A route whose answer is computed from the review alone — it reads no cache and writes
    nothing (a CRD conversion): answered on the server's own thread, never waiting for a turn of
    the controller's loop. The API server calls it several times for one write of an object
    stored in another version, so each hop saved counts several times over."""

    answer: Callable[[Json], Json]


@dataclass(frozen=True, slots=True)
class Shortcut:
    """A handler with an answer the server may give on its own thread: ``early`` is asked with
    the decoded review before the crossing to the controller's loop, and answers it (a pod the
    controller is known to leave alone) or returns None to hand it to ``handler``. ``early`` is
    held to what a :data:`Screen` is held to."""

    handler: Handler
    early: Callable[[Json], Json | None]


Route = Handler | Computed | Shortcut
"""What a path is served by."""
Screen = Callable[[str], bool]
"""Whether an admission review from this namespace needs its handler (False: allowed unchanged).
Called on the server's own thread, so that a pod nobody places costs no turn of the controller's
loop (a crossing each way, and a wait for the loop behind whatever it is doing): it must only
read what the controller's loop replaces or updates in one step (an attribute, a dict or set
lookup), and never write, await or iterate over shared state. A stale answer is as stale as the
caches are."""
T = TypeVar("T")
A = TypeVar("A")

MAX_BODY_BYTES = 3 * 1024 * 1024
MAX_PLACED_BYTES = 512 * 1024
"""An admission review larger than this is allowed unchanged, undecoded: a pod that large is not
placed (the cost of copying and comparing it would hold the handlers' loop)."""
HEAD_BYTES = 64 * 1024
"""How far :func:`head` looks for the request's namespace before giving up."""
INLINE_BYTES = 64 * 1024
"""A body up to this size is decoded (and a :class:`Computed` route answered) on the server's
thread, in the time a hop to the decoding pool and back would take; a larger one in the pool,
so that it delays no other connection."""
DEFAULT_CONCURRENCY = 16
"""Reviews of one route decoded and handled at once; the others wait (within their timeout) for
a place. Each route has its own places: a pod review may wait for a status write that the API
server can finish only after calling ``/convert``, so with places shared, a burst of pod reviews
held every place that conversion needed and each side waited for the other until the timeout."""
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


def _review(response: Json) -> Json:
    return {"apiVersion": ADMISSION_VERSIONS[0], "kind": "AdmissionReview", "response": response}


def request_of(review: Json) -> Json:
    """A review's ``request`` ({} when it has none): handlers read a review that anyone could
    have sent, so nothing in it is taken for granted."""
    request = review.get("request") if isinstance(review, dict) else None
    return request if isinstance(request, dict) else {}


def uid_of(request: Json) -> str:
    """The request's ``uid``, echoed in the answer ("" when missing or not a string)."""
    uid = request.get("uid")
    return uid if isinstance(uid, str) else ""


def allow(uid: str, *, warnings: tuple[str, ...] = ()) -> Json:
    """An AdmissionReview allowing request ``uid`` unchanged."""
    response: Json = {"uid": uid, "allowed": True}
    if warnings:
        response["warnings"] = list(warnings)
    return _review(response)


def deny(uid: str, message: str, *, code: int = 403, reason: str = "Forbidden") -> Json:
    """An AdmissionReview refusing request ``uid``: ``message`` is what the user sees."""
    return _review({"uid": uid, "allowed": False, "status": {"code": code, "reason": reason, "message": message}})


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def json_patch(old: Any, new: Any, path: str = "") -> list[Json]:
    """An RFC 6902 patch turning ``old`` into ``new``: objects are compared key by key, a list
    that only grew at its end gets its new elements appended, anything else (other lists
    included) is replaced whole when it differs — coarse for lists, and therefore never wrong
    about indexes. A part ``new`` shares with ``old`` (the same
    object) is skipped unread."""
    if old is new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        ops: list[Json] = [{"op": "remove", "path": f"{path}/{_escape(k)}"} for k in old if k not in new]
        for key, value in new.items():
            here = f"{path}/{_escape(key)}"
            if key not in old:
                ops.append({"op": "add", "path": here, "value": value})
            else:
                ops += json_patch(old[key], value, here)
        return ops
    if isinstance(old, list) and isinstance(new, list) and len(new) > len(old) and _same(old, new[: len(old)]):
        return [{"op": "add", "path": f"{path}/-", "value": value} for value in new[len(old) :]]
    if _same(old, new):
        return []
    return [{"op": "replace", "path": path, "value": new}]


def _same(old: Any, new: Any) -> bool:
    """Equal as JSON (``1``, ``1.0`` and ``True`` differ there), at any depth."""
    if type(old) is not type(new):
        return False
    if isinstance(old, dict):
        return old.keys() == new.keys() and all(_same(old[k], new[k]) for k in old)
    if isinstance(old, list):
        return len(old) == len(new) and all(a is b or _same(a, b) for a, b in zip(old, new, strict=True))
    return bool(old == new)


def patched(uid: str, old: Json, new: Json) -> Json:
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
    """The server's TLS settings: a context per certificate, swapped whole while serving.

    A new certificate gets a new ``ssl.SSLContext`` and the reference to it is replaced; a
    context is never changed once connections use it (the server's connections are set up on
    another thread, and OpenSSL does not promise a context may change under a connection that
    is starting). With :meth:`require_client_certificates` every context asks the client for a
    certificate signed by that CA and refuses the handshake when one signed by another is
    presented; whether a request without one is served is the server's decision, per route
    (the API server presents no certificate to CRD conversion webhooks)."""

    def __init__(self) -> None:
        self.context = self._new_context()
        self.loaded: bytes | None = None
        """The certificate PEM being served (None before the first :meth:`load`)."""
        self.client_ca: bytes | None = None
        """The CA the clients' certificates must chain to (None: clients are not authenticated)."""

    def _new_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        return context

    def require_client_certificates(self, ca_pem: bytes) -> None:
        """Ask clients for a certificate ``ca_pem`` signed, and refuse one signed by another
        (raises ``ssl.SSLError`` when ``ca_pem`` holds no certificate); call before :meth:`load`."""
        probe = self._new_context()
        try:
            probe.load_verify_locations(cadata=ca_pem.decode("ascii", errors="replace"))
        except ValueError as exc:  # no PEM block at all
            raise ssl.SSLError(str(exc)) from None
        if not probe.get_ca_certs():
            raise ssl.SSLError("no CA certificate in it")
        self.client_ca = ca_pem

    def load(self, cert_pem: bytes, key_pem: bytes) -> bool:
        """Serve ``cert_pem`` from the next connection on; False when it is already served."""
        if cert_pem == self.loaded:
            return False
        context = self._new_context()
        with _pem_path(cert_pem) as cert, _pem_path(key_pem) as key:
            context.load_cert_chain(cert, key)
        if self.client_ca is not None:
            context.load_verify_locations(cadata=self.client_ca.decode("ascii", errors="replace"))
            context.verify_mode = ssl.CERT_OPTIONAL
        self.context = context
        self.loaded = cert_pem
        return True


# -- the server ----------------------------------------------------------------------------


class BadReviewError(ValueError):
    """The body is not a review this server answers (HTTP 400)."""


def _parse(body: bytes) -> Json:
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


def _answer(review: Json, reply: Json) -> Json:
    """``reply`` in the request's version; a reply to another request is a bug (500)."""
    response = reply.get("response")
    if reply.get("kind") != review["kind"] or not isinstance(response, dict):
        raise TypeError(f"the handler answered a {review['kind']} with {reply.get('kind')!r}")
    if response.get("uid") != review["request"]["uid"]:
        raise TypeError("the handler answered another request (response.uid differs)")
    return {**reply, "apiVersion": review["apiVersion"]}


@dataclass(frozen=True, slots=True)
class Head:
    """What an API server's AdmissionReview says before the pod: Go serialises the request's
    fields in order, ``uid``, ``namespace`` and ``operation`` before ``object``."""

    kind: str
    api_version: str
    uid: str
    namespace: str


_SPACE = re.compile(r"[ \t\n\r]*")
_decoder = json.JSONDecoder()


def head(body: bytes) -> Head | None:
    """The review's :class:`Head`, decoded from at most :data:`HEAD_BYTES` of ``body`` up to
    the request's ``object``/``oldObject`` (None: not laid out as the API server lays it out)."""
    text = body[:HEAD_BYTES].decode("utf-8", errors="ignore")
    top: Json = {}
    request: Json = {}
    try:
        inside, pos = top, _SPACE.match(text, 0).end()  # type: ignore[union-attr]
        if text[pos] != "{":
            return None
        pos += 1
        while True:
            pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
            if text[pos] != '"':
                return None
            key, pos = json.decoder.scanstring(text, pos + 1)  # type: ignore[attr-defined]
            pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
            if text[pos] != ":":
                return None
            pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
            if inside is request and key in ("object", "oldObject"):
                break
            if inside is top and key == "request":
                if text[pos] != "{":
                    return None
                inside, pos = request, pos + 1
                continue
            inside[key], pos = _decoder.raw_decode(text, pos)
            pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
            if text[pos] != ",":
                return None
            pos += 1
    except (IndexError, ValueError, RecursionError):
        return None
    fields = (top.get("kind"), top.get("apiVersion"), request.get("uid"), request.get("namespace"))
    if not all(isinstance(value, str) for value in fields):
        return None
    return Head(*(str(value) for value in fields))


def _stub(found: Head) -> Json:
    """The review a skipped request is answered as (checked like :func:`_parse` checks one)."""
    if found.kind != "AdmissionReview" or found.api_version not in ADMISSION_VERSIONS:
        raise BadReviewError(f"not an AdmissionReview: {found.api_version}/{found.kind}")
    return {"kind": found.kind, "apiVersion": found.api_version, "request": {"uid": found.uid}}


class WebhookServer:
    """Serves ``routes`` (path → :data:`Handler`) and ``/healthz`` over HTTPS, on its own thread.

    The connections, TLS, reading and decoding run on a thread with its own event loop (and
    decoding on a pool of ``concurrency`` threads); only the handlers run on the loop that
    called :meth:`start` (they read the controller's caches and write through its client), at
    most ``concurrency`` at once per route. So neither a slow client nor a large review delays
    what that loop also runs: the Lease renewals, ``/healthz``, the informers.

    A route with a :data:`Screen` is an admission route: its reviews are first read only up to
    the pod (:func:`head`), and allowed unchanged without being decoded when the screen says the
    namespace needs nothing, or when the body is over ``max_placed_bytes`` (counted in
    ``united_webhook_reviews_skipped_total``)."""

    def __init__(
        self,
        *,
        host: str,
        port: int,
        tls: TLS,
        routes: Mapping[str, Route],
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        metrics: Metrics | None = None,
        screens: Mapping[str, Screen] | None = None,
        max_placed_bytes: int = MAX_PLACED_BYTES,
        concurrency: int = DEFAULT_CONCURRENCY,
        limits: Limits | None = None,
        unauthenticated: Iterable[str] = (),
    ) -> None:
        self.host = host
        self.port = port
        self.tls = tls
        self._routes = dict(routes)
        self._screens = dict(screens or {})
        self._unauthenticated = frozenset(unauthenticated)
        self._timeout = request_timeout
        self._metrics = metrics
        self._max_placed = max_placed_bytes
        self._concurrency = concurrency
        self.limits = limits or Limits(request_timeout=request_timeout)
        self.listener: Listener | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        """The server's own event loop (while it runs)."""
        self._owner: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.ended: asyncio.Future[None] | None = None
        """Done once the server's thread has ended (set on the loop that started it)."""
        self._stopping: asyncio.Event | None = None
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

    def _skipped(self, route: str, reason: str) -> None:
        if self._metrics is not None:
            self._metrics.webhook_skipped(route, reason)

    async def _owned(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the owner's loop; cancelled with the caller."""
        assert self._owner is not None
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._owner))

    async def _handle(self, route: str, body: bytes) -> tuple[Json, Json]:
        """The review and the reply to it. An admission review is first screened by its
        namespace, here: one from a namespace that needs nothing is answered without being
        decoded and without a turn of the owner's loop."""
        screen = self._screens.get(route)
        if screen is not None:
            skipped = self._screened(route, screen, body)
            if skipped is not None:
                return skipped
        review = await self._decode(body)
        handler = self._routes[route]
        if isinstance(handler, Shortcut):
            early = handler.early(review)
            if early is not None:
                self._skipped(route, "early")
                return review, early
            handler = handler.handler
        return review, await self._reply(handler, review, len(body))

    def _screened(self, route: str, screen: Screen, body: bytes) -> tuple[Json, Json] | None:
        """An admission review allowed unchanged without being decoded: from a namespace that
        needs nothing, or over ``max_placed_bytes``; None: decode it and hand it on."""
        found = head(body)
        if found is not None and found.namespace and not screen(found.namespace):
            reason = "namespace"
        elif len(body) > self._max_placed:
            if found is None:
                raise BadReviewError(f"over {self._max_placed} bytes and not laid out as an API server's review")
            reason = "too_large"
        else:
            return None
        self._skipped(route, reason)
        return _stub(found), allow(found.uid)

    async def _offload(self, work: Callable[[A], T], arg: A, size: int) -> T:
        """``work(arg)`` for a body of ``size`` bytes: here when small, else on the pool, so that
        it delays no other connection."""
        if size <= INLINE_BYTES:
            return work(arg)
        return await asyncio.get_running_loop().run_in_executor(self._pool, work, arg)

    async def _decode(self, body: bytes) -> Json:
        return await self._offload(_parse, body, len(body))

    async def _reply(self, handler: Handler | Computed, review: Json, size: int) -> Json:
        if isinstance(handler, Computed):
            return await self._offload(handler.answer, review, size)
        return await self._owned(_handled(handler, review))

    async def _respond(self, route: str, request: web.Request) -> web.Response:
        if self.tls.client_ca is not None and route not in self._unauthenticated:
            transport = request.transport
            if transport is None or not transport.get_extra_info("peercert"):
                return web.Response(status=401, text="a client certificate is required\n")
        if (request.content_length or 0) > MAX_BODY_BYTES:
            return web.Response(status=413, text=f"request body larger than {MAX_BODY_BYTES} bytes\n")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return web.Response(status=413, text=f"request body larger than {MAX_BODY_BYTES} bytes\n")
        assert self.listener is not None
        self.listener.read(request.protocol)
        try:
            async with asyncio.timeout(self._timeout), self._slots[route]:
                try:
                    review, reply = await self._handle(route, body)
                except BadReviewError as exc:
                    _log.warning("webhook request refused", route=route, error=str(exc))
                    return web.Response(status=400, text=f"{exc}\n")
            answer = _answer(review, reply)
        except TimeoutError:
            _log.error("webhook handler timed out", route=route, uid=_logged_uid(body), seconds=self._timeout)
            return web.Response(status=500, text=f"handler timed out after {self._timeout:g}s\n")
        except Exception as exc:
            _log.exception("webhook handler failed", route=route, uid=_logged_uid(body))
            return web.Response(status=500, text=f"handler failed: {type(exc).__name__}: {exc}\n")
        return web.json_response(answer)

    def _closed(self, reason: str) -> None:
        if self._metrics is not None:
            self._metrics.connection_closed("webhook", reason)

    async def start(self) -> int:
        """Serve (the TLS certificate must be loaded) and return the bound port (``port=0``: a free one)."""
        if self._thread is not None:
            raise RuntimeError("webhook server already started")
        if self.tls.loaded is None:
            raise RuntimeError("webhook server has no certificate yet")
        self._owner = asyncio.get_running_loop()
        self.ended = self._owner.create_future()
        started: concurrent.futures.Future[int] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._run, args=(started,), name="webhook-server", daemon=True)
        self._thread.start()
        try:
            self.port = await asyncio.wrap_future(started)
        except BaseException:
            await self.stop()
            raise
        _log.info("webhook server listening", host=self.host, port=self.port, routes=sorted(self._routes))
        return self.port

    def _run(self, started: concurrent.futures.Future[int]) -> None:
        loop = self.loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._main(started))
        finally:
            loop.close()
            if self._owner is not None and self.ended is not None:
                with contextlib.suppress(RuntimeError):  # the owner's loop has ended first
                    self._owner.call_soon_threadsafe(_finish, self.ended)

    async def _main(self, started: concurrent.futures.Future[int]) -> None:
        self._stopping = asyncio.Event()
        self._slots = {route: asyncio.Semaphore(self._concurrency) for route in self._routes}
        self._pool = concurrent.futures.ThreadPoolExecutor(self._concurrency, thread_name_prefix="webhook-decode")
        limits = self.limits
        runner = web.AppRunner(self.app, handle_signals=False, access_log=None, shutdown_timeout=1.0,
                               keepalive_timeout=limits.idle_timeout)  # fmt: skip
        listener = self.listener = Listener(lambda: _protocol(runner), name="webhook", limits=limits,
                                            tls=lambda: self.tls.context, closed=self._closed)  # fmt: skip
        try:
            await runner.setup()
            try:
                port = await listener.start(self.host, self.port)
            except BaseException as exc:
                started.set_exception(exc)
                return
            started.set_result(port)
            await self._stopping.wait()
        finally:
            await listener.stop()
            await runner.cleanup()
            self._pool.shutdown(wait=False, cancel_futures=True)

    async def stop(self) -> None:
        """Stop serving (idempotent)."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        loop, stopping = self.loop, self._stopping
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):  # its loop has ended already
                loop.call_soon_threadsafe(stopping.set)
        await asyncio.to_thread(thread.join)


def _finish(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _protocol(runner: web.AppRunner) -> Any:
    """A new connection's aiohttp protocol (the runner's server is a protocol factory)."""
    assert runner.server is not None
    return runner.server()


def _logged_uid(body: bytes) -> str:
    """The review's ``uid`` for a log line, "?" when its head does not show one."""
    found = head(body)
    return found.uid if found is not None else "?"


async def _handled(handler: Handler, review: Json) -> Json:
    return await handler(review)


__all__ = [
    "ADMISSION_VERSIONS",
    "CONVERSION_VERSIONS",
    "DEFAULT_REQUEST_TIMEOUT",
    "MAX_BODY_BYTES",
    "TLS",
    "BadReviewError",
    "Computed",
    "Handler",
    "Route",
    "Shortcut",
    "WebhookServer",
    "allow",
    "deny",
    "json_patch",
    "patched",
    "request_of",
    "uid_of",
]
