"""Kubernetes Events about the objects the controller manages, without ever hurting it.

Why Events at all: ``kubectl describe ud/x`` is where people look first, and an
Event there ("SubsetCreated", "InvalidSpec") explains what the controller did
without anyone reading its logs. But Events are auxiliary, so this recorder is
built so that they can never make a reconcile slower or fail:

* :meth:`EventRecorder.event` only appends to a bounded in-memory queue and returns;
  it never awaits, never blocks and never raises. A full queue drops the Event
  (counted; logged once when it fills and once, with the number dropped, when the
  poster has emptied it, so a cold start of thousands of objects is two log lines,
  not one per Event). A background task posts them (kopf does the same).
* Posting failures (RBAC, a namespace being deleted, API-server trouble) are
  logged and counted in ``united_events_total{outcome="failed"}``, never retried:
  a lost Event costs nothing, a retry storm does. While the API server does not answer
  at all (an outage), only the first failure is logged, and one line with the number
  lost once it answers again: every failing pass records a Warning, and an
  outage must not add a line per pass for it. Not the manager's failure log, where
  informers and reconciles retry until they recover: an Event is never retried, so it
  would hold that log's recovery line until some later Event happened to be posted.

**API group.** These are ``core/v1`` Events (``/api/v1/namespaces/{ns}/events``,
with ``involvedObject``, ``source.component``, ``count``, first/last timestamps),
the shape ``kubectl describe`` of Kubernetes 1.20 shows and client-go's recorder
writes. Note that ``united.kube.client.EVENTS`` addresses ``events.k8s.io/v1``, a
different representation; this module therefore uses its own :data:`CORE_EVENTS`
resource, and the controller's RBAC must grant ``create`` and ``patch`` on
``events`` in the core (``""``) API group.

**Aggregation** (client-go's ``EventCorrelator``, simplified): an Event with the same
(involved object uid, type, reason, message) as one posted less than
``aggregation_window`` (10 min) before is not created again; the existing Event's
``count`` and ``lastTimestamp`` are PATCHed instead. The patch is a JSON merge patch
(``application/merge-patch+json``), chosen explicitly: it works for every kind, and
for two scalar fields it means the same as a strategic merge patch. If that patch
fails (the Event expired — the API server keeps Events one hour by default — or
was deleted) this occurrence is dropped and forgotten, so the next one creates a
fresh Event.

**Rate limit** (client-go's ``EventSourceObjectSpamFilter`` numbers): a token bucket
per involved object, burst 25, refilled with one token every 5 minutes. A
controller stuck in a tight error loop on one object thus writes at most 25 Events
for it in a burst, then one per 5 minutes, while every other object keeps its own
budget. The check happens in :meth:`EventRecorder.event`, before queueing, so a
spamming object cannot fill the queue either. Every occurrence costs a token, an
aggregated one included, exactly like client-go.

An Event is a write like any other: when the client's leader-election fence refuses it
(``Fenced``: this replica no longer surely leads) it is dropped and counted as ``fenced``.

Events about Events are never emitted (that way lies infinite recursion through
any watcher that reacts to Events).

:meth:`EventRecorder.flush` waits, with a deadline, until everything queued has been
posted; call it at shutdown before closing the API client.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, NamedTuple, Protocol, Self

import structlog

from united.kube.client import JSON, PatchType, Resource
from united.kube.errors import ApiError, Fenced
from united.runtime.metrics import Metrics

CORE_EVENTS = Resource("", "v1", "events", True, "Event")
"""``core/v1`` Events (``united.kube.client.EVENTS`` is ``events.k8s.io/v1``)."""

MAX_MESSAGE_LENGTH = 1024
MAX_REASON_LENGTH = 128
TRUNCATION_MARK = "..."
DEFAULT_QUEUE_SIZE = 1000
DEFAULT_AGGREGATION_WINDOW = 600.0
DEFAULT_BURST = 25
DEFAULT_REFILL_INTERVAL = 300.0
# client-go's correlator LRU size; bounds memory for dedup entries and rate-limit buckets.
DEFAULT_CACHE_SIZE = 4096
_MAX_NAME_LENGTH = 253

_log = structlog.get_logger(__name__)


class EventType(StrEnum):
    """``type`` of an Event."""

    NORMAL = "Normal"
    WARNING = "Warning"


class Outcome(StrEnum):
    """The ``outcome`` label of ``united_events_total``."""

    CREATED = "created"
    AGGREGATED = "aggregated"
    RATE_LIMITED = "rate_limited"
    QUEUE_FULL = "queue_full"
    FAILED = "failed"
    IGNORED = "ignored"
    FENCED = "fenced"


class EventSink(Protocol):
    """The two API calls the recorder makes (:class:`~united.kube.client.KubeClient` has them)."""

    async def create(self, resource: Resource, body: JSON, *, namespace: str | None = None) -> JSON: ...

    async def patch(
        self,
        resource: Resource,
        name: str,
        body: JSON,
        *,
        patch_type: PatchType,
        namespace: str | None = None,
    ) -> JSON: ...


class ObjectRef(NamedTuple):
    """What an Event's ``involvedObject`` says about the object."""

    api_version: str
    kind: str
    name: str
    namespace: str
    uid: str
    resource_version: str

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectRef:
        meta = obj.get("metadata") or {}
        return cls(
            api_version=str(obj.get("apiVersion") or ""),
            kind=str(obj.get("kind") or ""),
            name=str(meta.get("name") or ""),
            namespace=str(meta.get("namespace") or ""),
            uid=str(meta.get("uid") or ""),
            resource_version=str(meta.get("resourceVersion") or ""),
        )

    @property
    def identity(self) -> str:
        """The uid, or (for an object without one) its kind and name."""
        return self.uid or f"{self.api_version}/{self.kind}/{self.namespace}/{self.name}"

    def as_involved_object(self) -> JSON:
        ref: JSON = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:
            ref["namespace"] = self.namespace
        if self.uid:
            ref["uid"] = self.uid
        if self.resource_version:
            ref["resourceVersion"] = self.resource_version
        return ref


