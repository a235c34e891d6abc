"""``kubectl united status workloadspread/NAME`` through the real kubectl, and the Argo CD health
check (manifests/argocd) on live WorkloadSpreads: Healthy once placed, Degraded when invalid."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.controller.test_kubectl_plugin import Kubectl
from tests.e2e.workloadspread.conftest import Spreading
from tests.e2e.workloadspread.test_invalid import stalled
from tests.e2e.workloadspread.test_spread import WS, deployment, observed, spread, webhook_ready
from tests.unit.argocd.harness import health
from united.devcluster.cluster import LocalCluster
from united.kube.client import DEPLOYMENTS, KubeClient
from united.kube.wait import eventually

pytestmark = pytest.mark.e2e


async def test_status_and_health_of_a_placed_and_an_invalid_spread(
    cluster: LocalCluster, kube: KubeClient, namespace: str, spreading: Spreading
) -> None:
    kubectl = Kubectl(cluster, namespace)
    await webhook_ready(kube, spreading)
    await kube.create(WS, spread("placed", "app", [1, None]), namespace=namespace)
    await observed(kube, namespace, "placed")
    await kube.create(DEPLOYMENTS, deployment("app", 3), namespace=namespace)

    async def placed() -> dict[str, Any]:
        obj = await kube.get(WS, "placed", namespace=namespace)
        replicas = [s.get("replicas") for s in (obj.get("status") or {}).get("subsetStatuses") or []]
        assert replicas == [1, 2], obj.get("status")
        assert health(obj)[0] == "Healthy", obj.get("status")
        return obj

    await eventually(placed, within=90, what="3 pods placed 1 + 2")
    shown = await kubectl("status", "ws/placed")
    assert shown.returncode == 0, shown
    lines = shown.stdout.splitlines()
    assert lines[:2] == [
        f"WorkloadSpread {namespace}/placed: generation 1, observed 1",
        "Target: Deployment/app, unplaced replicas: 0",
    ]
    header = next(i for i, line in enumerate(lines) if line.startswith("SUBSET"))
    assert [line.split()[:3] for line in lines[header + 1 :]] == [["zone-a", "1", "0"], ["zone-b", "2", "-1"]]

    # Invalid in a way no CRD validation rule catches (1.25+ would refuse duplicated names at once).
    doc = spread("mixed", "other", [1, None])
    doc["spec"]["subsets"][1]["maxReplicas"] = "50%"
    await kube.create(WS, doc, namespace=namespace)
    await stalled(kube, namespace, "mixed")
    status, message = health(await kube.get(WS, "mixed", namespace=namespace))
    assert (status, message.split(":")[0]) == ("Degraded", "InvalidSpec")
    broken = await kubectl("status", "workloadspread/mixed")
    assert broken.returncode == 0, broken
    assert "Conditions: Ready=False,Stalled=True(InvalidSpec)" in broken.stdout
