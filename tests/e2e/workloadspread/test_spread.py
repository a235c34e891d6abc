"""A Deployment spread over three zones by a WorkloadSpread (max 2 / max 3 / the rest), end to
end: the API server calls our webhook over TLS, the real scheduler places the pods, the
controller writes status and deletion costs."""

from __future__ import annotations

import asyncio
import json
import signal
from collections import Counter
from typing import Any

import pytest

from tests.e2e.controller.helpers import IMAGE
from tests.e2e.workloadspread.conftest import Spreading
from tests.e2e.workloadspread.harness import sent_to_webhook
from united.controller.webhooks import MUTATING
from united.kube.client import CLONE_SETS, DEPLOYMENTS, NODES, PODS, KubeClient, PatchType
from united.kube.wait import eventually
from united.workloadspread.model import DELETION_COST_ANNOTATION, MATCHED_ANNOTATION
from united.workloadspread.reconciler import ws_resource
from united.workloadspread.webhookconfig import NAME

pytestmark = pytest.mark.e2e

JSON = dict[str, Any]
WS = ws_resource("apps.united.io")
ZONE = "topology.kubernetes.io/zone"


def spread(name: str, target: str, maxima: list[int | None]) -> JSON:
    subsets = []
    for n, maximum in enumerate(maxima):
        zone = f"zone-{'abc'[n]}"
        subset: JSON = {
            "name": zone,
            "requiredNodeSelector": {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]},
            "patch": {"metadata": {"labels": {"e2e.united.dev/zone": zone}}},
        }
        if maximum is not None:
            subset["maxReplicas"] = maximum
        subsets.append(subset)
    return {
        "apiVersion": "apps.united.io/v1alpha1",
        "kind": "WorkloadSpread",
        "metadata": {"name": name},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target}, "subsets": subsets},
    }


def deployment(name: str, replicas: int, *, prefer: str | None = None) -> JSON:
    """``prefer``: a zone the pods prefer (a subset's required term still decides when placed)."""
    labels = {"app": name}
    spec: JSON = {"containers": [{"name": "main", "image": IMAGE}], "terminationGracePeriodSeconds": 0}
    if prefer is not None:
        term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [prefer]}]}
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "preference": term}]}}  # fmt: skip
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }


def subset_of(pod: JSON) -> str | None:
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(MATCHED_ANNOTATION)
    return str(json.loads(raw)["subset"]) if raw else None


def cost_of(pod: JSON) -> str | None:
    return ((pod.get("metadata") or {}).get("annotations") or {}).get(DELETION_COST_ANNOTATION)


def name_of(pod: JSON) -> str:
    return str(pod["metadata"]["name"])


def active(pods: list[JSON]) -> list[JSON]:
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


async def pods_of(kube: KubeClient, namespace: str, app: str) -> list[JSON]:
    return active((await kube.list(PODS, namespace=namespace, label_selector=f"app={app}")).items)


CLUSTER_WIDE = frozenset({"leases", "mutatingwebhookconfigurations", "validatingwebhookconfigurations"})
"""Writes that follow other tests, not a spread's pass: the Lease, and the pod webhooks'
namespace lists, which change as earlier tests' namespaces finish terminating."""


def writes(spreading: Spreading) -> dict[str, int]:
    return {r: n for r, n in spreading.writes_by_resource().items() if r not in CLUSTER_WIDE}


async def quiet(spreading: Spreading) -> dict[str, int]:
    """The controller's writes once they have stopped for 3 s."""

    async def settled() -> dict[str, int]:
        first = writes(spreading)
        await asyncio.sleep(5)
        assert writes(spreading) == first, "still writing"
        return first

    result: dict[str, int] = await eventually(settled, within=60, what="the controller stops writing")
    return result


async def webhook_ready(kube: KubeClient, spreading: Spreading) -> None:
    async def configured() -> None:
        config = await kube.get(MUTATING, NAME)
        hooks = config.get("webhooks") or []
        assert hooks and hooks[0]["clientConfig"].get("caBundle"), "no caBundle yet"
        assert str(spreading.webhook_port) in hooks[0]["clientConfig"].get("url", ""), "another controller's URL"

    await eventually(configured, within=60, what="webhook configuration with our CA")