@dataclass(frozen=True, slots=True)
class _Pending:
    ref: ObjectRef
    type: EventType
    reason: str
    message: str
    at: datetime


@dataclass(slots=True)
class _Posted:
    """An Event already in the API server that repeats can be aggregated into."""

    name: str
    namespace: str
    count: int
    last_seen: float


@dataclass(slots=True)
class _Bucket:
    tokens: float
    updated: float


def truncate_message(message: str, limit: int = MAX_MESSAGE_LENGTH) -> str:
    """``message`` cut to at most ``limit`` characters, ending in ``...`` when cut."""
    if len(message) <= limit:
        return message
    return message[: limit - len(TRUNCATION_MARK)] + TRUNCATION_MARK


def _timestamp(at: datetime) -> str:
    # metav1.Time: RFC 3339, second precision, UTC.
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _event_name(ref: ObjectRef) -> str:
    # client-go names Events "<object>.<unix nanos in hex>"; the random suffix keeps two
    # replicas (or two Events within one clock tick) from colliding.
    suffix = f".{time.time_ns():x}{secrets.token_hex(2)}"
    base = (ref.name or ref.kind.lower() or "object")[: _MAX_NAME_LENGTH - len(suffix)].rstrip(".-")
    return f"{base}{suffix}"


def _is_event(ref: ObjectRef) -> bool:
    return ref.kind == "Event" and (ref.api_version == "v1" or ref.api_version.startswith("events.k8s.io/"))


