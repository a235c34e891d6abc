"""Subsets in member clusters, end to end: the session's host, two member planes joined through
kubeconfig Secrets (a ServiceAccount token per member, bound to the member role of design §5),
and the session's controller (shipped RBAC, leader election), which picks the ``Cluster`` objects
up by discovery.

What it proves: one child per cluster with Ready pods, remote children carrying owner labels and
no ownerReferences, the test namespace created in the members, status summed across clusters with
``subsetStatuses[].cluster``, ``/scale`` re-splitting across clusters, and a converged
UnitedDeployment costing no write in the host or any member, also across a controller restart.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.controller.conftest import Controller
from tests.e2e.controller.helpers import DEPLOYMENTS, PODS, UD, condition, get_ud, patch_ud, ud, wait_ready, zone
from united import data
from united.devcluster.cluster import LocalCluster
from united.devcluster.installation import apply, documents
from united.devcluster.planes import Plane
from united.devcluster.wait import eventually
from united.kube.client import NAMESPACES, SECRETS, KubeClient, PatchType
from united.kube.errors import AlreadyExists, NotFound
from united.multicluster.resource import CLUSTERS
from united.uniteddeployment.status import pod_ready

pytestmark = pytest.mark.e2e

G = "apps.united.io"
HOME = "united-clusters"
MEMBER_NAMESPACE = "united-system"
MEMBER_SA = "united-member"
PROBE = {"periodSeconds": 2, "timeoutSeconds": 1}
MEMBER_ROLE: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": MEMBER_NAMESPACE}},
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": MEMBER_SA, "namespace": MEMBER_NAMESPACE}},
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": MEMBER_SA},
        "rules": [
            {
                "apiGroups": ["apps"],
                "resources": ["deployments", "statefulsets"],
                "verbs": ["list", "watch", "create", "patch", "delete"],
            },
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch", "patch"]},
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["create"]},
        ],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": MEMBER_SA},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": MEMBER_SA},
        "subjects": [{"kind": "ServiceAccount", "name": MEMBER_SA, "namespace": MEMBER_NAMESPACE}],
    },
]


@pytest.fixture(scope="module")
def joined(cluster: LocalCluster, members: dict[str, Plane], controller: Controller) -> Iterator[dict[str, Plane]]:
    """Each member with the member role, its kubeconfig Secret in the host and a ``Cluster``;
    yields once every ``Cluster`` is ``Ready``. The Clusters and Secrets go afterwards."""

    async def join() -> None:
        async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as host:
            await apply(host, documents(data.MANIFESTS / "base" / "cluster-credentials.yaml"))
            for name, plane in members.items():
                async with await plane.client() as member:
                    await apply(member, MEMBER_ROLE)
                    config = await plane.service_account_kubeconfig(member, namespace=MEMBER_NAMESPACE, name=MEMBER_SA)
                secret = {
                    "metadata": {"name": name},
                    "data": {"kubeconfig": base64.b64encode(config.encode()).decode()},
                }
                cluster_obj = {
                    "apiVersion": f"{G}/v1alpha1",
                    "kind": "Cluster",
                    "metadata": {"name": name},
                    "spec": {"kubeconfigSecretRef": {"namespace": HOME, "name": name}, "probe": PROBE},
                }
                for resource, body, namespace in ((SECRETS, secret, HOME), (CLUSTERS, cluster_obj, None)):
                    try:
                        await host.create(resource, body, namespace=namespace)
                    except AlreadyExists:
                        await host.patch(resource, name, body, patch_type=PatchType.MERGE, namespace=namespace)
            for name in members:

                async def ready(name: str = name) -> None:
                    c = condition(await host.get(CLUSTERS, name), "Ready")
                    assert c.get("status") == "True", f"Cluster {name}: {c}"

                await eventually(ready, within=60, what=f"Cluster {name} Ready")

    async def leave() -> None:
        async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as host:
            for name in members:
                for resource, namespace in ((CLUSTERS, None), (SECRETS, HOME)):
                    with contextlib.suppress(NotFound):
                        await host.delete(resource, name, namespace=namespace)

    asyncio.run(join())
    try:
        yield members
    finally:
        asyncio.run(leave())


def spread(name: str, replicas: int) -> dict[str, Any]:
    """Subsets ``h`` (host), ``m1`` (member-1) and ``m2`` (member-2)."""
    return ud(
        name,
        [zone("h", "zone-a"), {"name": "m1", "cluster": "member-1"}, {"name": "m2", "cluster": "member-2"}],
        replicas=replicas,
    )


async def remote_children(kube: KubeClient, namespace: str) -> list[dict[str, Any]]:
    try:
        return list((await kube.list(DEPLOYMENTS, namespace=namespace)).items)
    except NotFound:
        return []


async def ready_pods(kube: KubeClient, namespace: str, app: str) -> int:
    listed = await kube.list(PODS, namespace=namespace, label_selector=f"app={app}")
    return sum(1 for p in listed.items if pod_ready(p) and not p["metadata"].get("deletionTimestamp"))


async def converged(
    kube: KubeClient, member_kube: dict[str, KubeClient], namespace: str, doc: dict[str, Any], each: int
) -> dict[str, Any]:
    """Waits for one child with ``each`` replicas and ``each`` Ready pods per cluster; returns the UD."""
    name = doc["metadata"]["name"]

    async def check() -> None:
        host = [c for c in await remote_children(kube, namespace) if c["metadata"]["name"].startswith(name)]
        assert [c["spec"]["replicas"] for c in host] == [each], f"host children: {host}"
        assert await ready_pods(kube, namespace, name) == each, "host pods not Ready"
        for cluster, member in member_kube.items():
            there = await remote_children(member, namespace)
            assert [c["spec"]["replicas"] for c in there] == [each], f"{cluster} children: {there}"
            assert await ready_pods(member, namespace, name) == each, f"{cluster} pods not Ready"

    await eventually(check, within=120, what=f"{name}: {each} Ready pods in each cluster")
    return await wait_ready(kube, namespace, doc, within=60)


async def test_converges_across_three_clusters(
    joined: dict[str, Plane], kube: KubeClient, member_kube: dict[str, KubeClient], namespace: str
) -> None:
    doc = spread("web", 6)
    await kube.create(UD, doc, namespace=namespace)
    obj = await converged(kube, member_kube, namespace, doc, 2)
    host_id = (await kube.get(NAMESPACES, "kube-system"))["metadata"]["uid"]
    uid = obj["metadata"]["uid"]
    for cluster, member in member_kube.items():
        ns = await member.get(NAMESPACES, namespace)
        assert ns["metadata"]["labels"][f"{G}/created-by-cluster"] == host_id
        [child] = await remote_children(member, namespace)
        meta = child["metadata"]
        assert "ownerReferences" not in meta
        assert meta["labels"][f"{G}/owner-uid"] == uid and meta["labels"][f"{G}/owner-name"] == "web"
        assert meta["labels"][f"{G}/owner-cluster"] == host_id
        assert meta["annotations"][f"{G}/cluster"] == cluster
        assert child["spec"]["template"]["metadata"]["labels"][f"{G}/owner-cluster"] == host_id
    status = obj["status"]
    assert status["replicas"] == status["readyReplicas"] == 6
    assert [s.get("cluster") for s in status["subsetStatuses"]] == [None, "member-1", "member-2"]
    assert condition(obj, "Ready")["status"] == "True"


async def test_scale_resplits(
    joined: dict[str, Plane], kube: KubeClient, member_kube: dict[str, KubeClient], namespace: str
) -> None:
    doc = spread("scaled", 6)
    await kube.create(UD, doc, namespace=namespace)
    await converged(kube, member_kube, namespace, doc, 2)
    scale = {"spec": {"replicas": 9}}
    await kube.patch(UD, "scaled", scale, patch_type=PatchType.MERGE, namespace=namespace, subresource="scale")
    obj = await converged(kube, member_kube, namespace, doc, 3)
    assert obj["status"]["replicas"] == obj["status"]["readyReplicas"] == 9
    assert [s["desired"] for s in obj["status"]["subsetStatuses"]] == [3, 3, 3]


def host_writes(controller: Controller) -> int:
    """Host writes but Lease renewals and the Clusters' status heartbeat (one a minute each)."""
    return sum(n for r, n in controller.writes_by_resource().items() if r != "leases" and not r.startswith("clusters"))


