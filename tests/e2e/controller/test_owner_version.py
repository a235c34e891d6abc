"""Owner references name a UnitedDeployment by the version discovery prefers for its kind.

The compat CRD serving ``apps.kruise.io`` ``v1alpha1`` (stored, what the controller reads) and
``v1beta1`` (``united install --kruise-v1beta1``), discovery prefers ``v1beta1``; the garbage
collector watches the kind in that version. A
child whose reference named ``v1alpha1`` was taken as possibly dangling: the collector read the
child and its owner back from the API server, several GETs per child at its own client's rate,
minutes of them after a few hundred UnitedDeployments. Runs on ``own_cluster``, where nothing
else reads Deployments by name."""

from __future__ import annotations

import json

import pytest

from bench.crd import collector_maps
from tests.e2e.controller.helpers import DEPLOYMENTS, KRUISE_UD, children, kruise_v1beta1_served, ud, zone
from tests.support.controller import Controller
from tests.support.namespace import fresh_namespace
from united.api.groups import KRUISE_GROUP
from united.devcluster.cluster import LocalCluster
from united.kube.client import CONFIG_MAPS, CONTROLLER_REVISIONS, KubeClient, Resource
from united.kube.wait import eventually

pytestmark = pytest.mark.e2e


async def reads(kube: KubeClient, resource: Resource) -> int:
    """GETs of single ``resource`` objects the API server has answered so far."""
    total = 0
    for line in (await kube.get_path("/metrics")).splitlines():
        if (
            line.startswith("apiserver_request_total{")
            and 'verb="GET"' in line
            and f'resource="{resource.plural}"' in line
            and 'scope="resource"' in line
            and 'subresource=""' in line
        ):
            total += int(float(line.rsplit(" ", 1)[1]))
    return total


async def collector_reads(kube: KubeClient, controller: Controller) -> int:
    """Deployment GETs the API server answered to anyone but ``controller``, which may read a
    child afresh itself (a create that met an existing child, under load)."""
    own = controller.counter("rest_client_requests_total", verb="GET", resource="deployments")
    return await reads(kube, DEPLOYMENTS) - int(own)


async def test_children_and_revisions_name_the_preferred_version_and_are_never_read_back(
    own_cluster: LocalCluster, kruise_cluster: KubeClient
) -> None:
    kube = kruise_cluster
    async with kruise_v1beta1_served(kube):
        await _children_name_the_preferred_version(own_cluster, kube)


async def _children_name_the_preferred_version(own_cluster: LocalCluster, kube: KubeClient) -> None:
    preferred = json.loads(await kube.get_path(f"/apis/{KRUISE_GROUP}"))["preferredVersion"]["groupVersion"]
    assert preferred == f"{KRUISE_GROUP}/v1beta1" != KRUISE_UD.api_version
    controller = Controller(own_cluster.admin_kubeconfig, name="kruise-owner", leader_elect=False,
                            extra=("--api-group", KRUISE_GROUP))  # fmt: skip
    controller.start()
    try:
        async with fresh_namespace(kube, "kruise-owner") as namespace:
            await collector_maps(kube, KRUISE_UD, namespace=namespace)
            before = await collector_reads(kube, controller)
            doc = ud("web", [zone("a", "zone-a"), zone("b", "zone-b"), zone("c", "zone-c")], replicas=0)
            doc["apiVersion"] = KRUISE_UD.api_version
            made = await kube.create(KRUISE_UD, doc, namespace=namespace)

            async def rendered() -> None:
                assert len(await children(kube, namespace, doc)) == 3

            await eventually(rendered, within=60, what="three children")
            owned = [
                *await children(kube, namespace, doc),
                *(await kube.list(CONTROLLER_REVISIONS, namespace=namespace)).items,
            ]
            for obj in owned:
                (ref,) = obj["metadata"]["ownerReferences"]
                assert (ref["apiVersion"], ref["uid"]) == (preferred, made["metadata"]["uid"]), obj["metadata"]
            # A dependent naming the version read, after the children: once the collector has
            # read it back, it has handled every child before it.
            marker_ref = {"apiVersion": KRUISE_UD.api_version, "kind": "UnitedDeployment", "name": "web",
                          "uid": made["metadata"]["uid"]}  # fmt: skip
            marker_reads = await reads(kube, CONFIG_MAPS)
            await kube.create(CONFIG_MAPS, {"metadata": {"name": "marker", "ownerReferences": [marker_ref]}},
                              namespace=namespace)  # fmt: skip

            async def marker_read_back() -> None:
                assert await reads(kube, CONFIG_MAPS) > marker_reads

            await eventually(marker_read_back, within=60, what="the collector reading back a child naming v1alpha1")
            assert await collector_reads(kube, controller) == before
    finally:
        assert controller.stop() == 0, f"see {controller.log_path}"
