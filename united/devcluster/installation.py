"""The controller's own cluster-side pieces, as shipped in the package (:mod:`united.data`):
its CRDs and the identity and RBAC of ``manifests/base``, applied the way ``kubectl apply``
would (create, or merge-patch what exists; CRDs waited for until Established). The e2e and
chaos suites, the bench and ``united install`` install the controller through this module."""

from __future__ import annotations

from collections.abc import Iterable

from united import __version__, data
from united.api import crdrules
from united.api.groups import GROUP, KRUISE_GROUP
from united.data import documents
from united.kube.client import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    DEPLOYMENTS,
    JSON,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    KubeClient,
    PatchType,
)
from united.kube.discovery import server_release
from united.kube.errors import AlreadyExists

from . import crds

__all__ = ["DEV_WEBHOOK_CONFIGURATIONS", "KRUISE_RBAC", "SYSTEM", "apply", "documents", "install", "install_controller"]

SYSTEM = "united-system"
"""The namespace of ``manifests/base``."""
BASE = data.MANIFESTS / "base"
IDENTITY = (
    "namespace.yaml",
    "serviceaccount.yaml",
    "clusterrole.yaml",
    "clusterrolebinding.yaml",
    "workloadspread-rbac.yaml",
)
LEADER_ELECTION = "leader-election.yaml"
DEV_WEBHOOK_CONFIGURATIONS = data.MANIFESTS / "dev" / "webhook-configurations.yaml"
"""Development only: lets ``united run --webhook-url`` create its webhook configurations."""
KRUISE_RBAC = data.MANIFESTS / "kruise" / "clusterrole.yaml"
"""The ``manifests/kruise`` overlay's extra rules (UnitedDeployments of apps.kruise.io)."""

_RESOURCES = {
    r.kind: r
    for r in (
        NAMESPACES,
        SERVICE_ACCOUNTS,
        CLUSTER_ROLES,
        CLUSTER_ROLE_BINDINGS,
        ROLES,
        ROLE_BINDINGS,
        SECRETS,
        DEPLOYMENTS,
        SERVICES,
        MUTATING_WEBHOOK_CONFIGURATIONS,
        VALIDATING_WEBHOOK_CONFIGURATIONS,
    )
}


async def apply(client: KubeClient, docs: Iterable[JSON]) -> None:
    """Create each document, or merge-patch it where it exists; namespaced ones go to their
    own namespace, else ``united-system``. CRDs are installed and waited for until Established,
    without their validation rules on servers that do not know them (:mod:`united.api.crdrules`)."""
    docs = crdrules.for_server(docs, await server_release(client))
    await crds.install(client, [d for d in docs if d["kind"] == "CustomResourceDefinition"])
    for doc in docs:
        if doc["kind"] == "CustomResourceDefinition":
            continue
        resource = _RESOURCES[doc["kind"]]
        namespace = doc["metadata"].get("namespace", SYSTEM) if resource.namespaced else None
        try:
            await client.create(resource, doc, namespace=namespace)
        except AlreadyExists:
            await client.patch(resource, doc["metadata"]["name"], doc, patch_type=PatchType.MERGE, namespace=namespace)


async def install_controller(
    client: KubeClient, *, compat: bool = False, leader_election: bool = False, dev_webhooks: bool = False
) -> None:
    """The CRDs (and with ``compat`` the apps.kruise.io ones), namespace, ServiceAccount and
    roles of ``manifests/base`` (with ``leader_election`` its Lease Role, with ``dev_webhooks``
    the development-only role of :data:`DEV_WEBHOOK_CONFIGURATIONS`)."""
    files = [*data.crds(GROUP), *(data.crds(KRUISE_GROUP) if compat else []), *(BASE / f for f in IDENTITY)]
    if leader_election:
        files.append(BASE / LEADER_ELECTION)
    if dev_webhooks:
        files.append(DEV_WEBHOOK_CONFIGURATIONS)
    await apply(client, documents(*files))


async def install(docs: Iterable[JSON], *, kubeconfig: str | None = None) -> None:
    """``united install``: apply ``docs`` to the cluster of ``kubeconfig`` (default: in-cluster,
    then ``$KUBECONFIG``, then ``~/.kube/config``)."""
    async with await KubeClient.from_config(kubeconfig, user_agent=f"united-install/{__version__}") as client:
        await apply(client, docs)
