"""The simulators on their own event loop, in a background thread.

pytest-asyncio gives every test its own event loop, but simulated kubelets and
workload controllers must live as long as the cluster — across tests, like the real
ones. So they run in a thread with a private loop and client, and tests drive the
knobs with ``await simulation.set_zone_full("zone-a")``, which hops to that loop and
back without blocking the test's loop (where the controller under test may run).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

from united.devcluster import crds
from united.devcluster.nodes import NodeSimulator, NodeSpec
from united.devcluster.volumes import VolumeProvisioner
from united.devcluster.workloads import WorkloadSimulator
from united.kube.apply import install_crds
from united.kube.client import KubeClient

T = TypeVar("T")


class Simulation:
    """Node simulator (with ``nodes``), volume provisioner and, unless
    ``workloads=False``, the Kruise test CRDs and workload simulator, for the
    cluster of ``kubeconfig``."""

    def __init__(
        self,
        kubeconfig: Path,
        *,
        nodes: Sequence[NodeSpec] = (),
        workloads: bool = True,
        heartbeat_interval: float = 10.0,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.initial_nodes = tuple(nodes)
        self.workloads = workloads
        self.heartbeat_interval = heartbeat_interval
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._nodes: NodeSimulator | None = None

    def start(self, *, timeout: float = 90.0) -> None:
        """Start the thread; return when the nodes exist and the watches have synced."""
        self._thread = threading.Thread(target=self._main, name="devcluster-simulation", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"simulation did not start within {timeout:g}s")
        if self._error is not None:
            self._thread.join()
            raise RuntimeError(f"simulation failed to start: {self._error}") from self._error

    def stop(self) -> None:
        """Stop the simulators and the thread (nodes are left to the cluster's end)."""
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def _main(self) -> None:
        try:
            asyncio.run(self._amain())
        except BaseException as exc:  # reported to start()
            self._error = exc
        finally:
            self._ready.set()

    async def _amain(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with await KubeClient.from_kubeconfig(
            self.kubeconfig, user_agent="united-devcluster-simulator"
        ) as client:
            nodes = NodeSimulator(client, heartbeat_interval=self.heartbeat_interval)
            workloads = WorkloadSimulator(client) if self.workloads else None
            if workloads is not None:
                await install_crds(client, crds.kruise_crds())
            async with nodes, VolumeProvisioner(client):
                await nodes.add_nodes(self.initial_nodes)
                self._nodes = nodes
                if workloads is not None:
                    await workloads.start()
                try:
                    self._ready.set()
                    await self._stop.wait()
                finally:
                    if workloads is not None:
                        await workloads.stop()
        # aiohttp closes TLS transports on the next loop turns; let them finish, or their
        # sockets are collected later, at random, as ResourceWarnings in some test.
        await asyncio.sleep(0.25)

    def submit(self, fn: Callable[[NodeSimulator], Awaitable[T]]) -> concurrent.futures.Future[T]:
        """Run ``fn(node_simulator)`` on the simulation's loop."""
        if self._loop is None or self._nodes is None:
            raise RuntimeError("simulation is not running")
        nodes = self._nodes

        async def run() -> T:
            return await fn(nodes)

        return asyncio.run_coroutine_threadsafe(run(), self._loop)

    async def call(self, fn: Callable[[NodeSimulator], Awaitable[T]]) -> T:
        """Await ``fn(node_simulator)`` run on the simulation's loop."""
        return await asyncio.wrap_future(self.submit(fn))

    @property
    def native_id(self) -> int | None:
        """The kernel's id of the simulation's thread (its CPU time is in /proc), while it runs."""
        return self._thread.native_id if self._thread is not None else None

    @property
    def node_names(self) -> list[str]:
        return list(self._nodes.nodes) if self._nodes is not None else []

    def zone(self, zone: str) -> list[str]:
        """Names of the simulated nodes in ``zone``."""
        return self._nodes.zone(zone) if self._nodes is not None else []

    async def add_node(self, spec: NodeSpec) -> None:
        await self.call(lambda n: n.add_node(spec))

    async def remove_node(self, name: str) -> None:
        await self.call(lambda n: n.remove_node(name))

    async def set_full(self, name: str, full: bool = True) -> None:
        await self.call(lambda n: n.set_full(name, full))

    async def set_zone_full(self, zone: str, full: bool = True) -> None:
        await self.call(lambda n: n.set_zone_full(zone, full))

    async def cordon(self, name: str, cordoned: bool = True) -> None:
        await self.call(lambda n: n.cordon(name, cordoned))

    async def cordon_zone(self, zone: str, cordoned: bool = True) -> None:
        await self.call(lambda n: n.cordon_zone(zone, cordoned))

    async def set_pods_ready(self, name: str, ready: bool = True) -> None:
        await self.call(lambda n: n.set_pods_ready(name, ready))

    async def set_zone_pods_ready(self, zone: str, ready: bool = True) -> None:
        await self.call(lambda n: n.set_zone_pods_ready(zone, ready))

    async def reset(self) -> None:
        """Undo every knob and remove nodes added after start."""
        keep = [spec.name for spec in self.initial_nodes]
        await self.call(lambda n: n.reset(keep=keep))
