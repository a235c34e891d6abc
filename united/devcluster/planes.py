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
import warnings
from collections.abc import Sequence
from pathlib import Path

import yaml

from united.devcluster.build import Binaries
from united.devcluster.cluster import LocalCluster, start_together
from united.devcluster.credentials import render_kubeconfig, request_token
from united.devcluster.nodes import NodeSpec, zone_nodes
from united.devcluster.simulation import Simulation
from united.kube.client import KubeClient

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

    def stop(self) -> None:
        self.simulation.stop()
        self.cluster.stop()
        # Simulation.stop() leaves the TLS sockets of its watches to the garbage collector (in
        # cycles with its closed loop); finalize them now, not as ResourceWarnings at random later.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()


def start_planes(planes: Sequence[Plane], *, timeout: float = 90.0) -> None:
    """Start the planes' components together (see :func:`start_together`), then their
    simulations; on any failure stop them all and re-raise."""
    start_together([plane.cluster for plane in planes])
    try:
        for plane in planes:
            plane.simulation.start(timeout=timeout)
    except BaseException:
        stop_planes(planes)
        raise


def stop_planes(planes: Sequence[Plane]) -> None:
    """Stop the planes, the last started first."""
    for plane in reversed(planes):
        plane.stop()