async def observed(kube: KubeClient, namespace: str, name: str) -> JSON:
    async def seen() -> JSON:
        ws = await kube.get(WS, name, namespace=namespace)
        status = ws.get("status") or {}
        assert status.get("observedGeneration") == ws["metadata"]["generation"], status
        return ws

    result: JSON = await eventually(seen, within=60, what="the controller observed the WorkloadSpread")
    await eventually(lambda: sent_to_webhook(kube, namespace), within=30, what="the webhook selects the namespace")
    return result


@pytest.mark.compat
async def test_pods_land_in_subset_order_in_their_zones_with_status_and_costs(
    kube: KubeClient, namespace: str, spreading: Spreading
) -> None:
    await webhook_ready(kube, spreading)
    await kube.create(WS, spread("web", "web", [2, 3, None]), namespace=namespace)
    await observed(kube, namespace, "web")
    await kube.create(DEPLOYMENTS, deployment("web", 8), namespace=namespace)
    zones = {n["metadata"]["name"]: n["metadata"]["labels"].get(ZONE) for n in (await kube.list(NODES)).items}

    async def placed() -> list[JSON]:
        pods = await pods_of(kube, namespace, "web")
        assert len(pods) == 8, f"{len(pods)} pods"
        assert Counter(subset_of(p) for p in pods) == {"zone-a": 2, "zone-b": 3, "zone-c": 3}
        for pod in pods:
            subset = subset_of(pod)
            assert pod["metadata"]["labels"]["e2e.united.dev/zone"] == subset, "the subset's patch"
            terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == [subset]
            node = pod["spec"].get("nodeName")
            assert node, f"{pod['metadata']['name']} not scheduled yet"
            assert zones[node] == subset, f"{pod['metadata']['name']} on {node} in {zones[node]}"
        return pods

    pods = await eventually(placed, within=120, what="8 pods placed 2/3/3 and scheduled in their zones")

    async def counted() -> None:
        status = (await kube.get(WS, "web", namespace=namespace)).get("status") or {}
        replicas = {s["name"]: s.get("replicas", 0) for s in status.get("subsetStatuses") or []}
        assert replicas == {"zone-a": 2, "zone-b": 3, "zone-c": 3}, status
        assert all(not s.get("creatingPods") for s in status["subsetStatuses"]), status
        assert status.get("unplacedReplicas", 0) == 0, status

    await eventually(counted, within=90, what="status counts agree with the pods")

    async def costed() -> None:
        pods = await pods_of(kube, namespace, "web")
        costs = {(subset_of(p), cost_of(p)) for p in pods}
        # 3 subsets, every pod within its maximum: 100 * (n - index)
        assert costs == {("zone-a", "300"), ("zone-b", "200"), ("zone-c", "100")}

    await eventually(costed, within=60, what="deletion costs 300/200/100")
    assert {name_of(p) for p in pods} == {name_of(p) for p in await pods_of(kube, namespace, "web")}

    # Converged: a pass (a label on the spread queues one) writes nothing.
    before = await quiet(spreading)
    await kube.patch(WS, "web", {"metadata": {"labels": {"touched": "1"}}}, patch_type=PatchType.MERGE,
                     namespace=namespace)  # fmt: skip
    await asyncio.sleep(5)
    assert writes(spreading) == before


