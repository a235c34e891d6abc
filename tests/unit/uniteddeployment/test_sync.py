"""The pass's decisions as pure functions: no client, no loop, the clocks passed in."""

from __future__ import annotations

from typing import Any

from tests.unit.uniteddeployment.test_adaptive import KEYS
from tests.unit.uniteddeployment.test_remote import ud as manifest
from united.api.conditions import Problem
from united.api.document import Json
from united.uniteddeployment import adaptive, rollout, sync
from united.uniteddeployment.admission import admit
from united.uniteddeployment.allocation import Allocation, Plan, SubsetState
from united.uniteddeployment.status import ChildView

T0 = 1_700_000_000.0


def inputs(*subsets: Json, replicas: int = 4, previous: Json | None = None, **spec: Any) -> sync.Inputs:
    obj = manifest(*subsets, replicas=replicas)
    obj["spec"].update(spec)
    return sync.Inputs(admit(obj), previous or {}, KEYS, T0)


def child(replicas: int, ready: int = 0) -> Json:
    return {"metadata": {"name": "c"}, "spec": {"replicas": replicas}, "status": {"readyReplicas": ready}}


def plan(**replicas: int) -> Plan:
    subsets = tuple(Allocation(n, r, 0, "", "") for n, r in replicas.items())
    return Plan("elastic", sum(replicas.values()), subsets)


def test_states_read_children_keep_last_known_counts_and_mark_unreachable_clusters() -> None:
    down = {"b": sync.Unusable("m1", "ClusterUnreachable", since=T0)}
    state = sync.states({"a": child(3, 2)}, {"b": SubsetState(replicas=1, ready_replicas=1)}, down)
    assert state == {
        "a": SubsetState(replicas=3, ready_replicas=2),
        "b": SubsetState(replicas=1, ready_replicas=1, unreachable=True),
    }


def test_decisions_mark_subsets_unless_nothing_is_known_of_them() -> None:
    state = {"a": SubsetState(replicas=3)}
    marked = adaptive.Decision(unschedulable=True, reserved=2)
    out = sync.with_decisions(state, {"a": marked, "b": adaptive.Decision(False), "c": marked})
    assert out["a"] == SubsetState(replicas=3, unschedulable=True, reserved_pods=2)
    assert "b" not in out, "no child and nothing decided: no state"
    assert out["c"] == SubsetState(unschedulable=True, reserved_pods=2, unreachable=True)
    assert state == {"a": SubsetState(replicas=3)}, "the input is not changed"


def test_allocation_without_adaptive_is_the_plain_split() -> None:
    i = inputs({"name": "a"}, {"name": "b"})
    got, decisions = sync.allocation(i, None, {}, {})
    assert [(a.name, a.replicas) for a in got.subsets] == [("a", 2), ("b", 2)]
    assert decisions == {}


def test_a_cluster_down_is_marked_after_the_critical_time_but_not_while_syncing() -> None:
    i = inputs({"name": "a", "cluster": "m1"}, {"name": "b", "cluster": "m2"})
    settings = adaptive.Settings(critical=10.0, window=300.0, reserve=False)
    down = {
        "a": sync.Unusable("m1", "ClusterUnreachable", since=T0 - 60),
        "b": sync.Unusable("m2", "ClusterSyncing", since=T0 - 60),
    }
    out = sync.cluster_down(i, settings, down, {"a": SubsetState(replicas=2, unreachable=True)})
    assert list(out) == ["a"] and out["a"].unschedulable


def test_max_unavailable_only_in_reservation_mode_for_marked_subsets_with_a_child() -> None:
    decided = {"a": adaptive.Decision(True, update_timeout_pods=1), "b": adaptive.Decision(False)}
    reserve = adaptive.Settings(critical=10.0, window=300.0, reserve=True)
    p = plan(a=3, b=1)
    assert sync.max_unavailable(None, {"a": child(3, 2)}, p, decided) == {}
    assert sync.max_unavailable(reserve, {"a": child(3, 2)}, p, decided) == {"a": adaptive.max_unavailable(3, 2, 1)}
    assert sync.max_unavailable(reserve, {}, p, decided) == {}


def test_a_wave_sets_partitions_overrides_and_held_revisions() -> None:
    p = plan(a=2, b=2)
    assert sync.apply_wave(p, None, "r2") == sync.Wave(p, {}, {}, frozenset())
    wave = rollout.Decision(
        targets={
            "a": rollout.Target("r2", 0, 1, "Updating"),
            "b": rollout.Target("r1", 2, 0, "Waiting"),
        },
        status={"phase": "Progressing"},
        requeue_after=None,
    )
    got = sync.apply_wave(p, wave, "r2")
    assert [(a.name, a.partition) for a in got.plan.subsets] == [("a", 0), ("b", 2)]
    assert got.overrides == {"a": 1}
    assert got.held == {"b": "r1"}
    assert got.still == frozenset({"b"})


