"""The session's controller serves its pod webhooks to the whole e2e suite, as it would on a
user's cluster: a spread's pods created by any test are placed at admission, by the same
process that reconciles UnitedDeployments (not only inside the WorkloadSpread package)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.workloadspread.test_spread import WS, ZONE, deployment, observed, pods_of, spread, subset_of
from tests.support.controller import Controller, WebhookController
from united.devcluster.simulation import Simulation
from united.kube.client import DEPLOYMENTS, KubeClient
from united.kube.wait import eventually
from united.workloadspread.webhookconfig import MUTATE_PATH

pytestmark = pytest.mark.e2e

REQUESTS = "controller_runtime_webhook_requests_total"


def required_zones(pod: dict[str, Any]) -> set[str]:
    """The zones a pod's required node affinity names (set at admission: it cannot change after)."""
    spec = pod.get("spec") or {}
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    return {
        value
        for term in required.get("nodeSelectorTerms") or []
        for expression in term.get("matchExpressions") or []
        if expression.get("key") == ZONE
        for value in expression.get("values") or []
    }


@pytest.mark.compat
async def test_a_spreads_pods_are_placed_by_the_session_controllers_webhook(
    controller: Controller, spreading: WebhookController, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    assert spreading is controller, "one process serves the webhooks and reconciles"
    before = controller.counter(REQUESTS, webhook=MUTATE_PATH)
    await kube.create(WS, spread("web", "web", [1, None]), namespace=namespace)
    await observed(kube, namespace, "web")
    await kube.create(DEPLOYMENTS, deployment("web", 3), namespace=namespace)

    async def placed() -> dict[str, str | None]:
        pods = await pods_of(kube, namespace, "web")
        assert len(pods) == 3, f"{len(pods)} pods so far"
        return {p["metadata"]["name"]: subset_of(p) for p in pods}

    subsets = await eventually(placed, within=120, what="the Deployment's pods")
    assert sorted(s or "-" for s in subsets.values()) == ["zone-a", "zone-b", "zone-b"], subsets
    for pod in await pods_of(kube, namespace, "web"):
        zone = subset_of(pod)
        assert required_zones(pod) == {zone}, pod["spec"].get("affinity")
        assert pod["metadata"]["labels"].get("e2e.united.dev/zone") == zone, pod["metadata"]["labels"]
    assert controller.counter(REQUESTS, webhook=MUTATE_PATH) >= before + 3
