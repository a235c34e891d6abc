"""One controller pass: composition, and a no-op pass writes nothing."""

from __future__ import annotations

import copy
import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.workloadspread.factories import deployment, pod, replicaset, spread
from united.api.document import Json
from united.workloadspread.adoption import adopted_subset
from united.workloadspread.model import DELETION_COST_ANNOTATION, WorkloadSpread, parse
from united.workloadspread.sync import Sync, sync

NOW = datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)
NODES = {"node-1": {"metadata": {"name": "node-1", "labels": {"zone": "a"}}}}


def apply(ws: WorkloadSpread, pods: list[Json], result: Sync) -> tuple[WorkloadSpread, list[Json]]:
    """What the reconciler would write: patches on pods, the status on the spread."""
    out = []
    for p in pods:
        p = copy.deepcopy(p)
        name = p["metadata"]["name"]
        if name in result.deletions:
            continue
        patch = result.adoptions.get(name, {}).get("metadata", {})
        p["metadata"].setdefault("labels", {}).update(patch.get("labels", {}))
        p["metadata"].setdefault("annotations", {}).update(patch.get("annotations", {}))
        if name in result.costs:
            p["metadata"]["annotations"][DELETION_COST_ANNOTATION] = result.costs[name]
        out.append(p)
    raw = copy.deepcopy(ws.raw)
    raw["status"] = result.status.to_dict()
    return parse(raw), out


def run(ws: WorkloadSpread, pods: list[Json], *, workload: Json | None = None, now: datetime = NOW, **kw: Any) -> Sync:
    return sync(
        ws,
        pods=pods,
        workload=deployment(3) if workload is None else workload,
        replicasets=kw.pop("replicasets", [replicaset()]),
        nodes=kw.pop("nodes", NODES),
        now=now,
    )


def assert_no_op(result: Sync, ws: WorkloadSpread) -> None:
    assert result.costs == {} and result.adoptions == {} and result.deletions == [] and result.events == []
    assert result.status is ws.status


def test_converges_then_a_no_op_pass_writes_nothing() -> None:
    ws = spread(
        subsets=[
            {
                "name": "a",
                "maxReplicas": 1,
                "requiredNodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
            },
            {"name": "b"},
        ]
    )
    pods = [pod("a0", "a"), pod("b0", "b"), pod("legacy"), pod("unplaced", node=None, phase="Pending", ready=None)]
    first = run(ws, pods)
    assert adopted_subset(first.adoptions["legacy"]) == "b"  # a is full: b has quota left
    assert first.adoptions.keys() == {"legacy"}
    assert first.costs == {"a0": "200", "legacy": "100", "b0": "100", "unplaced": "-300"}
    assert first.status.extra["unplacedReplicas"] == 1
    ws, pods = apply(ws, pods, first)
    second = run(ws, pods, now=NOW + timedelta(minutes=5))
    assert_no_op(second, ws)


def test_no_op_with_pending_records_still_requeues_without_writes() -> None:
    ws = spread(2, None)
    pods = [pod("a0", "a")]
    first = run(ws, pods)
    ws, pods = apply(ws, pods, first)
    raw = copy.deepcopy(ws.raw)
    raw["status"]["subsetStatuses"][0]["creatingPods"] = {"p": "2026-03-01T10:00:00Z"}
    ws = parse(raw)
    booked = run(ws, pods, now=NOW + timedelta(seconds=1))
    ws, pods = apply(ws, pods, booked)
    again = run(ws, pods, now=NOW + timedelta(seconds=2))
    assert_no_op(again, ws)
    assert again.requeue_after == 28


def test_missing_target_reports_not_found_and_touches_no_pod() -> None:
    ws = spread(2, None)
    result = sync(ws, pods=[pod("a0", "a")], workload=None, replicasets=[], nodes={}, now=NOW)
    assert result.costs == {} and result.adoptions == {}
    ready = result.status.extra["conditions"][0]
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "TargetNotFound",
        "Deployment web not found",
    )


def test_unknown_latest_version_skips_costs_only() -> None:
    ws = spread(1, None)
    result = run(ws, [pod("a0", "a"), pod("a1", "a")], replicasets=[replicaset("v1", owner="uid-other")])
    assert result.costs == {}
    result = run(ws, [pod("a0", "a", owner="uid-web"), pod("a1", "a", owner="uid-web")], replicasets=[])
    assert result.costs == {}
    assert result.status.subset_statuses[0].replicas == 2


def test_old_version_costs_are_reversed_in_a_pass() -> None:
    ws = spread(None, None)
    pods = [pod("new", "a", version="v2", owner="uid-rs-v2"), pod("old", "a", version="v1", owner="uid-rs-v1")]
    result = run(ws, pods, workload=deployment(2, template_hash="v2"), replicasets=[replicaset("v1"), replicaset("v2")])
    assert result.costs == {"new": "200", "old": "100"}


def test_bad_replicas_path_stalls_once() -> None:
    ws = spread("50%", None, extra_spec={"targetFilter": {"replicasPathList": ["spec.nope"]}})
    first = run(ws, [pod("a0", "a"), pod("x")])
    assert first.costs == {} and first.adoptions == {}
    assert first.events == [
        (
            "Warning",
            "InvalidReplicasPath",
            "spec.targetFilter.replicasPathList[0]: Invalid value: "
            "\"spec.nope\": the workload has no field 'nope' on this "
            "path",
        )
    ]
    stalled = {c["type"]: c["status"] for c in first.status.extra["conditions"]}
    assert stalled == {"Ready": "False", "Stalled": "True"}
    ws, _ = apply(ws, [], first)
    assert_no_op(run(ws, [pod("a0", "a")]), ws)


