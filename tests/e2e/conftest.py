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
* ``controller`` (session): ``united run`` as deployed, its pod webhooks on (see the fixture);
  ``spreading`` is the same process, for the tests that talk to its webhook server.

With ``UNITED_E2E_KUBECONFIG`` set (``tests.support.external``), ``cluster`` is that
existing cluster, ``simulation`` is None (its nodes are real), and the tests that need the
local control plane are skipped at collection with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cluster import controller_kubeconfig, local_cluster
from tests.support.controller import (
    Controller,
    WebhookController,
    install_webhook_configurations,
    remove_webhook_configurations,
    webhooks_trusted,
)
from tests.support.external import KUBECONFIG_VARIABLE, ExternalCluster, Target, local_only_reason, target
from tests.support.namespace import fresh_namespace
from united import data
from united.api.groups import KRUISE_GROUP
from united.devcluster import versions
from united.devcluster.cluster import LocalCluster
from united.devcluster.credentials import StaticUser
from united.devcluster.nodes import zone_nodes
from united.devcluster.simulation import Simulation
from united.kube.apply import SYSTEM, install_crds
from united.kube.client import CRDS, NAMESPACES, SERVICE_ACCOUNTS, KubeClient, PatchType
from united.kube.errors import AlreadyExists, NotFound
from united.kube.wait import eventually

ZONES = ("zone-a", "zone-b", "zone-c")
# A static user with no RBAC grants, for tests that check authorization.
NOBODY = StaticUser("e2e-nobody", groups=("e2e-testers",))
EXTERNAL = target(os.environ)
"""The existing cluster to test instead of a local control plane, if any."""
KUBE_VERSION = versions.requested(os.environ)
"""The local control plane's version: ``UNITED_KUBE_VERSION``, else the default (the newest)."""
FLOOR = versions.FLOOR
"""The oldest supported version: tests marked ``compat`` run on it too (each once per version)."""


# A safety net against a hung test eating CI's time; generous enough to include a
# first provisioning (about 7 minutes) in the first test's setup.
E2E_TIMEOUT_SECONDS = 1200


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test on the local control plane runs on ``KUBE_VERSION``; a ``compat`` one also on
    the floor. The version is a session-scoped parameter, so each version's control plane (and
    the session's controller on it) starts once per worker that runs a test on it."""
    if "kube_version" not in metafunc.fixturenames:
        return
    wanted = [KUBE_VERSION]
    if metafunc.definition.get_closest_marker("compat") and EXTERNAL is None and FLOOR != KUBE_VERSION:
        wanted.append(FLOOR)
    metafunc.parametrize("kube_version", wanted, indirect=True, scope="session", ids=lambda v: f"kube-{v}")


@pytest.fixture(scope="session")
def kube_version(request: pytest.FixtureRequest) -> versions.KubeVersion:
    """The Kubernetes version of the session's control plane (see :func:`pytest_generate_tests`)."""
    return getattr(request, "param", KUBE_VERSION)


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
def cluster(kube_version: versions.KubeVersion) -> Iterator[LocalCluster]:
    if EXTERNAL is not None:
        yield from _existing(EXTERNAL)
        return
    with local_cluster(kube_version, suite="e2e", users=[NOBODY]) as local:
        yield local


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
            await kube.create(
                NAMESPACES,
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": home, "labels": {"e2e.united.dev/test": "true"}},
                },
            )
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
    simulation = Simulation(cluster.admin_kubeconfig, nodes=zone_nodes(ZONES), heartbeat_interval=5.0)
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
    with local_cluster(KUBE_VERSION, suite="e2e", name="own") as local:
        nodes = Simulation(local.admin_kubeconfig, nodes=zone_nodes(ZONES), workloads=False, heartbeat_interval=5.0)
        nodes.start()
        try:
            yield local
        finally:
            nodes.stop()


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


# The session's controller, shared by every e2e package that needs it (one process for the
# whole run: several copies would take turns at the Lease, and counting writes would mislead).
@pytest.fixture(scope="session")
def controller_identity(cluster: LocalCluster) -> Path:
    return controller_kubeconfig(cluster)


