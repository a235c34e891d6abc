"""Small helpers for controller e2e tests: manifests, children, status, nodes for samples."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import yaml

from united import data
from united.api.groups import KRUISE_GROUP, KRUISE_UD_CRD
from united.devcluster.nodes import NodeSpec, subset_nodes
from united.kube.apply import install_crds
from united.kube.client import JSON, KubeClient, PatchType, Resource
from united.kube.errors import NotFound
from united.kube.wait import eventually

ROOT = Path(__file__).resolve().parents[3]
UD = Resource("apps.united.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")
KRUISE_UD = Resource("apps.kruise.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")


@contextlib.asynccontextmanager
async def kruise_v1beta1_served(kube: KubeClient) -> AsyncIterator[None]:
    """The compat UnitedDeployment CRD as ``united install --api-group apps.kruise.io
    --kruise-v1beta1`` applies it (served as ``v1beta1`` too), the default one again afterwards.
    Only that CRD: applying the WorkloadSpread one would reset the conversion webhook's address
    the running controllers filled in."""
    crds = data.documents(data.crd(KRUISE_GROUP))
    await install_crds(kube, data.serving(crds, KRUISE_UD_CRD, "v1beta1"))

    async def served() -> None:
        assert '"uniteddeployments"' in await kube.get_path(f"/apis/{KRUISE_GROUP}/v1beta1")

    await eventually(served, within=30, what="v1beta1 served", retry_on=(AssertionError, NotFound))
    try:
        yield
    finally:
        await install_crds(kube, crds)


DEPLOYMENTS = Resource("apps", "v1", "deployments", True, "Deployment")
STATEFULSETS = Resource("apps", "v1", "statefulsets", True, "StatefulSet")
CLONESETS = Resource("apps.kruise.io", "v1alpha1", "clonesets", True, "CloneSet")
ADVANCED_STATEFULSETS = Resource("apps.kruise.io", "v1beta1", "statefulsets", True, "StatefulSet")
PODS = Resource("", "v1", "pods", True, "Pod")
EVENTS = Resource("", "v1", "events", True, "Event")
CHILDREN = {
    "deploymentTemplate": DEPLOYMENTS,
    "statefulSetTemplate": STATEFULSETS,
    "cloneSetTemplate": CLONESETS,
    "advancedStatefulSetTemplate": ADVANCED_STATEFULSETS,
}
IMAGE = "registry.invalid/united/app:1"


def sample(name: str) -> JSON:
    doc: JSON = yaml.safe_load((ROOT / "manifests" / "samples" / name).read_text())
    return doc


def ud(
    name: str,
    subsets: list[JSON],
    *,
    replicas: int,
    variant: str = "deploymentTemplate",
    image: str = IMAGE,
    **spec: Any,
) -> JSON:
    pod = {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "main", "image": image}], "terminationGracePeriodSeconds": 0},
    }
    workload: JSON = {"selector": {"matchLabels": {"app": name}}, "template": pod}
    if variant in ("statefulSetTemplate", "advancedStatefulSetTemplate"):
        workload["serviceName"] = name
        workload["podManagementPolicy"] = "Parallel"
    return {
        "apiVersion": "apps.united.io/v1alpha1",
        "kind": "UnitedDeployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {variant: {"metadata": {"labels": {"app": name}}, "spec": workload}},
            "topology": {"subsets": subsets},
            **spec,
        },
    }


def zone(name: str, zone_: str, **kw: Any) -> JSON:
    term = {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone_]}]}
    return {"name": name, "nodeSelectorTerm": term, **kw}


def resource_for(doc: JSON) -> Resource:
    group, _, version = doc["apiVersion"].partition("/")
    return Resource(group, version, "uniteddeployments", True, "UnitedDeployment") if group == KRUISE_UD.group else UD


def variant_of(doc: JSON) -> str:
    return next(iter(doc["spec"]["template"]))


async def children(kube: KubeClient, namespace: str, doc: JSON) -> list[JSON]:
    listed = await kube.list(CHILDREN[variant_of(doc)], namespace=namespace)
    return [
        c
        for c in listed.items
        if any(r.get("name") == doc["metadata"]["name"] for r in c["metadata"].get("ownerReferences") or [])
    ]


def subset_of(child: JSON, group: str = "apps.united.io") -> str:
    return str(child["metadata"]["labels"][f"{group}/subset-name"])


async def replicas_by_subset(kube: KubeClient, namespace: str, doc: JSON) -> dict[str, int]:
    group = doc["apiVersion"].split("/")[0]
    return {subset_of(c, group): c["spec"]["replicas"] for c in await children(kube, namespace, doc)}


async def get_ud(kube: KubeClient, namespace: str, doc: JSON) -> JSON:
    return await kube.get(resource_for(doc), doc["metadata"]["name"], namespace=namespace)


def condition(obj: JSON, kind: str) -> JSON:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == kind:
            return dict(c)
    return {}


async def wait_ready(kube: KubeClient, namespace: str, doc: JSON, *, within: float = 90) -> JSON:
    async def ready() -> JSON:
        obj = await get_ud(kube, namespace, doc)
        status = obj.get("status") or {}
        assert status.get("observedGeneration") == obj["metadata"]["generation"], "status not caught up"
        c = condition(obj, "Ready")
        assert c.get("status") == "True", f"not Ready: {c.get('reason')}: {c.get('message')}"
        return obj

    return await eventually(
        ready, within=within, what=f"{doc['metadata']['name']} Ready", retry_on=(AssertionError, NotFound)
    )


async def wait_shape(
    kube: KubeClient, namespace: str, doc: JSON, expected: dict[str, int], *, within: float = 60
) -> None:
    async def shaped() -> None:
        got = await replicas_by_subset(kube, namespace, doc)
        assert got == expected, f"children {got}, want {expected}"

    await eventually(shaped, within=within, what=f"{doc['metadata']['name']} shape {expected}")


async def patch_ud(kube: KubeClient, namespace: str, doc: JSON, patch: JSON) -> JSON:
    return await kube.patch(
        resource_for(doc), doc["metadata"]["name"], patch, patch_type=PatchType.MERGE, namespace=namespace
    )


async def pods_of(kube: KubeClient, namespace: str, app: str) -> list[JSON]:
    listed = await kube.list(PODS, namespace=namespace, label_selector=f"app={app}")
    return [p for p in listed.items if not p["metadata"].get("deletionTimestamp")]


def nodes_for(doc: JSON, prefix: str) -> list[NodeSpec]:
    """A roomy simulated node per subset whose labels satisfy the subset's nodeSelectorTerm."""
    return subset_nodes(doc, prefix=prefix, cpu="64", memory="256Gi")


def scaled_down(doc: JSON, limit: int) -> JSON:
    """The sample with at most ``limit`` replicas (fixed subset counts scaled to fit)."""
    out = copy.deepcopy(doc)
    replicas = out["spec"].get("replicas", 1)
    if replicas <= limit:
        return out
    fixed = [s for s in out["spec"]["topology"]["subsets"] if isinstance(s.get("replicas"), int)]
    if fixed:
        return out
    out["spec"]["replicas"] = limit
    return out
