"""Fixtures for tests against the real local control plane.

* ``cluster`` (session): provisions the binaries if needed (a first build takes
  about 6 minutes and prints progress) and starts etcd, kube-apiserver,
  kube-controller-manager and kube-scheduler. If that is impossible the tests
  *fail* with the reason — they are never skipped.
* ``simulation`` (session): three simulated Nodes (zone-a, zone-b, zone-c), the
  Kruise test CRDs and the simulated CloneSet / Advanced StatefulSet controllers.
* ``sim`` (per test): the same simulation, with every knob undone after the test.
* ``kube`` (per test): an admin :class:`KubeClient` on the test's event loop.
* ``namespace`` (per test): a fresh namespace, usable (its ``default``
  ServiceAccount has a token, so pods can be created), deleted afterwards.

With ``UNITED_E2E_KUBECONFIG`` set (``tests.support.external``), ``cluster`` is that
existing cluster, ``simulation`` is None (its nodes are real), and the tests that need the
local control plane are skipped at collection with the reason.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import re
import secrets
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.controller.conftest import Controller
from tests.support.external import KUBECONFIG_VARIABLE, ExternalCluster, Target, local_only_reason, target
from united.devcluster import versions
from united.devcluster.build import Layout, ProvisionError, is_provisioned, provision, tail
from united.devcluster.cluster import ClusterError, LocalCluster
from united.devcluster.credentials import StaticUser
from united.devcluster.installation import install_controller
from united.devcluster.nodes import zone_nodes
from united.devcluster.simulation import Simulation
from united.kube.apply import SYSTEM
from united.kube.client import NAMESPACES, SECRETS, SERVICE_ACCOUNTS, KubeClient
from united.kube.errors import NotFound
from united.kube.wait import eventually

ZONES = ("zone-a", "zone-b", "zone-c")
# A static user with no RBAC grants, for tests that check authorization.
NOBODY = StaticUser("e2e-nobody", groups=("e2e-testers",))
EXTERNAL = target(os.environ)
"""The existing cluster to test instead of a local control plane, if any."""
KUBE_VERSION = versions.requested(os.environ)
"""The local control plane's version: ``UNITED_KUBE_VERSION``, else the default."""


# A safety net against a hung test eating CI's time; generous enough to include a
# first provisioning (about 7 minutes) in the first test's setup.
E2E_TIMEOUT_SECONDS = 1200


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("e2e") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(E2E_TIMEOUT_SECONDS))
    skip_local_only(items)


def skip_local_only(items: list[pytest.Item]) -> None:
    """Against an existing cluster, skip what needs the local control plane, saying why."""
    if EXTERNAL is None:
        return
    for item in items:
        reason = local_only_reason(item.nodeid, getattr(item, "fixturenames", ()))
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))


def _progress(message: str) -> None:
    print(message, file=sys.__stderr__, flush=True)


def _existing(where: Target) -> Iterator[ExternalCluster]:
    problem = ""
    try:
        existing = ExternalCluster(where)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        problem = str(exc)
    if problem:
        pytest.fail(f"{KUBECONFIG_VARIABLE}={where.kubeconfig}: {problem}", pytrace=False)
    try:
        yield existing
    finally:
        existing.stop()


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    if EXTERNAL is not None:
        yield from _existing(EXTERNAL)
        return
    layout = Layout.default(KUBE_VERSION)
    if not is_provisioned(layout):
        _progress(f"\ne2e: the local control plane (Kubernetes {KUBE_VERSION}) is not provisioned in "
                  f"{layout.root}; building it now (`python -m united.devcluster provision`)")
    problem = ""
    try:
        binaries = provision(layout=layout, progress=_progress)
    except ProvisionError as exc:
        problem = (f"provisioning it failed: {exc}\n"
                   f"--- last lines of {exc.log} ---\n{tail(exc.log)}")
    if problem:
        pytest.fail(f"e2e tests need the local control plane, and {problem}", pytrace=False)
    local = LocalCluster(binaries, users=[NOBODY])
    try:
        local.start()
    except ClusterError as exc:
        problem = f"it did not start: {exc}"
    if problem:
        pytest.fail(f"e2e tests need the local control plane, and {problem}", pytrace=False)
    try:
        yield local
        local.check_alive()
    finally:
        local.stop()