def member_writes(controller: Controller) -> float:
    return sum(controller.counter("united_member_requests_total", verb=v) for v in ("POST", "PUT", "PATCH", "DELETE"))


async def test_noop_pass_writes_nothing(
    joined: dict[str, Plane],
    kube: KubeClient,
    member_kube: dict[str, KubeClient],
    namespace: str,
    controller: Controller,
) -> None:
    doc = spread("quiet", 6)
    await kube.create(UD, doc, namespace=namespace)
    await converged(kube, member_kube, namespace, doc, 2)
    await asyncio.sleep(2)  # the last status write of convergence lands
    host, remote = host_writes(controller), member_writes(controller)
    assert remote > 0, "the member children were written through the controller's member clients"
    await patch_ud(kube, namespace, doc, {"metadata": {"labels": {"touched": "yes"}}})
    await asyncio.sleep(5)
    assert (host_writes(controller), member_writes(controller)) == (host, remote), "a label touch caused writes"
    controller.restart()
    await wait_ready(kube, namespace, doc)
    await asyncio.sleep(5)  # every UD is reconciled after the restart: still nothing to write
    assert host_writes(controller) == 0, controller.writes_by_resource()
    assert member_writes(controller) == 0
    obj = await get_ud(kube, namespace, doc)
    assert condition(obj, "Ready")["status"] == "True"
