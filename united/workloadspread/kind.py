"""The WorkloadSpread kind as the manager runs it: :func:`setup` registers its controller (once
the kind is served) and its pod and conversion webhooks, so the manager knows nothing of it."""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from united.runtime.controller import Controller, Host, Registry
from united.workloadspread.reconciler import Caches, Reconciler, WorkloadSpreadController, ws_resource
from united.workloadspread.statuses import Statuses
from united.workloadspread.webhook import PodWebhook
from united.workloadspread.webhookconfig import MUTATE_PATH, VALIDATE_PATH


class Options(Protocol):
    """What the kind reads from the controller's settings."""

    @property
    def api_group(self) -> str: ...


class WorkloadSpreads:
    """The kind's parts in one process: the controller, made when the kind is served, and the pod
    webhook, served by every replica, which reads the controller's caches once they have synced."""

    def __init__(self, registry: Registry, *, api_group: str) -> None:
        self.api_group = api_group
        self.resource = ws_resource(api_group)
        self.controller: WorkloadSpreadController | None = None
        self.statuses = Statuses()
        """The spreads' status writes, the reconciler's and the webhook's bookings, taking turns."""
        self.webhook = PodWebhook(
            registry.webhook_client, self.caches, placements=registry.metrics.placement, statuses=self.statuses
        )
        """Served by every replica (with ``--webhook-port``), leader or not: bookings are
        optimistic status writes, safe from several processes; hence a client without the fence."""

    def make(self, host: Host) -> Controller:
        """The controller, once the API server serves the kind."""
        self.controller = WorkloadSpreadController(host, api_group=self.api_group, statuses=self.statuses)
        return self.controller

    def caches(self) -> tuple[Caches, Reconciler] | None:
        """The caches once served and synced (the controller is active only then); before that
        pods go unplaced. Informers started later — any other kind's, or CloneSets' once their
        CRD is served — do not gate admission: while the CloneSet cache syncs, a pod's owner
        missing from it is read from the API server. (Gating on every informer admitted every pod
        unplaced for as long as any one had not synced: for a moment at each discovery that
        found a kind, forever for a kind that cannot be listed.)"""
        controller = self.controller
        if controller is None or not controller.active:
            return None
        return controller.caches, controller.spreads

    def has_spreads(self, namespace: str) -> bool:
        """Whether a pod review from ``namespace`` may concern a WorkloadSpread (the webhook
        server decodes no other): the kind is served and synced and the namespace has one.
        Asked on the webhook server's thread: it only reads (attributes, one dict lookup per store)."""
        found = self.caches()
        return found is not None and found[0].spreads.holds(namespace)

    def namespaces(self) -> Collection[str] | None:
        """The namespaces that hold a WorkloadSpread (the pod webhooks' selectors name them on
        1.22+), None until the caches have synced."""
        found = self.caches()
        return None if found is None else found[0].spreads.namespaces()

    def ready(self) -> bool:
        """Readiness with ``--webhook-port``: a replica whose caches are syncing would leave pods
        unplaced, so the Service must not send it admission requests yet."""
        if self.controller is not None and self.caches() is None:
            raise RuntimeError("WorkloadSpread caches not synced yet")
        return True


def setup(registry: Registry, options: Options) -> WorkloadSpreads:
    """Register the kind with the manager that will run it."""
    spreads = WorkloadSpreads(registry, api_group=options.api_group)
    registry.add_when_served(spreads.resource, spreads.make)
    screens = {MUTATE_PATH: spreads.has_spreads, VALIDATE_PATH: spreads.has_spreads}
    registry.add_webhook(spreads.webhook.routes(), screens=screens, ready=spreads.ready, targeted=spreads.namespaces)
    return spreads
