"""Wire the controller together, controller-runtime style: caches, queue, workers, leader.

Start order follows controller-runtime's manager: the HTTP server (``/healthz``,
``/readyz``, ``/metrics``), then the informers (every replica keeps warm caches, so a
standby is Ready and takes over instantly), then leader election, then the workers —
which only run while leading. Child kinds whose CRD is absent (CloneSet, Advanced
StatefulSet without OpenKruise) are looked up at start and on a timer; when one appears
its informer starts and every UnitedDeployment is re-queued.

With leader election every write passes the elector's fence (no write unless the Lease is
surely ours by this process's own clock); when leadership is lost the queued keys are
dropped, the passes in flight cancelled and the process exits with 1.

Shutdown on SIGTERM/SIGINT, in any state (syncing against an unreachable API server,
discovering, standby, leading): the start-up in progress is cancelled, readiness goes false,
the queue stops taking keys and in-flight reconciles get ``shutdown_grace`` (3 s) before
they are cancelled, informers stop, the Lease is released (bounded) so a standby takes over
at once, queued Events are flushed (bounded), and the HTTP server and client close last —
within :data:`STOP_WITHIN` in all.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import os
import signal
import socket
import uuid
from collections import ChainMap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import structlog

from united.kube import ApiError, Fenced, KubeClient, Resource
from united.kube.client import PODS
from united.kube.decode import Undecodable
from united.kube.errors import ConfigError
from united.log import bind_reconcile
from united.placement.selector import parse as parse_selector
from united.runtime.events import EventRecorder
from united.runtime.failures import FailureLog
from united.runtime.health import HealthServer
from united.runtime.informer import DELETED, MODIFIED, Informer, Store
from united.runtime.leader import LeaderElector
from united.runtime.metrics import Metrics, ReconcileResult
from united.runtime.queue import ShutDown, WorkQueue, default_controller_rate_limiter
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import GROUP, KRUISE_GROUP, PLURAL, TEMPLATE_VARIANTS
from united.uniteddeployment.reconciler import (
    CONTROLLER_REVISIONS,
    Caches,
    Reconciler,
    RetryableError,
    owners_of,
    resource_of,
)

log = structlog.get_logger(__name__)
CONTROLLER = "uniteddeployment"
RELEASE_WITHIN = 2.0
"""Seconds releasing the Lease may take at shutdown."""
EVENTS_WITHIN = 1.0
"""Seconds queued Events may take to be posted at shutdown."""
STOP_WITHIN = 10.0
"""The documented bound from SIGTERM/SIGINT to exit, in every state: the shutdown grace of
reconciles in flight, the Lease release and the Event flush, plus margin."""

Json = dict[str, Any]


@dataclass(frozen=True)
class Settings:
    kubeconfig: str | None = None
    """None: in-cluster configuration, else ``$KUBECONFIG`` or ``~/.kube/config``."""
    api_group: str = GROUP
    namespaces: tuple[str, ...] = ()
    """Namespaces to serve; empty means all."""
    selector: str | None = None
    """Label selector on UnitedDeployments, to shard a large cluster over several controllers."""
    workers: int = 3
    leader_elect: bool = False
    leader_election_namespace: str = "united-system"
    leader_election_id: str = "united-controller"
    leader_election_lease_duration: float = 15.0
    leader_election_renew_deadline: float = 10.0
    leader_election_retry_period: float = 2.0
    identity: str = field(
        default_factory=lambda: f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4().hex[:8]}"
    )
    http_host: str = "0.0.0.0"
    http_port: int = 8080
    discovery_interval: float = 30.0
    shutdown_grace: float = 3.0
    """Seconds reconciles in flight may finish in at shutdown before they are cancelled."""
    child_sync_timeout: float = 10.0
    """Seconds a child kind's first LIST may take before its UnitedDeployments are reported
    ``ChildKindUnavailable`` (and every other kind is served); it is picked up when it syncs."""
    client_qps_timeout: float = 30.0
    controller_namespace: str = field(default_factory=lambda: os.environ.get("POD_NAMESPACE") or "united-system")
    """The controller's own namespace: its webhook Secret, excluded from its pod webhooks."""
    webhook_port: int | None = None
    """Serve the WorkloadSpread webhooks on this port (None: no webhook server)."""
    webhook_host: str = "0.0.0.0"
    webhook_url: str | None = None
    """``https://host:port``: create/update the webhook configurations pointing at it; None:
    only patch the ``caBundle`` of the shipped ones (in-cluster, through the Service)."""
    webhook_failure_policy: Literal["Ignore", "Fail"] = "Ignore"

    @property
    def ud_resource(self) -> Resource:
        version = "v1alpha1" if self.api_group == GROUP else "v1beta1"
        return Resource(self.api_group, version, PLURAL, True, "UnitedDeployment")


