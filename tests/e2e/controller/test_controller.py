"""`united run` against the local control plane: the controller's documented behaviours, end to end.

The controller runs as a subprocess under its own ServiceAccount (shipped ClusterRole),
the built-in controllers and the scheduler do their parts, the simulators play kubelets
and OpenKruise.
"""

from __future__ import annotations

import asyncio
import json
import signal
from typing import Any

import pytest

from tests.e2e.controller.helpers import (
    DEPLOYMENTS,
    EVENTS,
    ROOT,
    UD,
    children,
    condition,
    get_ud,
    kruise_v1beta1_served,
    nodes_for,
    patch_ud,
    pods_of,
    replicas_by_subset,
    resource_for,
    sample,
    scaled_down,
    ud,
    wait_ready,
    wait_shape,
    zone,
)
from tests.support.controller import CRDS, Controller, install_kruise_rbac, webhook_configurations_aside
from united.devcluster import versions
from united.devcluster.crds import kruise_crds
from united.devcluster.simulation import Simulation
from united.kube.apply import install_crds
from united.kube.client import NAMESPACES, KubeClient, PatchType, Resource
from united.kube.errors import NotFound
from united.kube.wait import eventually

pytestmark = pytest.mark.e2e

HPA_VERSIONS = ("v2", "v2beta2")
"""autoscaling/v2 (GA 1.23; v2beta2 is gone since 1.26), else v2beta2 (1.20): the same fields."""


async def hpas(kube: KubeClient) -> Resource:
    """HorizontalPodAutoscalers in the newest of :data:`HPA_VERSIONS` the server serves."""
    served = {v["version"] for v in json.loads(await kube.get_path("/apis/autoscaling"))["versions"]}
    version = next(v for v in HPA_VERSIONS if v in served)
    return Resource("autoscaling", version, "horizontalpodautoscalers", True, "HorizontalPodAutoscaler")


THREE_ZONES = [zone("a", "zone-a"), zone("b", "zone-b"), zone("c", "zone-c")]


async def create(kube: KubeClient, namespace: str, doc: dict[str, Any]) -> dict[str, Any]:
    return await kube.create(resource_for(doc), doc, namespace=namespace)


@pytest.mark.compat
@pytest.mark.parametrize(
    "name",
    [
        "zones-percent.yaml",
        "elastic-pool.yaml",
        "arch-patch.yaml",
        "bandwidth-packages.yaml",
        "serverless-adaptive.yaml",
        "canary-partitions.yaml",
        "statefulset.yaml",
        "cloneset.yaml",
    ],
)
async def test_every_sample_converges(
    controller: Controller,
    sim: Simulation,
    kube: KubeClient,
    namespace: str,
    name: str,
    kube_version: versions.KubeVersion,
) -> None:
    doc = scaled_down(sample(name), 6)
    for node in nodes_for(doc, f"s-{namespace[-6:]}"):
        await sim.add_node(node)
    await create(kube, namespace, doc)
    obj = await wait_ready(kube, namespace, doc, within=120)
    status = obj["status"]
    got = await replicas_by_subset(kube, namespace, doc)
    desired = {s["name"]: s["desired"] for s in status["subsetStatuses"]}
    assert got == desired
    assert status["replicas"] == status["readyReplicas"] == doc["spec"]["replicas"]
    assert status["labelSelector"] == f"app={doc['spec']['selector']['matchLabels']['app']}"
    # Reconciling and Stalled are False: absent
    assert [c["type"] for c in status["conditions"]] == ["Ready", "UnitedDeploymentUpdated"]
    # The status is one field to the API server's field manager, no record of its items; the
    # oldest supported version (1.20) still records each one.
    records = [m["fieldsV1"]["f:status"] for m in obj["metadata"]["managedFields"] if "f:status" in m["fieldsV1"]]
    assert (records == [{}]) == (kube_version.minor > 20), records


