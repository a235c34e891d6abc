"""Status recount: counts, expiry to the second, requeue, reasons, unplaced pods, kstatus."""

from __future__ import annotations

import dataclasses
from typing import Any

from tests.unit.workloadspread.factories import pod, spread
from united.api.conditions import Problem
from united.api.field import FieldError
from united.api.timestamp import parse_time
from united.workloadspread.model import FAKE_SUBSET, Status
from united.workloadspread.status import compute, stalled

T0 = "2026-03-01T10:00:00Z"
NOW = parse_time(T0)
assert NOW is not None


def at(seconds: float) -> float:
    assert NOW is not None
    return NOW + seconds


def entry(status: Status, name: str) -> dict[str, Any]:
    return next(s.to_dict() for s in status.subset_statuses if s.name == name)


def test_counts_active_pods_and_missing_replicas() -> None:
    ws = spread(3, None)
    pods = {"v1": {"a": [pod("a0", "a"), pod("a1", "a"), pod("a2", "a", deleting=True)], "b": [pod("b0", "b")]}}
    r = compute(ws, pods, replicas=4, now=at(0))
    assert entry(r.status, "a") | {"reason": "", "message": ""} == {
        "name": "a",
        "replicas": 2,
        "missingReplicas": 1,
        "reason": "",
        "message": "",
    }
    assert entry(r.status, "b")["missingReplicas"] == -1
    assert r.events == [] and r.requeue_after is None
    assert [s.name for s in r.status.versioned["v1"]] == ["a", "b"]


def test_missing_never_below_zero_and_percentages_round_up() -> None:
    ws = spread("34%", "66%")
    pods = {"v1": {"a": [pod(f"a{i}", "a") for i in range(6)]}}
    r = compute(ws, pods, replicas=10, now=at(0))
    assert entry(r.status, "a")["missingReplicas"] == 0
    assert entry(r.status, "b")["missingReplicas"] == 7


def test_creating_record_dropped_when_pod_seen_by_name_or_uid() -> None:
    raw = {
        "subsetStatuses": [
            {
                "name": "a",
                "replicas": 0,
                "missingReplicas": 3,
                "creatingPods": {"named": T0, "uid-1": T0, "pending": T0},
            }
        ]
    }
    ws = spread(3, status=raw)
    pods = {"v1": {"a": [pod("named", "a"), pod("web-xyz", "a", uid="uid-1")]}}
    r = compute(ws, pods, replicas=3, now=at(5))
    assert entry(r.status, "a")["creatingPods"] == {"pending": T0}
    assert entry(r.status, "a")["missingReplicas"] == 0
    assert r.requeue_after == 25


def test_creating_record_dropped_even_for_a_finished_pod() -> None:
    raw = {"subsetStatuses": [{"name": "a", "replicas": 0, "missingReplicas": 2, "creatingPods": {"done": T0}}]}
    r = compute(spread(3, status=raw), {"v1": {"a": [pod("done", "a", phase="Succeeded")]}}, replicas=3, now=at(1))
    assert "creatingPods" not in entry(r.status, "a")
    assert entry(r.status, "a")["missingReplicas"] == 3


def test_creating_expiry_to_the_second() -> None:
    raw = {"subsetStatuses": [{"name": "a", "replicas": 0, "missingReplicas": 2, "creatingPods": {"p": T0}}]}
    ws = spread(3, status=raw)
    kept = compute(ws, {}, replicas=3, now=at(30))
    assert entry(kept.status, "a")["creatingPods"] == {"p": T0}
    assert entry(kept.status, "a")["missingReplicas"] == 2
    assert kept.events == [] and kept.requeue_after == 1.0
    early = compute(ws, {}, replicas=3, now=at(29.5))
    assert early.requeue_after == 0.5
    gone = compute(ws, {}, replicas=3, now=at(30.001))
    assert "creatingPods" not in entry(gone.status, "a")
    assert entry(gone.status, "a")["missingReplicas"] == 3
    assert gone.events == [("Warning", "CreatePodFailed", "Pod default/p was expected to be created but it wasn't")]
    assert gone.requeue_after is None


