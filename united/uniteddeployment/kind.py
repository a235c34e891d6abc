"""The UnitedDeployment kind as the manager runs it: :func:`setup` registers its controller (always
on) and, in this project's own API group, the member clusters its subsets may be placed in."""

from __future__ import annotations

from typing import Protocol

from united.api.groups import GROUP
from united.kube import Resource
from united.multicluster import kind as member_clusters
from united.multicluster.member import Members
from united.runtime.controller import Registry
from united.uniteddeployment.controller import UnitedDeploymentController
from united.uniteddeployment.model import PLURAL


class Options(Protocol):
    """What the kind reads from the controller's settings."""

    @property
    def api_group(self) -> str: ...
    @property
    def selector(self) -> str | None: ...
    @property
    def child_sync_timeout(self) -> float: ...
    @property
    def create_member_namespaces(self) -> bool: ...
    @property
    def cluster_id(self) -> str | None: ...


def ud_resource(api_group: str) -> Resource:
    """Both groups store and are spoken to in ``v1alpha1`` (what every HPA and released
    manifest names), so the API server converts nothing on the controller's reads and writes."""
    return Resource(api_group, "v1alpha1", PLURAL, True, "UnitedDeployment")


def setup(registry: Registry, options: Options) -> UnitedDeploymentController:
    """Register the kind with the manager that will run it. Member clusters are a feature of this
    project's group only (OpenKruise's UnitedDeployment has no ``cluster`` field)."""
    resource = ud_resource(options.api_group)
    controller = registry.add(
        UnitedDeploymentController(
            registry,
            ud_resource=resource,
            selector=options.selector,
            child_sync_timeout=options.child_sync_timeout,
            create_member_namespaces=options.create_member_namespaces,
        )
    )

    def serve(members: Members, host_id: str) -> None:
        controller.attach(members, host_id=host_id, namespaces=registry.namespaces)

    if options.api_group == GROUP:
        member_clusters.setup(
            registry, cluster_id=options.cluster_id, uds=controller.uds, ud_resource=resource, serve=serve
        )
    return controller