@pytest.mark.compat
async def test_scale_through_spec_and_scale_subresource_resplits_percentages(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    doc = ud(
        "pct",
        [zone("a", "zone-a", replicas="20%"), zone("b", "zone-b", replicas="20%"), zone("c", "zone-c")],
        replicas=10,
    )
    await create(kube, namespace, doc)
    await wait_shape(kube, namespace, doc, {"a": 2, "b": 2, "c": 6})
    await patch_ud(kube, namespace, doc, {"spec": {"replicas": 5}})
    await wait_shape(kube, namespace, doc, {"a": 1, "b": 1, "c": 3})
    await kube.patch(
        UD, "pct", {"spec": {"replicas": 20}}, patch_type=PatchType.MERGE, namespace=namespace, subresource="scale"
    )
    await wait_shape(kube, namespace, doc, {"a": 4, "b": 4, "c": 12})
    scale = await kube.get(UD, "pct", namespace=namespace, subresource="scale")
    assert scale["spec"]["replicas"] == 20
    obj = await wait_ready(kube, namespace, doc)
    assert obj["status"]["labelSelector"] == "app=pct"
    scale = await kube.get(UD, "pct", namespace=namespace, subresource="scale")
    assert scale["status"] == {"replicas": 20, "selector": "app=pct"}


async def test_kubectl_scale(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str, cluster: Any
) -> None:
    doc = ud("kscale", [zone("a", "zone-a"), zone("b", "zone-b")], replicas=2)
    await create(kube, namespace, doc)
    await wait_shape(kube, namespace, doc, {"a": 1, "b": 1})
    kubectl = str(cluster.binaries.kubectl)
    proc = await asyncio.create_subprocess_exec(
        kubectl,
        "--kubeconfig",
        str(cluster.admin_kubeconfig),
        "-n",
        namespace,
        "scale",
        "uniteddeployments.apps.united.io/kscale",
        "--replicas=5",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0, out.decode()
    await wait_shape(kube, namespace, doc, {"a": 2, "b": 3})


async def test_elastic_fill_in_order_and_scale_in_in_reverse(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    doc = ud(
        "elastic",
        [zone("a", "zone-a", maxReplicas=2), zone("b", "zone-b", maxReplicas=2), zone("c", "zone-c")],
        replicas=3,
    )
    await create(kube, namespace, doc)
    await wait_shape(kube, namespace, doc, {"a": 2, "b": 1, "c": 0})
    await patch_ud(kube, namespace, doc, {"spec": {"replicas": 6}})
    await wait_shape(kube, namespace, doc, {"a": 2, "b": 2, "c": 2})
    await patch_ud(kube, namespace, doc, {"spec": {"replicas": 1}})
    await wait_shape(kube, namespace, doc, {"a": 1, "b": 0, "c": 0})
    obj = await wait_ready(kube, namespace, doc)
    reasons = {s["name"]: s["reason"] for s in obj["status"]["subsetStatuses"]}
    assert reasons == {"a": "overflow", "b": "overflow", "c": "overflow"}


@pytest.mark.compat
@pytest.mark.parametrize("variant", ["statefulSetTemplate", "cloneSetTemplate"])
async def test_template_update_with_manual_partitions(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str, variant: str
) -> None:
    subsets = [zone("a", "zone-a", replicas=3), zone("b", "zone-b", replicas=3)]
    doc = ud(
        "canary",
        subsets,
        replicas=6,
        variant=variant,
        updateStrategy={"type": "Manual", "manualUpdate": {"partitions": {"a": 3, "b": 0}}},
    )
    await create(kube, namespace, doc)
    first = await wait_ready(kube, namespace, doc, within=120)
    old = first["status"]["updatedRevision"]
    image = f"{doc['spec']['template'][variant]['spec']['template']['spec']['containers'][0]['image']}-v2"
    template = first["spec"]["template"]
    template[variant]["spec"]["template"]["spec"]["containers"][0]["image"] = image
    await patch_ud(kube, namespace, doc, {"spec": {"template": template}})

    async def canary() -> None:
        obj = await get_ud(kube, namespace, doc)
        status = obj["status"]
        assert status["updatedRevision"] != old
        per = {
            s["name"]: (s.get("updatedReplicas", 0), s.get("partition", 0), s.get("partitionApplied"))
            for s in status["subsetStatuses"]
        }
        assert per == {"a": (0, 3, True), "b": (3, 0, None)}, per
        assert status["updatedReplicas"] == 3 and status["currentRevision"] == old
        pods = await pods_of(kube, namespace, "canary")
        images = sorted(
            (p["metadata"]["labels"]["apps.united.io/subset-name"], p["spec"]["containers"][0]["image"]) for p in pods
        )
        assert images.count(("a", image)) == 0 and images.count(("b", image)) == 3

    await eventually(canary, within=120, what="canary: subset b updated, subset a held")
    await patch_ud(kube, namespace, doc, {"spec": {"updateStrategy": {"manualUpdate": {"partitions": {"a": 1}}}}})

    async def progressed() -> None:
        obj = await get_ud(kube, namespace, doc)
        per = {s["name"]: s.get("updatedReplicas", 0) for s in obj["status"]["subsetStatuses"]}
        assert per == {"a": 2, "b": 3}, per

    await eventually(progressed, within=120, what="partition lowered: 2 of subset a updated")


@pytest.mark.compat
async def test_deployment_partition_is_reported_not_pretended(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    doc = ud(
        "dpart",
        [zone("a", "zone-a", replicas=2)],
        replicas=2,
        updateStrategy={"manualUpdate": {"partitions": {"a": 1}}},
    )
    await create(kube, namespace, doc)

    async def reported() -> None:
        obj = await get_ud(kube, namespace, doc)
        entries = (obj.get("status") or {}).get("subsetStatuses") or [{}]
        entry = entries[0]
        assert entry, "no status yet"
        assert entry["partition"] == 1 and entry["partitionApplied"] is False
        assert "not applied" in entry["message"]

    await eventually(reported, within=60, what="partition reported as not applied")


async def test_subsets_added_and_removed_and_patch_visible_in_pods(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    patch = {"spec": {"containers": [{"name": "main", "env": [{"name": "ZONE", "value": "b"}]}]}}
    doc = ud("topo", [zone("a", "zone-a"), zone("b", "zone-b", patch=patch)], replicas=4)
    await create(kube, namespace, doc)
    await wait_shape(kube, namespace, doc, {"a": 2, "b": 2})

    async def patched() -> None:
        pods = await pods_of(kube, namespace, "topo")
        env = {
            p["metadata"]["labels"]["apps.united.io/subset-name"]: p["spec"]["containers"][0].get("env") for p in pods
        }
        assert env == {"a": None, "b": [{"name": "ZONE", "value": "b"}]}, env

    await eventually(patched, within=60, what="subset patch in pods")
    subsets = [zone("a", "zone-a"), zone("b", "zone-b", patch=patch), zone("c", "zone-c")]
    await patch_ud(kube, namespace, doc, {"spec": {"topology": {"subsets": subsets}}})
    await wait_shape(kube, namespace, doc, {"a": 1, "b": 2, "c": 1})  # remainder: most replicas now, then last name
    await patch_ud(kube, namespace, doc, {"spec": {"topology": {"subsets": [zone("c", "zone-c")]}}})
    await wait_shape(kube, namespace, doc, {"c": 4})

    async def stale_entries_gone() -> None:
        obj = await get_ud(kube, namespace, doc)
        assert [s["name"] for s in obj["status"]["subsetStatuses"]] == ["c"]
        assert set(obj["status"]["subsetReplicas"]) == {"c"}
        pods = await pods_of(kube, namespace, "topo")
        assert {p["metadata"]["labels"]["apps.united.io/subset-name"] for p in pods} == {"c"}

    await eventually(stale_entries_gone, within=60, what="removed subsets gone from status and pods")


async def test_deleting_the_ud_garbage_collects_children(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    doc = ud("gc", THREE_ZONES, replicas=3)
    await create(kube, namespace, doc)
    await wait_shape(kube, namespace, doc, {"a": 1, "b": 1, "c": 1})
    await kube.delete(UD, "gc", namespace=namespace, propagation_policy="Background")

    async def collected() -> None:
        assert await children(kube, namespace, doc) == []
        assert await pods_of(kube, namespace, "gc") == []

    await eventually(collected, within=60, what="children and pods garbage-collected")


async def test_resync_with_nothing_to_do_makes_zero_writes(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    doc = ud("quiet", THREE_ZONES, replicas=3)
    await create(kube, namespace, doc)
    await wait_ready(kube, namespace, doc)
    await others_gone(kube, namespace)
    before_by = await quiescent(controller)
    before_reconciles = controller.counter("controller_runtime_reconcile_total")
    await patch_ud(kube, namespace, doc, {"metadata": {"labels": {"touched": "yes"}}})

    async def reconciled() -> None:
        assert controller.counter("controller_runtime_reconcile_total") > before_reconciles

    await eventually(reconciled, within=30, what="a reconcile after the label change")
    await asyncio.sleep(1)
    after_by = controller.writes_by_resource()
    extra = {r: n - before_by.get(r, 0) for r, n in after_by.items() if n != before_by.get(r, 0) and r != "leases"}
    assert extra == {}, f"a reconcile with nothing to change wrote: {extra}"
    controller.restart()
    await wait_ready(kube, namespace, doc)

    async def resynced() -> None:
        assert controller.counter("controller_runtime_reconcile_total") >= 1

    await eventually(resynced, within=30, what="full resync after restart")
    await asyncio.sleep(2)
    writes = {
        r: controller.writes(r) for r in ("deployments", "uniteddeployments/status", "controllerrevisions", "events")
    }
    assert writes == dict.fromkeys(writes, 0), f"a full resync of converged objects wrote: {writes}"


async def others_gone(kube: KubeClient, namespace: str) -> None:
    """Wait until earlier tests' namespaces are deleted: the controller is shared, and their
    UDs' statuses legitimately change while the namespace controller deletes their pods."""

    async def gone() -> None:
        listing = await kube.list(NAMESPACES, label_selector="e2e.united.dev/test=true")
        others = [n["metadata"]["name"] for n in listing.items if n["metadata"]["name"] != namespace]
        assert not others, f"still being deleted: {others}"

    await eventually(gone, within=120, what="earlier tests' namespaces deleted")


async def quiescent(controller: Controller, *, quiet: float = 5.0, within: float = 90.0) -> dict[str, int]:
    """Writes by resource once none but Lease renewals happened for ``quiet`` seconds: pods
    becoming ready after Ready=True still move counts in the status, legitimately."""
    deadline = asyncio.get_running_loop().time() + within
    last = controller.writes_by_resource()
    while True:
        await asyncio.sleep(quiet)
        now = controller.writes_by_resource()
        if {r: n for r, n in now.items() if r != "leases"} == {r: n for r, n in last.items() if r != "leases"}:
            return now
        assert asyncio.get_running_loop().time() < deadline, f"the controller kept writing: {last} -> {now}"
        last = now


async def test_invalid_spec_is_stalled_and_others_keep_converging(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    bad = ud("bad", [zone("a", "zone-a", replicas="60%"), zone("b", "zone-b", replicas="60%")], replicas=10)
    good = ud("good", THREE_ZONES, replicas=3)
    await create(kube, namespace, bad)
    await create(kube, namespace, good)

    async def stalled() -> None:
        obj = await get_ud(kube, namespace, bad)
        c = condition(obj, "Stalled")
        assert c.get("status") == "True" and c.get("reason") == "InvalidSpec", c
        assert (
            "sum of indicated subset replicas 12 should not be greater than UnitedDeployment replicas 10"
            in c["message"]
        )
        events = await kube.list(EVENTS, namespace=namespace, field_selector="involvedObject.name=bad")
        assert any(e["reason"] == "InvalidSpec" and e["type"] == "Warning" for e in events.items)

    await eventually(stalled, within=60, what="invalid UD stalled with an event")
    assert await children(kube, namespace, bad) == []
    await wait_ready(kube, namespace, good)
    await patch_ud(
        kube,
        namespace,
        bad,
        {"spec": {"topology": {"subsets": [zone("a", "zone-a", replicas="40%"), zone("b", "zone-b")]}}},
    )
    await wait_shape(kube, namespace, bad, {"a": 4, "b": 6})


async def test_restart_midway_converges_without_duplicates(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    docs = [ud(f"storm-{i}", THREE_ZONES, replicas=3) for i in range(6)]
    for doc in docs:
        await create(kube, namespace, doc)

    async def some_children() -> None:
        assert sum([len(await children(kube, namespace, d)) for d in docs]) >= 3

    await eventually(some_children, within=30, what="first children created")
    controller.restart(signal.SIGKILL)
    for doc in docs:
        await wait_shape(kube, namespace, doc, {"a": 1, "b": 1, "c": 1})
        kids = await children(kube, namespace, doc)
        assert len(kids) == 3, [k["metadata"]["name"] for k in kids]


async def test_missing_child_crd_is_reported_and_others_are_served(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    """A UnitedDeployment whose child kind is not served gets a condition and an Event, the
    controller keeps serving the others, and once the CRD is installed the discovery timer
    notices and the UnitedDeployment converges."""
    asts = next(c for c in kruise_crds() if c["metadata"]["name"] == "statefulsets.apps.kruise.io")
    orphan = ud("asts", [zone("a", "zone-a"), zone("b", "zone-b")], replicas=2, variant="advancedStatefulSetTemplate")
    fine = ud("fine", THREE_ZONES, replicas=3)
    controller.stop()
    try:
        await kube.delete(CRDS, "statefulsets.apps.kruise.io")
        await eventually(lambda: crd_absent(kube), within=60, what="Advanced StatefulSet CRD deleted")
        controller.start()
        await create(kube, namespace, orphan)
        await create(kube, namespace, fine)

        async def stalled() -> None:
            obj = await get_ud(kube, namespace, orphan)
            c = condition(obj, "Stalled")
            assert (c.get("status"), c.get("reason")) == ("True", "ChildKindUnavailable"), c
            events = await kube.list(EVENTS, namespace=namespace, field_selector="involvedObject.name=asts")
            assert any(e["reason"] == "ChildKindUnavailable" for e in events.items)

        await eventually(stalled, within=60, what="UD with a missing child kind stalled")
        await wait_ready(kube, namespace, fine)
    finally:
        if controller.proc is None:
            controller.start()
        await eventually(lambda: crd_absent(kube), within=60, what="Advanced StatefulSet CRD gone before reinstall")
        await install_crds(kube, [asts])
    await wait_shape(kube, namespace, orphan, {"a": 1, "b": 1}, within=60)
    await wait_ready(kube, namespace, orphan, within=90)


async def crd_absent(kube: KubeClient) -> None:
    try:
        await kube.get(CRDS, "statefulsets.apps.kruise.io")
    except NotFound:
        return
    raise AssertionError("statefulsets.apps.kruise.io still exists")


@pytest.mark.compat
async def test_kruise_manifests_work_unchanged(
    controller_identity: Any, cluster: Any, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    """OpenKruise manifests served by a controller run with ``--api-group apps.kruise.io`` and
    the RBAC overlay for that group: v1alpha1 with the CRD as installed, v1beta1 once it serves
    that version too (``united install --kruise-v1beta1``). It runs beside the session's
    controller, so without leader election (the shipped Role grants one Lease)."""
    await install_kruise_rbac(kube)
    kruise = Controller(
        controller_identity,
        name="controller-kruise",
        extra=("--api-group", "apps.kruise.io"),
        leader_elect=False,
    )
    kruise.start()
    try:
        # The CRD as installed: v1alpha1 alone, as OpenKruise's releases serve it.
        await _kruise_sample_works(kube, namespace, sim, "kruise-v1alpha1.yaml", owner="apps.kruise.io/v1alpha1")
    finally:
        assert kruise.stop() == 0
    async with kruise_v1beta1_served(kube):
        kruise.start()
        try:
            await _kruise_sample_works(kube, namespace, sim, "kruise-v1beta1.yaml", owner="apps.kruise.io/v1beta1")
        finally:
            assert kruise.stop() == 0


async def _kruise_sample_works(kube: KubeClient, namespace: str, sim: Simulation, name: str, *, owner: str) -> None:
    """``name`` becomes ready; its children carry OpenKruise's labels and name their owner by
    ``owner``, the version discovery prefers (the one the garbage collector maps)."""
    doc = scaled_down(sample(name), 6)
    for node in nodes_for(doc, f"k-{namespace[-6:]}-{name[7:14]}"):
        await sim.add_node(node)
    await create(kube, namespace, doc)
    obj = await wait_ready(kube, namespace, doc, within=120)
    kids = await children(kube, namespace, doc)
    assert kids and all("apps.kruise.io/subset-name" in k["metadata"]["labels"] for k in kids)
    for kid in kids:
        ref = kid["metadata"]["ownerReferences"][0]
        assert (ref["apiVersion"], ref["kind"], ref["uid"]) == (owner, "UnitedDeployment", obj["metadata"]["uid"])


async def test_an_hpa_drives_replicas_through_the_scale_subresource(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    """A real autoscaling/v2 HPA (v2beta2 on 1.20; kube-controller-manager's controller). Without
    a metrics API it still enforces minReplicas and maxReplicas through /scale, which is all
    it takes to prove the wiring: scale target, labelSelector, and percentages re-split."""
    doc = ud("hpa", [zone("a", "zone-a", replicas="20%"), zone("b", "zone-b")], replicas=2)
    await create(kube, namespace, doc)
    await wait_shape(kube, namespace, doc, {"a": 0, "b": 2})
    resource = await hpas(kube)
    hpa = {
        "apiVersion": f"autoscaling/{resource.version}",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "hpa"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps.united.io/v1alpha1", "kind": "UnitedDeployment", "name": "hpa"},
            "minReplicas": 10,
            "maxReplicas": 20,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
                }
            ],
        },
    }
    await kube.create(resource, hpa, namespace=namespace)
    await wait_shape(kube, namespace, doc, {"a": 2, "b": 8}, within=90)
    await kube.patch(
        resource, "hpa", {"spec": {"minReplicas": 1, "maxReplicas": 5}}, patch_type=PatchType.MERGE, namespace=namespace
    )
    await wait_shape(kube, namespace, doc, {"a": 1, "b": 4}, within=90)


async def test_orphans_are_adopted_not_duplicated(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    """A workload left behind (e.g. the UnitedDeployment was deleted with orphan propagation
    and recreated) is adopted: no second child for its subset, and it is scaled in place."""
    doc = ud("adopt", [zone("a", "zone-a"), zone("b", "zone-b")], replicas=2)
    await create(kube, namespace, doc)
    await wait_shape(kube, namespace, doc, {"a": 1, "b": 1})
    kept = {c["metadata"]["name"] for c in await children(kube, namespace, doc)}
    await kube.delete(UD, "adopt", namespace=namespace, propagation_policy="Orphan")

    async def orphaned() -> None:
        listed = await kube.list(DEPLOYMENTS, namespace=namespace)
        assert {c["metadata"]["name"] for c in listed.items if not c["metadata"].get("ownerReferences")} == kept

    await eventually(orphaned, within=60, what="children orphaned")

    async def deleted() -> None:
        try:
            await kube.get(UD, "adopt", namespace=namespace)
        except NotFound:
            return
        raise AssertionError("the orphaning UnitedDeployment still exists")

    await eventually(deleted, within=60, what="orphaning UnitedDeployment gone")
    doc["spec"]["replicas"] = 4
    await create(kube, namespace, doc)
    await wait_shape(kube, namespace, doc, {"a": 2, "b": 2})
    assert {c["metadata"]["name"] for c in await children(kube, namespace, doc)} == kept


async def test_shipped_manifests_pass_server_side_dry_run(cluster: Any, controller_identity: Any) -> None:
    """`kubectl apply --dry-run=server -k` of both kustomizations against the real API server
    (its namespace exists: a dry run cannot create it for the objects inside). The session
    controller's webhook configurations call a URL: they are set aside meanwhile, as on a
    cluster where united is not installed yet."""
    for overlay in ("base", "kruise"):
        async with (
            await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as admin,
            webhook_configurations_aside(admin),
        ):
            proc = await asyncio.create_subprocess_exec(
                str(cluster.binaries.kubectl),
                "--kubeconfig",
                str(cluster.admin_kubeconfig),
                "apply",
                "--dry-run=server",
                "-k",
                str(ROOT / "manifests" / overlay),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            out, _ = await proc.communicate()
        text = out.decode()
        assert proc.returncode == 0, text
        assert "deployment.apps/united-controller created (server dry run)" in text, text
        assert "clusterrole.rbac.authorization.k8s.io/united-controller" in text, text
