"""A ``united run`` serving the WorkloadSpread webhooks (``--webhook-url https://127.0.0.1:PORT``:
it creates its own webhook configurations, trusted through its own CA) against the local
control plane, with the CRDs installed. It runs with the admin kubeconfig: the shipped
role's WorkloadSpread rules are tested by the least-privilege suite."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.controller import Controller
from united.controller.webhooks import MUTATING, VALIDATING
from united.devcluster.cluster import LocalCluster
from united.devcluster.installation import install_controller
from united.devcluster.ports import free_port
from united.kube.client import KubeClient
from united.kube.errors import NotFound
from united.workloadspread.webhookconfig import NAME


class Spreading(Controller):
    """The controller with its webhook server on a fixed port (the configurations point at it)."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.webhook_port = free_port()
        url = f"https://127.0.0.1:{self.webhook_port}"
        flags = ("--webhook-port", str(self.webhook_port), "--webhook-host", "127.0.0.1", "--webhook-url", url)
        super().__init__(cluster.admin_kubeconfig, name="workloadspread", extra=flags, leader_elect=False)


async def _configurations_gone(cluster: LocalCluster) -> None:
    async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as client:
        for resource in (MUTATING, VALIDATING):
            with contextlib.suppress(NotFound):
                await client.delete(resource, NAME)


@pytest.fixture(scope="session")
def spreading(cluster: LocalCluster, simulation: Any) -> Iterator[Spreading]:
    async def install() -> None:
        async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as client:
            await install_controller(client, compat=True)

    asyncio.run(install())
    running = Spreading(cluster)
    running.start()
    try:
        yield running
    finally:
        code = running.stop()
        asyncio.run(_configurations_gone(cluster))
        assert code == 0, f"controller exited with {code} on SIGTERM; see {running.log_path}"


@pytest.fixture(scope="package", autouse=True)
def one_controller(controller: Controller) -> Iterator[None]:
    """Only this package's controller reconciles WorkloadSpreads while it runs. The session's
    controller (started by other packages) runs without the webhook; two processes that see the
    webhook's bookings differently rewrite each other's status conditions at event speed (CI saw
    ~160 writes in 2.5 s), so bookings kept conflicting until a pod was admitted unplaced. It is
    stopped for this package and started again after."""
    code = controller.stop()
    assert code == 0, f"the session's controller exited with {code} on SIGTERM; see {controller.log_path}"
    try:
        yield
    finally:
        controller.start()
