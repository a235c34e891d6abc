"""The controller's own cluster-side pieces, from this repository: its CRDs and the
identity and RBAC of ``manifests/base``, applied the way ``kubectl apply`` would (create,
or merge-patch what exists; CRDs waited for until Established). The e2e and chaos suites
and the bench install the controller exactly as shipped, through this one function."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import yaml

from united.kube.client import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    JSON,
    NAMESPACES,
    ROLE_BINDINGS,
    ROLES,
    SERVICE_ACCOUNTS,
    KubeClient,
    PatchType,
)
from united.kube.errors import AlreadyExists

from . import crds

SOURCE = Path(__file__).resolve().parents[2]
SYSTEM = "united-system"
"""The namespace of ``manifests/base``."""
CRD = SOURCE / "crds" / "apps.united.io_uniteddeployments.yaml"
COMPAT_CRD = SOURCE / "crds" / "compat" / "apps.kruise.io_uniteddeployments.yaml"
BASE = SOURCE / "manifests" / "base"
IDENTITY = ("namespace.yaml", "serviceaccount.yaml", "clusterrole.yaml", "clusterrolebinding.yaml")
LEADER_ELECTION = "leader-election.yaml"
KRUISE_RBAC = SOURCE / "manifests" / "kruise" / "clusterrole.yaml"
"""The ``manifests/kruise`` overlay's extra rules (UnitedDeployments of apps.kruise.io)."""

_RESOURCES = {
    r.kind: r for r in (NAMESPACES, SERVICE_ACCOUNTS, CLUSTER_ROLES, CLUSTER_ROLE_BINDINGS, ROLES, ROLE_BINDINGS)
}


def documents(*paths: Path) -> list[JSON]:
    return [d for p in paths for d in yaml.safe_load_all(p.read_text()) if d]


async def apply(client: KubeClient, docs: Iterable[JSON]) -> None:
    """Create each document, or merge-patch it where it exists; namespaced ones go to
    ``united-system``. CRDs are installed and waited for until Established."""
    docs = list(docs)
    await crds.install(client, [d for d in docs if d["kind"] == "CustomResourceDefinition"])
    for doc in docs:
        if doc["kind"] == "CustomResourceDefinition":
            continue
        resource = _RESOURCES[doc["kind"]]
        namespace = SYSTEM if resource.namespaced else None
        try:
            await client.create(resource, doc, namespace=namespace)
        except AlreadyExists:
            await client.patch(resource, doc["metadata"]["name"], doc, patch_type=PatchType.MERGE, namespace=namespace)


async def install_controller(client: KubeClient, *, compat: bool = False, leader_election: bool = False) -> None:
    """The CRD (and with ``compat`` the apps.kruise.io one), namespace, ServiceAccount and
    ClusterRole(Binding) of ``manifests/base`` (with ``leader_election`` its Lease Role)."""
    files = [CRD, *([COMPAT_CRD] if compat else []), *(BASE / f for f in IDENTITY)]
    if leader_election:
        files.append(BASE / LEADER_ELECTION)
    await apply(client, documents(*files))
