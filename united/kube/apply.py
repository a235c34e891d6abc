"""Applying manifests the way ``kubectl apply`` would: create, or merge-patch what exists; CRDs
created or replaced and waited for until Established. ``united install``, ``united join``, the
local control plane and the tests apply through here."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from united.api import crdrules
from united.kube.client import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CRDS,
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
from united.kube.errors import AlreadyExists, NotFound
from united.kube.wait import eventually

SYSTEM = "united-system"
"""The namespace of ``manifests/base``: where namespaced documents without one go."""

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
    await install_crds(client, [d for d in docs if d["kind"] == "CustomResourceDefinition"])
    for doc in docs:
        if doc["kind"] == "CustomResourceDefinition":
            continue
        resource = _RESOURCES[doc["kind"]]
        namespace = doc["metadata"].get("namespace", SYSTEM) if resource.namespaced else None
        try:
            await client.create(resource, doc, namespace=namespace)
        except AlreadyExists:
            await client.patch(resource, doc["metadata"]["name"], doc, patch_type=PatchType.MERGE, namespace=namespace)


def is_established(crd: JSON) -> bool:
    """Whether the API server serves the CRD (its ``Established`` condition)."""
    return any(
        c.get("type") == "Established" and c.get("status") == "True"
        for c in (crd.get("status") or {}).get("conditions") or []
    )


async def install_crds(client: KubeClient, crds: Sequence[JSON], *, within: float = 30.0) -> None:
    """Create or update ``crds`` and wait until each is Established."""
    for crd in crds:
        name = crd["metadata"]["name"]
        try:
            await client.create(CRDS, crd)
        except AlreadyExists:
            live = await client.get(CRDS, name)
            body = {**crd, "metadata": {**crd["metadata"], "resourceVersion": live["metadata"]["resourceVersion"]}}
            await client.replace(CRDS, body)

    async def established() -> None:
        for crd in crds:
            live = await client.get(CRDS, crd["metadata"]["name"])
            assert is_established(live), f"CRD {crd['metadata']['name']} not established yet"

    await eventually(established, within=within, what="CRDs established", retry_on=(AssertionError, NotFound))
