"""Member clusters as the manager runs them: :func:`setup` registers the ``Cluster`` controller,
made once ``Cluster`` objects are served and this cluster's identity is known. The kind that places
children in members (UnitedDeployment) calls it with what the members serve to it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import structlog

from united.kube import ApiError, Resource
from united.kube.client import NAMESPACES
from united.multicluster.collector import Collector
from united.multicluster.controller import ClusterController
from united.multicluster.credentials import SecretWatch
from united.multicluster.member import Members
from united.multicluster.resource import CLUSTERS
from united.runtime.controller import Controller, Host, Registry
from united.runtime.informer import Informer

log = structlog.get_logger(__name__)
Serve = Callable[[Members, str], None]
"""Called with the members and this cluster's identity once the controller is made."""


class MemberClusters:
    """The ``Cluster`` controller's parts in one process: the members (closed at shutdown) and
    this cluster's identity, which the owner labels in members carry."""

    def __init__(
        self,
        registry: Registry,
        *,
        cluster_id: str | None,
        uds: Sequence[Informer],
        ud_resource: Resource,
        serve: Serve,
    ) -> None:
        self.registry = registry
        self.cluster_id = cluster_id
        self.uds = uds
        self.ud_resource = ud_resource
        self.serve = serve
        self.members: Members | None = None

    async def identity(self) -> bool:
        """Members need this cluster's identity: ``--cluster-id``, else the uid of its ``kube-system``
        namespace (stable for the cluster's life, the same for every replica, readable with one
        narrow grant). Until it can be read, member clusters wait — retried at each discovery — and
        nothing else does: a start with the API server away must not be an exit."""
        if self.cluster_id:
            return True
        try:
            namespace = await self.registry.client.get(NAMESPACES, "kube-system")
        except ApiError as exc:
            log.warning(
                "cannot read namespace kube-system (this cluster's identity); member clusters wait",
                error=str(exc),
                hint="grant get on it, or pass --cluster-id",
            )
            return False
        self.cluster_id = str((namespace.get("metadata") or {}).get("uid") or "") or None
        return self.cluster_id is not None

    def make(self, host: Host) -> Controller:
        """The controller, once ``Cluster`` objects are served and :meth:`identity` is known."""
        registry = self.registry

        def spawn(coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
            return registry.spawn(coro, name="member")

        secrets = SecretWatch(registry.client, spawn=spawn, failures=registry.failures)
        members = self.members = Members(
            registry.client, secrets=secrets, spawn=spawn, observer=registry.metrics.member_observer
        )
        registry.metrics.count_member_watches(members.watches)
        self.serve(members, self.cluster_id or "")
        collector = Collector(
            registry.client, uds=self.uds, ud_resource=self.ud_resource, collected=registry.metrics.orphan_collected
        )
        return ClusterController(host, members=members, collector=collector)

    async def close(self) -> None:
        if self.members is not None:
            await self.members.close()


def setup(
    registry: Registry, *, cluster_id: str | None, uds: Sequence[Informer], ud_resource: Resource, serve: Serve
) -> MemberClusters:
    """Register the ``Cluster`` controller with the manager that will run it."""
    clusters = MemberClusters(registry, cluster_id=cluster_id, uds=uds, ud_resource=ud_resource, serve=serve)
    registry.add_when_served(CLUSTERS, clusters.make, ready=clusters.identity)
    registry.on_shutdown(clusters.close)
    return clusters
