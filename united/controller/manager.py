"""Wire the controller together, controller-runtime style: caches, queue, workers, leader.

Start order follows controller-runtime's manager: the HTTP server (``/healthz``,
``/readyz``, ``/metrics``), then the informers (every replica keeps warm caches, so a
standby is Ready and takes over instantly), then leader election, then the workers —
which only run while leading. Child kinds whose CRD is absent (CloneSet, Advanced
StatefulSet without OpenKruise) are looked up at start and on a timer; when one appears
its informer starts and every UnitedDeployment is re-queued.

Shutdown on SIGTERM/SIGINT: readiness goes false, the queue stops taking keys and
in-flight reconciles finish (up to ``shutdown_timeout``), informers stop, the Lease is
released so a standby takes over at once, queued Events are flushed, and the HTTP server
and client close last.
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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from united.api.keys import Keys
from united.api.model import GROUP, KRUISE_GROUP, PLURAL, TEMPLATE_VARIANTS
from united.controller.reconciler import (
    CONTROLLER_REVISIONS,
    Caches,
    Reconciler,
    RetryableError,
    owners_of,
    resource_of,
)
from united.kube import ApiError, KubeClient, Resource
from united.kube.client import PODS
from united.log import bind_reconcile
from united.runtime.events import EventRecorder
from united.runtime.health import HealthServer
from united.runtime.informer import DELETED, MODIFIED, Informer, Store
from united.runtime.leader import LeaderElector
from united.runtime.metrics import Metrics, ReconcileResult
from united.runtime.queue import ShutDown, WorkQueue, default_controller_rate_limiter
from united.selector import parse as parse_selector

log = structlog.get_logger(__name__)
CONTROLLER = "uniteddeployment"

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
    identity: str = field(
        default_factory=lambda: f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4().hex[:8]}"
    )
    http_host: str = "0.0.0.0"
    http_port: int = 8080
    discovery_interval: float = 30.0
    shutdown_timeout: float = 30.0
    client_qps_timeout: float = 30.0

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

    def by_owner(self, uid: str) -> builtins.list[Json]:
        return [obj for store in self.stores for obj in store.by_owner(uid)]

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
        self.uds = self._informers(settings.ud_resource, settings.selector, self._on_ud)
        self.revisions = self._informers(CONTROLLER_REVISIONS, None, self._on_owned)
        self.pods = self._informers(PODS, self.keys.subset_name, self._on_pod, index_label=self.keys.subset_name)
        self.caches = Caches(
            uniteddeployments=_Stores(self.uds), revisions=_Stores(self.revisions), pods=_Stores(self.pods)
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
        for variant in TEMPLATE_VARIANTS:
            if variant in self.child_informers:
                continue
            resource = resource_of(variant)
            if resource.group not in ("apps",) and not await self._served(resource):
                continue
            informers = [
                Informer(
                    self.client, resource, namespace=ns, label_selector=self.keys.subset_name, handlers=[self._on_child]
                )
                for ns in self.namespaces
            ]
            self.child_informers[variant] = informers
            self.informers.extend(informers)
            self._tasks += [asyncio.create_task(i.run(), name=f"informer-{resource.plural}") for i in informers]
            await asyncio.gather(*(i.has_synced.wait() for i in informers))
            self.caches.children[variant] = _Stores(informers)
            log.info("child kind available", kind=resource.kind, api=resource.api_version)
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

    async def run(self) -> int:
        """Run until a signal or ``request_stop()``; 0 on a clean stop, 1 if leadership was lost."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.request_stop)
        self.recorder.start()
        port = await self.health.start(self.settings.http_host, self.settings.http_port)
        log.info("serving health and metrics", port=port)
        self._tasks += [asyncio.create_task(i.run(), name=f"informer-{i.resource.plural}") for i in self.informers]
        for task in self._tasks:
            self.health.watch_task(task.get_name(), task)
        self.health.add_readiness_check("informers", lambda: all(i.has_synced.is_set() for i in self.informers))
        await asyncio.gather(*(i.has_synced.wait() for i in self.informers))
        await self._discover()
        self._tasks.append(asyncio.create_task(self._discovery_loop(), name="discovery"))
        elector: LeaderElector | None = None
        election: asyncio.Task[None] | None = None
        code = 0
        if self.settings.leader_elect:
            elector = LeaderElector(
                self.client,
                name=self.settings.leader_election_id,
                namespace=self.settings.leader_election_namespace,
                identity=self.settings.identity,
                on_started_leading=lambda: self.metrics.set_leader(self.settings.leader_election_id, True),
                on_stopped_leading=lambda: self.metrics.set_leader(self.settings.leader_election_id, False),
            )
            election = asyncio.create_task(elector.run(), name="leader-election")
            stop = asyncio.create_task(self._stopping.wait())
            elected = asyncio.create_task(elector.elected.wait())
            await asyncio.wait({stop, elected}, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            elected.cancel()
        workers: list[asyncio.Task[None]] = []
        if not self._stopping.is_set():
            log.info("starting workers", workers=self.settings.workers, identity=self.settings.identity)
            self.controller_metrics.set_max_concurrent_reconciles(self.settings.workers)
            workers = [asyncio.create_task(self._worker(), name=f"worker-{n}") for n in range(self.settings.workers)]
            waiters: set[asyncio.Task[Any]] = {asyncio.create_task(self._stopping.wait())}
            if election is not None:
                waiters.add(election)
            done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            if election is not None and election in done and not self._stopping.is_set():
                log.error("leadership lost; exiting")
                code = 1
            for w in waiters:
                if w is not election:
                    w.cancel()
        await self._shutdown(workers, elector, election)
        return code

    async def _shutdown(
        self, workers: list[asyncio.Task[None]], elector: LeaderElector | None, election: asyncio.Task[None] | None
    ) -> None:
        log.info("shutting down")
        self.health.set_shutting_down()
        self.queue.shutdown()
        if workers:
            _, pending = await asyncio.wait(workers, timeout=self.settings.shutdown_timeout)
            for task in pending:
                task.cancel()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if elector is not None:
            if election is not None and not election.done():
                election.cancel()
                await asyncio.gather(election, return_exceptions=True)
            await elector.release()
        await self.recorder.close()
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
