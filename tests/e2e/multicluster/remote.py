"""Shared by the multi-cluster e2e modules: members joined to the session's host (the shipped
``manifests/member`` applied in each member, a token of its ServiceAccount in a kubeconfig Secret in
the host, a ``Cluster`` with a 2 s probe), a UnitedDeployment spread over host, member-1 and member-2, and
waiting for it to converge everywhere."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pytest

from tests.e2e.controller.conftest import Controller
from tests.e2e.controller.helpers import DEPLOYMENTS, PODS, condition, ud, wait_ready, zone
from united import data, kustomization
from united.devcluster.cluster import LocalCluster
from united.devcluster.installation import apply, documents
from united.devcluster.planes import Plane
from united.devcluster.wait import eventually
from united.kube.client import SECRETS, KubeClient, PatchType
from united.kube.errors import AlreadyExists, NotFound
from united.multicluster.resource import CLUSTERS
from united.uniteddeployment.status import pod_ready

G = "apps.united.io"
HOME = "united-clusters"
FINALIZER = f"{G}/remote-children"
MEMBER_NAMESPACE = "united-system"
MEMBER_SA = "united-member"
PROBE = {"periodSeconds": 2, "timeoutSeconds": 1}
MEMBER_ROLE = kustomization.build(data.MANIFESTS, "member")
"""The shipped ``manifests/member``: the controller's only grant in a member."""


@pytest.fixture(scope="module")
def joined(cluster: LocalCluster, members: dict[str, Plane], controller: Controller) -> Iterator[dict[str, Plane]]:
    """Each member with ``manifests/member``, its kubeconfig Secret in the host and a ``Cluster``;
    yields once every ``Cluster`` is ``Ready``. The Clusters and Secrets go afterwards."""
    asyncio.run(join(cluster, members))
    try:
        yield members
    finally:
        asyncio.run(leave(cluster, members))


async def join(
    cluster: LocalCluster, members: Mapping[str, Plane], *, route: Callable[[str, str], str] | None = None
) -> None:
    """What :func:`joined` sets up; ``route(member, kubeconfig)`` may rewrite a member's kubeconfig
    before it goes into the Secret (e.g. to reach the member through a fault proxy)."""
    async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as host:
        await apply(host, documents(data.MANIFESTS / "base" / "cluster-credentials.yaml"))
        for name, plane in members.items():
            async with await plane.client() as member:
                await apply(member, MEMBER_ROLE)
                config = await plane.service_account_kubeconfig(member, namespace=MEMBER_NAMESPACE, name=MEMBER_SA)
            if route is not None:
                config = route(name, config)
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


async def leave(cluster: LocalCluster, members: Iterable[str]) -> None:
    """The members' Clusters and Secrets deleted from the host."""
    async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as host:
        for name in members:
            for resource, namespace in ((CLUSTERS, None), (SECRETS, HOME)):
                with contextlib.suppress(NotFound):
                    await host.delete(resource, name, namespace=namespace)


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


def by_hand(name: str, *, owner: str, owner_uid: str, host_id: str) -> dict[str, Any]:
    """A child as the controller labels one (no pods: replicas 0)."""
    labels = {
        f"{G}/subset-name": "m1",
        f"{G}/owner-uid": owner_uid,
        f"{G}/owner-name": owner,
        f"{G}/owner-cluster": host_id,
    }
    pod = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "main", "image": "x.invalid/y"}]}}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}}, "template": pod},
    }