def test_the_problem_reported_is_the_most_pressing() -> None:
    stuck = rollout.Decision({}, {"phase": rollout.STALLED, "message": "stuck"}, None)
    down = {"a": sync.Unusable("m1", "ClusterNotFound")}
    assert sync.problem(["w1", "w2", "w3", "w4"], ["imm"], stuck, down) == Problem(
        "WriteFailed", "w1; w2; w3", stalled=False
    )
    assert sync.problem([], ["imm"], stuck, down) == Problem("ImmutableField", "imm")
    assert sync.problem([], [], stuck, down) == Problem(rollout.ROLLOUT_STUCK, "stuck")
    missing = sync.problem([], [], None, down)
    assert missing is not None and missing.reason == "ClusterNotFound" and missing.stalled
    unreachable = sync.problem([], [], None, {"a": sync.Unusable("m1", "ClusterUnreachable")})
    assert unreachable is not None and unreachable.reason == "ClusterUnavailable" and not unreachable.stalled
    assert sync.problem([], [], None, {}) is None


def test_the_status_waits_for_the_next_pass_after_child_writes_unless_it_holds_memory() -> None:
    previous = {"subsetStatuses": [{"name": "a"}], "rollout": {"wave": 0}}
    same = {"subsetStatuses": [{"name": "a"}], "rollout": {"wave": 0}, "replicas": 3}
    assert sync.status_due(same, previous, writes=0, failed=False)
    assert not sync.status_due(same, previous, writes=2, failed=False)
    assert sync.status_due(same, previous, writes=2, failed=True)
    moved = {**same, "rollout": {"wave": 1}}
    assert sync.status_due(moved, previous, writes=2, failed=False)
    marked = {**same, "subsetStatuses": [{"name": "a", "conditions": [{"type": "Schedulable"}]}]}
    assert sync.status_due(marked, previous, writes=2, failed=False)


def test_requeue_is_the_earliest_of_what_waits() -> None:
    assert sync.requeue(T0, terminating=False, decisions={}, wave=None) is None
    assert sync.requeue(T0, terminating=True, decisions={}, wave=None) == sync.TERMINATING_REQUEUE
    decided = {"a": adaptive.Decision(False, deadline=T0 + 1.0), "b": adaptive.Decision(False, deadline=T0 + 5)}
    assert sync.requeue(T0, terminating=True, decisions=decided, wave=None) == 1.0 + sync.DEADLINE_MARGIN
    past = {"a": adaptive.Decision(False, deadline=T0 - 5)}
    assert sync.requeue(T0, terminating=False, decisions=past, wave=None) == sync.DEADLINE_MARGIN
    wave = rollout.Decision({}, {}, 0.5)
    assert sync.requeue(T0, terminating=True, decisions=decided, wave=wave) == 0.5


def test_views_carry_the_reserved_pods_of_adaptive() -> None:
    views = sync.views(KEYS, {"a": child(2), "b": child(1)}, {}, "r1", {"a": adaptive.Decision(True, reserved=2)})
    assert isinstance(views["a"], ChildView) and views["a"].reserved == 2
    assert views["b"].reserved == 0


def test_report_composes_the_status_from_the_outcome() -> None:
    i = inputs({"name": "a"}, {"name": "b", "cluster": "m1"}, replicas=2)
    down = {"b": sync.Unusable("m1", "ClusterUnreachable", since=T0 - 5, detail="timeout")}
    outcome = sync.Outcome(
        generation=1,
        now="2026-01-01T00:00:00Z",
        plan=plan(a=1, b=1),
        children=sync.views(KEYS, {"a": child(1, 1)}, {}, "r1", {}),
        applied={"a": True, "b": True},
        updated="r1",
        collision_count=0,
        problem=sync.problem([], [], None, down),
        extra_children=0,
        decisions={},
        wave=None,
        draining=(),
        clusters={"b": "m1"},
        down=down,
    )
    status = sync.report(i, None, outcome)
    assert status["observedGeneration"] == 1 and status["updatedRevision"] == "r1"
    assert status["labelSelector"] == "app=web" and status["subsetReplicas"] == {"a": 1, "b": 1}
    subsets = {s["name"]: s for s in status["subsetStatuses"]}
    assert subsets["b"]["cluster"] == "m1"
    assert [(c["type"], c["message"]) for c in subsets["b"]["conditions"]] == [
        ("ClusterReady", "cluster m1 unreachable since 2023-11-14T22:13:15Z: timeout; showing the last-known counts")
    ]
    assert any(c.get("reason") == "ClusterUnavailable" for c in status["conditions"])
