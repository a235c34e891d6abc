"""Collection of remote orphans: children in a member whose UnitedDeployment is gone.

A member's garbage collector cannot follow an owner in another cluster, so the leader does it
(the ``Cluster`` workers run on the leader only, and a member client's writes are fenced like
the host's). Each look at a member is cheap and reads caches only: it runs only when the host's
UnitedDeployment informers and that member's caches have synced, takes the suspects of
:func:`~united.multicluster.gc.suspects`, waits out :data:`GRACE`, then confirms each with the
host (a GET of the owner it names: a sharded or lagging cache never deletes a live child) and
deletes it with a uid precondition (the name may have been reused meanwhile).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import structlog

from united.api.document import Json
from united.kube import ApiError, KubeClient, NotFound, Resource
from united.multicluster.gc import Sightings, suspects
from united.multicluster.identity import RemoteKeys
from united.multicluster.member import Member
from united.runtime.controller import Stores
from united.runtime.informer import Informer

log = structlog.get_logger(__name__)
GRACE = 10.0
"""Seconds a child must be seen orphaned before it is collected."""
RETRY = 60.0
"""Seconds between two attempts at the same child."""
SLACK = 0.1
"""Seconds added to a wait, so the requeued pass finds the suspect due."""


class Collector:
    """Remote orphans of every member: :meth:`collect` one member at a time; ``collected(cluster,
    resource)`` is told of each deletion (a metric)."""

    def __init__(
        self,
        host: KubeClient,
        *,
        uds: Sequence[Informer],
        ud_resource: Resource,
        collected: Callable[[str, str], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._host = host
        self._uds = uds
        self._ud_resource = ud_resource
        self._collected = collected
        self._clock = clock
        self._sightings: dict[str, Sightings] = {}

    def live_uids(self) -> set[str] | None:
        """The uids of every UnitedDeployment the host cache holds (readable or not); None while
        that cache could be partial (not synced, or its watch failing)."""
        if not self._uds or any(not i.has_synced.is_set() or i.last_error for i in self._uds):
            return None
        uids = {str((ud.get("metadata") or {}).get("uid") or "") for ud in Stores(self._uds).list()}
        for informer in self._uds:
            uids |= {str((p.object.get("metadata") or {}).get("uid") or "") for p in informer.undecodable.values()}
        return uids

    def forget(self, clusters: set[str]) -> None:
        """Drop the sightings of members no longer there."""
        for name in set(self._sightings) - clusters:
            del self._sightings[name]

    async def collect(self, member: Member) -> float | None:
        """Delete ``member``'s orphans that are due; the seconds until the next is due (None: none)."""
        watching, client, live = member.watching, member.client, self.live_uids()
        if watching is None or client is None or live is None:
            return None
        variants = [v for v in sorted(member.children) if member.usable(v)]
        sightings = self._sightings.setdefault(member.name, Sightings(grace=GRACE, retry=RETRY))
        found = [
            (child, watching.resource_of(v))
            for v in variants
            for child in suspects(member.stores(v)[0].list(), live, watching.remote)
        ]
        due, wait = sightings.due((child for child, _ in found), self._clock())
        wait = None if wait is None else wait + SLACK
        resources = {id(child): resource for child, resource in found}
        for child in due:
            await self._collect(member.name, client, child, resources[id(child)], watching.remote)
            sightings.tried(child, self._clock())
        return wait

    async def _collect(
        self, cluster: str, client: KubeClient, child: Json, resource: Resource, remote: RemoteKeys
    ) -> None:
        meta = child.get("metadata") or {}
        namespace, name, uid = str(meta.get("namespace")), str(meta.get("name")), str(meta.get("uid"))
        owner_uid = remote.owner_of(child)
        owner = str((meta.get("labels") or {}).get(remote.keys.owner_name) or "")
        where = {"cluster": cluster, "kind": resource.kind, "namespace": namespace, "name": name}
        if not owner or not await self._gone(namespace, owner, owner_uid):
            return
        try:
            await client.delete(
                resource, name, namespace=namespace, propagation_policy="Background", preconditions={"uid": uid}
            )
        except NotFound:
            return
        except ApiError as exc:
            log.warning("cannot collect remote orphan; retried later", error=str(exc), retry=RETRY, **where)
            return
        self._collected(cluster, resource.plural)
        log.info("collected remote orphan", owner=f"{namespace}/{owner}", owner_uid=owner_uid, **where)

    async def _gone(self, namespace: str, name: str, uid: str | None) -> bool:
        """The host confirms: no UnitedDeployment ``namespace/name``, or one with another uid."""
        try:
            ud = await self._host.get(self._ud_resource, name, namespace=namespace)
        except NotFound:
            return True
        except ApiError as exc:
            log.warning("cannot confirm a remote orphan's owner is gone; retried later", error=str(exc), retry=RETRY)
            return False
        return str((ud.get("metadata") or {}).get("uid") or "") != uid


__all__ = ["GRACE", "RETRY", "Collector"]
