"""Smoke tests of the local control plane plus simulators: the real API server,
controller-manager and scheduler do their part, the simulators do the kubelet's and
Kruise's."""

from __future__ import annotations

import json
from typing import Any

import pytest

from united.devcluster.nodes import SIMULATED_LABEL, ZONE_LABEL, is_pod_ready
from united.devcluster.simulation import Simulation
from united.kube.client import (
    CLONE_SETS,
    CONFIG_MAPS,
    DEPLOYMENTS,
    JSON,
    NODES,
    PODS,
    REPLICA_SETS,
    KubeClient,
    PatchType,
)
from united.kube.errors import NotFound
from united.kube.wait import eventually

pytestmark = pytest.mark.e2e

IMAGE = "registry.invalid/united/pause:1"


def deployment(name: str, replicas: int, *, zone: str | None = None) -> JSON:
    spec: JSON = {"containers": [{"name": "main", "image": IMAGE}]}
    if zone:
        spec["nodeSelector"] = {ZONE_LABEL: zone}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


def clone_set(name: str, replicas: int, *, image: str = IMAGE, partition: int | None = None) -> JSON:
    spec: JSON = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name, "tier": "web"}},
            "spec": {"containers": [{"name": "main", "image": image}]},
        },
    }
    if partition is not None:
        spec["updateStrategy"] = {"type": "ReCreate", "partition": partition}
    return {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "metadata": {"name": name}, "spec": spec}


async def pods_of(kube: KubeClient, namespace: str, app: str) -> list[JSON]:
    listed = await kube.list(PODS, namespace=namespace, label_selector=f"app={app}")
    return [p for p in listed.items if not p["metadata"].get("deletionTimestamp")]


async def test_deployment_pods_become_ready_on_simulated_nodes(
    kube: KubeClient, namespace: str, sim: Simulation
) -> None:
    await kube.create(DEPLOYMENTS, deployment("web", 3), namespace=namespace)

    async def ready() -> list[JSON]:
        live = await kube.get(DEPLOYMENTS, "web", namespace=namespace)
        status = live.get("status") or {}
        assert status.get("readyReplicas") == 3, f"deployment status {status}"
        return await pods_of(kube, namespace, "web")

    pods = await eventually(ready, within=60, what="deployment ready")
    assert len(pods) == 3
    for pod in pods:
        status = pod["status"]
        assert status["phase"] == "Running"
        conditions = {c["type"]: c["status"] for c in status["conditions"]}
        assert conditions == {"PodScheduled": "True", "Initialized": "True", "ContainersReady": "True", "Ready": "True"}
        assert status["podIP"].startswith("127.244.")
        assert status["containerStatuses"][0]["ready"] is True
        assert pod["spec"]["nodeName"] in sim.node_names


async def test_simulated_nodes_are_ready_and_untainted(kube: KubeClient, sim: Simulation) -> None:
    server = json.loads(await kube.get_path("/version"))["gitVersion"]

    async def healthy() -> None:
        for name in sim.node_names:
            node = await kube.get(NODES, name)
            assert node["metadata"]["labels"][SIMULATED_LABEL] == "true"
            conditions = (node.get("status") or {}).get("conditions") or []
            ready = [c for c in conditions if c["type"] == "Ready"]
            assert ready and ready[0]["status"] == "True", f"{name} not Ready"
            assert not (node["spec"].get("taints") or []), f"{name} tainted: {node['spec']}"
            assert node["status"]["nodeInfo"]["kubeletVersion"] == server, "a kubelet of the server's release"

    await eventually(healthy, within=30, what="simulated nodes healthy")


async def test_scale_subresource_of_a_custom_resource(kube: KubeClient, namespace: str, sim: Simulation) -> None:
    await kube.create(CLONE_SETS, clone_set("api", 2), namespace=namespace)

    async def scale_status(replicas: int) -> JSON:
        scale = await kube.get(CLONE_SETS, "api", namespace=namespace, subresource="scale")
        assert (scale.get("status") or {}).get("replicas") == replicas, f"scale {scale}"
        return scale

    scale = await eventually(lambda: scale_status(2), within=60, what="scale status 2")
    assert scale["kind"] == "Scale" and scale["spec"] == {"replicas": 2}
    assert scale["status"]["selector"] == "app=api"

    await kube.patch(
        CLONE_SETS,
        "api",
        {"spec": {"replicas": 4}},
        namespace=namespace,
        subresource="scale",
        patch_type=PatchType.MERGE,
    )
    live = await kube.get(CLONE_SETS, "api", namespace=namespace)
    assert live["spec"]["replicas"] == 4
    await eventually(lambda: scale_status(4), within=60, what="scale status 4")


