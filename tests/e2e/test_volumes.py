"""StatefulSets with volumeClaimTemplates run: the simulated provisioner creates a
volume per claim and the real persistentvolume-binder binds it."""

from __future__ import annotations

import pytest

from united.devcluster.nodes import is_pod_ready
from united.devcluster.simulation import Simulation
from united.devcluster.volumes import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES
from united.kube.client import JSON, PODS, STATEFUL_SETS, KubeClient
from united.kube.errors import NotFound
from united.kube.wait import eventually

pytestmark = pytest.mark.e2e


def stateful_set(name: str, replicas: int) -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "db",
                            "image": "db:1",
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                        }
                    ]
                },
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}},
                }
            ],
        },
    }


async def test_claims_of_a_stateful_set_are_bound_and_its_pods_run(
    kube: KubeClient, namespace: str, sim: Simulation
) -> None:
    await kube.create(STATEFUL_SETS, stateful_set("db", 2), namespace=namespace)

    async def running() -> list[JSON]:
        pods = (await kube.list(PODS, namespace=namespace, label_selector="app=db")).items
        assert sorted(p["metadata"]["name"] for p in pods if is_pod_ready(p)) == ["db-0", "db-1"]
        claims = (await kube.list(PERSISTENT_VOLUME_CLAIMS, namespace=namespace)).items
        assert sorted((c["metadata"]["name"], (c.get("status") or {}).get("phase")) for c in claims) == [
            ("data-db-0", "Bound"),
            ("data-db-1", "Bound"),
        ]
        return claims

    claims = await eventually(running, within=90, what="stateful set with volumes running")
    volume = await kube.get(PERSISTENT_VOLUMES, claims[0]["spec"]["volumeName"])
    assert volume["spec"]["capacity"]["storage"] == "5Gi"
    assert volume["spec"]["claimRef"]["uid"] == claims[0]["metadata"]["uid"]

    await kube.delete(STATEFUL_SETS, "db", namespace=namespace)

    async def pods_gone() -> None:
        pods = (await kube.list(PODS, namespace=namespace, label_selector="app=db")).items
        assert not pods, f"{len(pods)} pods left"

    await eventually(pods_gone, within=60, what="stateful set pods deleted")
    await kube.delete(PERSISTENT_VOLUME_CLAIMS, claims[0]["metadata"]["name"], namespace=namespace)

    async def volume_gone() -> None:
        try:
            await kube.get(PERSISTENT_VOLUMES, volume["metadata"]["name"])
        except NotFound:
            return
        raise AssertionError("the released volume is still there")

    await eventually(volume_gone, within=60, what="released volume deleted")