@pytest.fixture(scope="session")
def unprivileged_user(request: pytest.FixtureRequest) -> Iterator[StaticUser]:
    """A static-token user of the cluster with no RBAC grants at all; against an existing
    cluster a ServiceAccount without bindings, in a namespace of its own deleted afterwards
    (``cluster.kubeconfig_for(user.name)`` works for both)."""
    if EXTERNAL is None:
        yield NOBODY
        return
    existing: ExternalCluster = request.getfixturevalue("cluster")
    home = f"united-e2e-users-{secrets.token_hex(3)}"

    async def account() -> StaticUser:
        async with await KubeClient.from_kubeconfig(existing.admin_kubeconfig) as kube:
            await kube.create(NAMESPACES, {
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": home, "labels": {"e2e.united.dev/test": "true"}},
            })
            body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": NOBODY.name}}
            await kube.create(SERVICE_ACCOUNTS, body, namespace=home)
            return await existing.service_account_user(kube, namespace=home, name=NOBODY.name)

    async def remove() -> None:
        async with await KubeClient.from_kubeconfig(existing.admin_kubeconfig) as kube:
            with contextlib.suppress(NotFound):
                await kube.delete(NAMESPACES, home)

    try:
        yield asyncio.run(account())
    finally:
        asyncio.run(remove())


@pytest.fixture(scope="session")
def simulation(cluster: LocalCluster) -> Iterator[Simulation | None]:
    if EXTERNAL is not None:
        yield None
        return
    simulation = Simulation(cluster.admin_kubeconfig, nodes=zone_nodes(ZONES),
                            heartbeat_interval=5.0)
    simulation.start()
    try:
        yield simulation
    finally:
        simulation.stop()


@pytest.fixture(scope="session")
def own_cluster() -> Iterator[LocalCluster]:
    """A second local control plane, with simulated Nodes in three zones and no controller,
    for tests that install united themselves (Helm, the demo on an existing cluster): the
    session's controller owns the same cluster-wide names on ``cluster``. Each test leaves it
    as it found it."""
    local = LocalCluster(provision(layout=Layout.default(KUBE_VERSION), progress=_progress), name="own")
    local.start()
    nodes = Simulation(local.admin_kubeconfig, nodes=zone_nodes(ZONES), workloads=False, heartbeat_interval=5.0)
    try:
        nodes.start()
        yield local
        local.check_alive()
    finally:
        nodes.stop()
        local.stop()


@pytest.fixture
async def sim(simulation: Simulation) -> AsyncIterator[Simulation]:
    yield simulation
    await simulation.reset()


@pytest.fixture
async def kube(cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as client:
        yield client


@pytest.fixture
async def namespace(kube: KubeClient, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    async with fresh_namespace(kube, f"{slug}-{secrets.token_hex(3)}") as name:
        yield name


@contextlib.asynccontextmanager
async def fresh_namespace(kube: KubeClient, name: str) -> AsyncIterator[str]:
    """Namespace ``name``, usable (pods can be created in it), deleted on exit."""
    await kube.create(NAMESPACES, {
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": {"e2e.united.dev/test": "true"}},
    })

    async def usable() -> None:
        account = await kube.get(SERVICE_ACCOUNTS, "default", namespace=name)
        if EXTERNAL is not None or not versions.makes_token_secrets(KUBE_VERSION):
            return  # clusters since 1.24 make no token Secrets; pods get projected tokens
        names = [ref["name"] for ref in account.get("secrets") or []]
        assert names, f"namespace {name}: default ServiceAccount has no token secret yet"
        secret = await kube.get(SECRETS, names[0], namespace=name)
        token = (secret.get("data") or {}).get("token")
        assert token and base64.b64decode(token), f"namespace {name}: token not issued yet"

    try:
        await eventually(usable, within=30, what=f"namespace {name} usable",
                         retry_on=(AssertionError, NotFound))
        yield name
    finally:
        with contextlib.suppress(NotFound):
            await kube.delete(NAMESPACES, name)


# The session's controller, shared by every e2e package that needs it (one process for the
# whole run: several copies would take turns at the Lease, and counting writes would mislead).
@pytest.fixture(scope="session")
def controller_identity(cluster: LocalCluster) -> Path:
    async def setup() -> Path:
        async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as client:
            await install_controller(client, compat=True, leader_election=True)
            return await cluster.service_account_kubeconfig(client, namespace=SYSTEM, name="united-controller")

    return asyncio.run(setup())


@pytest.fixture(scope="session")
def controller(cluster: LocalCluster, simulation: Any, controller_identity: Path) -> Iterator[Controller]:
    running = Controller(controller_identity)
    running.start()
    try:
        yield running
    finally:
        code = running.stop()
        assert code == 0, f"controller exited with {code} on SIGTERM; see {running.log_path}"
