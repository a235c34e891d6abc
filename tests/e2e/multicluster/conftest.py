"""Member clusters for the multi-cluster tests: local control planes next to the session's
``cluster`` (the host), each with etcd, kube-apiserver, a lean kube-controller-manager,
kube-scheduler and one simulated node, so a Deployment in a member gets Ready pods.

* ``members`` (package): ``{"member-1": Plane, "member-2": Plane}``
  (``united.devcluster.planes``): ``.server``, ``.admin_kubeconfig``, ``await .client()``,
  ``await .service_account_kubeconfig(client, namespace=, name=)`` (self-contained YAML
  with a TokenRequest token), ``.stop_apiserver()`` / ``.start_apiserver()`` (etcd and the
  data stay), ``.cluster`` (the ``LocalCluster``), ``.simulation``, ``.footprint()``.
  Package-scoped: the eight extra processes live only while this package's tests run.
* ``member_kube`` (per test): an admin ``KubeClient`` per member, on the test's loop.
* ``namespace`` (per test): as the session's, but gone before the test ends, while the members
  still run: a UnitedDeployment with remote subsets keeps its namespace until its finalizer has
  deleted the remote children (after a failed test that left a member down, its remote
  children are abandoned so the host is clean for the packages after this one).
"""

from __future__ import annotations

import contextlib
import re
import secrets
from collections.abc import AsyncIterator, Iterator

import pytest

from tests.support.namespace import fresh_namespace
from united.api.groups import GROUP
from united.devcluster.cluster import ClusterError, LocalCluster
from united.devcluster.planes import Plane, start_planes, stop_planes
from united.kube import NotFound
from united.kube.client import NAMESPACES, KubeClient, PatchType, Resource
from united.kube.wait import WaitTimeoutError, eventually
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import PLURAL

UDS = Resource(GROUP, "v1alpha1", PLURAL, True, "UnitedDeployment")

MEMBERS = ("member-1", "member-2")


@pytest.fixture(scope="package")
def members(cluster: LocalCluster) -> Iterator[dict[str, Plane]]:
    planes = [Plane(cluster.binaries, name=name) for name in MEMBERS]
    problem = ""
    try:
        start_planes(planes)
    except (ClusterError, TimeoutError, RuntimeError) as exc:
        problem = str(exc)
    if problem:
        pytest.fail(f"multi-cluster tests need member control planes, and they did not start: {problem}", pytrace=False)
    try:
        yield {plane.name: plane for plane in planes}
        for plane in planes:
            plane.cluster.check_alive()
    finally:
        stop_planes(planes)


@pytest.fixture
async def member_kube(members: dict[str, Plane]) -> AsyncIterator[dict[str, KubeClient]]:
    async with contextlib.AsyncExitStack() as stack:
        yield {name: await stack.enter_async_context(await plane.client()) for name, plane in members.items()}


@pytest.fixture
async def namespace(kube: KubeClient, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    async with fresh_namespace(kube, f"{slug}-{secrets.token_hex(3)}") as name:
        yield name

    async def gone() -> None:
        try:
            await kube.get(NAMESPACES, name)
        except NotFound:
            return
        raise AssertionError(f"namespace {name} still being deleted")

    try:
        await eventually(gone, within=60, what=f"namespace {name} deleted")
    except WaitTimeoutError:
        abandon = {"metadata": {"annotations": {Keys(GROUP).abandon_remote_children: "*"}}}
        for ud in (await kube.list(UDS, namespace=name)).items:
            with contextlib.suppress(NotFound):
                await kube.patch(UDS, ud["metadata"]["name"], abandon, patch_type=PatchType.MERGE, namespace=name)
        await eventually(gone, within=60, what=f"namespace {name} deleted (remote children abandoned)")
