"""The simulated CloneSet controller scales in by ``controller.kubernetes.io/pod-deletion-cost``,
as Kruise's does (Kubernetes 1.20's ReplicaSet controller ignores it), so WorkloadSpread's
scale-in order can be asserted on the local control plane."""

from __future__ import annotations

import pytest

from united.devcluster.nodes import is_pod_ready
from united.devcluster.simulation import Simulation
from united.devcluster.workloads import scale_down_order
from united.kube.client import CLONE_SETS, JSON, PODS, KubeClient, PatchType
from united.kube.wait import eventually

pytestmark = pytest.mark.e2e
COST = "controller.kubernetes.io/pod-deletion-cost"


def clone_set(name: str, replicas: int) -> JSON:
    return {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "CloneSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "img:1"}]},
            },
        },
    }


async def test_scale_in_removes_the_lowest_deletion_cost_first(
    kube: KubeClient, namespace: str, sim: Simulation
) -> None:
    await kube.create(CLONE_SETS, clone_set("web", 5), namespace=namespace)

    async def live() -> list[JSON]:
        listed = await kube.list(PODS, namespace=namespace, label_selector="app=web")
        return [p for p in listed.items if not p["metadata"].get("deletionTimestamp")]

    async def ready(count: int) -> list[JSON]:
        pods = await live()
        assert len(pods) == count and all(is_pod_ready(p) for p in pods), f"{len(pods)} pods"
        return pods

    pods = await eventually(lambda: ready(5), within=90, what="five ready pods")
    # Highest costs on the pods that would go first without any (same list order as the simulator's).
    pods.sort(key=lambda p: scale_down_order(p, ""))
    costs = dict(zip((p["metadata"]["name"] for p in pods), ("300", "200", "100", "-200", "-100"), strict=True))
    for name, cost in costs.items():
        await kube.patch(
            PODS, name, {"metadata": {"annotations": {COST: cost}}}, namespace=namespace, patch_type=PatchType.MERGE
        )

    for replicas, survivors in ((3, {"100", "200", "300"}), (1, {"300"})):
        await kube.patch(
            CLONE_SETS,
            "web",
            {"spec": {"replicas": replicas}},
            namespace=namespace,
            patch_type=PatchType.MERGE,
            subresource="scale",
        )

        async def scaled(count: int = replicas, kept: set[str] = survivors) -> None:
            left = {costs[p["metadata"]["name"]] for p in await ready(count)}
            assert left == kept, f"kept costs {sorted(left)}"

        await eventually(scaled, within=90, what=f"scaled in to {replicas}")