class EventRecorder:
    """Queues Events and posts them from a background task; see the module docstring.

    Use as ``async with EventRecorder(client, component="united-controller") as recorder:``
    or call :meth:`start` and :meth:`close` explicitly.
    """

    def __init__(
        self,
        sink: EventSink,
        *,
        component: str = "united-controller",
        instance: str | None = None,
        metrics: Metrics | None = None,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        aggregation_window: float = DEFAULT_AGGREGATION_WINDOW,
        burst: int = DEFAULT_BURST,
        refill_interval: float = DEFAULT_REFILL_INTERVAL,
        cache_size: int = DEFAULT_CACHE_SIZE,
        clock: Callable[[], float] | None = None,
        wall_clock: Callable[[], datetime] | None = None,
    ) -> None:
        if queue_size < 1 or burst < 1 or refill_interval <= 0 or cache_size < 1:
            raise ValueError("need queue_size >= 1, burst >= 1, refill_interval > 0, cache_size >= 1")
        self._sink = sink
        self.component = component
        self.instance = instance or os.environ.get("POD_NAME") or socket.gethostname()
        self._metrics = metrics
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue(maxsize=queue_size)
        self._window = aggregation_window
        self._burst = burst
        self._refill_interval = refill_interval
        self._cache_size = cache_size
        self._clock = clock
        self._wall_clock = wall_clock or (lambda: datetime.now(UTC))
        self._posted: OrderedDict[tuple[str, str, str, str], _Posted] = OrderedDict()
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self._task: asyncio.Task[None] | None = None
        self._dropped = 0
        """Events dropped since the queue last filled; logged when the poster has emptied it."""
        self._unanswered = 0
        """Events lost since the API server last answered; logged when it answers again."""

    # -- recording (synchronous, never raises) ---------------------------------------------

    def normal(self, obj: Mapping[str, Any], reason: str, message: str) -> None:
        """Record a ``Normal`` Event about ``obj``."""
        self.event(obj, EventType.NORMAL, reason, message)

    def warning(self, obj: Mapping[str, Any], reason: str, message: str) -> None:
        """Record a ``Warning`` Event about ``obj``."""
        self.event(obj, EventType.WARNING, reason, message)

    def event(self, obj: Mapping[str, Any], event_type: EventType | str, reason: str, message: str) -> None:
        """Queue an Event about ``obj`` (a dict with apiVersion, kind and metadata).

        Returns at once; never raises. Dropped (and counted) if ``obj`` is an Event,
        if ``obj``'s rate limit is exhausted or if the queue is full.
        """
        try:
            ref = ObjectRef.of(obj)
            if _is_event(ref) or not ref.name or not ref.kind:
                self._count(Outcome.IGNORED)
                _log.debug("event ignored", kind=ref.kind, name=ref.name, reason=reason)
                return
            if not self._take_token(ref.identity):
                self._count(Outcome.RATE_LIMITED)
                _log.debug("event rate-limited", kind=ref.kind, name=ref.name, reason=reason)
                return
            pending = _Pending(
                ref=ref,
                type=EventType(event_type),
                reason=reason[:MAX_REASON_LENGTH],
                message=truncate_message(message),
                at=self._wall_clock(),
            )
            self._queue.put_nowait(pending)
        except asyncio.QueueFull:
            self._count(Outcome.QUEUE_FULL)
            if not self._dropped:
                _log.warning("event queue full; dropping events until it is emptied", kind=ref.kind, reason=reason)
            self._dropped += 1
        except Exception:
            # A bug here must not propagate into the reconcile that wanted to record.
            self._count(Outcome.FAILED)
            _log.exception("recording an event failed", reason=reason)

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Start the background poster (in the running loop)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="event-recorder")

    async def flush(self, *, within: float = 5.0) -> bool:
        """Wait until every queued Event has been handled, at most ``within`` seconds.

        Returns whether the queue was drained; what is left is dropped at :meth:`close`.
        """
        if self._task is None or self._task.done():
            if self._queue.empty():
                return True
            _log.warning("event recorder not running; cannot flush", pending=self._queue.qsize())
            return False
        try:
            async with asyncio.timeout(within):
                await self._queue.join()
        except TimeoutError:
            _log.warning("flushing events timed out", pending=self._queue.qsize(), within=within)
            return False
        return True

    async def close(self, *, within: float = 5.0) -> bool:
        """Flush (with a deadline), then stop the background poster. Returns whether
        everything queued was handled."""
        drained = await self.flush(within=within)
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise
        return drained

    async def __aenter__(self) -> Self:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def pending(self) -> int:
        """Events queued and not yet handled."""
        return self._queue.qsize()

    # -- internals --------------------------------------------------------------------------

    def _now(self) -> float:
        if self._clock is not None:
            return self._clock()
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:
            return time.monotonic()

    def _count(self, outcome: Outcome) -> None:
        if self._metrics is not None:
            self._metrics.event_outcome(outcome.value)

    def _take_token(self, identity: str) -> bool:
        now = self._now()
        bucket = self._buckets.get(identity)
        if bucket is None:
            bucket = _Bucket(tokens=float(self._burst), updated=now)
            self._buckets[identity] = bucket
            if len(self._buckets) > self._cache_size:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(identity)
            elapsed = max(now - bucket.updated, 0.0)
            bucket.tokens = min(float(self._burst), bucket.tokens + elapsed / self._refill_interval)
            bucket.updated = now
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True

    async def _run(self) -> None:
        while True:
            pending = await self._queue.get()
            try:
                await self._post(pending)
            except asyncio.CancelledError:
                raise
            except Fenced:
                self._count(Outcome.FENCED)
                _log.debug("event refused: not the leader", reason=pending.reason)
            except Exception:
                self._count(Outcome.FAILED)
                _log.exception("posting an event failed unexpectedly", reason=pending.reason)
            finally:
                self._queue.task_done()
            if self._dropped and self._queue.empty():
                _log.warning("event queue emptied", dropped=self._dropped)
                self._dropped = 0

    def _failed(self, exc: ApiError, log: Any, message: str, **fields: Any) -> None:
        """Counted every time; logged every time the API server refused it, once per outage
        when it did not answer at all."""
        self._count(Outcome.FAILED)
        if not exc.unanswered:
            self._answered()
            log.warning(message, error=str(exc), **fields)
            return
        if not self._unanswered:
            log.warning(f"{message}; events are dropped until the API server answers", error=str(exc), **fields)
        self._unanswered += 1

    def _answered(self) -> None:
        if self._unanswered:
            _log.info("the API server answers events again", lost=self._unanswered)
            self._unanswered = 0

    async def _post(self, pending: _Pending) -> None:
        ref = pending.ref
        key = (ref.identity, pending.type.value, pending.reason, pending.message)
        now = self._now()
        log = _log.bind(
            kind=ref.kind, name=ref.name, namespace=ref.namespace, type=pending.type.value, reason=pending.reason
        )
        posted = self._posted.get(key)
        if posted is not None and now - posted.last_seen < self._window:
            patch: JSON = {"count": posted.count + 1, "lastTimestamp": _timestamp(pending.at)}
            try:
                await self._sink.patch(
                    CORE_EVENTS, posted.name, patch, patch_type=PatchType.MERGE, namespace=posted.namespace
                )
            except ApiError as exc:
                self._posted.pop(key, None)
                self._failed(exc, log, "aggregating a repeated event failed; dropped", event_name=posted.name)
                return
            self._answered()
            posted.count += 1
            posted.last_seen = now
            self._posted.move_to_end(key)
            self._count(Outcome.AGGREGATED)
            return

        namespace = ref.namespace or "default"  # Events about cluster-scoped objects go to "default"
        timestamp = _timestamp(pending.at)
        body: JSON = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": _event_name(ref), "namespace": namespace},
            "involvedObject": ref.as_involved_object(),
            "type": pending.type.value,
            "reason": pending.reason,
            "message": pending.message,
            "source": {"component": self.component, "host": self.instance},
            "reportingComponent": self.component,
            "reportingInstance": self.instance,
            "firstTimestamp": timestamp,
            "lastTimestamp": timestamp,
            "count": 1,
        }
        try:
            created = await self._sink.create(CORE_EVENTS, body, namespace=namespace)
        except ApiError as exc:
            self._failed(exc, log, "posting an event failed", status=exc.status)
            return
        self._answered()
        name = str((created.get("metadata") or {}).get("name") or body["metadata"]["name"])
        self._posted[key] = _Posted(name=name, namespace=namespace, count=1, last_seen=now)
        if len(self._posted) > self._cache_size:
            self._posted.popitem(last=False)
        self._count(Outcome.CREATED)


__all__ = [
    "CORE_EVENTS",
    "DEFAULT_AGGREGATION_WINDOW",
    "DEFAULT_BURST",
    "DEFAULT_REFILL_INTERVAL",
    "MAX_MESSAGE_LENGTH",
    "EventRecorder",
    "EventSink",
    "EventType",
    "ObjectRef",
    "Outcome",
    "truncate_message",
]
