"""A member cluster going away and coming back: last-known counts (never 0) while it is down,
Adaptive failover of its replicas to a later subset after ``rescheduleCriticalSeconds``, and no
duplicate child when it returns. Member-1's API server is really stopped (etcd and its pods stay)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.e2e.controller.helpers import UD, condition, get_ud, wait_ready
from tests.e2e.multicluster.remote import PROBE, converged, joined, ready_pods, remote_children, spread
from tests.support.controller import Controller
from united.devcluster.planes import Plane
from united.kube.client import KubeClient, PatchType
from united.kube.wait import eventually
from united.multicluster.resource import CLUSTERS

__all__ = ["joined"]
pytestmark = pytest.mark.e2e
CRITICAL = 5
WINDOW = 10


def entry(obj: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in obj["status"]["subsetStatuses"] if s["name"] == name)


async def test_adaptive_failover_and_return(
    joined: dict[str, Plane], kube: KubeClient, member_kube: dict[str, KubeClient], namespace: str
) -> None:
    pod = {"metadata": {"labels": {"app": "fo"}}, "spec": {"containers": [{"name": "main", "image": "x"}]}}
    doc = {
        "apiVersion": "apps.united.io/v1alpha1",
        "kind": "UnitedDeployment",
        "metadata": {"name": "fo"},
        "spec": {
            "replicas": 4,
            "selector": {"matchLabels": {"app": "fo"}},
            "template": {
                "deploymentTemplate": {
                    "metadata": {"labels": {"app": "fo"}},
                    "spec": {"selector": {"matchLabels": {"app": "fo"}}, "template": pod},
                }
            },
            "topology": {
                "subsets": [
                    {"name": "m1", "cluster": "member-1", "maxReplicas": 2},
                    {"name": "m2", "cluster": "member-2"},
                ],
                "scheduleStrategy": {
                    "type": "Adaptive",
                    "adaptive": {"rescheduleCriticalSeconds": CRITICAL, "unschedulableDuration": WINDOW},
                },
            },
        },
    }
    m1, m2 = member_kube["member-1"], member_kube["member-2"]
    await kube.create(UD, doc, namespace=namespace)

    async def shape(first: int, second: int) -> None:
        for client, want in ((m1, first), (m2, second)):
            children = await remote_children(client, namespace)
            assert [c["spec"]["replicas"] for c in children] == [want], children
            assert await ready_pods(client, namespace, "fo") == want

    await eventually(lambda: shape(2, 2), within=120, what="fo: 2 Ready pods in each member")
    plane = joined["member-1"]
    stopped = time.monotonic()
    plane.stop_apiserver()
    try:

        async def down() -> dict[str, Any]:
            ready = condition(await kube.get(CLUSTERS, "member-1"), "Ready")
            assert (ready.get("status"), ready.get("reason")) == ("False", "Unreachable"), ready
            obj = await get_ud(kube, namespace, doc)
            m1_entry = entry(obj, "m1")
            assert (m1_entry.get("replicas", 0), m1_entry.get("readyReplicas", 0)) == (2, 2), m1_entry
            cluster_ready = next(c for c in m1_entry.get("conditions") or () if c["type"] == "ClusterReady")
            assert cluster_ready["reason"] == "ClusterUnreachable", cluster_ready
            assert cluster_ready["lastTransitionTime"] == ready["lastTransitionTime"]
            return obj

        await eventually(down, within=2 + 1 + 10, what="member-1 Unreachable, m1 keeps its last-known counts")

        async def failed_over() -> None:
            children = await remote_children(m2, namespace)
            assert [c["spec"]["replicas"] for c in children] == [4], children
            assert await ready_pods(m2, namespace, "fo") == 4

        await eventually(failed_over, within=CRITICAL + 1 + 30, what="m1's replicas failed over to m2")
        failover = time.monotonic() - stopped
        print(f"\nfailover: m2 has m1's replicas Ready {failover:.1f} s after member-1's API server stopped")
        obj = await get_ud(kube, namespace, doc)
        assert entry(obj, "m1")["desired"] == 0 and entry(obj, "m1")["reason"] == "cluster-failover"
    finally:
        plane.start_apiserver()

    async def back() -> None:
        ready = condition(await kube.get(CLUSTERS, "member-1"), "Ready")
        assert ready.get("status") == "True", ready
        children = await remote_children(m1, namespace)
        assert len(children) == 1, f"member-1 children: {children}"
        obj = await get_ud(kube, namespace, doc)
        assert obj["status"]["readyReplicas"] >= 4
        assert not any(c["type"] == "ClusterReady" for c in entry(obj, "m1").get("conditions") or ())

    await eventually(back, within=90, what="member-1 back: one child there, no ClusterReady condition")
    await eventually(lambda: shape(2, 2), within=WINDOW + 60, what="m2 scaled back, m1 keeps its ready pods")
    await wait_ready(kube, namespace, doc, within=60)


async def test_member_down_keeps_counts(
    joined: dict[str, Plane],
    kube: KubeClient,
    member_kube: dict[str, KubeClient],
    namespace: str,
    controller: Controller,
) -> None:
    """Without Adaptive nothing moves: member-1's subset keeps its last-known counts, the others
    follow a ``/scale``, member-1 gets no write (and few requests) while away, and catches up with
    its one child once back."""
    doc = spread("steady", 6)
    await kube.create(UD, doc, namespace=namespace)
    await converged(kube, member_kube, namespace, doc, 2)
    plane = joined["member-1"]
    requests_before = controller.counter("united_member_requests_total", cluster="member-1")
    stopped = time.monotonic()
    plane.stop_apiserver()
    try:
        scale = {"spec": {"replicas": 9}}
        await kube.patch(UD, "steady", scale, patch_type=PatchType.MERGE, namespace=namespace, subresource="scale")

        async def others_converged() -> None:
            for cluster, client in (("host", kube), ("member-2", member_kube["member-2"])):
                children = [
                    c for c in await remote_children(client, namespace) if c["metadata"]["name"].startswith("steady")
                ]
                assert [c["spec"]["replicas"] for c in children] == [3], f"{cluster}: {children}"
            obj = await get_ud(kube, namespace, doc)
            m1 = entry(obj, "m1")
            assert (m1["desired"], m1.get("replicas", 0), m1.get("readyReplicas", 0)) == (3, 2, 2), m1
            assert [c["reason"] for c in m1.get("conditions") or ()] == ["ClusterUnreachable"], m1
            ready = condition(obj, "Ready")
            assert (ready["status"], ready["reason"]) == ("False", "ClusterUnavailable"), ready

        await eventually(others_converged, within=60, what="host and member-2 at 3, member-1 last-known 2")
        outage = time.monotonic() - stopped
        requests = controller.counter("united_member_requests_total", cluster="member-1") - requests_before
        probes = outage / PROBE["periodSeconds"] + 2
        print(f"\nmember-1 down {outage:.1f} s: {requests:.0f} requests to it (probes alone: about {probes:.0f})")
        assert requests <= probes + 3 * 8, "no tight loop against a dead member (probes + informer backoff)"
    finally:
        plane.start_apiserver()

    async def caught_up() -> None:
        children = await remote_children(member_kube["member-1"], namespace)
        assert [c["spec"]["replicas"] for c in children] == [3], children

    await eventually(caught_up, within=90, what="member-1 back: its one child scaled to 3")
    await wait_ready(kube, namespace, doc, within=90)
