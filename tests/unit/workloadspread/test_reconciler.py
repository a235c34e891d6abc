"""Which WorkloadSpread keys a change queues (as OpenKruise's controller, plus StatefulSet scale), and the
admission of cached spreads; the passes themselves run against the control plane in
tests/e2e/workloadspread."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from united.api.document import Json
from united.controller.manager import Manager, Settings
from united.kube import KubeClient
from united.runtime.metrics import Metrics
from united.workloadspread.kind import setup
from united.workloadspread.reconciler import (
    POD_EVENT_DELAY,
    WorkloadSpreadController,
    merge_patch_union,
    status_patch,
)

NS = "shop"


def controller() -> WorkloadSpreadController:
    m = Manager(cast(KubeClient, object()), Settings(), metrics=Metrics(process_metrics=False))
    made = setup(m, m.settings).make(m)
    assert isinstance(made, WorkloadSpreadController)
    return made


def ws(
    name: str, kind: str, target: str, *, api_version: str = "apps/v1", created: str = "2024-01-01T00:00:00Z"
) -> Json:
    return {
        "apiVersion": "apps.united.io/v1alpha1",
        "kind": "WorkloadSpread",
        "metadata": {"name": name, "namespace": NS, "resourceVersion": "1", "creationTimestamp": created},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": kind, "name": target},
            "subsets": [{"name": "a", "maxReplicas": 1}, {"name": "b"}],
        },
    }


def obj(api_version: str, kind: str, name: str, *, owner: Json | None = None, **fields: Any) -> Json:
    meta: Json = {"name": name, "namespace": NS, "uid": f"uid-{name}"}
    if owner is not None:
        ref = {k: owner[k] for k in ("apiVersion", "kind")}
        owner_meta = owner["metadata"]
        meta["ownerReferences"] = [{**ref, "name": owner_meta["name"], "uid": owner_meta["uid"], "controller": True}]
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **fields}


def put(c: WorkloadSpreadController, *objects: Json) -> None:
    for o in objects:
        if o["kind"] == "WorkloadSpread":
            stores = c.caches.spreads.stores
        elif o["kind"] == "Pod":
            stores = c.caches.pods.stores
        else:
            group = o["apiVersion"].rpartition("/")[0]
            stores = c.caches.workloads[(group, o["kind"])].stores
        stores[0].upsert(o)


def test_a_pod_queues_the_spread_of_its_deployment_through_its_replicaset() -> None:
    c = controller()
    deploy = obj("apps/v1", "Deployment", "web")
    rs = obj("apps/v1", "ReplicaSet", "web-1", owner=deploy)
    put(c, ws("spread", "Deployment", "web"), ws("other", "Deployment", "api"), deploy, rs)
    assert c._spreads_of_pod(obj("v1", "Pod", "web-1-x", owner=rs)) == {f"{NS}/spread"}


def test_a_pod_of_an_untargeted_workload_queues_nothing() -> None:
    c = controller()
    deploy = obj("apps/v1", "Deployment", "api")
    rs = obj("apps/v1", "ReplicaSet", "api-1", owner=deploy)
    put(c, ws("spread", "Deployment", "web"), deploy, rs)
    assert c._spreads_of_pod(obj("v1", "Pod", "api-1-x", owner=rs)) == set()


def test_a_pod_naming_its_spread_in_the_annotation_queues_it_even_when_its_owner_is_gone() -> None:
    c = controller()
    put(c, ws("spread", "Deployment", "web"))
    pod = obj("v1", "Pod", "web-1-x", owner=obj("apps/v1", "ReplicaSet", "web-1"))
    pod["metadata"]["annotations"] = {"apps.kruise.io/matched-workloadspread": '{"Name":"spread","Subset":"a"}'}
    assert c._spreads_of_pod(pod) == {f"{NS}/spread"}
    pod["metadata"]["annotations"] = {"apps.kruise.io/matched-workloadspread": '{"Name":"gone","Subset":"a"}'}
    assert c._spreads_of_pod(pod) == set()  # no such spread: nothing to queue


async def test_statefulset_scale_queues_its_spread_and_a_status_only_change_of_another_kind_does_not() -> None:
    c = controller()
    put(c, ws("db", "StatefulSet", "db"))
    old = obj("apps/v1", "StatefulSet", "db", spec={"replicas": 3}, status={"replicas": 3, "readyReplicas": 2})
    scaled = {**old, "spec": {"replicas": 5}}
    c._on_workload("MODIFIED", scaled, old)
    assert len(c.queue) == 1
    c2 = controller()
    put(c2, ws("db", "StatefulSet", "db"))
    ready = {**old, "status": {"replicas": 3, "readyReplicas": 3}}
    c2._on_workload("MODIFIED", ready, old)
    assert len(c2.queue) == 0


async def test_a_replicaset_of_a_target_deployment_queues_the_spread() -> None:
    c = controller()
    deploy = obj("apps/v1", "Deployment", "web")
    put(c, ws("spread", "Deployment", "web"), deploy)
    c._on_workload("ADDED", obj("apps/v1", "ReplicaSet", "web-2", owner=deploy, spec={"replicas": 1}), None)
    assert len(c.queue) == 1


async def test_a_node_heartbeat_queues_nothing_and_a_label_change_queues_every_spread() -> None:
    c = controller()
    put(c, ws("one", "Deployment", "web"), ws("two", "Deployment", "api"))
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"zone": "a"}}, "status": {}}
    beat = {**node, "status": {"conditions": [{"type": "Ready", "lastHeartbeatTime": "now"}]}}
    c._on_node("MODIFIED", beat, node)
    assert len(c.queue) == 0
    relabelled = {**node, "metadata": {"name": "n1", "labels": {"zone": "b"}}}
    c._on_node("MODIFIED", relabelled, node)
    assert len(c.queue) == 2


def test_spreads_in_a_namespace_are_admitted_oldest_first_and_invalid_ones_left_out() -> None:
    c = controller()
    bad = ws("bad", "Deployment", "x")
    bad["spec"]["subsets"] = []
    put(c, ws("young", "Deployment", "a", created="2024-02-01T00:00:00Z"), ws("old", "Deployment", "b"), bad)
    assert [s.name for s in c.caches.spreads_in(NS)] == ["old", "young"]
    assert c.caches.spreads_in("elsewhere") == []


def test_the_status_patch_removes_what_the_new_status_drops_and_names_the_resource_version() -> None:
    c = controller()
    doc = ws("spread", "Deployment", "web")
    doc["status"] = {
        "observedGeneration": 1,
        "subsetStatuses": [{"name": "a", "missingReplicas": 0, "creatingPods": {"p": "2024-01-01T00:00:00Z"}}],
    }
    put(c, doc)
    spread = c.caches.spreads_in(NS)[0]
    emptied = spread.status.__class__(observed_generation=1)
    patch = status_patch(spread, emptied)
    assert patch["metadata"] == {"resourceVersion": "1"}
    assert patch["status"]["subsetStatuses"] == []


def test_cost_and_adoption_patches_of_one_pod_merge() -> None:
    cost = {"metadata": {"annotations": {"cost": "100"}}}
    adoption = {"metadata": {"annotations": {"matched": "x"}}}
    assert merge_patch_union(cost, adoption) == {"metadata": {"annotations": {"cost": "100", "matched": "x"}}}


async def test_the_pod_events_of_a_burst_share_one_pass_after_a_short_delay() -> None:
    c = controller()
    deploy = obj("apps/v1", "Deployment", "web")
    rs = obj("apps/v1", "ReplicaSet", "web-1", owner=deploy)
    put(c, ws("spread", "Deployment", "web"), deploy, rs)
    for i in range(20):
        c._on_pod("ADDED", obj("v1", "Pod", f"web-1-{i}", owner=rs), None)
    assert len(c.queue) == 0 and c.queue.waiting == 1
    await asyncio.sleep(POD_EVENT_DELAY * 1.5)
    assert len(c.queue) == 1 and c.queue.waiting == 0


async def test_a_status_only_change_of_a_spread_waits_like_a_pod_event_and_a_spec_change_does_not() -> None:
    c = controller()
    old = ws("spread", "Deployment", "web")
    booked = {**old, "metadata": {**old["metadata"], "resourceVersion": "2"}, "status": {"observedGeneration": 1}}
    c._on_spread("MODIFIED", booked, old)
    assert len(c.queue) == 0 and c.queue.waiting == 1
    respec = {**booked, "spec": {**booked["spec"], "subsets": [{"name": "a"}]}}
    c._on_spread("MODIFIED", respec, booked)
    assert len(c.queue) == 1
