"""The ``Cluster`` controller: one :class:`~united.multicluster.member.Member` per ``Cluster``
object, and its ``Ready`` status written back.

The members (clients, probes, the Secret watches) run on every replica, so a standby has warm
health and a new leader writes what is true at once; the status is written by the workers, which
run only on the leader, and only when :func:`~united.multicluster.health.cluster_status` says
something changed or the heartbeat is due (one write a minute per ``Cluster`` at most in steady
state). Every probe queues its ``Cluster``; the pass reads the member's health and the stored
status, then looks for the member's remote orphans (:mod:`~united.multicluster.collector`: from
caches, so a pass with nothing to collect makes no request).
"""

from __future__ import annotations

import time

import structlog

from united.api.document import Json
from united.api.field import ManifestError
from united.kube import PatchType
from united.multicluster.collector import Collector
from united.multicluster.health import cluster_status
from united.multicluster.member import Member, Members
from united.multicluster.model import ClusterSpec
from united.multicluster.resource import CLUSTERS
from united.runtime.controller import Controller, Host, Result, Stores
from united.runtime.informer import DELETED

log = structlog.get_logger(__name__)


class ClusterController(Controller):
    name = "cluster"
    log_key = "cluster"

    def __init__(self, host: Host, *, members: Members, collector: Collector | None = None) -> None:
        super().__init__(host)
        self.members = members
        self.collector = collector
        members.on_probe = self.queue.add
        self.clusters = Stores(host.watch(CLUSTERS, None, self._on_cluster))
        self.reconciler = self
        self.writes = 0

    def _on_cluster(self, kind: str, obj: Json, old: Json | None) -> None:
        name = str((obj.get("metadata") or {}).get("name") or "")
        if kind == DELETED:
            self.members.remove(name)
            if self.collector is not None:
                self.collector.forget(set(self.members.names()))
            return
        try:
            spec = ClusterSpec.parse(obj)
        except ManifestError as exc:
            log.warning("invalid Cluster ignored", cluster=name, error=str(exc))
            self.members.remove(name)
            return
        self.members.apply(spec, status=obj.get("status"))
        self.queue.add(name)

    async def reconcile(self, key: str) -> Result:
        obj = self.clusters.get(key)
        member = self.members.get(key)
        if obj is None or member is None:
            return Result()
        await self._write_status(key, obj, member)
        if self.collector is None:
            return Result()
        return Result(requeue_after=await self.collector.collect(member))

    async def _write_status(self, key: str, obj: Json, member: Member) -> None:
        generation = (obj.get("metadata") or {}).get("generation")
        status = cluster_status(
            obj.get("status"), member.health, time.time(), generation if isinstance(generation, int) else 0
        )
        if status is None:
            return
        uid = (obj.get("metadata") or {}).get("uid")
        await self.host.client.patch(
            CLUSTERS,
            key,
            {"metadata": {"uid": uid}, "status": status},
            patch_type=PatchType.MERGE,
            subresource="status",
        )
        self.writes += 1


__all__ = ["ClusterController"]
