"""``united demo``: a local control plane with simulated zones to try things on.

Brings up the control plane (provisioning it first if needed, with progress),
creates two simulated Nodes in each of three zones, runs the node and Kruise
workload simulators, prints how to reach the cluster, and waits for Ctrl-C; then
tears everything down. The UnitedDeployment controller does not exist yet, and the
demo says so rather than pretending.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys

from united.devcluster import crds
from united.devcluster.build import ProvisionError, provision, tail
from united.devcluster.cluster import ClusterError, LocalCluster
from united.devcluster.nodes import ZONE_LABEL, NodeSimulator, NodeSpec, zone_nodes
from united.devcluster.volumes import VolumeProvisioner
from united.devcluster.workloads import WorkloadSimulator
from united.kube.client import KubeClient

ZONES = ("zone-a", "zone-b", "zone-c")
READY_LINE = "demo running; press Ctrl-C to stop and tear everything down"


def demo_nodes() -> list[NodeSpec]:
    """Two nodes per zone, in pool ``general``."""
    return zone_nodes(ZONES, per_zone=2, prefix="demo", pool="general")


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(*, sample: str | None = None) -> int:
    """Run the demo until Ctrl-C (or SIGTERM). Returns the process exit code."""
    try:
        binaries = provision(progress=_say)
    except ProvisionError as exc:
        _say(f"cannot provision the local control plane: {exc}\n--- last lines of {exc.log} ---\n{tail(exc.log)}")
        return 1
    _say("starting the local control plane (etcd, kube-apiserver, controller-manager, scheduler) ...")
    cluster = LocalCluster(binaries)
    try:
        cluster.start()
    except ClusterError as exc:
        _say(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130
    try:
        return asyncio.run(_serve(cluster, sample))
    except KeyboardInterrupt:
        return 130
    except ClusterError as exc:
        _say(str(exc))
        return 1
    finally:
        _say("stopping the local control plane")
        cluster.stop()


async def _serve(cluster: LocalCluster, sample: str | None) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig, user_agent="united-demo") as client:
        await crds.install(client, crds.kruise_crds())
        nodes = NodeSimulator(client)
        workloads = WorkloadSimulator(client)
        async with nodes, workloads, VolumeProvisioner(client):
            await nodes.add_nodes(demo_nodes())
            _print_usage(cluster, sample)
            while not stop.is_set():
                cluster.check_alive()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=2.0)
    return 0


def _print_usage(cluster: LocalCluster, sample: str | None) -> None:
    kubectl = cluster.binaries.kubectl
    lines = [
        "",
        f"Kubernetes 1.20.2 is running at {cluster.server}",
        f"  kubeconfig: {cluster.admin_kubeconfig}",
        f"  kubectl:    {kubectl}",
        f"  logs:       {cluster.log_dir}",
        "",
        f"Simulated nodes: two per zone in {', '.join(ZONES)}; pods scheduled onto them",
        "become Running and Ready. CloneSet and Advanced StatefulSet (apps.kruise.io) are",
        "simulated too, and PersistentVolumeClaims get volumes.",
        "",
        "Try:",
        f"  export KUBECONFIG={cluster.admin_kubeconfig}",
        f"  {kubectl} get nodes -L {ZONE_LABEL}",
        f"  {kubectl} create deployment web --image=example.invalid/web --replicas=3",
        f"  {kubectl} get pods -o wide",
        "",
        "The UnitedDeployment controller is not available yet: nothing in this cluster",
        "reconciles UnitedDeployments, so this demo only provides the cluster to run it on.",
    ]
    if sample is not None:
        lines.append(f"The sample {sample!r} was not applied, since no controller would act on it.")
    lines += ["", READY_LINE]
    print("\n".join(lines), flush=True)