def test_creating_times_count_whole_seconds() -> None:
    raw = {
        "subsetStatuses": [
            {"name": "a", "replicas": 0, "missingReplicas": 2, "creatingPods": {"p": "2026-03-01T10:00:00.900Z"}}
        ]
    }
    r = compute(spread(3, status=raw), {}, replicas=3, now=at(30.5))
    assert r.events and r.events[0][1] == "CreatePodFailed"


def test_deleting_record_frees_a_slot_until_it_expires() -> None:
    raw = {"subsetStatuses": [{"name": "a", "replicas": 2, "missingReplicas": 1, "deletingPods": {"a0": T0}}]}
    ws = spread(2, status=raw)
    pods = {"v1": {"a": [pod("a0", "a"), pod("a1", "a")]}}
    kept = compute(ws, pods, replicas=2, now=at(10))
    assert entry(kept.status, "a")["deletingPods"] == {"a0": T0}
    assert entry(kept.status, "a")["missingReplicas"] == 1
    assert kept.requeue_after == 5
    expired = compute(ws, pods, replicas=2, now=at(16))
    assert "deletingPods" not in entry(expired.status, "a")
    assert entry(expired.status, "a")["missingReplicas"] == 0
    assert expired.events == [("Warning", "DeletePodFailed", "Pod default/a0 was expected to be deleted but it wasn't")]


def test_deleting_record_dropped_when_pod_gone_or_inactive() -> None:
    raw = {
        "subsetStatuses": [
            {"name": "a", "replicas": 2, "missingReplicas": 1, "deletingPods": {"gone": T0, "leaving": T0}}
        ]
    }
    r = compute(spread(2, status=raw), {"v1": {"a": [pod("leaving", "a", deleting=True)]}}, replicas=2, now=at(1))
    assert "deletingPods" not in entry(r.status, "a") and r.events == []


def test_deleting_never_raises_missing_past_the_maximum() -> None:
    raw = {"subsetStatuses": [{"name": "a", "replicas": 1, "missingReplicas": 1, "deletingPods": {"a0": T0}}]}
    r = compute(spread(2, status=raw), {"v1": {"a": [pod("a0", "a")]}}, replicas=2, now=at(1))
    assert entry(r.status, "a")["missingReplicas"] == 2


def test_unlimited_subset_stays_minus_one_with_records() -> None:
    raw = {
        "subsetStatuses": [
            {"name": "a", "replicas": 0, "missingReplicas": -1, "creatingPods": {"p": T0}, "deletingPods": {"a0": T0}}
        ]
    }
    r = compute(spread(None, status=raw), {"v1": {"a": [pod("a0", "a")]}}, replicas=2, now=at(1))
    assert entry(r.status, "a")["missingReplicas"] == -1
    assert entry(r.status, "a")["creatingPods"] == {"p": T0}


def test_subsets_follow_spec_order_and_removed_ones_disappear() -> None:
    raw = {
        "subsetStatuses": [
            {"name": "gone", "replicas": 1, "missingReplicas": 0},
            {"name": "b", "replicas": 0, "missingReplicas": 0, "creatingPods": {"p": T0}},
        ]
    }
    r = compute(spread(1, 1, status=raw), {}, replicas=2, now=at(1))
    assert [s.name for s in r.status.subset_statuses] == ["a", "b"]
    assert entry(r.status, "b")["creatingPods"] == {"p": T0}


