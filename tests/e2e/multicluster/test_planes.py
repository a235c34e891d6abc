"""Member control planes next to the host: each one a cluster of its own that runs
Deployments to Ready pods, survives an API server outage with its data, and lets a
ServiceAccount in with a self-contained kubeconfig. Prints what a member costs."""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import KUBE_VERSION
from tests.e2e.test_smoke import deployment
from tests.support.controller import LOG_DIR
from tests.support.namespace import fresh_namespace
from united.devcluster.cluster import LocalCluster
from united.devcluster.nodes import is_pod_ready
from united.devcluster.planes import MEMBER_NODES, Plane, footprint
from united.kube.client import DEPLOYMENTS, NAMESPACES, PODS, SERVICE_ACCOUNTS, KubeClient, PatchType
from united.kube.errors import Forbidden, NotFound, TransientError
from united.kube.wait import eventually

pytestmark = pytest.mark.e2e


async def _ready_pods(kube: KubeClient, namespace: str, name: str, replicas: int) -> set[str]:
    """Wait until Deployment ``name`` has ``replicas`` Ready pods; their node names."""

    async def ready() -> set[str]:
        child = await kube.get(DEPLOYMENTS, name, namespace=namespace)
        assert (child.get("status") or {}).get("readyReplicas") == replicas, child.get("status")
        pods = (await kube.list(PODS, namespace=namespace, label_selector=f"app={name}")).items
        assert len(pods) == replicas and all(is_pod_ready(p) for p in pods), [p["metadata"]["name"] for p in pods]
        return {p["spec"]["nodeName"] for p in pods}

    return await eventually(ready, within=90, what=f"{replicas} ready pods of {namespace}/{name}")


async def test_a_deployment_in_each_member_gets_ready_pods_there_only(
    members: dict[str, Plane], member_kube: dict[str, KubeClient], kube: KubeClient
) -> None:
    name = f"planes-{secrets.token_hex(3)}"
    async with fresh_namespace(member_kube["member-1"], name), fresh_namespace(member_kube["member-2"], name):
        for member, replicas in (("member-1", 2), ("member-2", 3)):
            await member_kube[member].create(DEPLOYMENTS, deployment("web", replicas), namespace=name)
        for member, replicas in (("member-1", 2), ("member-2", 3)):
            nodes = await _ready_pods(member_kube[member], name, "web", replicas)
            assert nodes == {spec.name for spec in MEMBER_NODES}
        assert len({plane.server for plane in members.values()}) == 2
        with pytest.raises(NotFound):
            await kube.get(NAMESPACES, name)


async def test_a_member_api_server_stopped_and_started_again_comes_back_with_its_data(
    members: dict[str, Plane], member_kube: dict[str, KubeClient]
) -> None:
    one, two = members["member-1"], member_kube["member-2"]
    name = f"outage-{secrets.token_hex(3)}"
    async with fresh_namespace(member_kube["member-1"], name):
        created = await member_kube["member-1"].create(DEPLOYMENTS, deployment("web", 2), namespace=name)
        await _ready_pods(member_kube["member-1"], name, "web", 2)
        one.stop_apiserver()
        try:
            async with await one.client() as fresh:
                with pytest.raises(TransientError):
                    await fresh.get(DEPLOYMENTS, "web", namespace=name)
            assert await two.list(NAMESPACES), "the other member keeps serving"
        finally:
            one.start_apiserver()
        after = await eventually(
            lambda: member_kube["member-1"].get(DEPLOYMENTS, "web", namespace=name),
            within=30,
            what="member-1 answers again",
            retry_on=(TransientError,),
        )
        assert after["metadata"]["uid"] == created["metadata"]["uid"]
        await _ready_pods(member_kube["member-1"], name, "web", 2)
        await member_kube["member-1"].patch(
            DEPLOYMENTS, "web", {"spec": {"replicas": 3}}, patch_type=PatchType.MERGE, namespace=name
        )
        await _ready_pods(member_kube["member-1"], name, "web", 3)


async def test_a_service_account_kubeconfig_is_self_contained(
    members: dict[str, Plane], member_kube: dict[str, KubeClient], tmp_path: Path
) -> None:
    member, kube = members["member-2"], member_kube["member-2"]
    name = f"sa-{secrets.token_hex(3)}"
    async with fresh_namespace(kube, name):
        account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "united-member"}}
        await kube.create(SERVICE_ACCOUNTS, account, namespace=name)
        text = await member.service_account_kubeconfig(kube, namespace=name, name="united-member")
        config = yaml.safe_load(text)
        (cluster,) = config["clusters"]
        assert set(cluster["cluster"]) == {"server", "certificate-authority-data"}
        assert cluster["cluster"]["server"] == member.server
        (user,) = config["users"]
        assert set(user["user"]) == {"token"}
        path = tmp_path / "member.kubeconfig"
        path.write_text(text)
        async with await KubeClient.from_kubeconfig(path) as client:
            assert json.loads(await client.get_path("/version"))["gitVersion"] == KUBE_VERSION.tag
            with pytest.raises(Forbidden, match=f"system:serviceaccount:{name}:united-member"):
                await client.list(PODS, namespace=name)


async def test_what_a_member_plane_costs(members: dict[str, Plane], cluster: LocalCluster) -> None:
    """Not a goal, a figure: memory, CPU and start-up time of each member (printed, and
    written to ``$UNITED_E2E_LOGS/multicluster-figures.json``), next to the host's."""
    host_dirs = [Path(f"/proc/{pid}") for pid in cluster.pids.values()]
    before = {name: plane.footprint() for name, plane in members.items()}
    host_before = footprint(host_dirs)
    idle = 20.0
    await asyncio.sleep(idle)
    figures = {}
    for name, plane in members.items():
        after = plane.footprint()
        assert set(plane.cluster.pids) == {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}
        assert plane.start_seconds is not None
        figures[name] = {
            "rss_mib": round(after.rss_bytes / 2**20),
            "cpu_seconds_so_far": round(after.cpu_seconds, 1),
            "idle_cpu_percent": round(100 * (after.cpu_seconds - before[name].cpu_seconds) / idle, 1),
            "start_seconds": round(plane.start_seconds, 1),
            "rss_mib_by_component": {
                component: round(footprint([Path(f"/proc/{pid}")]).rss_bytes / 2**20)
                for component, pid in plane.cluster.pids.items()
            },
        }
    host_after = footprint(host_dirs)
    figures["host (control plane only)"] = {
        "rss_mib": round(host_after.rss_bytes / 2**20),
        "idle_cpu_percent": round(100 * (host_after.cpu_seconds - host_before.cpu_seconds) / idle, 1),
    }
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    (LOG_DIR / "multicluster-figures.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(f"\nmember planes ({time.strftime('%H:%M:%S')}): {json.dumps(figures)}", file=sys.__stderr__, flush=True)
    for name in members:
        assert 0 < figures[name]["rss_mib"] < 1024, figures
