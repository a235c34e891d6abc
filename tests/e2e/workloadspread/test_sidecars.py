"""A Deployment whose pods run a sidecar container (an init container with ``restartPolicy:
Always``, GA in 1.33) spread by a WorkloadSpread whose subsets patch that sidecar: on 1.28+ the
pods keep it a sidecar, carry each subset's patch, and are Ready (counted by the Deployment and the
spread) once the sidecar runs beside the main container. A 1.20 server knows no sidecars: it drops
the field, and the init container is an ordinary one (the pods are placed all the same)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.e2e.conftest import KUBE_VERSION
from tests.e2e.workloadspread.conftest import Spreading
from tests.e2e.workloadspread.test_spread import WS, deployment, observed, pods_of, spread, subset_of, webhook_ready
from united.kube.client import DEPLOYMENTS, KubeClient
from united.kube.wait import eventually
from united.uniteddeployment.status import pod_ready

pytestmark = pytest.mark.e2e

JSON = dict[str, Any]
SIDECARS = KUBE_VERSION.at_least(28)
"""Whether the server keeps an init container's restartPolicy (SidecarContainers, on since 1.29)."""


def zone_env(pod: JSON) -> str | None:
    [proxy] = [c for c in pod["spec"]["initContainers"] if c["name"] == "proxy"]
    return next((e["value"] for e in proxy.get("env") or [] if e["name"] == "ZONE"), None)


async def test_a_sidecar_survives_the_subset_patch_and_counts_in_readiness(
    kube: KubeClient, namespace: str, spreading: Spreading
) -> None:
    await webhook_ready(kube, spreading)
    doc = spread("mesh", "mesh", [1, None])
    for subset in doc["spec"]["subsets"]:
        env = [{"name": "ZONE", "value": subset["name"]}]
        subset["patch"] = {"spec": {"initContainers": [{"name": "proxy", "env": env}]}}
    await kube.create(WS, doc, namespace=namespace)
    await observed(kube, namespace, "mesh")
    target = deployment("mesh", 3)
    target["spec"]["template"]["spec"]["initContainers"] = [
        {"name": "proxy", "image": "registry.invalid/proxy:1", "restartPolicy": "Always"}
    ]
    await kube.create(DEPLOYMENTS, target, namespace=namespace)

    async def placed_and_ready() -> list[JSON]:
        pods = await pods_of(kube, namespace, "mesh")
        assert len(pods) == 3
        assert Counter(subset_of(p) for p in pods) == {"zone-a": 1, "zone-b": 2}
        for pod in pods:
            [proxy] = pod["spec"]["initContainers"]
            assert proxy.get("restartPolicy") == ("Always" if SIDECARS else None), proxy
            assert zone_env(pod) == subset_of(pod), "the subset's patch of the sidecar"
            assert pod_ready(pod), pod.get("status")
            [status] = pod["status"]["initContainerStatuses"]
            assert ("running" if SIDECARS else "terminated") in status["state"], status
        return pods

    await eventually(placed_and_ready, within=120, what="3 pods placed 1/2, their sidecar patched, Ready")

    async def counted() -> None:
        live = await kube.get(DEPLOYMENTS, "mesh", namespace=namespace)
        assert (live.get("status") or {}).get("readyReplicas") == 3, live.get("status")
        status = (await kube.get(WS, "mesh", namespace=namespace)).get("status") or {}
        replicas = {s["name"]: s.get("replicas", 0) for s in status.get("subsetStatuses") or []}
        assert replicas == {"zone-a": 1, "zone-b": 2}, status

    await eventually(counted, within=90, what="the Deployment and the spread count the pods")
    print(f"\nKubernetes {KUBE_VERSION}: sidecar kept {SIDECARS}, 3 pods Ready and placed 1/2")