async def test_deleting_an_owner_garbage_collects_its_dependents(
    kube: KubeClient, namespace: str, sim: Simulation
) -> None:
    owner = await kube.create(CONFIG_MAPS, {"metadata": {"name": "owner"}}, namespace=namespace)
    await kube.create(
        CONFIG_MAPS,
        {
            "metadata": {
                "name": "dependent",
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
                ],
            }
        },
        namespace=namespace,
    )
    await kube.create(DEPLOYMENTS, deployment("gc", 2), namespace=namespace)

    async def running() -> None:
        assert len([p for p in await pods_of(kube, namespace, "gc") if is_pod_ready(p)]) == 2

    await eventually(running, within=60, what="gc pods ready")

    await kube.delete(CONFIG_MAPS, "owner", namespace=namespace)
    await kube.delete(DEPLOYMENTS, "gc", namespace=namespace, propagation_policy="Background")

    async def collected() -> None:
        try:
            await kube.get(CONFIG_MAPS, "dependent", namespace=namespace)
        except NotFound:
            pass
        else:
            raise AssertionError("dependent ConfigMap still there")
        replica_sets = await kube.list(REPLICA_SETS, namespace=namespace)
        assert not replica_sets.items, "ReplicaSet still there"
        pods = await kube.list(PODS, namespace=namespace, label_selector="app=gc")
        assert not pods.items, f"{len(pods.items)} pods still there (bound pods need a kubelet)"

    await eventually(collected, within=60, what="dependents collected")


async def test_a_full_zone_leaves_new_pods_unschedulable(kube: KubeClient, namespace: str, sim: Simulation) -> None:
    await sim.set_zone_full("zone-c")
    await kube.create(DEPLOYMENTS, deployment("pinned", 1, zone="zone-c"), namespace=namespace)

    async def unschedulable() -> None:
        pods = await pods_of(kube, namespace, "pinned")
        assert pods, "no pod yet"
        conditions = {c["type"]: c for c in pods[0].get("status", {}).get("conditions") or []}
        scheduled = conditions.get("PodScheduled") or {}
        assert scheduled.get("status") == "False", f"conditions {conditions}"
        assert scheduled.get("reason") == "Unschedulable"
        assert pods[0]["status"]["phase"] == "Pending"
        assert not pods[0]["spec"].get("nodeName")

    await eventually(unschedulable, within=60, what="pod unschedulable")

    await sim.set_zone_full("zone-c", False)

    async def placed() -> None:
        pods = await pods_of(kube, namespace, "pinned")
        assert pods and is_pod_ready(pods[0]), "pod not ready after the zone got room"
        assert pods[0]["spec"]["nodeName"] in sim.zone("zone-c")

    await eventually(placed, within=60, what="pod placed after room freed")


async def test_a_cordoned_zone_leaves_new_pods_unschedulable(kube: KubeClient, namespace: str, sim: Simulation) -> None:
    await sim.cordon_zone("zone-b")
    await kube.create(DEPLOYMENTS, deployment("cordoned", 1, zone="zone-b"), namespace=namespace)

    async def unschedulable() -> None:
        pods = await pods_of(kube, namespace, "cordoned")
        assert pods, "no pod yet"
        conditions = {c["type"]: c for c in pods[0].get("status", {}).get("conditions") or []}
        assert (conditions.get("PodScheduled") or {}).get("reason") == "Unschedulable"

    await eventually(unschedulable, within=60, what="pod unschedulable on cordoned zone")


