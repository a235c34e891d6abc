"""``united demo``: the controller converging a UnitedDeployment on a local cluster.

Brings up the local control plane (provisioning it first if needed, with progress), installs
the CRDs, creates simulated Nodes that fit the sample's subsets (plus two per zone in three
zones), runs the node, workload and volume simulators, starts the controller in-process,
applies the sample and prints its per-subset table whenever it changes — until Ctrl-C, which
stops the controller gracefully and tears everything down.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml

from united import data
from united.controller.manager import Manager, Settings
from united.devcluster import crds
from united.devcluster.build import ProvisionError, provision
from united.devcluster.cluster import ClusterError, LocalCluster
from united.devcluster.nodes import NodeSimulator, NodeSpec, subset_nodes, zone_nodes
from united.devcluster.volumes import VolumeProvisioner
from united.devcluster.wait import eventually
from united.devcluster.workloads import WorkloadSimulator
from united.kube.client import NAMESPACES, SECRETS, SERVICE_ACCOUNTS, KubeClient, Resource
from united.kube.errors import AlreadyExists, NotFound
from united.log import configure_logging

ZONES = ("zone-a", "zone-b", "zone-c")
READY_LINE = "demo running; press Ctrl-C to stop and tear everything down"
NAMESPACE = "demo"
DEFAULT_SAMPLE = "zones-percent"
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", False, "CustomResourceDefinition")


def demo_nodes(sample: dict[str, Any]) -> list[NodeSpec]:
    """Two nodes per zone in pool ``general``, and two that fit each subset of the sample."""
    return zone_nodes(ZONES, per_zone=2, prefix="demo", pool="general") + subset_nodes(
        sample, prefix="fit", per_subset=2, cpu="64", memory="256Gi"
    )


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def provision_failure(error: ProvisionError) -> str:
    """One paragraph for a person: what failed, what to do, where the build log is."""
    return (
        f"united demo cannot start: building the local Kubernetes control plane failed: {error.message}.\n"
        f"What to do: {error.hint}.\n"
        f"Build log: {error.log}"
    )


def run(*, sample: str | None = None) -> int:
    """Run the demo until Ctrl-C (or SIGTERM). Returns the process exit code."""
    path: Traversable = Path(sample) if sample else data.sample(DEFAULT_SAMPLE)
    try:
        doc = next(
            d
            for d in yaml.safe_load_all(path.read_text())
            if isinstance(d, dict) and d.get("kind") == "UnitedDeployment"
        )
    except (OSError, StopIteration, yaml.YAMLError) as exc:
        _say(f"cannot read a UnitedDeployment from {path}: {exc or 'none found'}")
        return 2
    configure_logging(level="WARNING", log_format="console")
    try:
        binaries = provision(progress=_say)
    except ProvisionError as exc:
        _say(provision_failure(exc))
        return 1
    _say("starting the local control plane (etcd, kube-apiserver, controller-manager, scheduler) ...")
    cluster = LocalCluster(binaries)
    try:
        cluster.start()
        return asyncio.run(_serve(cluster, doc, path))
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM before the controller handles it
        return 130
    except ClusterError as exc:
        _say(str(exc))
        return 1
    finally:
        _say("stopping the local control plane")
        cluster.stop()


async def _serve(cluster: LocalCluster, doc: dict[str, Any], path: Traversable) -> int:
    async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig, user_agent="united-demo") as client:
        await crds.install(client, [*crds.kruise_crds(), *data.documents(data.crd())])
        nodes = NodeSimulator(client)
        async with nodes, WorkloadSimulator(client), VolumeProvisioner(client):
            await nodes.add_nodes(demo_nodes(doc))
            await _namespace(client)
            manager = Manager(client, Settings(http_port=0, workers=2, discovery_interval=5))
            client.observer = manager.metrics.api.observe
            controller = asyncio.create_task(manager.run(), name="controller")
            group = str(doc["apiVersion"]).partition("/")[0]
            if group != "apps.united.io":
                _say(f"note: {path} is an {group} manifest; the demo serves apps.united.io, so it is applied as such")
                doc = {**doc, "apiVersion": "apps.united.io/v1alpha1"}
            resource = Resource("apps.united.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")
            with contextlib.suppress(AlreadyExists):
                await client.create(resource, doc, namespace=NAMESPACE)
            _print_usage(cluster, path)
            shown = ""
            while not controller.done():
                cluster.check_alive()
                with contextlib.suppress(NotFound):
                    obj = await client.get(resource, doc["metadata"]["name"], namespace=NAMESPACE)
                    table = render_table(obj)
                    if table != shown:
                        print(table, flush=True)
                        shown = table
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(controller), timeout=1.0)
            return controller.result()


async def _namespace(client: KubeClient) -> None:
    with contextlib.suppress(AlreadyExists):
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})

    async def token() -> None:
        account = await client.get(SERVICE_ACCOUNTS, "default", namespace=NAMESPACE)
        names = [ref["name"] for ref in account.get("secrets") or []]
        assert names, "no token secret yet"
        await client.get(SECRETS, names[0], namespace=NAMESPACE)

    await eventually(token, within=30, what="demo namespace usable", retry_on=(AssertionError, NotFound))


def render_table(obj: dict[str, Any]) -> str:
    """The UnitedDeployment's per-subset status as a table, with its conditions on top."""
    status = obj.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    ready = conditions.get("Ready") or {}
    name, want = obj["metadata"]["name"], (obj.get("spec") or {}).get("replicas")
    reason = f"{ready.get('reason', 'waiting for the controller')}: {ready.get('message', '')}"
    head = f"\n{name}: {status.get('readyReplicas', 0)}/{want} ready, Ready={ready.get('status', '?')} ({reason})"
    rows = [("SUBSET", "DESIRED", "REPLICAS", "READY", "UPDATED", "REASON")]
    for s in status.get("subsetStatuses") or []:
        rows.append(
            (
                s["name"],
                str(s.get("desired", 0)),
                str(s.get("replicas", 0)),
                str(s.get("readyReplicas", 0)),
                str(s.get("updatedReplicas", 0)),
                s.get("reason", ""),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join([head, *("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)])


def _print_usage(cluster: LocalCluster, path: Traversable) -> None:
    kubectl = cluster.binaries.kubectl
    lines = [
        "",
        f"Kubernetes 1.20.2 is running at {cluster.server}",
        f"  kubeconfig: {cluster.admin_kubeconfig}",
        f"  kubectl:    {kubectl}",
        f"  logs:       {cluster.log_dir}",
        "",
        f"The united controller is running; {path.name} is applied in namespace {NAMESPACE!r}.",
        "Try, in another terminal:",
        f"  export KUBECONFIG={cluster.admin_kubeconfig}",
        f"  {kubectl} -n {NAMESPACE} get ud,deployments,pods -o wide",
        f"  {kubectl} -n {NAMESPACE} scale uniteddeployments.apps.united.io --all --replicas=20",
        "",
        READY_LINE,
    ]
    print("\n".join(lines), flush=True)
