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
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator

import pytest

from united.devcluster.cluster import ClusterError, LocalCluster
from united.devcluster.planes import Plane, start_planes, stop_planes
from united.kube.client import KubeClient

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
