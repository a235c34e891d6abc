"""The UnitedDeployment controller: its informers, how their events map to keys, its reconciler.

Child kinds whose CRD is absent (CloneSet, Advanced StatefulSet without OpenKruise) are
looked up at start and on the manager's discovery timer; when one appears its informer
starts and every UnitedDeployment is re-queued.
"""

from __future__ import annotations

import asyncio
from collections import ChainMap
from collections.abc import Iterable, Mapping
from typing import Any

import structlog

from united.api.decode import Undecodable
from united.api.document import Json
from united.api.selector import parse as parse_selector
from united.kube import Resource
from united.kube.client import CONTROLLER_REVISIONS, PODS
from united.kube.discovery import preferred, served
from united.multicluster.identity import RemoteKeys
from united.multicluster.member import Members, Watching
from united.runtime.controller import Controller, Host, Stores
from united.runtime.informer import DELETED, MODIFIED, Informer
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import TEMPLATE_VARIANTS
from united.uniteddeployment.reconciler import Caches, Reconciler, owners_of
from united.uniteddeployment.resources import resource_of

log = structlog.get_logger(__name__)


def _meta_changed(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """A UnitedDeployment change worth a reconcile: anything but a status-only update."""
    if old is None:
        return True
    a, b = old.get("metadata") or {}, new.get("metadata") or {}
    return any(a.get(k) != b.get(k) for k in ("generation", "labels", "annotations", "deletionTimestamp", "uid"))


class UnitedDeploymentController(Controller):
    name = "uniteddeployment"
    log_key = "ud"

    def __init__(
        self,
        host: Host,
        *,
        ud_resource: Resource,
        selector: str | None,
        child_sync_timeout: float,
        create_member_namespaces: bool = True,
    ) -> None:
        super().__init__(host)
        self.ud_resource = ud_resource
        self.keys = Keys(ud_resource.group)
        self.child_sync_timeout = child_sync_timeout
        self.child_informers: dict[str, list[Informer]] = {}
        self.uds = host.watch(ud_resource, selector, self._on_ud)
        self.revisions = host.watch(CONTROLLER_REVISIONS, None, self._on_owned)
        self.pods = host.watch(PODS, self.keys.subset_name, self._on_pod, index_label=self.keys.subset_name)
        self.caches = Caches(
            uniteddeployments=Stores(self.uds),
            revisions=Stores(self.revisions),
            pods=Stores(self.pods),
            undecodable=ChainMap(*(i.undecodable for i in self.uds)),
        )
        self.reconciler = Reconciler(
            client=host.client,
            caches=self.caches,
            recorder=host.recorder,
            ud_resource=ud_resource,
            gauges=host.metrics,
            create_member_namespaces=create_member_namespaces,
        )

    def attach(self, members: Members, *, host_id: str, namespaces: Iterable[str | None]) -> None:
        """Serve subsets in member clusters: their informers watch this host's children and pods
        (owner labels), whose events and every member's health flips queue the UDs concerned."""
        remote = RemoteKeys(self.keys, host_id)

        def on_child(cluster: str, obj: Json) -> None:
            key = remote.ud_key(obj)
            if key is not None:
                self.queue.add(key)

        def on_pod(cluster: str, obj: Json) -> None:
            for key in self._matching_uds(obj):
                self.queue.add(key)

        members.watch(Watching(remote, tuple(namespaces), on_child, on_pod, resource_of))
        members.subscribe(self._on_cluster)
        self.caches.members = members
        for ud in self.caches.uniteddeployments.list():
            self._warm(ud)

    def _on_cluster(self, cluster: str) -> None:
        """A member's health flipped or its caches synced: requeue the UDs that place a subset
        there (spec) or had one there (status)."""
        for ud in self.caches.uniteddeployments.list():
            spec = ((ud.get("spec") or {}).get("topology") or {}).get("subsets") or ()
            listed = (ud.get("status") or {}).get("subsetStatuses") or ()
            if any(isinstance(s, dict) and s.get("cluster") == cluster for s in (*spec, *listed)):
                self._warm(ud)
                self.enqueue(ud)

    # -- event handlers: map every change to the UnitedDeployment keys it concerns ---------

    def _on_ud(self, kind: str, obj: Json, old: Json | None) -> None:
        if kind == MODIFIED and not _meta_changed(old, obj):
            return
        if kind != DELETED:
            self._warm(obj)
        self.enqueue(obj)

    def _warm(self, obj: Json) -> None:
        """Start the member informers ``obj``'s remote subsets need — on every replica, leader or
        not (event handlers run everywhere), so a new leader finds them synced (warm standby)."""
        members = self.caches.members
        spec = obj.get("spec") or {}
        variant = next(iter(spec.get("template") or {}), None)
        if members is None or variant not in TEMPLATE_VARIANTS:
            return
        for subset in (spec.get("topology") or {}).get("subsets") or ():
            cluster = subset.get("cluster") if isinstance(subset, dict) else None
            member = members.get(str(cluster)) if cluster else None
            if member is not None:
                member.ensure(variant)

    def _on_owned(self, kind: str, obj: Json, old: Json | None) -> None:
        for key in {*owners_of(obj), *(owners_of(old) if old else ())}:
            self.queue.add(key)

    def _on_child(self, kind: str, obj: Json, old: Json | None) -> None:
        owners = {*owners_of(obj), *(owners_of(old) if old else ())}
        if not owners and kind != DELETED:
            owners = set(self._matching_uds(obj))
        for key in owners:
            self.queue.add(key)

    def undecodable(self, problem: Undecodable) -> None:
        """A UnitedDeployment is queued, so the reconciler reports it on the object."""
        if problem.object.get("kind") == self.ud_resource.kind:
            self.enqueue(problem.object)

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

    async def start(self) -> None:
        await self.discover()

    async def discover(self) -> None:
        """Start an informer for each child kind the cluster serves and has none yet, and
        wait for its first LIST — but at most ``child_sync_timeout``: a kind that cannot be
        listed (RBAC, a broken conversion webhook) must not hold up every other kind. Such a
        kind's informers keep retrying in the background; until they sync, its
        UnitedDeployments are ``ChildKindUnavailable`` with the informers' last error.
        Also which version owner references name UnitedDeployments by (it changes only with
        their CRD; kept when discovery does not answer)."""
        self.caches.owner_api_version = await preferred(self.host.client, self.ud_resource) or (
            self.caches.owner_api_version
        )
        for variant in TEMPLATE_VARIANTS:
            if variant in self.child_informers:
                continue
            resource = resource_of(variant)
            if resource.group not in ("apps",) and not await served(self.host.client, resource):
                continue
            informers = self.host.watch(resource, self.keys.subset_name, self._on_child, started=False)
            self.child_informers[variant] = informers
            synced = self.host.spawn(self._when_synced(variant, informers), name=f"sync-{resource.plural}")
            done, _ = await asyncio.wait({synced}, timeout=self.child_sync_timeout)
            if not done:
                reason = "; ".join(sorted({i.last_error for i in informers if i.last_error})) or (
                    f"cannot list {informers[0].name}: no answer within {self.child_sync_timeout:g}s"
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
        self.host.track(informers)
        self.caches.children[variant] = Stores(informers)
        self.caches.unavailable.pop(variant, None)
        resource = informers[0].resource
        log.info("child kind available", kind=resource.kind, api=resource.api_version)
        self._requeue_all()

    def _requeue_all(self) -> None:
        for ud in self.caches.uniteddeployments.list():
            self.enqueue(ud)


__all__ = ["UnitedDeploymentController"]