def test_versioned_lists_per_version_and_stale_versions_dropped() -> None:
    raw = {
        "versionedSubsetStatuses": {
            "old": [{"name": "a", "replicas": 3, "missingReplicas": 0}],
            "booked": [{"name": "a", "replicas": 0, "missingReplicas": 2, "creatingPods": {"p": T0}}],
        }
    }
    ws = spread(3, status=raw)
    pods = {"v1": {"a": [pod("a0", "a")]}, "v2": {"a": [pod("b0", "a", version="v2"), pod("b1", "a", version="v2")]}}
    r = compute(ws, pods, replicas=3, now=at(1))
    assert sorted(r.status.versioned) == ["booked", "v1", "v2"]
    assert [s.replicas for s in r.status.versioned["v2"]] == [2]
    assert r.status.versioned["booked"][0].creating_pods == {"p": T0}
    assert entry(r.status, "a")["replicas"] == 3 and entry(r.status, "a")["missingReplicas"] == 0
    assert r.status.versioned["v1"][0].missing_replicas == 2


def test_unplaced_pods_are_counted_and_reported() -> None:
    ws = spread(2, None)
    pods = {"v1": {"a": [pod("a0", "a")], FAKE_SUBSET: [pod("x"), pod("y"), pod("z", deleting=True)]}}
    r = compute(ws, pods, replicas=3, now=at(0))
    assert r.status.extra["unplacedReplicas"] == 2
    ready = r.status.extra["conditions"][0]
    assert (ready["type"], ready["status"], ready["reason"]) == ("Ready", "False", "UnplacedPods")
    assert ready["message"].startswith("2 pod(s) of Deployment web belong to no subset")
    assert all(s.name != FAKE_SUBSET for s in r.status.subset_statuses)


def reasons(r: Any) -> dict[str, tuple[str, str]]:
    return {s.name: (s.reason, s.message) for s in r.status.subset_statuses}


def test_reasons_say_why() -> None:
    ws = spread(
        subsets=[
            {"name": "full", "maxReplicas": 1},
            {"name": "over", "maxReplicas": "10%"},
            {"name": "zero", "maxReplicas": 0},
            {"name": "room", "maxReplicas": 5},
            {"name": "empty", "maxReplicas": 2},
            {"name": "low", "minReplicas": 3},
            {"name": "rest"},
        ]
    )
    pods = {
        "v1": {
            "full": [pod("f", "full")],
            "over": [pod("o1", "over"), pod("o2", "over")],
            "room": [pod("r", "room")],
            "low": [pod("l", "low")],
            "rest": [pod("z", "rest")],
        }
    }
    assert reasons(compute(ws, pods, replicas=10, now=at(0))) == {
        "full": ("Full", "1 replica(s), maxReplicas 1: new pods go to later subsets"),
        "over": (
            "OverMaximum",
            "2 replicas, over maxReplicas 10% of 10 replicas, rounded up: 1: "
            "the extra pods are removed first on scale-in",
        ),
        "zero": ("Skipped", "maxReplicas 0: no pod is placed here"),
        "room": ("Available", "1 replica(s), maxReplicas 5: room for 4 more"),
        "empty": ("Empty", "no pods yet: maxReplicas 2, room for 2"),
        "low": ("BelowMinimum", "1 replica(s), below minReplicas 3: new pods come here first"),
        "rest": ("NoMaximum", "1 replica(s); no maxReplicas: takes the pods earlier subsets have no room for"),
    }


def test_pending_records_make_it_reconciling() -> None:
    raw = {"subsetStatuses": [{"name": "a", "replicas": 0, "missingReplicas": 1, "creatingPods": {"p": T0}}]}
    r = compute(spread(2, status=raw), {}, replicas=2, now=at(1))
    kinds = {c["type"]: (c["status"], c["reason"], c["message"]) for c in r.status.extra["conditions"]}
    assert kinds == {
        "Ready": ("False", "Progressing", "1 pod(s) being created, 0 being deleted"),
        "Reconciling": ("True", "Progressing", "1 pod(s) being created, 0 being deleted"),
    }
    assert entry(r.status, "a")["message"] == "0 replica(s), 1 being created, maxReplicas 2: room for 1 more"


