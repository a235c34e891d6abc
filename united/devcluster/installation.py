"""The controller's own cluster-side pieces, as shipped in the package (:mod:`united.data`):
its CRDs and the identity and RBAC of ``manifests/base``, applied the way ``kubectl apply``
would (:mod:`united.kube.apply`). The e2e and
chaos suites, the bench and ``united install`` install the controller through this module."""

from __future__ import annotations

from collections.abc import Iterable

from united import __version__, data
from united.api.groups import GROUP, KRUISE_GROUP
from united.data import documents
from united.kube.apply import apply
from united.kube.client import JSON, KubeClient

__all__ = ["DEV_WEBHOOK_CONFIGURATIONS", "KRUISE_RBAC", "documents", "install", "install_controller"]

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
