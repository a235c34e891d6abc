"""The bench's control plane: a :class:`LocalCluster` without the workload controllers,
the CRDs and the controller's ServiceAccount and RBAC from ``manifests/base``.

kube-controller-manager runs only what the bench needs (ServiceAccount tokens, namespace
deletion, garbage collection): **no deployment/replicaset/statefulset controllers**, so
children never get pods or status and every write the bench counts is the controller's
own. The floor script and the controller run under the same ServiceAccount, so RBAC and
authentication cost the same on both sides.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from united.devcluster.build import Binaries, provision
from united.devcluster.cluster import LocalCluster
from united.devcluster.installation import install_controller
from united.kube.apply import SYSTEM
from united.kube.client import (
    NAMESPACES,
    KubeClient,
)
from united.kube.errors import AlreadyExists

ROOT = Path(__file__).resolve().parents[1]
CONTROLLER_ACCOUNT = "united-controller"
BENCH_CONTROLLERS = ("serviceaccount-token", "serviceaccount", "namespace", "garbagecollector")
"""kube-controller-manager controllers the bench keeps: no workload controllers, no pods."""

T = TypeVar("T")


async def bounded(items: Iterable[T], call: Any, *, concurrency: int) -> list[Any]:
    """``await call(item)`` for every item, at most ``concurrency`` at a time; results in order."""
    semaphore = asyncio.Semaphore(concurrency)

    async def one(item: T) -> Any:
        async with semaphore:
            return await call(item)

    return list(await asyncio.gather(*(one(i) for i in items)))


async def create_namespace(client: KubeClient, name: str) -> str:
    with contextlib.suppress(AlreadyExists):
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


class BenchCluster:
    """A running control plane for the bench, with an admin kubeconfig and the controller's."""

    def __init__(self, cluster: LocalCluster, controller_kubeconfig: Path, *, owned: bool) -> None:
        self.cluster = cluster
        self.controller_kubeconfig = controller_kubeconfig
        self.owned = owned

    @property
    def admin_kubeconfig(self) -> Path:
        return self.cluster.admin_kubeconfig

    def server_cpu_seconds(self) -> float:
        """CPU seconds used so far by kube-apiserver and etcd (what every write costs the
        control plane; a controller that writes more, Events included, shows up here)."""
        used = self.cpu_by_process()
        return sum(used.get(name, 0.0) for name in ("kube-apiserver", "etcd"))

    def cpu_by_process(self) -> dict[str, float]:
        """CPU seconds used so far by each control-plane process, by name: where a scenario's
        CPU went (the API server's share of a burst against the controller's own)."""
        from bench.controller import proc_cpu_seconds

        return {name: proc_cpu_seconds(pid) for name, pid in self.cluster.pids.items()}

    @contextlib.asynccontextmanager
    async def admin(self) -> AsyncIterator[KubeClient]:
        async with await KubeClient.from_kubeconfig(self.admin_kubeconfig) as client:
            yield client

    @classmethod
    async def prepare(cls, cluster: LocalCluster, *, owned: bool) -> BenchCluster:
        async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as client:
            await install_controller(client)
            kubeconfig = await cluster.service_account_kubeconfig(
                client, namespace=SYSTEM, name=CONTROLLER_ACCOUNT, within=60
            )
        return cls(cluster, kubeconfig, owned=owned)


@contextlib.contextmanager
def local_cluster(
    binaries: Binaries | None = None, *, controllers: Sequence[str] = BENCH_CONTROLLERS, profiling: bool = False
) -> Iterator[LocalCluster]:
    """A fresh control plane (provisioned first if needed), stopped on exit; ``profiling``:
    kube-apiserver serves ``/debug/pprof``."""
    cluster = LocalCluster(binaries or provision(), controllers=controllers, startup_timeout=180, profiling=profiling)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


__all__ = ["BENCH_CONTROLLERS", "ROOT", "BenchCluster", "bounded", "create_namespace", "local_cluster"]