@pytest.fixture(scope="session")
def controller(cluster: LocalCluster, simulation: Any, controller_identity: Path) -> Iterator[Controller]:
    """``united run`` as deployed: leader election, the shipped least-privilege roles, and its pod
    and conversion webhooks on, so every pod of the e2e suite goes through them as on a user's
    cluster (and the WorkloadSpread tests use this process, see ``spreading``).

    The local control plane routes no Services, so the API server calls ``https://127.0.0.1:PORT``,
    and the serving certificate must name that host: only ``--webhook-url`` adds it. The shipped
    role lets the controller *get and patch* the named configurations, not create them (creating
    is the development role's, ``manifests/dev``). So the admin installs them first, as an
    installer applies ``manifests/base/webhook.yaml`` (empty ``caBundle``, ``failurePolicy:
    Ignore``) but calling the URL, and the controller — ``--webhook-url``, shipped roles only —
    fills in its CA, failure policy and selectors by patching: a rule missing from the shipped
    roles fails the suite instead of passing with admin rights. They are removed at the end, so
    nothing is left calling a dead port. Against an existing cluster (``UNITED_E2E_KUBECONFIG``)
    its API server cannot call 127.0.0.1: the controller serves no webhooks there."""
    if EXTERNAL is not None:
        plain = Controller(controller_identity)
        plain.start()
        try:
            yield plain
        finally:
            exited = plain.stop()
            assert exited == 0, f"controller exited with {exited} on SIGTERM; see {plain.log_path}"
        return
    running = WebhookController(controller_identity)

    async def configurations(install: bool) -> None:
        async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as admin:
            if install:
                await install_webhook_configurations(admin, running.url)
            else:
                await remove_webhook_configurations(admin)

    async def trusted() -> None:
        async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as admin:
            await webhooks_trusted(admin, running.url)

    asyncio.run(configurations(install=True))
    code: int | None = 0
    try:
        running.start()
        asyncio.run(trusted())
        yield running
    finally:
        code = running.stop()
        asyncio.run(configurations(install=False))
    assert code == 0, f"controller exited with {code} on SIGTERM; see {running.log_path}"


@pytest.fixture(scope="session")
def spreading(controller: Controller) -> WebhookController:
    """The session's controller, serving the pod webhooks (local control plane only)."""
    assert isinstance(controller, WebhookController), "the session's controller serves no webhooks here"
    return controller


def _terminating(crd: dict[str, Any]) -> dict[str, Any]:
    """A deleted CRD's ``Terminating`` condition: why its objects are not gone yet."""
    conditions = (crd.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "Terminating"), {})


@pytest.fixture
async def kruise_cluster(own_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    """``own_cluster`` with the compat CRDs and the controller's namespace, all removed afterwards."""
    async with await KubeClient.from_kubeconfig(own_cluster.admin_kubeconfig) as kube:
        created = False
        with contextlib.suppress(AlreadyExists):
            await kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM}})
            created = True
        crds = data.documents(*data.crds(KRUISE_GROUP))
        await install_crds(kube, crds)
        try:
            yield kube
        finally:
            names = [crd["metadata"]["name"] for crd in crds]
            for name in names:
                with contextlib.suppress(NotFound):
                    await kube.delete(CRDS, name)
            if created:
                with contextlib.suppress(NotFound):
                    await kube.delete(NAMESPACES, SYSTEM)

            async def gone() -> None:
                left = [crd for crd in (await kube.list(CRDS)).items if crd["metadata"]["name"] in names]
                terminating = {crd["metadata"]["name"]: _terminating(crd) for crd in left}
                for name, condition in terminating.items():
                    if condition.get("reason") == "InstanceDeletionFailed":
                        # The API server retries a failed cleanup of the CRD's objects with a backoff
                        # of minutes; an update of the CRD has it try again now.
                        touch = {"metadata": {"annotations": {"united.test/cleanup": secrets.token_hex(4)}}}
                        with contextlib.suppress(NotFound):
                            await kube.patch(CRDS, name, touch, patch_type=PatchType.MERGE)
                assert not left, f"still there: {terminating}"

            await eventually(gone, within=120, what="the compat CRDs deleted")
