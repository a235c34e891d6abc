"""One kind's reconcile loop, run by the manager (``united.controller.manager``).

controller-runtime's split: the manager owns what every kind shares — the client and its
write fence, leader election, health, metrics, Events, shutdown — and each controller
declares its informers (through :class:`Host`, which shares one informer between
controllers asking for the same one), how their events map to keys on its own queue, and
its reconcile function. The workers below are the same for every kind: a fenced pass is
requeued with backoff (a late renewal may keep the Lease), a failed one too, and a pass
may ask to run again after some seconds. A pass that got no answer at all is logged in the
manager's :class:`FailureLog` with the informers failing the same way: an outage amid a
thousand queued keys is a line per step, not a line per key and retry.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Awaitable, Callable, Collection, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import structlog

from united.api.decode import Undecodable
from united.api.document import Json
from united.kube import ApiError, Fenced, KubeClient, Resource
from united.log import bind_reconcile
from united.runtime.events import EventRecorder
from united.runtime.failures import FailureLog
from united.runtime.informer import EventHandler, Informer, Store
from united.runtime.metrics import Metrics, ReconcileResult
from united.runtime.queue import ShutDown, WorkQueue, default_controller_rate_limiter
from united.runtime.webserver import Route, Screen

log = structlog.get_logger(__name__)


class Stores:
    """One read view over the stores of several per-namespace informers."""

    def __init__(self, informers: Iterable[Informer]) -> None:
        self.stores: list[Store] = [i.store for i in informers]

    def get(self, key: str) -> Json | None:
        for store in self.stores:
            obj = store.get(key)
            if obj is not None:
                return obj
        return None

    def list(self, namespace: str | None = None) -> list[Json]:
        return [obj for store in self.stores for obj in store.list(namespace)]

    def holds(self, namespace: str) -> bool:
        return any(store.holds(namespace) for store in self.stores)

    def namespaces(self) -> builtins.set[str]:
        """The namespaces holding at least one object in any of the stores."""
        return {namespace for store in self.stores for namespace in store.namespaces()}

    def by_owner(self, uid: str, namespace: str | None = None) -> builtins.list[Json]:
        return [obj for store in self.stores for obj in store.by_owner(uid, namespace)]

    def orphans(self, namespace: str) -> builtins.list[Json]:
        return [obj for store in self.stores for obj in store.orphans(namespace)]

    def labelled(self, namespace: str, value: str) -> builtins.list[Json]:
        return [obj for store in self.stores for obj in store.labelled(namespace, value)]


class Host(Protocol):
    """What a controller gets from the manager that runs it."""

    client: KubeClient
    metrics: Metrics
    recorder: EventRecorder
    namespaces: list[str | None]
    failures: FailureLog
    """Where failures that many share (the API server away) are logged, one line per step."""

    def watch(
        self,
        resource: Resource,
        selector: str | None,
        handler: EventHandler,
        *,
        index_label: str | None = None,
        started: bool = True,
    ) -> list[Informer]:
        """One informer per served namespace, shared with any controller asking for the same
        (resource, selector, index); ``started=False``: run now, but kept out of readiness
        until :meth:`track` (kinds that may never sync)."""
        ...

    def track(self, informers: Iterable[Informer]) -> None:
        """Count ``informers`` in readiness from now on."""
        ...

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
        """Run ``coro`` until it ends or the manager shuts down."""
        ...


@dataclass(frozen=True, slots=True)
class Result:
    """What a pass asks of its queue: nothing more (the default), or to run the key again after
    ``requeue_after`` seconds (a deadline, a wave's pause, a member still syncing). A failed pass
    raises instead, and the key comes back with backoff."""

    requeue_after: float | None = None


class Reconciler(Protocol):
    """One kind's pass over one key (``namespace/name``), as its :class:`Controller` runs it."""

    async def reconcile(self, key: str) -> Result: ...


class Controller:
    """A queue of keys, its workers, and :attr:`reconciler` (whose :class:`Result` may ask for
    the key again later). Subclasses add informers and event mapping."""

    name: str = "controller"
    log_key: str = "key"
    """The log field naming the key of a failed pass."""

    def __init__(self, host: Host) -> None:
        self.host = host
        queue_metrics = host.metrics.queue(self.name)
        self.queue: WorkQueue[str] = WorkQueue(rate_limiter=default_controller_rate_limiter(), metrics=queue_metrics)
        queue_metrics.track_in_flight(self.queue)
        self.controller_metrics = host.metrics.controller(self.name)
        self.reconciler: Reconciler
        self.active = False
        """Set by the manager once the controller runs: its informers have synced (a kind
        served late is made before they have)."""
        self._workers: list[asyncio.Task[None]] = []

    def enqueue(self, obj: Json) -> None:
        meta = obj.get("metadata") or {}
        self.queue.add(f"{meta.get('namespace')}/{meta.get('name')}")

    async def discover(self) -> None:
        """On the manager's discovery timer: pick up kinds whose CRD appeared."""

    def undecodable(self, problem: Undecodable) -> None:
        """An informer skipped ``problem.object`` as unreadable (already counted)."""

    def start_workers(self, workers: int) -> None:
        self.controller_metrics.set_max_concurrent_reconciles(workers)
        self._workers = [asyncio.create_task(self._worker(), name=f"{self.name}-worker-{n}") for n in range(workers)]

    def abandon(self) -> None:
        """Leadership is lost: no queued key may start, the passes in flight stop now."""
        self.queue.shutdown(drop_queued=True)
        for worker in self._workers:
            worker.cancel()

    async def stop_workers(self, grace: float) -> None:
        """Stop taking keys; let passes in flight finish for ``grace`` seconds, then cancel them."""
        self.queue.shutdown()
        workers, self._workers = self._workers, []
        if workers:
            _, pending = await asyncio.wait(workers, timeout=grace)
            for task in pending:
                task.cancel()
            if pending:
                log.warning(
                    "cancelled reconciles still running after the shutdown grace", passes=len(pending), grace=grace
                )
            await asyncio.gather(*workers, return_exceptions=True)

    async def _worker(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            started = loop.time()
            result = ReconcileResult.SUCCESS
            try:
                with bind_reconcile(key), self.controller_metrics.active_worker():
                    outcome = await self.reconciler.reconcile(key)
                self._answered(key)
                self.queue.forget(key)
                if outcome.requeue_after:
                    result = ReconcileResult.REQUEUE_AFTER
                    self.queue.add_after(key, outcome.requeue_after)
            except Fenced as e:
                # The Lease is not surely ours: the pass stopped at its next write. Requeued
                # in case a late renewal keeps it ours; once leadership is lost the queue is
                # shut and ignores this.
                result = ReconcileResult.ERROR
                log.warning("write refused: not the leader", error=str(e), **{self.log_key: key})
                self.queue.add_rate_limited(key)
            except (RetryableError, ApiError) as e:
                result = ReconcileResult.ERROR
                if isinstance(e, ApiError) and e.unanswered:
                    attempt = self.queue.num_requeues(key) + 1
                    self.host.failures.failed(resource=f"{self.name} {key}", error=e, attempt=attempt)
                else:
                    self._answered(key)
                    log.warning("reconcile failed; requeued with backoff", error=str(e), **{self.log_key: key})
                self.queue.add_rate_limited(key)
            except Exception:
                result = ReconcileResult.ERROR
                log.exception("reconcile crashed; requeued with backoff", **{self.log_key: key})
                self.queue.add_rate_limited(key)
            finally:
                self.controller_metrics.observe_reconcile(result, loop.time() - started)
                self.queue.done(key)

    def _answered(self, key: str) -> None:
        """The API server answered this pass (yes or no): a key that got no answer before
        leaves the failure log's group, whose last one to leave says it has recovered."""
        if self.queue.num_requeues(key):
            self.host.failures.recovered(f"{self.name} {key}")


class RetryableError(Exception):
    """Some writes failed this pass; the status says so and the key is requeued with backoff."""


Factory = Callable[[Host], Controller]


C = TypeVar("C", bound=Controller)
Precondition = Callable[[], Awaitable[bool]]
"""What an optional controller needs besides its kind being served (asked at each discovery)."""
Readiness = Callable[[], object]
"""A readiness check: raises ``RuntimeError`` saying what is not ready yet."""


class Registry(Host, Protocol):
    """What a kind's ``setup(registry, ...)`` may ask of the manager that will run it: the
    manager knows no kind, each kind adds its controllers, webhook routes and shutdown work
    through this, and its metrics through :attr:`Host.metrics`."""

    webhook_client: KubeClient
    """A client without the leader fence: for writes every replica may make (webhook bookings)."""

    def add(self, controller: C) -> C:
        """Run ``controller`` from the start (its informers count in readiness)."""
        ...

    def add_when_served(self, resource: Resource, factory: Factory, *, ready: Precondition | None = None) -> None:
        """Make and run a controller once the API server serves ``resource`` and ``ready``, if
        given, says what else it needs is there (both asked again at each discovery)."""
        ...

    def add_webhook(
        self,
        routes: Mapping[str, Route],
        *,
        screens: Mapping[str, Screen] | None = None,
        ready: Readiness | None = None,
        targeted: Callable[[], Collection[str] | None] | None = None,
    ) -> None:
        """Serve ``routes`` on the webhook server (with ``--webhook-port``); ``targeted``: the
        namespaces the pod webhooks' selectors must let through (None until known); ``screens`` say, by
        path, from a review's namespace whether it may concern the kind (else it is answered
        without being decoded); ``ready`` gates readiness while the routes cannot answer yet."""
        ...

    def on_shutdown(self, close: Callable[[], Awaitable[None]]) -> None:
        """Await ``close`` at shutdown, after the webhook server stops and before Events flush."""
        ...
