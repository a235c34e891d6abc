"""A fault-injecting reverse proxy between a Kubernetes client and the local API server.

Why: a controller's reliability code — retries on 409/429/5xx, re-lists after a 410,
watch restarts after a dropped or stalled stream, leader election under a slow API —
only runs when the API server misbehaves, and the real one (:mod:`united.devcluster`)
almost never does. The proxy makes it misbehave on demand, in front of the *real*
control plane, so the chaos suite exercises the controller against real semantics
plus chosen faults. Its request log is the other half: it proves what the controller
*sent* (no writes from a standby, merge-patch content types, writes per scale event).

How::

    async with FaultProxy(cluster.server, token=cluster.admin.token, ca_cert=cluster.ca_cert) as proxy:
        kubeconfig = proxy.write_kubeconfig(tmp_path / "proxy.kubeconfig")   # for a subprocess
        async with proxy.kube_client() as kube:                              # or in-process
            proxy.add_rule(methods={"PATCH"}, path=r"/uniteddeployments/", respond=409, count=2)
            proxy.add_rule(respond=429, retry_after=2, probability=0.1)
            proxy.add_rule(latency=(0.05, 0.2))                              # every request
            proxy.add_watch_rule(WatchAction.CUT, every=5, share=0.5)       # cut half the watches every 5 s
            proxy.cut_watches(path=r"/configmaps")                           # one-shot, now
            ...
            assert not proxy.log.writes(identity="standby")

A stopped proxy can be started again: it keeps its port and certificates, so clients
holding its kubeconfig see connection refused in between, like an API server outage.

``FaultProxy`` runs on the caller's event loop (``async with``); ``ThreadedFaultProxy``
runs the same proxy on a private loop in a daemon thread with a synchronous ``start()``
/ ``stop()`` (``with``), for tests whose own loop must not carry the proxy's traffic,
e.g. when the controller is a subprocess. Rule, command and log methods are synchronous
and thread-safe on both; ``wait_for_watches`` is a coroutine that polls from any loop.

What it does:

* Listens on a loopback address only, on a free port, with TLS (a fresh self-signed CA
  from :mod:`united.devcluster.certs`, or one passed in) or plain HTTP. Forwards every
  request to the API server (which must be on loopback as well) with the proxy's token
  and the API server's CA; with ``forward_auth=True`` it forwards the client's own
  ``Authorization`` header instead, so RBAC applies to the client's identity.
* Streams answers chunk by chunk (no buffering), watch streams line by line; when the
  client goes away the handler is cancelled and the upstream request closed.
* **Request rules** (:meth:`add_rule`): match on method set, path regex (``re.search``
  on the decoded path), exact query parameters, watch or not, identity; fire with a
  probability, at most ``count`` times; add latency (fixed or uniform in a range) and/or
  answer with a Kubernetes ``Status`` (any 4xx/5xx; 429 gets ``Retry-After``) or
  :data:`DROP` the connection (TCP reset, no answer). All matching rules are evaluated
  in order: every one that fires adds its latency; the first that fires with a
  ``respond`` decides the answer.
* **Watch faults** on open streams: cut (``eof``: a clean end like a server timeout,
  ``reset``: TCP reset, ``truncate``: half a line then end), stall (stop forwarding but
  keep the connection; resume after ``duration`` or on :meth:`resume_watches`; bytes
  are not lost, like a network stall), inject an in-stream ``ERROR`` event (410
  ``Expired`` by default, then end the stream as the API server does), drop BOOKMARK
  events. One-shot (:meth:`cut_watches`, :meth:`stall_watches`,
  :meth:`inject_watch_error`) or as rules (:meth:`add_watch_rule`) applied to a share
  of the open streams ``every`` N seconds, or to each new stream ``after`` N seconds.
* **Deterministic randomness**: every rule draws from its own ``random.Random`` seeded
  from the proxy's ``seed`` and the rule's sequence number (the order rules were added),
  so the k-th matching request of a rule gets the same decision in every run, however
  other rules' draws went; one-shot commands draw from a proxy-wide seeded generator.
* **Request log** (:class:`RequestLog`): a ring buffer (200k entries by default) of
  every request: time, method, path, query, content type, verb, resource, identity
  (a name given with ``identities=`` / :meth:`name_token`, else a hash of the bearer
  token), status returned (0 for a dropped connection), faults applied, duration.

Limitations: HTTP/1.1 only (no HTTP/2, no websocket/SPDY upgrades, so no
``exec``/``port-forward``); request bodies are read whole before forwarding; aiohttp's
client (hence kubernetes-asyncio) retries an idempotent request (GET, PUT, DELETE) once
on its own when the connection drops without an answer, so a single dropped GET can
be invisible to the caller — use ``count >= 2``, or drop POST/PATCH.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import ipaddress
import itertools
import json
import random
import re
import shutil
import socket
import ssl
import struct
import tempfile
import threading
import time
import weakref
from collections import Counter, deque
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, Self, TypedDict, TypeVar, Unpack

import aiohttp
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from united.devcluster import certs as certs_mod
from united.devcluster.credentials import write_kubeconfig
from united.kube.client import KubeClient
from united.kube.kubeconfig import render_kubeconfig
from united.kube.wait import eventually

T = TypeVar("T")

DROP: Final = "drop"
"""``respond=DROP``: abort the TCP connection (reset) without sending an answer."""

WRITE_METHODS: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})
DEFAULT_LOG_SIZE: Final = 200_000
DEFAULT_CLIENT_TOKEN: Final = "fault-proxy-client"

CutHow = Literal["eof", "reset", "truncate"]

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
_STATUS_REASONS: Final = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    502: "BadGateway",
    503: "ServiceUnavailable",
    504: "Timeout",
}
# Namespace subresources: /api/v1/namespaces/<name>/<these> address the namespace itself.
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_TRUNCATED_EVENT = b'{"type":"MODIFIED","object":{"kind":"'
_ON_LOOP_TIMEOUT = 10.0
UPSTREAM_CLOSE_SECONDS = 0.25
"""How long a stopping proxy lets its upstream TLS connections finish closing."""


# --------------------------------------------------------------------------- helpers


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is a loopback address."""
    if host.strip("[]") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def token_identity(token: str) -> str:
    """The log identity of an unnamed bearer token: a short hash, never the token."""
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()[:12]