async def test_pods_of_a_node_can_be_made_unready(kube: KubeClient, namespace: str, sim: Simulation) -> None:
    await kube.create(DEPLOYMENTS, deployment("flaky", 2, zone="zone-a"), namespace=namespace)

    async def ready_count(expected: int) -> None:
        live = await kube.get(DEPLOYMENTS, "flaky", namespace=namespace)
        status = live.get("status") or {}
        assert status.get("readyReplicas", 0) == expected, f"status {status}"

    await eventually(lambda: ready_count(2), within=60, what="2 ready")
    await sim.set_zone_pods_ready("zone-a", False)
    await eventually(lambda: ready_count(0), within=60, what="0 ready")
    pods = await pods_of(kube, namespace, "flaky")
    assert all(p["status"]["phase"] == "Running" for p in pods)
    await sim.set_zone_pods_ready("zone-a", True)
    await eventually(lambda: ready_count(2), within=60, what="2 ready again")


async def test_simulated_clone_set_reaches_its_replicas(kube: KubeClient, namespace: str, sim: Simulation) -> None:
    created = await kube.create(CLONE_SETS, clone_set("shop", 3), namespace=namespace)

    async def converged(replicas: int) -> tuple[JSON, list[JSON]]:
        live = await kube.get(CLONE_SETS, "shop", namespace=namespace)
        status = live.get("status") or {}
        assert status.get("readyReplicas") == replicas, f"status {status}"
        assert status.get("replicas") == replicas and status.get("updatedReplicas") == replicas
        assert status.get("observedGeneration") == live["metadata"]["generation"]
        pods = await pods_of(kube, namespace, "shop")
        assert len(pods) == replicas, f"{len(pods)} pods"
        return live, pods

    live, pods = await eventually(lambda: converged(3), within=60, what="clone set ready")
    assert live["status"]["updateRevision"].startswith("shop-")
    assert live["status"]["labelSelector"] == "app=shop"
    for pod in pods:
        assert pod["metadata"]["labels"]["tier"] == "web"
        assert pod["metadata"]["labels"]["controller-revision-hash"] == (live["status"]["updateRevision"])
        (ref,) = pod["metadata"]["ownerReferences"]
        assert ref["uid"] == created["metadata"]["uid"] and ref["controller"] is True
        assert ref["kind"] == "CloneSet"

    await kube.patch(CLONE_SETS, "shop", {"spec": {"replicas": 1}}, namespace=namespace, patch_type=PatchType.MERGE)
    await eventually(lambda: converged(1), within=60, what="clone set scaled down")


async def test_simulated_clone_set_honours_a_partition(kube: KubeClient, namespace: str, sim: Simulation) -> None:
    await kube.create(CLONE_SETS, clone_set("canary", 3, partition=2), namespace=namespace)

    async def status_is(**expected: Any) -> JSON:
        live = await kube.get(CLONE_SETS, "canary", namespace=namespace)
        status = live.get("status") or {}
        for key, value in expected.items():
            assert status.get(key) == value, f"{key}: {status}"
        assert status.get("observedGeneration") == live["metadata"]["generation"]
        return live

    old = await eventually(lambda: status_is(readyReplicas=3, updatedReplicas=3), within=60, what="initial rollout")
    old_revision = old["status"]["updateRevision"]
    template = clone_set("canary", 3, image=IMAGE + "-v2")["spec"]["template"]
    await kube.patch(
        CLONE_SETS, "canary", {"spec": {"template": template}}, namespace=namespace, patch_type=PatchType.MERGE
    )
    new = await eventually(lambda: status_is(readyReplicas=3, updatedReplicas=1), within=60, what="canary of one")
    assert new["status"]["updateRevision"] != old_revision
    assert new["status"]["currentRevision"] == old_revision
    images = sorted(p["spec"]["containers"][0]["image"] for p in await pods_of(kube, namespace, "canary"))
    assert images == [IMAGE, IMAGE, IMAGE + "-v2"]

    await kube.patch(
        CLONE_SETS,
        "canary",
        {"spec": {"updateStrategy": {"partition": 0}}},
        namespace=namespace,
        patch_type=PatchType.MERGE,
    )
    done = await eventually(lambda: status_is(readyReplicas=3, updatedReplicas=3), within=60, what="full rollout")
    assert done["status"]["currentRevision"] == done["status"]["updateRevision"]
