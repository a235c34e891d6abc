"""Wire the controllers together, controller-runtime style: one shared lifecycle, one
controller per kind (``united.runtime.controller``: its informers, event mapping, queue,
workers and reconcile).

Start order follows controller-runtime's manager: the HTTP server (``/healthz``,
``/readyz``, ``/metrics``), then the informers (every replica keeps warm caches, so a
standby is Ready and takes over instantly), then discovery, the webhook server (every
replica serves it, leader or not), leader election, then the workers — which only run
while leading. Discovery runs at start and on a timer: a controller registered with
:meth:`Manager.add_when_served` starts once its kind is served, and each controller looks for
the kinds it needs (child kinds whose CRD may be absent). The manager names no kind: each
registers itself (its ``setup``, listed in ``united.controller.kinds``).

With leader election every write passes the elector's fence (no write unless the Lease is
surely ours by this process's own clock); when leadership is lost the queued keys are
dropped, the passes in flight cancelled and the process exits with 1.

Shutdown on SIGTERM/SIGINT, in any state (syncing against an unreachable API server,
discovering, standby, leading): the start-up in progress is cancelled, readiness goes false,
the queues stop taking keys and in-flight reconciles get ``shutdown_grace`` (3 s) before
they are cancelled, informers stop, the Lease is released (bounded) so a standby takes over
at once, the webhook server stops, queued Events are flushed (bounded), and the HTTP
server and client close last —
within :data:`STOP_WITHIN` in all.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Awaitable, Callable, Collection, Coroutine, Iterable, Mapping
from typing import Any

import structlog

from united.api.decode import Undecodable
from united.controller.settings import Settings
from united.controller.webhooks import Options as WebhookOptions
from united.controller.webhooks import WebhookService, serve_webhooks
from united.kube import ApiError, KubeClient, Resource
from united.kube.discovery import served
from united.kube.errors import ConfigError
from united.runtime import heap
from united.runtime.controller import C, Controller, Factory, Precondition, Readiness, Registry
from united.runtime.events import EventRecorder
from united.runtime.failures import FailureLog
from united.runtime.health import HealthServer
from united.runtime.informer import EventHandler, Informer
from united.runtime.leader import LeaderElector
from united.runtime.metrics import Metrics
from united.runtime.webserver import Route, Screen

log = structlog.get_logger(__name__)
Kind = Callable[[Registry, Settings], object]
"""A kind's ``setup``: registers its controllers, webhooks and shutdown work with the manager
(:class:`~united.runtime.controller.Registry`), reading what it needs from the settings."""
RELEASE_WITHIN = 2.0
"""Seconds releasing the Lease may take at shutdown."""
EVENTS_WITHIN = 1.0
"""Seconds queued Events may take to be posted at shutdown."""
STOP_WITHIN = 10.0
"""The documented bound from SIGTERM/SIGINT to exit, in every state: the shutdown grace of
reconciles in flight, the Lease release and the Event flush, plus margin."""


class Manager:
    """The shared lifecycle (see the module docstring) around the controllers the ``kinds``
    register (:class:`~united.runtime.controller.Registry`): the manager knows no kind."""

    def __init__(
        self,
        client: KubeClient,
        settings: Settings,
        *,
        kinds: Iterable[Kind] = (),
        metrics: Metrics | None = None,
        webhook_client: KubeClient | None = None,
        webhook_options: WebhookOptions | None = None,
    ) -> None:
        self.client = client
        self.webhook_client = webhook_client or client
        self.settings = settings
        self.webhook_options = webhook_options
        """What ``settings`` would give the webhook certificates and configurations, overridden
        (``united demo`` on a cluster it does not own narrows them to its own namespace)."""
        self.metrics = metrics or Metrics()
        self.health = HealthServer(
            exposition=self.metrics.exposition, closed=lambda reason: self.metrics.connection_closed("http", reason)
        )
        self.recorder = EventRecorder(client, component="united-controller", metrics=self.metrics)
        self.namespaces: list[str | None] = list(settings.namespaces) or [None]
        self.informers: list[Informer] = []
        self._shared: dict[tuple[Resource, str | None, str | None, str | None], Informer] = {}
        self._tasks: list[asyncio.Task[Any]] = []
        self._stopping = asyncio.Event()
        self._election: asyncio.Task[None] | None = None
        self._leading = False
        self._running = False
        self._discovered = False
        self._deferred: list[Informer] | None = None
        """While a controller of a kind served late is made: its new informers, kept out of
        readiness until they sync."""
        self.failures = FailureLog()
        """One place for the list/watch failures of every informer and the reconciles that
        got no answer: one line per step when they all fail the same way (an unreachable API
        server)."""
        self.controllers: list[Controller] = []
        self._optional: list[tuple[Resource, Factory, Precondition | None]] = []
        self._routes: dict[str, Route] = {}
        self._screens: dict[str, Screen] = {}
        self._webhooks_ready: list[Readiness] = []
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self._webhooks: WebhookService | None = None
        self._targeted: Callable[[], Collection[str] | None] | None = None
        """The namespaces the pod webhooks must see (the kind that registered them says)."""
        for setup in kinds:
            setup(self, settings)

    # -- what kinds register (runtime.controller.Registry) --------------------------------------

    def add(self, controller: C) -> C:
        self.controllers.append(controller)
        controller.active = True
        return controller

    def add_when_served(self, resource: Resource, factory: Factory, *, ready: Precondition | None = None) -> None:
        """Run the controller ``factory`` makes once the API server serves ``resource``
        (looked up at start and on the discovery timer, like child kinds) and ``ready``, if
        given, says what else it needs is there (asked again at each discovery until it is)."""
        self._optional.append((resource, factory, ready))

    def add_webhook(
        self,
        routes: Mapping[str, Route],
        *,
        screens: Mapping[str, Screen] | None = None,
        ready: Readiness | None = None,
        targeted: Callable[[], Collection[str] | None] | None = None,
    ) -> None:
        clash = set(routes) & set(self._routes)
        if clash:
            raise ValueError(f"webhook paths registered twice: {sorted(clash)}")
        self._routes.update(routes)
        self._screens.update(screens or {})
        if ready is not None:
            self._webhooks_ready.append(ready)
        if targeted is not None:
            self._targeted = targeted

    def on_shutdown(self, close: Callable[[], Awaitable[None]]) -> None:
        self._closers.append(close)

    async def _serve_webhooks(self) -> None:
        """Serve, then last as long as the webhook server and its certificate loop do: liveness
        watches this task, so it must not end while they run (nor go unnoticed if they end)."""
        self._webhooks = await serve_webhooks(
            self.webhook_client,
            self.settings,
            self._routes,
            metrics=self.metrics,
            options=self.webhook_options,
            screens=self._screens,
            targeted=self._targeted,
        )
        log.info("serving webhooks", port=self._webhooks.server.port)
        await self._webhooks.wait()
        raise RuntimeError("the webhook server or its certificate loop has ended")

    # -- what controllers get (runtime.controller.Host) --------------------------------------

    def watch(
        self,
        resource: Resource,
        selector: str | None,
        handler: EventHandler,
        *,
        index_label: str | None = None,
        started: bool = True,
    ) -> list[Informer]:
        made = []
        for ns in self.namespaces if resource.namespaced else [None]:
            key = (resource, ns, selector, index_label)
            informer = self._shared.get(key)
            if informer is None:
                informer = self._shared[key] = Informer(
                    self.client,
                    resource,
                    namespace=ns,
                    label_selector=selector,
                    index_label=index_label,
                    failures=self.failures,
                    on_undecodable=[self._on_undecodable],
                )
                self._share(informer)
                if self._running or not started:
                    self.spawn(informer.run(), name=f"informer-{resource.plural}")
                if self._deferred is not None:
                    self._deferred.append(informer)
                elif started and self._discovered:
                    self.spawn(self._track_when_synced(informer), name=f"sync-{resource.plural}")
                elif started:
                    self.informers.append(informer)
            informer.add_handler(handler)
            made.append(informer)
        return made

    def _share(self, informer: Informer) -> None:
        """Hold each object once when controllers watch the same resource and namespace with and
        without a label selector (the UnitedDeployment controller its children and pods by the
        subset label, the WorkloadSpread controller every Deployment and pod): the selected
        informers follow the unselected one (:meth:`Informer.follow`). Only then: alone, a
        selected informer keeps its server-side selector, so it caches only what it selects."""
        same = [i for (r, ns, _, _), i in self._shared.items() if (r, ns) == (informer.resource, informer.namespace)]
        unselected = [i for i in same if i.label_selector is None]
        if unselected:
            for follower in same:
                if follower.label_selector is not None:
                    follower.follow(unselected[0])

    def track(self, informers: Iterable[Informer]) -> None:
        self.informers.extend(informers)

    async def _track_when_synced(self, informer: Informer) -> None:
        """Count an informer made by a later discovery (a kind served after start) in
        readiness once it has synced: a Ready replica must not turn unready for a first LIST."""
        await informer.has_synced.wait()
        self.track([informer])

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro, name=name)
        self._tasks.append(task)
        return task

    def _on_undecodable(self, problem: Undecodable) -> None:
        """Count it; each controller decides whether it concerns one of its objects."""
        obj = problem.object
        self.metrics.undecodable_objects_total.labels(resource=str(obj.get("kind", ""))).inc()
        for controller in self.controllers:
            controller.undecodable(problem)

    # -- kinds come and go with their CRDs ------------------------------------------------------

    async def _discover(self) -> None:
        """Start the controllers whose kind is now served, then let each look for what it needs."""
        await self._discover_kinds()
        for controller in list(self.controllers):
            await controller.discover()

    async def _discover_kinds(self) -> None:
        """Start the controllers whose kind is now served.

        A new controller's informers run at once but count in readiness, and its workers
        start, only once they have all synced: a kind that cannot be listed (RBAC not yet
        granted) must not hold up the others."""
        for entry in list(self._optional):
            resource, factory, ready = entry
            if not await served(self.client, resource):
                continue
            if ready is not None and not await ready():
                continue
            self._optional.remove(entry)
            self._deferred = []
            try:
                controller = factory(self)
            finally:
                informers, self._deferred = self._deferred, None
            log.info("kind served; starting its controller", kind=resource.kind, api=resource.api_version)
            self.spawn(self._activate(controller, informers), name=f"activate-{controller.name}")

    async def _activate(self, controller: Controller, informers: list[Informer]) -> None:
        await asyncio.gather(*(i.has_synced.wait() for i in informers))
        self.track(informers)
        self.add(controller)
        log.info("controller started", controller=controller.name)
        if self._leading:
            controller.start_workers(self.settings.workers)

    async def _discovery_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.discovery_interval)
            try:
                await self._discover()
            except ApiError as e:
                log.warning("discovery failed", error=str(e))

    # -- lifecycle ----------------------------------------------------------------------------

    def request_stop(self) -> None:
        self._stopping.set()

    def _not_synced(self) -> bool:
        """Readiness: the kinds were looked up once (child kinds synced or timed out) and every
        informer in use has synced; else raise saying which have not, and why."""
        waiting = [
            f"{i.name} ({i.last_error or 'LIST in progress'})" for i in self.informers if not i.has_synced.is_set()
        ]
        if waiting:
            raise RuntimeError("not synced: " + ", ".join(waiting))
        if not self._discovered:
            raise RuntimeError("discovering kinds")
        return True

    def _not_serving(self) -> bool:
        """Readiness with ``--webhook-port``: the Service sends admission requests only to
        Ready replicas, and one that is not listening yet would leave those pods unplaced."""
        if self._webhooks is None:
            raise RuntimeError("webhook server not listening yet")
        for ready in self._webhooks_ready:
            ready()
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
        if self.settings.webhook_port is not None:
            self.health.add_readiness_check("webhooks", self._not_serving)
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
        """Sync the caches, discover kinds, win the election (if any), run the workers;
        return 1 when leadership is lost (the caller exits, client-go style)."""
        self._running = True
        held = heap.hold(asyncio.get_running_loop()) if self.settings.settle_heap else None
        # Kinds served already start with the first informers, not after them: an informer both
        # controllers need (pods) is then listed once, not once by each (Manager._share).
        kinds = asyncio.create_task(self._discover_kinds(), name="discover-kinds")
        self._tasks += [asyncio.create_task(i.run(), name=f"informer-{i.resource.plural}") for i in self.informers]
        for task in self._tasks:
            self.health.watch_task(task.get_name(), task)
        self._tasks.append(kinds)  # cancelled on shutdown; not a loop that runs forever
        await asyncio.gather(*(i.has_synced.wait() for i in self.informers))
        await kinds
        await self._discover()
        self._discovered = True
        if held is not None:
            heap.settle(held)
        heap.trim()  # the first LISTs' freed pages, kept by the C heap, leave RSS
        self._tasks.append(asyncio.create_task(self._discovery_loop(), name="discovery"))
        if self.settings.webhook_port is not None:
            self.health.watch_task("webhooks", self.spawn(self._serve_webhooks(), name="webhooks"))
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
        self._leading = True
        for controller in self.controllers:
            controller.start_workers(self.settings.workers)
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
        self._leading = False
        for controller in self.controllers:
            controller.abandon()

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
        self._leading = False
        await asyncio.gather(*(c.stop_workers(self.settings.shutdown_grace) for c in self.controllers))
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._webhooks is not None:
            await self._webhooks.stop()
        for close in self._closers:
            await close()
        await self.recorder.close(within=EVENTS_WITHIN)  # while the Lease is ours: the fence refuses them after
        await self._release()
        await self.health.stop()
        log.info("stopped")


async def run(settings: Settings, kinds: Iterable[Kind]) -> int:
    client = await KubeClient.from_config(settings.kubeconfig)
    webhook_client = await KubeClient.from_config(settings.kubeconfig) if settings.webhook_port is not None else None
    try:
        manager = Manager(client, settings, kinds=kinds, webhook_client=webhook_client)
        client.observer = manager.metrics.api.observe
        if webhook_client is not None:
            webhook_client.observer = manager.metrics.api.observe
        return await manager.run()
    finally:
        await client.close()
        if webhook_client is not None:
            await webhook_client.close()


__all__ = ["Kind", "Manager", "Settings", "run"]