class _Stores:
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

    def by_owner(self, uid: str, namespace: str | None = None) -> builtins.list[Json]:
        return [obj for store in self.stores for obj in store.by_owner(uid, namespace)]

    def orphans(self, namespace: str) -> builtins.list[Json]:
        return [obj for store in self.stores for obj in store.orphans(namespace)]

    def labelled(self, namespace: str, value: str) -> builtins.list[Json]:
        return [obj for store in self.stores for obj in store.labelled(namespace, value)]


def _meta_changed(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """A UnitedDeployment change worth a reconcile: anything but a status-only update."""
    if old is None:
        return True
    a, b = old.get("metadata") or {}, new.get("metadata") or {}
    return any(a.get(k) != b.get(k) for k in ("generation", "labels", "annotations", "deletionTimestamp", "uid"))


class Manager:
    def __init__(self, client: KubeClient, settings: Settings, *, metrics: Metrics | None = None) -> None:
        self.client = client
        self.settings = settings
        self.metrics = metrics or Metrics()
        self.keys = Keys(settings.api_group)
        queue_metrics = self.metrics.queue(CONTROLLER)
        self.queue: WorkQueue[str] = WorkQueue(rate_limiter=default_controller_rate_limiter(), metrics=queue_metrics)
        queue_metrics.track_in_flight(self.queue)
        self.health = HealthServer(registry=self.metrics.registry)
        self.recorder = EventRecorder(client, component="united-controller", metrics=self.metrics)
        self.namespaces: list[str | None] = list(settings.namespaces) or [None]
        self.informers: list[Informer] = []
        self.child_informers: dict[str, list[Informer]] = {}
        self._tasks: list[asyncio.Task[Any]] = []
        self._stopping = asyncio.Event()
        self._workers: list[asyncio.Task[None]] = []
        self._election: asyncio.Task[None] | None = None
        self.failures = FailureLog()
        """One place for the list/watch failures of every informer: one line per step
        when they all fail the same way (an unreachable API server)."""
        self.uds = self._informers(settings.ud_resource, settings.selector, self._on_ud)
        self.revisions = self._informers(CONTROLLER_REVISIONS, None, self._on_owned)
        self.pods = self._informers(PODS, self.keys.subset_name, self._on_pod, index_label=self.keys.subset_name)
        self.caches = Caches(
            uniteddeployments=_Stores(self.uds),
            revisions=_Stores(self.revisions),
            pods=_Stores(self.pods),
            undecodable=ChainMap(*(i.undecodable for i in self.uds)),
        )
        self.reconciler = Reconciler(
            client=client,
            caches=self.caches,
            recorder=self.recorder,
            ud_resource=settings.ud_resource,
            gauges=self.metrics,
        )
        self.controller_metrics = self.metrics.controller(CONTROLLER)

    def _informers(
        self, resource: Resource, selector: str | None, handler: Any, *, index_label: str | None = None
    ) -> list[Informer]:
        made = [
            Informer(
                self.client,
                resource,
                namespace=ns,
                label_selector=selector,
                index_label=index_label,
                handlers=[handler],
                failures=self.failures,
                on_undecodable=[self._on_undecodable],
            )
            for ns in self.namespaces
        ]
        self.informers.extend(made)
        return made

    # -- event handlers: map every change to the UnitedDeployment keys it concerns ---------

    def _on_ud(self, kind: str, obj: Json, old: Json | None) -> None:
        if kind == MODIFIED and not _meta_changed(old, obj):
            return
        meta = obj.get("metadata") or {}
        self.queue.add(f"{meta.get('namespace')}/{meta.get('name')}")

    def _on_owned(self, kind: str, obj: Json, old: Json | None) -> None:
        for key in {*owners_of(obj), *(owners_of(old) if old else ())}:
            self.queue.add(key)

    def _on_child(self, kind: str, obj: Json, old: Json | None) -> None:
        owners = {*owners_of(obj), *(owners_of(old) if old else ())}
        if not owners and kind != DELETED:
            owners = set(self._matching_uds(obj))
        for key in owners:
            self.queue.add(key)

    def _on_undecodable(self, problem: Undecodable) -> None:
        """Count it; a UnitedDeployment is queued, so the reconciler reports it on the object."""
        obj = problem.object
        self.metrics.undecodable_objects_total.labels(resource=str(obj.get("kind", ""))).inc()
        if obj.get("kind") == self.settings.ud_resource.kind:
            meta = obj.get("metadata") or {}
            self.queue.add(f"{meta.get('namespace')}/{meta.get('name')}")

    def _on_pod(self, kind: str, obj: Json, old: Json | None) -> None:
        for key in self._matching_uds(obj):
            self.queue.add(key)

    def _matching_uds(self, obj: Mapping[str, Any]) -> Iterable[str]:
        meta = obj.get("metadata") or {}
        namespace, labels = meta.get("namespace"), meta.get("labels") or {}
        for ud in self.caches.uniteddeployments.list(str(namespace or "")):
            umeta = ud.get("metadata") or {}
            selector = (ud.get("spec") or {}).get("selector")
            if not isinstance(selector, dict):
                continue
            try:
                if parse_selector(selector).matches(labels):
                    yield f"{namespace}/{umeta.get('name')}"
            except (KeyError, TypeError, AttributeError):
                continue

    # -- child kinds come and go with their CRDs --------------------------------------------

    async def _served(self, resource: Resource) -> bool:
        try:
            text = await self.client.get_path(f"/apis/{resource.group}/{resource.version}")
        except ApiError:
            return False
        try:
            return any(r.get("name") == resource.plural for r in json.loads(text).get("resources", []))
        except (ValueError, AttributeError):
            return False

    async def _discover(self) -> None:
        """Start an informer for each child kind the cluster serves and has none yet, and
        wait for its first LIST — but at most ``child_sync_timeout``: a kind that cannot be
        listed (RBAC, a broken conversion webhook) must not hold up every other kind. Such a
        kind's informers keep retrying in the background; until they sync, its
        UnitedDeployments are ``ChildKindUnavailable`` with the informers' last error."""
        for variant in TEMPLATE_VARIANTS:
            if variant in self.child_informers:
                continue
            resource = resource_of(variant)
            if resource.group not in ("apps",) and not await self._served(resource):
                continue
            informers = [
                Informer(
                    self.client,
                    resource,
                    namespace=ns,
                    label_selector=self.keys.subset_name,
                    handlers=[self._on_child],
                    failures=self.failures,
                    on_undecodable=[self._on_undecodable],
                )
                for ns in self.namespaces
            ]
            self.child_informers[variant] = informers
            self._tasks += [asyncio.create_task(i.run(), name=f"informer-{resource.plural}") for i in informers]
            synced = asyncio.create_task(self._when_synced(variant, informers), name=f"sync-{resource.plural}")
            self._tasks.append(synced)
            done, _ = await asyncio.wait({synced}, timeout=self.settings.child_sync_timeout)
            if not done:
                reason = "; ".join(sorted({i.last_error for i in informers if i.last_error})) or (
                    f"cannot list {informers[0].name}: no answer within {self.settings.child_sync_timeout:g}s"
                )
                self.caches.unavailable[variant] = reason
                log.warning(
                    "child kind unavailable; its UnitedDeployments are stalled until it can be listed",
                    kind=resource.kind,
                    api=resource.api_version,
                    error=reason,
                )
                self._requeue_all()

    async def _when_synced(self, variant: str, informers: list[Informer]) -> None:
        """Serve ``variant`` from ``informers`` once all of them have synced."""
        await asyncio.gather(*(i.has_synced.wait() for i in informers))
        self.informers.extend(informers)
        self.caches.children[variant] = _Stores(informers)
        self.caches.unavailable.pop(variant, None)
        resource = informers[0].resource
        log.info("child kind available", kind=resource.kind, api=resource.api_version)
        self._requeue_all()

    def _requeue_all(self) -> None:
        for ud in self.caches.uniteddeployments.list():
            meta = ud.get("metadata") or {}
            self.queue.add(f"{meta.get('namespace')}/{meta.get('name')}")

    async def _discovery_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.discovery_interval)
            try:
                await self._discover()
            except ApiError as e:
                log.warning("discovery failed", error=str(e))

    # -- workers ----------------------------------------------------------------------------

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
                self.queue.forget(key)
                if outcome.requeue_after:
                    result = ReconcileResult.REQUEUE_AFTER
                    self.queue.add_after(key, outcome.requeue_after)
            except Fenced as e:
                # The Lease is not surely ours: the pass stopped at its next write. Requeued
                # in case a late renewal keeps it ours; once leadership is lost the queue is
                # shut and ignores this.
                result = ReconcileResult.ERROR
                log.warning("write refused: not the leader", ud=key, error=str(e))
                self.queue.add_rate_limited(key)
            except (RetryableError, ApiError) as e:
                result = ReconcileResult.ERROR
                log.warning("reconcile failed; requeued with backoff", ud=key, error=str(e))
                self.queue.add_rate_limited(key)
            except Exception:
                result = ReconcileResult.ERROR
                log.exception("reconcile crashed; requeued with backoff", ud=key)
                self.queue.add_rate_limited(key)
            finally:
                self.controller_metrics.observe_reconcile(result, loop.time() - started)
                self.queue.done(key)

    # -- lifecycle ----------------------------------------------------------------------------

    def request_stop(self) -> None:
        self._stopping.set()

    def _not_synced(self) -> bool:
        """Readiness: every informer in use has synced; else raise saying which have not, and why."""
        waiting = [
            f"{i.name} ({i.last_error or 'LIST in progress'})" for i in self.informers if not i.has_synced.is_set()
        ]
        if waiting:
            raise RuntimeError("not synced: " + ", ".join(waiting))
        return True

    async def run(self) -> int:
        """Run until a signal or ``request_stop()``; 0 on a clean stop, 1 if leadership was lost.

        Whatever the state — API server unreachable, informers syncing, discovery, standby,
        leading with passes in flight — a stop request ends :meth:`_serve` at once and
        :meth:`_shutdown` takes a bounded time (see :data:`STOP_WITHIN`). Raises
        :class:`ConfigError` when the HTTP port cannot be bound."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.request_stop)
        self.health.add_readiness_check("informers", self._not_synced)
        try:
            await self.health.start(self.settings.http_host, self.settings.http_port)
        except OSError as exc:
            raise ConfigError(
                "--http-port",
                f"cannot listen on {self.settings.http_host}:{self.settings.http_port}: "
                + (os.strerror(exc.errno).lower() if exc.errno else str(exc)),
            ) from None
        self.recorder.start()
        serve = asyncio.create_task(self._serve(), name="serve")
        stop = asyncio.create_task(self._stopping.wait(), name="stop")
        code = 0
        try:
            await asyncio.wait({serve, stop}, return_when=asyncio.FIRST_COMPLETED)
            if serve.done():
                code = serve.result()
            else:
                serve.cancel()
                await asyncio.gather(serve, return_exceptions=True)
        finally:
            stop.cancel()
            await self._shutdown()
        return code

    async def _serve(self) -> int:
        """Sync the caches, discover child kinds, win the election (if any), run the workers;
        return 1 when leadership is lost (the caller exits, client-go style)."""
        self._tasks += [asyncio.create_task(i.run(), name=f"informer-{i.resource.plural}") for i in self.informers]
        for task in self._tasks:
            self.health.watch_task(task.get_name(), task)
        await asyncio.gather(*(i.has_synced.wait() for i in self.informers))
        await self._discover()
        self._tasks.append(asyncio.create_task(self._discovery_loop(), name="discovery"))
        if self.settings.leader_elect:
            elector = LeaderElector(
                self.client,
                name=self.settings.leader_election_id,
                namespace=self.settings.leader_election_namespace,
                identity=self.settings.identity,
                lease_duration=self.settings.leader_election_lease_duration,
                renew_deadline=self.settings.leader_election_renew_deadline,
                retry_period=self.settings.leader_election_retry_period,
                on_started_leading=lambda: self.metrics.set_leader(self.settings.leader_election_id, True),
                on_stopped_leading=lambda: self.metrics.set_leader(self.settings.leader_election_id, False),
            )
            self.client.fence = elector.fence
            election = self._election = asyncio.create_task(elector.run(), name="leader-election")
            await elector.elected.wait()
        log.info("starting workers", workers=self.settings.workers, identity=self.settings.identity)
        self.controller_metrics.set_max_concurrent_reconciles(self.settings.workers)
        self._workers = [asyncio.create_task(self._worker(), name=f"worker-{n}") for n in range(self.settings.workers)]
        if not self.settings.leader_elect:
            await asyncio.Event().wait()
        # asyncio.wait, not await: cancelling _serve must not cancel (and so release) the election here.
        await asyncio.wait({election})
        log.error("leadership lost; exiting")
        self._abandon()
        return 1

    def _abandon(self) -> None:
        """Leadership is lost and a new leader may be running already: no queued key may
        start, and the passes in flight stop now (the fence refuses their writes anyway)."""
        self.queue.shutdown(drop_queued=True)
        for worker in self._workers:
            worker.cancel()

    async def _stop_workers(self, grace: float) -> None:
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

    async def _release(self) -> None:
        """End the election; a held Lease is released (bounded: an unreachable API server
        must not hold up the exit — the Lease then simply expires)."""
        election, self._election = self._election, None
        if election is None:
            return
        if not election.done():
            election.cancel()  # the elector releases a held Lease on cancellation
            _, pending = await asyncio.wait({election}, timeout=RELEASE_WITHIN)
            if pending:
                log.warning("releasing the lease took too long; it will expire instead", seconds=RELEASE_WITHIN)
                election.cancel()
        await asyncio.gather(election, return_exceptions=True)

    async def _shutdown(self) -> None:
        log.info("shutting down")
        self.health.set_shutting_down()
        await self._stop_workers(self.settings.shutdown_grace)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.recorder.close(within=EVENTS_WITHIN)  # while the Lease is ours: the fence refuses them after
        await self._release()
        await self.health.stop()
        log.info("stopped")


async def run(settings: Settings) -> int:
    client = await KubeClient.from_config(settings.kubeconfig)
    try:
        manager = Manager(client, settings)
        client.observer = manager.metrics.api.observe
        return await manager.run()
    finally:
        await client.close()


__all__ = ["KRUISE_GROUP", "Manager", "Settings", "run"]