def status_object(code: int, *, reason: str | None = None, message: str | None = None) -> dict[str, Any]:
    """A Kubernetes ``Status`` failure object for HTTP ``code``."""
    reason = reason or _STATUS_REASONS.get(code, "InternalError" if code >= 500 else "BadRequest")
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message or f"injected by the fault proxy: {code} {reason}",
        "reason": reason,
        "code": code,
    }


def is_watch_request(method: str, path: str, query: Mapping[str, str]) -> bool:
    """A watch: ``GET ...?watch=true`` (or ``1``), or a legacy ``/watch/`` path."""
    if method != "GET":
        return False
    if query.get("watch", "").lower() in ("true", "1"):
        return True
    parts = [p for p in path.split("/") if p]
    return (parts[:1] == ["api"] and parts[2:3] == ["watch"]) or (parts[:1] == ["apis"] and parts[3:4] == ["watch"])


def describe_request(method: str, path: str, query: Mapping[str, str]) -> tuple[str, str, str | None, str | None]:
    """``(verb, resource, namespace, name)`` of a request, as the API server's request
    info resolver sees it: ``("patch", "uniteddeployments/status", "ns", "ud")``,
    ``("list", "pods", None, None)``; non-resource paths give ``(method.lower(),
    "nonresource", None, None)`` and API discovery ``("get", "discovery", None, None)``."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"]:
        rest = parts[2:]
    elif parts[:1] == ["apis"]:
        rest = parts[3:]
    else:
        return method.lower(), "nonresource", None, None
    watch = is_watch_request(method, path, query)
    if rest[:1] == ["watch"]:
        rest = rest[1:]
    namespace: str | None = None
    if len(rest) >= 2 and rest[0] == "namespaces":
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
        else:
            namespace = None
    if not rest:
        return "get", "discovery", None, None
    resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")
    name = rest[1] if len(rest) > 1 else None
    if watch:
        verb = "watch"
    else:
        verb = {
            "GET": "get" if name else "list",
            "HEAD": "get" if name else "list",
            "POST": "create",
            "PUT": "update",
            "PATCH": "patch",
            "DELETE": "delete" if name else "deletecollection",
        }.get(method, method.lower())
    return verb, resource, namespace, name


def _bearer(header: str | None) -> str | None:
    if header and header[:7].lower() == "bearer ":
        return header[7:].strip()
    return None


def _compile(pattern: str | re.Pattern[str] | None) -> re.Pattern[str] | None:
    if pattern is None or isinstance(pattern, re.Pattern):
        return pattern
    return re.compile(pattern)


def _check_share(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be within [0, 1], not {value!r}")


def _check_count(count: int | None) -> None:
    if count is not None and count < 0:
        raise ValueError(f"count must be >= 0 or None, not {count!r}")


# --------------------------------------------------------------------------- rules


@dataclass(eq=False)
class FaultRule:
    """A request rule; made by :meth:`FaultProxy.add_rule`, which documents the fields.

    ``matched`` counts matching requests, ``fired`` those it acted on (at most
    ``count``)."""

    methods: frozenset[str] | None
    path: re.Pattern[str] | None
    query: Mapping[str, str]
    watch: bool | None
    identity: str | None
    respond: int | Literal["drop"] | None
    probability: float
    count: int | None
    latency: float | tuple[float, float]
    retry_after: float | None
    reason: str | None
    message: str | None
    headers: Mapping[str, str]
    rng: random.Random = field(repr=False)
    matched: int = 0
    fired: int = 0

    @property
    def exhausted(self) -> bool:
        """It has fired ``count`` times already."""
        return self.count is not None and self.fired >= self.count

    def matches(self, method: str, path: str, query: Mapping[str, str], *, watch: bool, identity: str) -> bool:
        """Whether a request matches (probability and count aside)."""
        return (
            (self.methods is None or method in self.methods)
            and (self.path is None or self.path.search(path) is not None)
            and all(query.get(key) == value for key, value in self.query.items())
            and (self.watch is None or self.watch == watch)
            and (self.identity is None or self.identity == identity)
        )

    def _draw_latency(self) -> float:
        if isinstance(self.latency, tuple):
            low, high = self.latency
            return self.rng.uniform(low, high)
        return self.latency

    def _fire(self) -> bool:
        """Decide (one draw when 0 < probability < 1) and count a firing."""
        if self.exhausted:
            return False
        if self.probability <= 0.0:
            return False
        if self.probability < 1.0 and self.rng.random() >= self.probability:
            return False
        self.fired += 1
        return True


class WatchAction(StrEnum):
    """What a watch rule does to a stream."""

    CUT = "cut"
    STALL = "stall"
    ERROR = "error"
    DROP_BOOKMARKS = "drop-bookmarks"


@dataclass(eq=False)
class WatchRule:
    """A watch rule; made by :meth:`FaultProxy.add_watch_rule`, which documents the fields.

    ``fired`` counts the streams it acted on (bookmarks dropped, for DROP_BOOKMARKS)."""

    action: WatchAction
    path: re.Pattern[str] | None
    identity: str | None
    every: float | None
    after: float | None
    share: float
    count: int | None
    how: CutHow
    duration: float | None
    code: int
    message: str | None
    rng: random.Random = field(repr=False)
    fired: int = 0

    @property
    def exhausted(self) -> bool:
        return self.count is not None and self.fired >= self.count

    def matches(self, path: str, identity: str) -> bool:
        return (self.path is None or self.path.search(path) is not None) and (
            self.identity is None or self.identity == identity
        )

    def _fire(self) -> bool:
        if self.exhausted or self.share <= 0.0:
            return False
        if self.share < 1.0 and self.rng.random() >= self.share:
            return False
        self.fired += 1
        return True

    def _command(self) -> _Command:
        if self.action is WatchAction.CUT:
            return _Cut(self.how)
        if self.action is WatchAction.STALL:
            return _Stall(self.duration)
        return _Inject(self.code, self.message)


# --------------------------------------------------------------------------- stream commands


@dataclass(frozen=True)
class _Cut:
    how: CutHow


@dataclass(frozen=True)
class _Stall:
    duration: float | None


@dataclass(frozen=True)
class _Resume:
    pass


@dataclass(frozen=True)
class _Inject:
    code: int
    message: str | None


_Command = _Cut | _Stall | _Resume | _Inject


# --------------------------------------------------------------------------- request log


@dataclass(slots=True)
class LogEntry:
    """One request through the proxy. Entries are logged when the request arrives and
    completed in place: ``status`` is None until the answer starts (0: the connection
    was dropped without one), ``duration`` None until it ended (a watch: until the
    stream closed)."""

    seq: int
    time: float
    method: str
    path: str
    query: tuple[tuple[str, str], ...]
    content_type: str
    identity: str
    user_agent: str
    verb: str
    resource: str
    namespace: str | None
    name: str | None
    watch: bool
    status: int | None = None
    faults: list[str] = field(default_factory=list)
    forwarded: bool = False
    duration: float | None = None
    error: str = ""
    body: bytes | None = None
    events: int = 0

    @property
    def faulted(self) -> bool:
        """The proxy did something to this request (latency included)."""
        return bool(self.faults)

    @property
    def is_write(self) -> bool:
        return self.method in WRITE_METHODS

    @property
    def mime_type(self) -> str:
        """The content type without parameters, lower-cased: ``application/merge-patch+json``."""
        return self.content_type.split(";", 1)[0].strip().lower()

    def param(self, name: str) -> str | None:
        """The first value of query parameter ``name``."""
        return next((value for key, value in self.query if key == name), None)


class LogFilter(TypedDict, total=False):
    """Filters of :meth:`RequestLog.requests` (all given ones must hold).

    ``method`` and ``verb`` take one value or a collection; ``path_regex`` is searched
    in the path; ``since`` is a :meth:`RequestLog.mark`; ``where`` any predicate."""

    method: str | Collection[str]
    path_regex: str | re.Pattern[str]
    verb: str | Collection[str]
    resource: str
    namespace: str
    name: str
    identity: str
    mime_type: str
    since: int
    faulted: bool
    forwarded: bool
    watch: bool
    status: int
    where: Callable[[LogEntry], bool]


def _one_of(value: str | Collection[str]) -> Collection[str]:
    return (value,) if isinstance(value, str) else value


def _entry_matches(entry: LogEntry, filters: LogFilter) -> bool:
    if "method" in filters and entry.method not in {m.upper() for m in _one_of(filters["method"])}:
        return False
    if "path_regex" in filters and not re.search(filters["path_regex"], entry.path):
        return False
    if "verb" in filters and entry.verb not in _one_of(filters["verb"]):
        return False
    if "resource" in filters and entry.resource != filters["resource"]:
        return False
    if "namespace" in filters and entry.namespace != filters["namespace"]:
        return False
    if "name" in filters and entry.name != filters["name"]:
        return False
    if "identity" in filters and entry.identity != filters["identity"]:
        return False
    if "mime_type" in filters and entry.mime_type != filters["mime_type"].lower():
        return False
    if "since" in filters and entry.seq < filters["since"]:
        return False
    if "faulted" in filters and entry.faulted != filters["faulted"]:
        return False
    if "forwarded" in filters and entry.forwarded != filters["forwarded"]:
        return False
    if "watch" in filters and entry.watch != filters["watch"]:
        return False
    if "status" in filters and entry.status != filters["status"]:
        return False
    return "where" not in filters or filters["where"](entry)


class RequestLog:
    """The proxy's memory-bounded request log; thread-safe.

    ``log.writes(identity="standby")``, ``log.requests(method="PATCH", path_regex=r"/status$")``,
    ``log.counts(since=mark)[("patch", "deployments")]``; ``mark()`` then ``since=`` scopes
    a question to what happened after a point (e.g. one scale event)."""

    def __init__(self, max_entries: int = DEFAULT_LOG_SIZE, *, keep_bodies: int = 0) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be >= 1")
        self.max_entries = max_entries
        self.keep_bodies = keep_bodies
        """Keep up to this many bytes of each request body in ``LogEntry.body`` (0: none)."""
        self._entries: deque[LogEntry] = deque(maxlen=max_entries)
        self._lock = threading.Lock()
        self._seq = itertools.count()
        self._next = 0
        self.evicted = 0
        """Entries pushed out of the ring buffer (or cleared) so far."""

    def _new(self, **fields: Any) -> LogEntry:
        with self._lock:
            seq = next(self._seq)
            self._next = seq + 1
            entry = LogEntry(seq=seq, **fields)
            if len(self._entries) == self.max_entries:
                self.evicted += 1
            self._entries.append(entry)
            return entry

    def mark(self) -> int:
        """A position: ``requests(since=mark)`` sees only requests that arrived after it."""
        with self._lock:
            return self._next

    def clear(self) -> None:
        with self._lock:
            self.evicted += len(self._entries)
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __iter__(self) -> Iterator[LogEntry]:
        return iter(self.entries())

    def entries(self) -> list[LogEntry]:
        """A snapshot of all entries, oldest first."""
        with self._lock:
            return list(self._entries)

    def requests(self, **filters: Unpack[LogFilter]) -> list[LogEntry]:
        """Entries that pass every given filter (see :class:`LogFilter`)."""
        return [entry for entry in self.entries() if _entry_matches(entry, filters)]

    def writes(self, **filters: Unpack[LogFilter]) -> list[LogEntry]:
        """POST, PUT, PATCH and DELETE requests that pass the filters."""
        return [entry for entry in self.requests(**filters) if entry.is_write]

    def counts(self, **filters: Unpack[LogFilter]) -> Counter[tuple[str, str]]:
        """Requests by ``(verb, resource)``: ``{("patch", "deployments"): 3, ...}``."""
        return Counter((entry.verb, entry.resource) for entry in self.requests(**filters))

    async def wait_for(self, count: int = 1, *, within: float = 10.0, **filters: Unpack[LogFilter]) -> list[LogEntry]:
        """Poll (from any loop) until at least ``count`` entries pass the filters; return them."""

        async def enough() -> list[LogEntry]:
            found = self.requests(**filters)
            assert len(found) >= count, f"{len(found)} of {count} requests matching {filters} so far"
            return found

        return await eventually(enough, within=within, interval=0.02, what="requests in the fault proxy's log")


# --------------------------------------------------------------------------- open watches


@dataclass(frozen=True)
class WatchInfo:
    """A snapshot of one open watch stream."""

    id: int
    path: str
    query: tuple[tuple[str, str], ...]
    identity: str
    opened: float
    events: int
    stalled: bool
    bookmarks_dropped: int


class _Stream:
    """An open watch stream's state, owned by the proxy's loop."""

    def __init__(self, stream_id: int, entry: LogEntry) -> None:
        self.id = stream_id
        self.entry = entry
        self.opened = time.time()
        self.commands: asyncio.Queue[_Command] = asyncio.Queue()
        self.stalled = False
        self.bookmarks_dropped = 0
        self.timers: list[asyncio.TimerHandle] = []

    def info(self) -> WatchInfo:
        return WatchInfo(
            self.id,
            self.entry.path,
            self.entry.query,
            self.entry.identity,
            self.opened,
            self.entry.events,
            self.stalled,
            self.bookmarks_dropped,
        )


# --------------------------------------------------------------------------- the proxy


class _ProxyCore:
    """Everything but the lifecycle: see :class:`FaultProxy` and :class:`ThreadedFaultProxy`."""

    def __init__(
        self,
        upstream: str,
        *,
        token: str | None = None,
        ca_cert: str | Path | None = None,
        forward_auth: bool = False,
        tls: bool = True,
        certificates: certs_mod.CertificateSet | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        seed: int | str = 0,
        identities: Mapping[str, str] | None = None,
        log_size: int = DEFAULT_LOG_SIZE,
        keep_bodies: int = 0,
    ) -> None:
        target = URL(upstream)
        if target.scheme not in ("http", "https") or not target.host:
            raise ValueError(f"upstream must be an http(s) URL, not {upstream!r}")
        if not is_loopback(target.host):
            raise ValueError(f"the fault proxy only talks to loopback API servers, not {target.host!r}")
        if not is_loopback(host) or host == "localhost":
            raise ValueError(f"the fault proxy only listens on a loopback address, not {host!r}")
        self.upstream = upstream.rstrip("/")
        self.token = token
        self.upstream_ca = Path(ca_cert) if ca_cert is not None else None
        self.forward_auth = forward_auth
        self.tls = tls
        self.host = host
        self.port = port
        self.seed = seed
        self.log = RequestLog(log_size, keep_bodies=keep_bodies)
        self._certificates = certificates
        self._identities: dict[str, str] = dict(identities or {})
        self._lock = threading.RLock()
        self._rules: list[FaultRule] = []
        self._watch_rules: list[WatchRule] = []
        self._rule_numbers = itertools.count()
        self._random = random.Random(f"{seed}/commands")
        self._streams: dict[int, _Stream] = {}
        self._stream_ids = itertools.count(1)
        self._tickers: dict[WatchRule, asyncio.Task[None]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._session: aiohttp.ClientSession | None = None
        self._runner: web.ServerRunner | None = None
        # ThreadedFaultProxy's lifecycle
        self._thread: threading.Thread | None = None
        self._stopping: asyncio.Event | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None

    # ------------------------------------------------------------------ endpoint

    @property
    def url(self) -> str:
        """The proxy's base URL (``https://127.0.0.1:<port>``); valid once started."""
        if self._runner is None:
            raise RuntimeError("the fault proxy is not started")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    @property
    def ca_cert(self) -> Path | None:
        """The CA that signed the proxy's serving certificate (None with ``tls=False``)."""
        if not self.tls:
            return None
        if self._certificates is None:
            raise RuntimeError("the fault proxy is not started")
        return self._certificates.ca_cert

    def name_token(self, token: str, name: str) -> None:
        """Log requests that carry bearer ``token`` under identity ``name``."""
        with self._lock:
            self._identities[token] = name

    def identity_of(self, token: str | None) -> str:
        """The log identity of a bearer token (``anonymous`` without one)."""
        if token is None:
            return "anonymous"
        with self._lock:
            return self._identities.get(token) or token_identity(token)

    def write_kubeconfig(
        self,
        path: str | Path,
        *,
        token: str | None = None,
        user: str = "fault-proxy-user",
        namespace: str | None = None,
    ) -> Path:
        """A kubeconfig for the proxy endpoint (its URL and CA) with bearer ``token``.

        Without ``forward_auth`` any token works (the proxy substitutes its own), so it
        defaults to a placeholder; a distinct token per client (see :meth:`name_token`)
        tells clients apart in the log. With ``forward_auth`` the token is required."""
        if token is None:
            if self.forward_auth:
                raise ValueError("with forward_auth the client's token reaches the API server: give one")
            token = DEFAULT_CLIENT_TOKEN
        ca = self.ca_cert
        config = render_kubeconfig(server=self.url, ca_cert=ca or Path(), user=user, token=token, namespace=namespace)
        if ca is None:
            del config["clusters"][0]["cluster"]["certificate-authority"]
        return write_kubeconfig(Path(path), config)

    def kube_client(self, *, token: str | None = None, request_timeout: float = 30.0) -> KubeClient:
        """A :class:`KubeClient` through the proxy (call inside a running loop; close it). It
        does not retry, so each injected fault reaches the caller."""
        if token is None and self.forward_auth:
            raise ValueError("with forward_auth the client's token reaches the API server: give one")
        return KubeClient.for_server(
            self.url,
            token=token or DEFAULT_CLIENT_TOKEN,
            ca_cert=self.ca_cert,
            request_timeout=request_timeout,
            retry_attempts=1,
        )

    # ------------------------------------------------------------------ rules

    def _rng(self, kind: str) -> random.Random:
        return random.Random(f"{self.seed}/{kind}/{next(self._rule_numbers)}")

    def add_rule(
        self,
        *,
        methods: str | Collection[str] | None = None,
        path: str | re.Pattern[str] | None = None,
        query: Mapping[str, str] | None = None,
        watch: bool | None = None,
        identity: str | None = None,
        respond: int | Literal["drop"] | None = None,
        probability: float = 1.0,
        count: int | None = None,
        latency: float | tuple[float, float] = 0.0,
        retry_after: float | None = None,
        reason: str | None = None,
        message: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> FaultRule:
        """Add a request rule (evaluated after the existing ones) and return it.

        Matching: ``methods`` (one or a set, e.g. ``{"PATCH", "PUT"}``), ``path`` (regex,
        ``re.search`` on the decoded path), ``query`` (parameters that must have exactly
        these values), ``watch`` (True: watches only, False: no watches, None: both),
        ``identity`` (as logged). A matching rule fires with ``probability``, at most
        ``count`` times. Firing adds ``latency`` seconds (or uniform in ``(low, high)``)
        and, with ``respond``, answers instead of the API server: a status code with a
        ``Status`` body (``reason``/``message`` override the defaults: 409 Conflict,
        410 Expired, 429 TooManyRequests with ``Retry-After: retry_after`` (default 1),
        500 InternalError, 503 ServiceUnavailable, ...; extra ``headers``), or
        :data:`DROP` to reset the connection."""
        if respond is not None and respond != DROP and not (isinstance(respond, int) and 400 <= respond <= 599):
            raise ValueError(f"respond must be a 4xx/5xx status or DROP, not {respond!r}")
        _check_share("probability", probability)
        _check_count(count)
        if isinstance(latency, tuple):
            if not 0.0 <= latency[0] <= latency[1]:
                raise ValueError(f"latency range must be 0 <= low <= high, not {latency!r}")
        elif latency < 0.0:
            raise ValueError(f"latency must be >= 0, not {latency!r}")
        if respond is None and latency == 0.0:
            raise ValueError("a rule needs a respond or a latency")
        if retry_after is None and respond == 429:
            retry_after = 1.0
        rule = FaultRule(
            methods=None if methods is None else frozenset(m.upper() for m in _one_of(methods)),
            path=_compile(path),
            query=dict(query or {}),
            watch=watch,
            identity=identity,
            respond=respond,
            probability=probability,
            count=count,
            latency=latency,
            retry_after=retry_after,
            reason=reason,
            message=message,
            headers=dict(headers or {}),
            rng=self._rng("request"),
        )
        with self._lock:
            self._rules.append(rule)
        return rule

    def add_watch_rule(
        self,
        action: WatchAction | str,
        *,
        path: str | re.Pattern[str] | None = None,
        identity: str | None = None,
        every: float | None = None,
        after: float | None = None,
        share: float = 1.0,
        count: int | None = None,
        how: CutHow = "reset",
        duration: float | None = None,
        code: int = 410,
        message: str | None = None,
    ) -> WatchRule:
        """Add a watch rule and return it.

        ``action``: :class:`WatchAction` ``CUT`` (``how``: ``eof``, ``reset`` or
        ``truncate``), ``STALL`` (for ``duration`` seconds, None: until resumed or the
        client gives up), ``ERROR`` (an in-stream ``ERROR`` event with ``code``, 410
        ``Expired`` by default, then the end of the stream) or ``DROP_BOOKMARKS``.
        Streams match on ``path`` (regex) and ``identity``. ``CUT``/``STALL``/``ERROR``
        need exactly one of ``every`` (each N seconds, act on each open matching stream
        with probability ``share``) or ``after`` (act on each new matching stream, with
        probability ``share``, N seconds after it opened). ``DROP_BOOKMARKS`` drops each
        BOOKMARK event of matching streams with probability ``share``. ``count`` bounds
        the streams acted on (the bookmarks dropped)."""
        action = WatchAction(action)
        _check_share("share", share)
        _check_count(count)
        if action is WatchAction.DROP_BOOKMARKS:
            if every is not None or after is not None:
                raise ValueError("DROP_BOOKMARKS applies continuously: no every/after")
        elif (every is None) == (after is None):
            raise ValueError(f"{action.value} needs exactly one of every= or after=")
        if every is not None and every <= 0:
            raise ValueError("every must be > 0")
        if after is not None and after < 0:
            raise ValueError("after must be >= 0")
        if how not in ("eof", "reset", "truncate"):
            raise ValueError(f"how must be eof, reset or truncate, not {how!r}")
        rule = WatchRule(
            action=action,
            path=_compile(path),
            identity=identity,
            every=every,
            after=after,
            share=share,
            count=count,
            how=how,
            duration=duration,
            code=code,
            message=message,
            rng=self._rng("watch"),
        )
        with self._lock:
            self._watch_rules.append(rule)
        if rule.every is not None and self._loop is not None:
            self._on_loop(lambda: self._start_ticker(rule))
        return rule

    def remove_rule(self, rule: FaultRule | WatchRule) -> None:
        """Remove a rule (a no-op if it is not there)."""
        with self._lock:
            if isinstance(rule, FaultRule):
                if rule in self._rules:
                    self._rules.remove(rule)
                return
            if rule in self._watch_rules:
                self._watch_rules.remove(rule)
        if self._loop is not None:
            self._on_loop(lambda: self._stop_ticker(rule))

    def clear_rules(self) -> None:
        """Remove every request and watch rule (open stalls stay; see :meth:`resume_watches`)."""
        with self._lock:
            watch_rules = list(self._watch_rules)
            self._rules.clear()
        for rule in watch_rules:
            self.remove_rule(rule)

    @property
    def rules(self) -> tuple[FaultRule, ...]:
        with self._lock:
            return tuple(self._rules)

    @property
    def watch_rules(self) -> tuple[WatchRule, ...]:
        with self._lock:
            return tuple(self._watch_rules)

    # ------------------------------------------------------------------ watch commands

    def open_watches(
        self, *, path: str | re.Pattern[str] | None = None, identity: str | None = None
    ) -> list[WatchInfo]:
        """The open watch streams (matching ``path`` regex and ``identity``), oldest first."""
        pattern = _compile(path)
        with self._lock:
            streams = list(self._streams.values())
        return [
            s.info()
            for s in streams
            if (pattern is None or pattern.search(s.entry.path)) and (identity is None or s.entry.identity == identity)
        ]

    async def wait_for_watches(
        self,
        count: int = 1,
        *,
        path: str | re.Pattern[str] | None = None,
        identity: str | None = None,
        within: float = 10.0,
    ) -> list[WatchInfo]:
        """Poll (from any loop) until at least ``count`` matching watches are open; return them."""

        async def enough() -> list[WatchInfo]:
            found = self.open_watches(path=path, identity=identity)
            assert len(found) >= count, f"{len(found)} of {count} watches open: {found}"
            return found

        return await eventually(enough, within=within, interval=0.02, what="watches open through the fault proxy")

    def cut_watches(
        self,
        *,
        path: str | re.Pattern[str] | None = None,
        identity: str | None = None,
        share: float = 1.0,
        how: CutHow = "reset",
    ) -> int:
        """Cut open matching watches now (each with probability ``share``); return how many."""
        if how not in ("eof", "reset", "truncate"):
            raise ValueError(f"how must be eof, reset or truncate, not {how!r}")
        return self._command_streams(_Cut(how), path=path, identity=identity, share=share)

    def stall_watches(
        self,
        *,
        path: str | re.Pattern[str] | None = None,
        identity: str | None = None,
        share: float = 1.0,
        duration: float | None = None,
    ) -> int:
        """Stop forwarding on open matching watches (each with probability ``share``) for
        ``duration`` seconds (None: until :meth:`resume_watches`); return how many."""
        return self._command_streams(_Stall(duration), path=path, identity=identity, share=share)

    def resume_watches(self, *, path: str | re.Pattern[str] | None = None, identity: str | None = None) -> int:
        """End the stall of matching watches; return how many were told."""
        return self._command_streams(_Resume(), path=path, identity=identity, share=1.0)

    def inject_watch_error(
        self,
        *,
        path: str | re.Pattern[str] | None = None,
        identity: str | None = None,
        share: float = 1.0,
        code: int = 410,
        message: str | None = None,
    ) -> int:
        """Send an in-stream ``ERROR`` event (410 ``Expired`` by default) on open matching
        watches (each with probability ``share``), then end them; return how many."""
        return self._command_streams(_Inject(code, message), path=path, identity=identity, share=share)

    def _command_streams(
        self,
        command: _Command,
        *,
        path: str | re.Pattern[str] | None,
        identity: str | None,
        share: float,
    ) -> int:
        _check_share("share", share)
        pattern = _compile(path)

        def send() -> int:
            with self._lock:
                streams = sorted(self._streams.values(), key=lambda s: s.id)
            sent = 0
            for stream in streams:
                if pattern is not None and not pattern.search(stream.entry.path):
                    continue
                if identity is not None and stream.entry.identity != identity:
                    continue
                if share < 1.0 and self._random.random() >= share:
                    continue
                stream.commands.put_nowait(command)
                sent += 1
            return sent

        if self._loop is None:
            return 0
        return self._on_loop(send)

    # ------------------------------------------------------------------ loop plumbing

    def _on_loop(self, function: Callable[[], T]) -> T:
        """Run ``function`` on the proxy's loop (directly when already there) and return its result."""
        loop = self._loop
        if loop is None or threading.get_ident() == self._loop_thread:
            return function()
        if loop.is_closed():
            raise RuntimeError("the fault proxy's loop is closed")
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                future.set_result(function())
            except BaseException as exc:
                future.set_exception(exc)

        loop.call_soon_threadsafe(run)
        return future.result(timeout=_ON_LOOP_TIMEOUT)

    def _start_ticker(self, rule: WatchRule) -> None:
        if rule.every is None or rule in self._tickers:
            return
        with self._lock:
            if rule not in self._watch_rules:
                return
        self._tickers[rule] = asyncio.get_running_loop().create_task(self._tick(rule, rule.every))

    def _stop_ticker(self, rule: WatchRule) -> None:
        task = self._tickers.pop(rule, None)
        if task is not None:
            task.cancel()

    async def _tick(self, rule: WatchRule, every: float) -> None:
        while not rule.exhausted:
            await asyncio.sleep(every)
            with self._lock:
                streams = sorted(self._streams.values(), key=lambda s: s.id)
            for stream in streams:
                if rule.matches(stream.entry.path, stream.entry.identity) and rule._fire():
                    stream.commands.put_nowait(rule._command())

    # ------------------------------------------------------------------ serving

    async def _serve(self) -> None:
        """Start listening on the running loop."""
        loop = asyncio.get_running_loop()
        ssl_context: ssl.SSLContext | None = None
        if self.tls:
            if self._certificates is None:
                # Kept across stop/start (same port, same CA: a restart looks like an API server
                # outage to clients with the proxy's kubeconfig); removed with the proxy object.
                cert_dir = Path(tempfile.mkdtemp(prefix="united-faultproxy-"))
                weakref.finalize(self, shutil.rmtree, cert_dir, True)
                self._certificates = await asyncio.to_thread(certs_mod.generate, cert_dir)
            ssl_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ssl_context.load_cert_chain(self._certificates.serving_cert, self._certificates.serving_key)
        upstream_ssl: ssl.SSLContext | bool = True
        if self.upstream.startswith("https:"):
            upstream_ssl = ssl.create_default_context(cafile=str(self.upstream_ca) if self.upstream_ca else None)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=upstream_ssl, limit=0),
            auto_decompress=False,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
        )
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            self.port = int(sock.getsockname()[1])
            server = web.Server(self._handle, handler_cancellation=True)
            runner = web.ServerRunner(server, shutdown_timeout=1.0)
            await runner.setup()
            self._runner = runner
            await web.SockSite(runner, sock, ssl_context=ssl_context).start()
        except BaseException:
            sock.close()
            await self._shutdown()
            raise
        self._loop = loop
        self._loop_thread = threading.get_ident()
        for rule in self.watch_rules:
            self._start_ticker(rule)

    async def _shutdown(self) -> None:
        """Reset every client connection (open watches included), stop listening; idempotent.

        Resetting rather than closing gracefully is what a dying API server does, and a
        graceful TLS close would wait for the client's close_notify, which may come after
        a threaded proxy's loop is gone (leaking the socket)."""
        for rule in list(self._tickers):
            self._stop_ticker(rule)
        if self._runner is not None:
            server = self._runner.server
            for handler in server.connections if server is not None else ():
                if handler.transport is not None:
                    handler.transport.abort()
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None
            # Upstream TLS connections close with a close_notify exchange that needs a few
            # more turns of this loop; a threaded proxy's loop ends right after, which left
            # their sockets unclosed (ResourceWarnings in whatever test ran next).
            await asyncio.sleep(UPSTREAM_CLOSE_SECONDS)
        self._loop = None
        self._loop_thread = None

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        started = time.monotonic()
        query = request.query
        watch = is_watch_request(request.method, request.path, query)
        verb, resource, namespace, name = describe_request(request.method, request.path, query)
        token = _bearer(request.headers.get("Authorization"))
        entry = self.log._new(
            time=time.time(),
            method=request.method,
            path=request.path,
            query=tuple(query.items()),
            content_type=request.headers.get("Content-Type", ""),
            identity=self.identity_of(token),
            user_agent=request.headers.get("User-Agent", ""),
            verb=verb,
            resource=resource,
            namespace=namespace,
            name=name,
            watch=watch,
        )
        try:
            return await self._answer(request, entry)
        finally:
            entry.duration = time.monotonic() - started

    def _decide(self, entry: LogEntry, query: Mapping[str, str]) -> tuple[float, FaultRule | None]:
        latency = 0.0
        with self._lock:
            for rule in self._rules:
                if not rule.matches(entry.method, entry.path, query, watch=entry.watch, identity=entry.identity):
                    continue
                rule.matched += 1
                if not rule._fire():
                    continue
                latency += rule._draw_latency()
                if rule.respond is not None:
                    return latency, rule
        return latency, None

    async def _answer(self, request: web.BaseRequest, entry: LogEntry) -> web.StreamResponse:
        body = await request.content.read()
        if self.log.keep_bodies:
            entry.body = body[: self.log.keep_bodies]
        latency, rule = self._decide(entry, request.query)
        if latency > 0:
            entry.faults.append(f"latency:{latency:.3f}")
            await asyncio.sleep(latency)
        if rule is not None:
            if rule.respond == DROP:
                entry.status = 0
                entry.faults.append("drop")
                return _abort(request)
            code = int(rule.respond or 500)
            entry.status = code
            entry.faults.append(f"status:{code}")
            headers = dict(rule.headers)
            if rule.retry_after is not None:
                headers.setdefault("Retry-After", f"{rule.retry_after:g}")
            status = status_object(code, reason=rule.reason, message=rule.message)
            if rule.retry_after is not None:
                status["details"] = {"retryAfterSeconds": int(rule.retry_after)}
            return web.json_response(status, status=code, headers=headers)
        return await self._forward(request, entry, body)

    def _upstream_headers(self, headers: CIMultiDictProxy[str], *, watch: bool) -> CIMultiDict[str]:
        out: CIMultiDict[str] = CIMultiDict()
        for key, value in headers.items():
            lower = key.lower()
            if lower in _HOP_BY_HOP or lower in ("host", "content-length", "authorization"):
                continue
            if watch and lower == "accept-encoding":
                continue  # watch faults edit the stream: keep it uncompressed
            out.add(key, value)
        if self.forward_auth:
            if "Authorization" in headers:
                out["Authorization"] = headers["Authorization"]
        elif self.token:
            out["Authorization"] = f"Bearer {self.token}"
        return out

    async def _forward(self, request: web.BaseRequest, entry: LogEntry, body: bytes) -> web.StreamResponse:
        assert self._session is not None
        url = URL(self.upstream + request.raw_path, encoded=True)
        try:
            upstream = await self._session.request(
                request.method,
                url,
                headers=self._upstream_headers(request.headers, watch=entry.watch),
                data=body or None,
                allow_redirects=False,
                skip_auto_headers=("User-Agent", "Content-Type", "Accept-Encoding"),
            )
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            entry.error = f"upstream: {exc!r}"
            entry.status = 502
            status = status_object(502, message=f"fault proxy: the API server is unreachable: {exc!r}")
            return web.json_response(status, status=502)
        entry.forwarded = True
        entry.status = upstream.status
        try:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for key, value in upstream.headers.items():
                if key.lower() not in _HOP_BY_HOP and key.lower() != "content-length":
                    response.headers.add(key, value)
            if entry.watch and upstream.status == 200:
                await self._pump_watch(request, response, upstream, entry)
            else:
                if upstream.content_length is not None:
                    response.content_length = upstream.content_length
                await self._pump(request, response, upstream, entry)
            return response
        finally:
            if entry.watch:
                upstream.close()
            else:
                upstream.release()  # back to the pool when read to the end, else closed

    async def _pump(
        self, request: web.BaseRequest, response: web.StreamResponse, upstream: aiohttp.ClientResponse, entry: LogEntry
    ) -> None:
        try:
            await response.prepare(request)
        except ConnectionError:
            return
        try:
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
        except ConnectionError:
            return  # the client went away
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            entry.error = f"upstream broke: {exc!r}"
            _abort(request)
            return
        with contextlib.suppress(ConnectionError):
            await response.write_eof()

    # ------------------------------------------------------------------ watch streams

    def _open_stream(self, entry: LogEntry) -> _Stream:
        stream = _Stream(next(self._stream_ids), entry)
        loop = asyncio.get_running_loop()
        with self._lock:
            self._streams[stream.id] = stream
            rules = [r for r in self._watch_rules if r.after is not None]
        for rule in rules:
            if rule.matches(entry.path, entry.identity) and rule._fire():
                stream.timers.append(loop.call_later(rule.after or 0.0, self._apply_after, rule, stream))
        return stream

    def _apply_after(self, rule: WatchRule, stream: _Stream) -> None:
        with self._lock:
            active = rule in self._watch_rules and stream.id in self._streams
        if active:
            stream.commands.put_nowait(rule._command())

    def _close_stream(self, stream: _Stream) -> None:
        for timer in stream.timers:
            timer.cancel()
        with self._lock:
            self._streams.pop(stream.id, None)

    def _bookmark_rules(self, entry: LogEntry) -> list[WatchRule]:
        with self._lock:
            return [
                r
                for r in self._watch_rules
                if r.action is WatchAction.DROP_BOOKMARKS and r.matches(entry.path, entry.identity)
            ]

    def _filter_events(self, lines: bytes, stream: _Stream) -> bytes:
        """Count the complete event lines in ``lines`` and drop BOOKMARKs as the rules say."""
        rules = self._bookmark_rules(stream.entry) if b'"BOOKMARK"' in lines else []
        if not rules:
            stream.entry.events += lines.count(b"\n")
            return lines
        kept: list[bytes] = []
        for line in lines.splitlines(keepends=True):
            if b'"BOOKMARK"' in line:
                with contextlib.suppress(ValueError):
                    event = json.loads(line)
                    if isinstance(event, dict) and event.get("type") == "BOOKMARK" and any(r._fire() for r in rules):
                        if not stream.bookmarks_dropped:
                            stream.entry.faults.append("drop-bookmarks")
                        stream.bookmarks_dropped += 1
                        continue
            kept.append(line)
            stream.entry.events += 1
        return b"".join(kept)

    async def _flush(self, response: web.StreamResponse, pending: bytes, stream: _Stream, *, final: bool) -> bytes:
        """Forward the complete lines of ``pending`` (everything when ``final``); return the rest."""
        end = len(pending) if final else pending.rfind(b"\n") + 1
        if end <= 0:
            return pending
        data = self._filter_events(pending[:end], stream)
        if data:
            await response.write(data)
        return pending[end:]

    async def _pump_watch(
        self, request: web.BaseRequest, response: web.StreamResponse, upstream: aiohttp.ClientResponse, entry: LogEntry
    ) -> None:
        response.enable_chunked_encoding()
        stream = self._open_stream(entry)
        loop = asyncio.get_running_loop()
        reader: asyncio.Task[bytes] | None = None
        commander: asyncio.Task[_Command] = loop.create_task(stream.commands.get())
        resume: asyncio.TimerHandle | None = None
        pending = b""
        upstream_done = False
        try:
            await response.prepare(request)
            while True:
                if reader is None and not stream.stalled and not upstream_done:
                    reader = loop.create_task(upstream.content.readany())
                waiting: set[asyncio.Task[Any]] = {commander} if reader is None else {commander, reader}
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if commander in done:
                    command = commander.result()
                    commander = loop.create_task(stream.commands.get())
                    if isinstance(command, _Stall):
                        stream.stalled = True
                        entry.faults.append("stall")
                        if resume is not None:
                            resume.cancel()
                        if command.duration is not None:
                            resume = loop.call_later(command.duration, stream.commands.put_nowait, _Resume())
                    elif isinstance(command, _Resume):
                        stream.stalled = False
                        pending = await self._flush(response, pending, stream, final=upstream_done)
                        if upstream_done:
                            await response.write_eof()
                            return
                    elif isinstance(command, _Cut):
                        entry.faults.append(f"cut:{command.how}")
                        await _cut(request, response, pending, command.how)
                        return
                    else:
                        entry.faults.append(f"error:{command.code}")
                        event = {"type": "ERROR", "object": status_object(command.code, message=command.message)}
                        await response.write(json.dumps(event).encode() + b"\n")
                        await response.write_eof()
                        return
                if reader is not None and reader.done():
                    try:
                        chunk = reader.result()
                    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                        entry.error = f"upstream broke: {exc!r}"
                        _abort(request)
                        return
                    finally:
                        reader = None
                    if chunk:
                        pending += chunk
                    else:
                        upstream_done = True
                    if not stream.stalled:
                        pending = await self._flush(response, pending, stream, final=upstream_done)
                        if upstream_done:
                            await response.write_eof()
                            return
        except ConnectionError:
            return  # the client went away
        finally:
            self._close_stream(stream)
            if resume is not None:
                resume.cancel()
            for task in (reader, commander):
                if task is not None and not task.done():
                    task.cancel()


