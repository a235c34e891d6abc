"""Invalid WorkloadSpreads in the cluster: a ``Stalled`` condition and a Warning Event, and
nothing else touched — the target's pods keep no annotation or cost from them."""

from __future__ import annotations

import asyncio
import json
import subprocess
from typing import Any

import pytest

from tests.e2e.conftest import KUBE_VERSION
from tests.e2e.workloadspread.conftest import Spreading
from tests.e2e.workloadspread.harness import sent_to_webhook
from tests.e2e.workloadspread.test_spread import WS, cost_of, deployment, pods_of, spread, subset_of, webhook_ready
from united.api.crdrules import knows_rules
from united.devcluster.cluster import LocalCluster
from united.kube.client import DEPLOYMENTS, EVENTS, KubeClient
from united.kube.errors import NotFound
from united.kube.wait import eventually

pytestmark = pytest.mark.e2e

JSON = dict[str, Any]


async def stalled(kube: KubeClient, namespace: str, name: str) -> JSON:
    async def reported() -> JSON:
        status = (await kube.get(WS, name, namespace=namespace)).get("status") or {}
        conditions = {c["type"]: c for c in status.get("conditions") or []}
        assert conditions.get("Stalled", {}).get("status") == "True", status
        events = (await kube.list(EVENTS, namespace=namespace)).items
        warnings = [e for e in events if e.get("regarding", {}).get("name") == name and e.get("type") == "Warning"]
        assert warnings, "no Warning Event yet"
        return conditions["Stalled"]

    result: JSON = await eventually(reported, within=60, what=f"{name} Stalled with a Warning Event")
    return result


async def test_an_invalid_spread_is_stalled_and_its_target_untouched(
    kube: KubeClient, namespace: str, spreading: Spreading
) -> None:
    """A rule no CRD validation rule repeats (one type of maxReplicas for all subsets)."""
    await webhook_ready(kube, spreading)
    doc = spread("mixed", "app", [1, None])
    doc["spec"]["subsets"][1]["maxReplicas"] = "50%"
    await kube.create(WS, doc, namespace=namespace)
    condition = await stalled(kube, namespace, "mixed")
    assert condition["reason"] == "InvalidSpec"
    assert "spec.subsets[1].maxReplicas: " in condition["message"]
    assert "the maxReplicas type of all subsets must be the same" in condition["message"]
    await kube.create(DEPLOYMENTS, deployment("app", 2), namespace=namespace)

    async def created() -> list[JSON]:
        pods = await pods_of(kube, namespace, "app")
        assert len(pods) == 2
        return pods

    pods = await eventually(created, within=60, what="the target's pods")
    assert [(subset_of(p), cost_of(p)) for p in pods] == [(None, None), (None, None)]


async def test_a_second_spread_on_a_workload_is_stalled_and_the_first_keeps_it(
    kube: KubeClient, namespace: str, spreading: Spreading
) -> None:
    await webhook_ready(kube, spreading)
    await kube.create(WS, spread("first", "shared", [1, None]), namespace=namespace)
    await kube.create(WS, spread("second", "shared", [5]), namespace=namespace)
    condition = await stalled(kube, namespace, "second")
    assert condition["reason"] == "InvalidSpec"
    await eventually(lambda: sent_to_webhook(kube, namespace), within=30, what="the webhook selects the namespace")
    await kube.create(DEPLOYMENTS, deployment("shared", 3), namespace=namespace)

    async def placed() -> None:
        pods = await pods_of(kube, namespace, "shared")
        assert sorted(str(subset_of(p)) for p in pods) == ["zone-a", "zone-b", "zone-b"]

    await eventually(placed, within=90, what="pods placed by the first spread only (1 / rest)")


async def test_duplicated_subset_names_are_refused_by_kubectl_apply_where_the_server_has_cel(
    kube: KubeClient, namespace: str, spreading: Spreading, cluster: LocalCluster
) -> None:
    """On 1.25+ the CRD's rule refuses the spread at once, with its field path, and nothing is
    stored; on older servers (the rules stripped) it is stored and reported Stalled, as before."""
    await webhook_ready(kube, spreading)
    doc = spread("dup", "app", [1, None])
    doc["spec"]["subsets"][1]["name"] = doc["spec"]["subsets"][0]["name"]
    applied = await asyncio.to_thread(
        subprocess.run, [str(cluster.binaries.kubectl), "--kubeconfig", str(cluster.admin_kubeconfig),
                         "apply", "-n", namespace, "-f", "-"],
        input=json.dumps(doc), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    print(f"\nKubernetes {KUBE_VERSION}: kubectl apply -> {applied.returncode}: {applied.stderr.strip()}")
    if knows_rules((KUBE_VERSION.major, KUBE_VERSION.minor)):
        assert applied.returncode != 0
        assert "spec.subsets: Invalid value:" in applied.stderr and "duplicated subset name" in applied.stderr
        with pytest.raises(NotFound):
            await kube.get(WS, "dup", namespace=namespace)
    else:
        assert applied.returncode == 0, applied.stderr
        condition = await stalled(kube, namespace, "dup")
        assert 'spec.subsets[1].name: Invalid value: "zone-a": duplicated subset name zone-a' in condition["message"]
