"""Fixtures for the chaos suite: the controller against a misbehaving control plane.

The suite owns its **own** local control plane, package-scoped: it restarts etcd and the
API server, SIGKILLs controllers that hold the one Lease the shipped Role grants, and
floods the cluster with scale writes, none of which may leak into the e2e suite (whose
session controller would otherwise also serve our UnitedDeployments). The cluster is
started once for ``tests/chaos`` and stopped when the package is done, before the e2e
suite starts its own. ``kube``, ``namespace`` and ``sim`` are the e2e fixtures, imported;
so are ``members`` and ``member_kube`` (member planes next to this suite's own cluster).

Knobs (environment):

* ``UNITED_CHAOS_KILLS`` — SIGKILLs in the crash-safety test (CI runs 10; the issue's full
  count is ``UNITED_CHAOS_KILLS=100``).
* ``UNITED_CHAOS_SEED`` — seed of every random choice (fault proxy rules, scale storms,
  kill moments); default 6. Failures print it.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chaos import figures
from tests.chaos.support import KILLS, SEED
from tests.e2e.conftest import ZONES, kube, namespace, sim, skip_local_only
from tests.e2e.controller.conftest import LOG_DIR
from tests.e2e.multicluster.conftest import member_kube, members
from united.devcluster import versions
from united.devcluster.build import Layout, ProvisionError, is_provisioned, provision, tail
from united.devcluster.cluster import ClusterError, LocalCluster
from united.devcluster.installation import install_controller
from united.devcluster.nodes import zone_nodes
from united.devcluster.simulation import Simulation
from united.kube.apply import SYSTEM
from united.kube.client import KubeClient

__all__ = ["kube", "member_kube", "members", "namespace", "sim"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "chaos: reliability under faults (tests/chaos: fault proxy, kills, restarts, bad input, RBAC)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """With ``UNITED_E2E_KUBECONFIG`` the whole suite is skipped: it needs its own control plane."""
    skip_local_only(items)


def pytest_report_header() -> str:
    return f"chaos: UNITED_CHAOS_SEED={SEED} UNITED_CHAOS_KILLS={KILLS}"


@pytest.fixture(scope="package")
def cluster() -> Iterator[LocalCluster]:
    """A local control plane of the chaos suite's own (see the module docstring)."""
    layout = Layout.default(versions.requested(os.environ))
    if not is_provisioned(layout):
        print(
            f"\nchaos: building the local control plane (Kubernetes {layout.version}) in {layout.root}",
            file=sys.__stderr__,
            flush=True,
        )
    problem = ""
    try:
        binaries = provision(layout=layout, progress=lambda m: print(m, file=sys.__stderr__, flush=True))
    except ProvisionError as exc:
        problem = f"provisioning it failed: {exc}\n--- last lines of {exc.log} ---\n{tail(exc.log)}"
    if problem:
        pytest.fail(f"chaos tests need the local control plane, and {problem}", pytrace=False)
    local = LocalCluster(binaries)
    try:
        local.start()
    except ClusterError as exc:
        problem = f"it did not start: {exc}"
    if problem:
        pytest.fail(f"chaos tests need the local control plane, and {problem}", pytrace=False)
    try:
        yield local
        local.check_alive()
    finally:
        local.stop()


@pytest.fixture(scope="package")
def simulation(cluster: LocalCluster) -> Iterator[Simulation]:
    """Three simulated nodes (one per zone) with room for the storms' pods, and the simulators."""
    running = Simulation(cluster.admin_kubeconfig, nodes=zone_nodes(ZONES, pods=250), heartbeat_interval=5.0)
    running.start()
    try:
        yield running
    finally:
        running.stop()
        # Simulation.stop() leaves the TLS sockets of its six watches to the garbage collector
        # (they sit in reference cycles with its closed loop: a devcluster bug, reported).
        # Finalize them here and now: a collection at a random later moment, under pytest's
        # "error" warning filter, would turn their ResourceWarnings into a failed run.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()


@pytest.fixture(scope="package")
def controller_identity(cluster: LocalCluster) -> Path:
    """The CRDs, the controller's namespace, ServiceAccount and RBAC from ``manifests/base``,
    and a kubeconfig with that ServiceAccount's token (the shipped ClusterRole applies)."""

    async def setup() -> Path:
        async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as client:
            await install_controller(client, compat=True, leader_election=True)
            return await cluster.service_account_kubeconfig(client, namespace=SYSTEM, name="united-controller")

    return asyncio.run(setup())


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not figures.FIGURES:
        return
    terminalreporter.section("chaos figures")
    for name, value in sorted(figures.FIGURES.items()):
        terminalreporter.write_line(f"{name}: {value}")
    path = LOG_DIR / "chaos-figures.json"
    figures.write(path)
    terminalreporter.write_line(f"(written to {path})")
