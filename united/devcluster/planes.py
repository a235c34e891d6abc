"""Several local control planes side by side — a host and member clusters — for
multi-cluster tests and demos.

A :class:`Plane` is one :class:`~united.devcluster.cluster.LocalCluster` plus the
simulated kubelets that make its pods Ready; the host is a plane like any other, only with
more controllers and the workload simulators. Members are lean (two shared cores run them
all): the six controllers a Deployment needs to get Ready pods, one simulated node, no
Kruise CRDs, no volume controllers.
"""

from __future__ import annotations

import gc
import os
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from united.devcluster.build import Binaries
from united.devcluster.cluster import LocalCluster, start_together
from united.devcluster.credentials import request_token
from united.devcluster.nodes import NodeSpec, zone_nodes
from united.devcluster.simulation import Simulation
from united.kube.client import KubeClient
from united.kube.kubeconfig import render_kubeconfig

MEMBER_CONTROLLERS = (
    "serviceaccount-token",
    "serviceaccount",
    "namespace",
    "garbagecollector",
    "deployment",
    "replicaset",
)
"""What a member needs for Ready pods on 1.20: ServiceAccounts and their token Secrets (pod
admission), Deployments and ReplicaSets (pods), cascades and namespace clean-up."""
MEMBER_NODES = tuple(zone_nodes(("zone-a",)))
APISERVER = "kube-apiserver"
_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Footprint:
    """Resident memory and CPU time used so far, summed over some processes and threads."""

    rss_bytes: int
    cpu_seconds: float


def footprint(stat_files: Iterable[Path]) -> Footprint:
    """Sum over ``/proc/<pid>`` or ``/proc/<pid>/task/<tid>`` directories: RSS from ``status``
    (threads share their process's, so count a process once), user + system CPU from ``stat``."""
    rss = 0
    cpu = 0.0
    for directory in stat_files:
        fields = (directory / "stat").read_text().rsplit(")", 1)[1].split()
        cpu += (int(fields[11]) + int(fields[12])) / _TICKS
        if directory.parent.name != "task":
            status = (directory / "status").read_text()
            kilobytes = next((line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")), "0")
            rss += int(kilobytes) * 1024
    return Footprint(rss, cpu)


class Plane:
    """A control plane named ``name`` and its simulation (``nodes``; the Kruise workload
    simulator only with ``workloads``). :func:`start_planes` starts several at once."""

    def __init__(
        self,
        binaries: Binaries,
        *,
        name: str,
        controllers: Sequence[str] = MEMBER_CONTROLLERS,
        nodes: Sequence[NodeSpec] = MEMBER_NODES,
        workloads: bool = False,
        heartbeat_interval: float = 10.0,
    ) -> None:
        self.name = name
        self.start_seconds: float | None = None
        """How long :func:`start_planes` took until this plane was up, simulation included."""
        self.cluster = LocalCluster(binaries, name=name, controllers=controllers)
        self.simulation = Simulation(
            self.cluster.admin_kubeconfig, nodes=nodes, workloads=workloads, heartbeat_interval=heartbeat_interval
        )

    @property
    def server(self) -> str:
        return self.cluster.server

    @property
    def admin_kubeconfig(self) -> Path:
        return self.cluster.admin_kubeconfig

    async def client(self) -> KubeClient:
        """An admin client on the caller's event loop (close it, or ``async with`` it)."""
        return await KubeClient.from_kubeconfig(self.cluster.admin_kubeconfig)

    async def service_account_kubeconfig(self, client: KubeClient, *, namespace: str, name: str) -> str:
        """A self-contained kubeconfig (YAML: the CA inline, a TokenRequest token of
        ServiceAccount ``namespace/name``) — what a member's Secret in the host holds."""
        token = await request_token(client, namespace=namespace, name=name)
        config = render_kubeconfig(
            server=self.server,
            ca_cert=self.cluster.ca_cert,
            user=f"system:serviceaccount:{namespace}:{name}",
            token=token,
            cluster=self.name,
            embed_ca=True,
        )
        return yaml.safe_dump(config, sort_keys=False)

    def stop_apiserver(self) -> None:
        """Take the API server down (etcd and its data stay) until :meth:`start_apiserver`."""
        self.cluster.stop_component(APISERVER)

    def start_apiserver(self) -> int:
        """Bring the API server back on the same port, with the same data; waits until it is
        ready and returns its pid. Call it from the thread that started the plane."""
        return self.cluster.start_component(APISERVER)

    def footprint(self) -> Footprint:
        """Memory and CPU of this plane: its components, and the thread of its simulation
        (which runs in this process; its share of this process's memory is not counted)."""
        directories = [Path(f"/proc/{pid}") for pid in self.cluster.pids.values()]
        thread = self.simulation.native_id
        if thread is not None:
            directories.append(Path(f"/proc/self/task/{thread}"))
        return footprint(directories)

    def stop(self) -> None:
        self.simulation.stop()
        self.cluster.stop()
        # Simulation.stop() leaves the TLS sockets of its watches to the garbage collector (in
        # cycles with its closed loop); finalize them now, not as ResourceWarnings at random later.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()


def start_planes(planes: Sequence[Plane], *, timeout: float = 90.0, together: Sequence[LocalCluster] = ()) -> None:
    """Start the planes' components together (see :func:`start_together`), with those of the
    ``together`` clusters (a host that runs its own simulation), then the planes' simulations;
    on any failure stop the planes and re-raise (``together`` is the caller's to stop)."""
    began = time.monotonic()
    start_together([*together, *(plane.cluster for plane in planes)])
    try:
        for plane in planes:
            plane.simulation.start(timeout=timeout)
            plane.start_seconds = time.monotonic() - began
    except BaseException:
        stop_planes(planes)
        raise


def stop_planes(planes: Sequence[Plane]) -> None:
    """Stop the planes, the last started first."""
    for plane in reversed(planes):
        plane.stop()
