"""Subsets in member clusters, end to end: the session's host, two member planes joined through
kubeconfig Secrets (a ServiceAccount token per member, bound to the member role of ``manifests/member``),
and the session's controller (shipped RBAC, leader election), which picks the ``Cluster`` objects
up by discovery.

What it proves: one child per cluster with Ready pods, remote children carrying owner labels and
no ownerReferences, the test namespace created in the members, status summed across clusters with
``subsetStatuses[].cluster``, ``/scale`` re-splitting across clusters, and a converged
UnitedDeployment costing no write in the host or any member, also across a controller restart.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e.controller.helpers import UD, condition, get_ud, patch_ud, wait_ready
from tests.e2e.multicluster.remote import G, converged, joined, remote_children, spread
from tests.support.controller import Controller
from united.devcluster.planes import Plane
from united.kube.client import NAMESPACES, KubeClient, PatchType
from united.kube.wait import eventually

__all__ = ["joined"]

pytestmark = pytest.mark.e2e


@pytest.mark.compat
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


async def quiet(controller: Controller) -> tuple[int, float]:
    """The write counters once they stay put for 3 s: convergence's last status write, and the
    earlier tests' namespaces being deleted (their remote children with them), are done."""

    async def still() -> tuple[int, float]:
        before = host_writes(controller), member_writes(controller)
        await asyncio.sleep(3)
        after = host_writes(controller), member_writes(controller)
        assert after == before, f"still writing: {before} -> {after}"
        return after

    result: tuple[int, float] = await eventually(still, within=90, what="the controller quiet")
    return result


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
    host, remote = await quiet(controller)
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