def _abort(request: web.BaseRequest) -> web.Response:
    """Reset the client's connection (RST, no answer). The returned response is never sent."""
    transport = request.transport
    if transport is not None:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    return web.Response(status=500)


async def _cut(request: web.BaseRequest, response: web.StreamResponse, pending: bytes, how: CutHow) -> None:
    if how == "reset":
        _abort(request)
        return
    if how == "truncate":
        line = pending.split(b"\n", 1)[0]
        await response.write(line[: max(1, len(line) // 2)] if len(line) > 1 else _TRUNCATED_EVENT)
    await response.write_eof()


class FaultProxy(_ProxyCore):
    """The fault proxy on the caller's event loop: ``async with FaultProxy(...) as proxy``.

    ``upstream``: the API server's URL (loopback only). ``token``: the bearer token the
    proxy sends upstream (ignored with ``forward_auth=True``, which forwards the
    client's ``Authorization`` instead). ``ca_cert``: the API server's CA. ``tls``:
    serve HTTPS with ``certificates`` (a :class:`~united.devcluster.certs.CertificateSet`,
    generated per proxy when not given) or plain HTTP. ``seed``: for every random
    decision. ``identities``: bearer token -> name for the log. ``log_size``: the ring
    buffer's size; ``keep_bodies``: bytes of each request body kept in the log.
    """

    async def start(self) -> Self:
        """Listen (on the running loop); return self."""
        if self._runner is not None:
            raise RuntimeError("the fault proxy is started already")
        await self._serve()
        return self

    async def stop(self) -> None:
        """Reset every client connection (open watches included) and stop listening."""
        await self._shutdown()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


class ThreadedFaultProxy(_ProxyCore):
    """The fault proxy on its own event loop in a daemon thread: ``with ThreadedFaultProxy(...)``.

    Same constructor and methods as :class:`FaultProxy`; ``start``/``stop`` are
    synchronous. Use it when the proxy must outlive (or not load) the test's loop,
    e.g. in front of a controller subprocess."""

    def start(self, *, timeout: float = 30.0) -> Self:
        """Start the thread; return once the proxy listens."""
        if self._thread is not None:
            raise RuntimeError("the fault proxy is started already")
        self._started.clear()
        self._error = None
        self._thread = threading.Thread(target=self._main, name="fault-proxy", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout):
            raise TimeoutError(f"the fault proxy did not start within {timeout:g}s")
        if self._error is not None:
            self._thread.join(timeout)
            self._thread = None
            raise RuntimeError(f"the fault proxy failed to start: {self._error!r}") from self._error
        return self

    def stop(self, *, timeout: float = 30.0) -> None:
        """Reset every client connection, stop listening and join the thread."""
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed in between
                loop.call_soon_threadsafe(stopping.set)
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise TimeoutError(f"the fault proxy's thread did not stop within {timeout:g}s")
            self._thread = None

    def _main(self) -> None:
        try:
            asyncio.run(self._amain())
        except BaseException as exc:  # reported by start()
            self._error = exc
        finally:
            self._started.set()

    async def _amain(self) -> None:
        self._stopping = asyncio.Event()
        try:
            await self._serve()
            self._started.set()
            await self._stopping.wait()
        finally:
            await self._shutdown()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


__all__ = [
    "DEFAULT_LOG_SIZE",
    "DROP",
    "WRITE_METHODS",
    "CutHow",
    "FaultProxy",
    "FaultRule",
    "LogEntry",
    "LogFilter",
    "RequestLog",
    "ThreadedFaultProxy",
    "WatchAction",
    "WatchInfo",
    "WatchRule",
    "describe_request",
    "is_loopback",
    "is_watch_request",
    "status_object",
    "token_identity",
]
