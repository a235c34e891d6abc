"""The simulated Advanced StatefulSet controller: ordinal pods, scale, partition."""

from __future__ import annotations

import pytest

from united.devcluster.simulation import Simulation
from united.kube.client import ADVANCED_STATEFUL_SETS, JSON, PODS, KubeClient, PatchType
from united.kube.wait import eventually

pytestmark = pytest.mark.e2e


def stateful_set(name: str, replicas: int, image: str = "img:1") -> JSON:
    return {
        "apiVersion": "apps.kruise.io/v1beta1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "db", "image": image}]},
            },
        },
    }


async def test_ordinal_pods_scale_and_keep_a_partition(kube: KubeClient, namespace: str, sim: Simulation) -> None:
    await kube.create(ADVANCED_STATEFUL_SETS, stateful_set("db", 3), namespace=namespace)

    async def pods(expected: dict[str, str]) -> None:
        listed = await kube.list(PODS, namespace=namespace, label_selector="app=db")
        live = {
            p["metadata"]["name"]: p["spec"]["containers"][0]["image"]
            for p in listed.items
            if not p["metadata"].get("deletionTimestamp")
        }
        assert live == expected
        live_set = await kube.get(ADVANCED_STATEFUL_SETS, "db", namespace=namespace)
        status = live_set.get("status") or {}
        assert status.get("readyReplicas") == len(expected), f"status {status}"
        assert status.get("observedGeneration") == live_set["metadata"]["generation"]

    await eventually(
        lambda: pods({"db-0": "img:1", "db-1": "img:1", "db-2": "img:1"}), within=60, what="three ordinals"
    )

    await kube.patch(
        ADVANCED_STATEFUL_SETS,
        "db",
        {
            "spec": {
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}},
                "template": stateful_set("db", 3, image="img:2")["spec"]["template"],
            }
        },
        namespace=namespace,
        patch_type=PatchType.MERGE,
    )
    await eventually(
        lambda: pods({"db-0": "img:1", "db-1": "img:1", "db-2": "img:2"}), within=60, what="ordinals >= 2 updated"
    )

    await kube.patch(
        ADVANCED_STATEFUL_SETS,
        "db",
        {"spec": {"replicas": 1}},
        namespace=namespace,
        patch_type=PatchType.MERGE,
        subresource="scale",
    )
    await eventually(lambda: pods({"db-0": "img:1"}), within=60, what="scaled to one")
