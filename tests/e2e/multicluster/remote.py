"""Shared by the multi-cluster e2e modules: members joined to the session's host (the shipped
``manifests/member`` applied in each member, a TokenRequest token of its ServiceAccount, and the
host's side as ``united join`` makes it: :func:`united.multicluster.join.register`, a kubeconfig
Secret and a ``Cluster``, here with a 2 s probe), a UnitedDeployment spread over host, member-1 and
member-2, and waiting for it to converge everywhere. (``united join``'s own token handling —
a token Secret per join, rotation — is proven by ``test_join.py``.)"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

import pytest

from tests.e2e.controller.helpers import DEPLOYMENTS, PODS, ud, wait_ready, zone
from tests.support.controller import Controller
from united.devcluster.cluster import LocalCluster
from united.devcluster.credentials import request_token
from united.devcluster.planes import Plane
from united.kube.apply import apply
from united.kube.client import SECRETS, KubeClient
from united.kube.errors import NotFound
from united.kube.wait import eventually
from united.multicluster.join import (
    MEMBER_ACCOUNT,
    MEMBER_NAMESPACE,
    SECRET_NAMESPACE,
    Endpoint,
    Membership,
    Token,
    endpoint,
    is_ready,
    member_manifests,
    ready_line,
    register,
)
from united.multicluster.join import wait_ready as cluster_ready
from united.multicluster.resource import CLUSTERS
from united.uniteddeployment.status import pod_ready

__all__ = [
    "FINALIZER",
    "HOME",
    "MEMBER_NAMESPACE",
    "MEMBER_ROLE",
    "MEMBER_SA",
    "PROBE",
    "G",
    "by_hand",
    "converged",
    "join",
    "joined",
    "leave",
    "ready_pods",
    "remote_children",
    "spread",
]

G = "apps.united.io"
HOME = SECRET_NAMESPACE
FINALIZER = f"{G}/remote-children"
MEMBER_SA = MEMBER_ACCOUNT
PROBE = {"periodSeconds": 2, "timeoutSeconds": 1}
MEMBER_ROLE = member_manifests()
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
    cluster: LocalCluster,
    members: Mapping[str, Plane],
    *,
    route: Callable[[str, Endpoint, str], Endpoint] | None = None,
) -> None:
    """What :func:`joined` sets up: ``manifests/member`` applied in each member and the host's
    Secret and ``Cluster`` written by ``united join``'s own :func:`register`, with a TokenRequest
    token (``test_join.py`` proves the whole join, token Secrets and their rotation included);
    ``route(member, endpoint, token)`` may name another endpoint for a member's kubeconfig (e.g.
    a fault proxy in front of it, told whose token it forwards)."""
    async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as host:
        for name, plane in members.items():
            membership = Membership(
                name,
                endpoint(plane.admin_kubeconfig, context=None),
                probe=PROBE,
                all_namespaces=True,
                create_namespaces=True,
            )
            async with await plane.client() as member:
                await apply(member, MEMBER_ROLE)
                token = await request_token(member, namespace=MEMBER_NAMESPACE, name=MEMBER_SA)
            if route is not None:
                membership = replace(membership, endpoint=route(name, membership.endpoint, token))
            await register(host, membership, Token(token))
            made = await cluster_ready(host, name, within=60)
            assert is_ready(made), ready_line(name, made)


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
