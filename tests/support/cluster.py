"""The local control plane and the controller's identity on it, for the e2e and chaos suites."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from united.devcluster import versions
from united.devcluster.build import Layout, ProvisionError, is_provisioned, provision, tail
from united.devcluster.cluster import ClusterError, LocalCluster
from united.devcluster.credentials import StaticUser
from united.devcluster.installation import install_controller
from united.kube.apply import SYSTEM
from united.kube.client import KubeClient


def progress(message: str) -> None:
    print(message, file=sys.__stderr__, flush=True)


@contextlib.contextmanager
def local_cluster(
    version: versions.KubeVersion, *, suite: str, users: Sequence[StaticUser] = (), name: str = "host"
) -> Iterator[LocalCluster]:
    """Provision (a first build prints progress) and start a control plane of ``version``;
    stop it afterwards. If that is impossible the ``suite``'s tests *fail* with the reason:
    they are never skipped."""
    layout = Layout.default(version)
    if not is_provisioned(layout):
        progress(
            f"\n{suite}: the local control plane (Kubernetes {version}) is not provisioned in "
            f"{layout.root}; building it now (`python -m united.devcluster provision`)"
        )
    problem = ""
    try:
        binaries = provision(layout=layout, progress=progress)
    except ProvisionError as exc:
        problem = f"provisioning it failed: {exc}\n--- last lines of {exc.log} ---\n{tail(exc.log)}"
    if problem:
        pytest.fail(f"{suite} tests need the local control plane, and {problem}", pytrace=False)
    local = LocalCluster(binaries, users=list(users), name=name)
    try:
        local.start()
    except ClusterError as exc:
        problem = f"it did not start: {exc}"
    if problem:
        pytest.fail(f"{suite} tests need the local control plane, and {problem}", pytrace=False)
    try:
        yield local
        local.check_alive()
    finally:
        local.stop()


def controller_kubeconfig(cluster: LocalCluster) -> Path:
    """The CRDs, the controller's namespace, ServiceAccount and RBAC from ``manifests/base``,
    and a kubeconfig with that ServiceAccount's token (the shipped ClusterRole applies)."""

    async def setup() -> Path:
        async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as client:
            await install_controller(client, compat=True, leader_election=True)
            return await cluster.service_account_kubeconfig(client, namespace=SYSTEM, name="united-controller")

    return asyncio.run(setup())