def test_ready_when_everything_is_placed_and_times_kept() -> None:
    ws = spread(2, None)
    pods = {"v1": {"a": [pod("a0", "a")], "b": [pod("b0", "b")]}}
    first = compute(ws, pods, replicas=2, now=at(0))
    ready = first.status.extra["conditions"][0]
    assert (ready["status"], ready["reason"], ready["message"]) == ("True", "Placed", "2 pod(s) placed in 2 subset(s)")
    assert ready["lastTransitionTime"] == T0 and ready["observedGeneration"] == 3
    again = compute(dataclasses.replace(ws, status=first.status), pods, replicas=2, now=at(100))
    assert again.status == first.status


def test_a_problem_is_reported_in_conditions() -> None:
    r = compute(
        spread(2),
        {},
        replicas=0,
        now=at(0),
        problem=Problem("TargetNotFound", "Deployment web not found", stalled=False),
    )
    ready = r.status.extra["conditions"][0]
    assert (ready["status"], ready["reason"]) == ("False", "TargetNotFound")


def test_stalled_keeps_counts_and_says_why() -> None:
    raw = {"subsetStatuses": [{"name": "a", "replicas": 4, "missingReplicas": 0}], "unplacedReplicas": 1}
    ws = spread(2, status=raw)
    s = stalled(
        ws,
        [FieldError("spec.subsets[0].maxReplicas", 'Invalid value: "x": bad')],
        now=at(0),
    )
    assert s.subset_statuses == ws.status.subset_statuses and s.extra["unplacedReplicas"] == 1
    kinds = {c["type"]: (c["status"], c["reason"], c["message"]) for c in s.extra["conditions"]}
    message = 'spec.subsets[0].maxReplicas: Invalid value: "x": bad'
    assert kinds == {
        "Ready": ("False", "InvalidSpec", message),
        "Stalled": ("True", "InvalidSpec", message),
    }
    assert s.observed_generation == 3


def test_no_change_pass_returns_the_same_status() -> None:
    raw = {"subsetStatuses": [{"name": "a", "replicas": 1, "missingReplicas": 1, "creatingPods": {"p": T0}}]}
    ws = spread(3, None, status=raw)
    pods = {"v1": {"a": [pod("a0", "a")], FAKE_SUBSET: [pod("x")]}}
    first = compute(ws, pods, replicas=3, now=at(1)).status
    reparsed = spread(3, None, status=first.to_dict())
    assert compute(reparsed, pods, replicas=3, now=at(2)).status == reparsed.status


def test_unreadable_record_time_expires_at_once() -> None:
    raw = {"subsetStatuses": [{"name": "a", "replicas": 0, "missingReplicas": 2, "creatingPods": {"p": "yesterday"}}]}
    r = compute(spread(3, status=raw), {}, replicas=3, now=at(0))
    assert "creatingPods" not in entry(r.status, "a") and r.events[0][1] == "CreatePodFailed"


def test_webhook_bookings_in_versioned_lists_count_as_pending() -> None:
    """The webhook books only in versioned lists: the aggregate's reason and the conditions still see them."""
    raw = {
        "versionedSubsetStatuses": {
            "v1": [
                {
                    "name": "a",
                    "replicas": 1,
                    "missingReplicas": 0,
                    "creatingPods": {"web-x": T0},
                    "deletingPods": {"a0": T0},
                }
            ],
        }
    }
    r = compute(spread(2, None, status=raw), {"v1": {"a": [pod("a0", "a")]}}, replicas=3, now=at(1))
    assert entry(r.status, "a")["reason"] == "Full"
    assert (
        entry(r.status, "a")["message"] == "1 replica(s), 1 being created, maxReplicas 2: new pods go to later subsets"
    )
    reconciling = r.status.extra["conditions"][1]
    assert (reconciling["status"], reconciling["message"]) == ("True", "1 pod(s) being created, 1 being deleted")