def test_adaptive_deletes_failed_pods() -> None:
    ws = spread(
        2, None, extra_spec={"scheduleStrategy": {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30}}}
    )
    cond = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "lastTransitionTime": "2026-03-01T09:59:00Z",
    }
    stuck = pod("stuck", "a", phase="Pending", node=None, ready=None, conditions=[cond])
    result = run(ws, [stuck, pod("b0", "b")])
    assert result.deletions == ["stuck"]
    assert result.status.subset_statuses[0].reason == "Unschedulable"


def test_no_target_ref_is_left_alone() -> None:
    ws = dataclasses.replace(spread(2), spec=dataclasses.replace(spread(2).spec, target_ref=None))
    assert_no_op(run(ws, [pod("a0", "a")]), ws)


def test_adaptive_marked_subset_then_no_op_pass() -> None:
    """Conditions in the aggregate and every versioned list survive a round trip unchanged."""
    ws = spread(
        2,
        None,
        extra_spec={"scheduleStrategy": {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30}}},
    )
    cond = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "lastTransitionTime": "2026-03-01T09:59:00Z",
    }
    pods = [
        pod("stuck", "a", phase="Pending", node=None, ready=None, conditions=[cond]),
        pod("b0", "b", version="v2", owner="uid-rs-v2"),
    ]
    first = run(ws, pods, replicasets=[replicaset("v1"), replicaset("v2")])
    ws, pods = apply(ws, pods, first)
    assert ws.status.versioned["v2"][0].conditions[0]["status"] == "False"
    recount = run(ws, pods, now=NOW + timedelta(seconds=30), replicasets=[replicaset("v1"), replicaset("v2")])
    assert recount.status.subset_statuses[0].replicas == 0  # the stuck pod was deleted
    ws, pods = apply(ws, pods, recount)
    later = run(ws, pods, now=NOW + timedelta(seconds=60), replicasets=[replicaset("v1"), replicaset("v2")])
    assert_no_op(later, ws)
    assert ws.status.subset_statuses[0].conditions[0]["status"] == "False"
    assert later.requeue_after == 240


def test_cloneset_surge_pods_are_their_own_version() -> None:
    """kruise#834: a CloneSet's surge pod (new revision) is not over its subset's limit; old pods are reversed."""
    ws = spread(3, None, kind="CloneSet", api_version="apps.kruise.io/v1alpha1")
    cloneset = {
        "metadata": {"name": "web", "uid": "uid-cs", "generation": 2},
        "spec": {"replicas": 3},
        "status": {"observedGeneration": 2, "updateRevision": "web-new"},
    }

    def member(name: str, revision: str) -> Json:
        p = pod(name, "a", owner="uid-cs")
        p["metadata"]["labels"] = {"controller-revision-hash": f"web-{revision}"}
        return p

    pods = [member("o1", "old"), member("o2", "old"), member("o3", "old"), member("n1", "new")]
    result = sync(ws, pods=pods, workload=cloneset, replicasets=[], nodes={}, now=NOW)
    assert result.costs == {"o1": "100", "o2": "100", "o3": "100", "n1": "200"}
    assert sorted(result.status.versioned) == ["new", "old"]


def test_a_spread_being_deleted_is_left_alone() -> None:
    raw = copy.deepcopy(spread(2, None).raw)
    raw["metadata"]["deletionTimestamp"] = "2026-03-01T10:00:00Z"
    ws = parse(raw)
    assert_no_op(run(ws, [pod("a0", "a"), pod("x")]), ws)


MAXIMA = st.one_of(st.none(), st.integers(0, 4), st.sampled_from(["20%", "50%", "100%"]))


@st.composite
def worlds(draw: st.DrawFn) -> tuple[WorkloadSpread, list[Json], int]:
    maxima = draw(st.lists(MAXIMA, min_size=1, max_size=3))
    if any(isinstance(m, str) for m in maxima):
        maxima = [m if m is None or isinstance(m, str) else f"{m * 25}%" for m in maxima]
    subsets: list[Json] = []
    for i, m in enumerate(maxima):
        entry: Json = {
            "name": "abc"[i],
            "requiredNodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["abc"[i]]}]},
        }
        if m is not None:
            entry["maxReplicas"] = m
        subsets.append(entry)
    ws = spread(subsets=subsets)
    pods = []
    for i in range(draw(st.integers(0, 8))):
        placed = draw(st.sampled_from([None, "a", "b", "c", "gone"]))
        version = draw(st.sampled_from(["v1", "v2"]))
        node = draw(st.sampled_from([None, "node-a", "node-b", "node-z"]))
        phase = draw(st.sampled_from(["Running", "Pending", "Succeeded"]))
        pods.append(pod(f"p{i}", placed, version=version, owner=f"uid-rs-{version}", node=node, phase=phase))
    return ws, pods, draw(st.integers(0, 10))


ZONED = {f"node-{z}": {"metadata": {"name": f"node-{z}", "labels": {"zone": z}}} for z in "abz"}


@settings(max_examples=150, deadline=None)
@given(worlds())
def test_property_the_pass_after_a_converging_pass_writes_nothing(
    world: tuple[WorkloadSpread, list[Json], int],
) -> None:
    ws, pods, replicas = world
    rss = [replicaset("v1"), replicaset("v2")]
    workload = deployment(replicas, template_hash="v2")
    first = sync(ws, pods=pods, workload=workload, replicasets=rss, nodes=ZONED, now=NOW)
    ws, pods = apply(ws, pods, first)
    second = sync(ws, pods=pods, workload=workload, replicasets=rss, nodes=ZONED, now=NOW + timedelta(seconds=10))
    assert_no_op(second, ws)