async def test_pods_admitted_while_the_webhook_is_down_are_unplaced_and_cheapest(
    kube: KubeClient, namespace: str, spreading: Spreading
) -> None:
    await webhook_ready(kube, spreading)
    # Pods admitted unplaced go to zone-c, which no subset selects, so none can be adopted.
    await kube.create(WS, spread("down", "down", [2, 1]), namespace=namespace)
    await observed(kube, namespace, "down")
    await kube.create(DEPLOYMENTS, deployment("down", 3, prefer="zone-c"), namespace=namespace)

    async def three() -> None:
        pods = await pods_of(kube, namespace, "down")
        assert Counter(subset_of(p) for p in pods) == {"zone-a": 2, "zone-b": 1}

    await eventually(three, within=90, what="3 pods placed 2/1")
    spreading.stop(signal.SIGKILL)
    try:
        await kube.patch(DEPLOYMENTS, "down", {"spec": {"replicas": 5}}, patch_type=PatchType.MERGE,
                         namespace=namespace)  # fmt: skip

        async def five() -> None:
            pods = await pods_of(kube, namespace, "down")
            assert len(pods) == 5, f"{len(pods)} pods"
            assert Counter(subset_of(p) for p in pods) == {"zone-a": 2, "zone-b": 1, None: 2}

        await eventually(five, within=90, what="2 pods created unplaced while the webhook is down")
    finally:
        spreading.start()

    async def reported() -> None:
        status = (await kube.get(WS, "down", namespace=namespace)).get("status") or {}
        assert status.get("unplacedReplicas") == 2, status
        pods = await pods_of(kube, namespace, "down")
        costs = {subset_of(p): cost_of(p) for p in pods}
        # n = 2 subsets: unplaced -100 * (n + 1), the lowest
        assert costs == {"zone-a": "200", "zone-b": "100", None: "-300"}

    await eventually(reported, within=90, what="unplaced pods reported and cheapest after the restart")


async def test_a_clone_set_scales_in_its_unplaced_pods_first_then_by_subset(
    kube: KubeClient, namespace: str, spreading: Spreading
) -> None:
    """The real scale-in order (the simulated CloneSet honours pod-deletion-cost, as Kruise's
    does; 1.20's ReplicaSet controller does not): the pods admitted while the webhook was down
    go first, then the later subset's."""
    await webhook_ready(kube, spreading)
    ws = spread("cs", "cs", [2, 1])
    ws["spec"]["targetRef"] = {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs"}
    await kube.create(WS, ws, namespace=namespace)
    await observed(kube, namespace, "cs")
    clone_set = deployment("cs", 0, prefer="zone-c")
    clone_set["apiVersion"], clone_set["kind"] = "apps.kruise.io/v1alpha1", "CloneSet"
    await kube.create(CLONE_SETS, clone_set, namespace=namespace)
    await asyncio.sleep(2)  # the controller's caches hold the CloneSet before its first pods
    await scale_clone_set(kube, namespace, 3)

    async def split(expected: dict[str | None, int]) -> None:
        pods = await pods_of(kube, namespace, "cs")
        assert Counter(subset_of(p) for p in pods) == expected

    await eventually(lambda: split({"zone-a": 2, "zone-b": 1}), within=90, what="3 pods placed 2/1")
    spreading.stop(signal.SIGKILL)
    try:
        await scale_clone_set(kube, namespace, 5)
        await eventually(lambda: split({"zone-a": 2, "zone-b": 1, None: 2}), within=90,
                         what="2 pods created unplaced while the webhook is down")  # fmt: skip
    finally:
        spreading.start()

    async def costed() -> None:
        costs = {subset_of(p): cost_of(p) for p in await pods_of(kube, namespace, "cs")}
        assert costs == {"zone-a": "200", "zone-b": "100", None: "-300"}

    await eventually(costed, within=90, what="deletion costs after the restart")
    await scale_clone_set(kube, namespace, 3)
    await eventually(lambda: split({"zone-a": 2, "zone-b": 1}), within=90, what="the unplaced pods removed first")
    await scale_clone_set(kube, namespace, 2)
    await eventually(lambda: split({"zone-a": 2}), within=90, what="then the later subset's pod")


async def scale_clone_set(kube: KubeClient, namespace: str, replicas: int) -> None:
    await kube.patch(CLONE_SETS, "cs", {"spec": {"replicas": replicas}}, namespace=namespace,
                     patch_type=PatchType.MERGE, subresource="scale")  # fmt: skip
