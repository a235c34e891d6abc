"""Adaptive rescheduling with our clock (kruise#1088): conditions, failed pods, recovery."""

from __future__ import annotations

from typing import Any

from tests.unit.workloadspread.factories import pod, spread
from united.api.timestamp import format_time, parse_time
from united.workloadspread.model import WorkloadSpread
from united.workloadspread.reschedule import RECOVERY_WINDOW, assess, delete_failed, unschedulable_since, window
from united.workloadspread.status import compute

T0 = "2026-03-01T10:00:00Z"
NOW = parse_time(T0) or 0.0


def adaptive(*maxima: Any, seconds: int | None = 60, kind: str = "Adaptive", block: bool = True) -> WorkloadSpread:
    strategy: dict[str, Any] = {"type": kind}
    if block:
        strategy["adaptive"] = {} if seconds is None else {"rescheduleCriticalSeconds": seconds}
    return spread(*maxima, extra_spec={"scheduleStrategy": strategy})


def stuck(name: str, *, since: str = T0, created: str = "2026-03-01T09:00:00Z", **kw: Any) -> dict[str, Any]:
    cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": since}
    return pod(name, "a", phase="Pending", node=None, ready=None, created=created, conditions=[cond], **kw)


def test_window_is_300s_or_long_enough_to_walk_every_subset() -> None:
    assert window(adaptive(1, 1, None, seconds=60)) == RECOVERY_WINDOW == 300
    assert window(adaptive(1, 1, 1, None, seconds=600)) == 3 * 600 + 5


def test_unschedulable_since_is_the_pod_scheduled_transition() -> None:
    assert unschedulable_since(stuck("p", since="2026-03-01T10:00:07Z")) == NOW + 7
    no_time = stuck("p")
    del no_time["status"]["conditions"][0]["lastTransitionTime"]
    assert unschedulable_since(no_time) == NOW - 3600
    assert unschedulable_since(pod("running")) is None
    assert unschedulable_since(stuck("gone", deleting=True)) is None
    bound = stuck("bound")
    bound["spec"]["nodeName"] = "n1"
    assert unschedulable_since(bound) is None
    other = stuck("other")
    other["status"]["conditions"][0]["reason"] = "SchedulingGated"
    assert unschedulable_since(other) is None


def test_off_unless_adaptive_with_positive_seconds() -> None:
    for ws in (
        adaptive(1, None, kind="Fixed", block=False),
        adaptive(1, None, seconds=None),
        adaptive(1, None, seconds=0),
        adaptive(1, None, block=False),
    ):
        a = assess(ws, 0, [stuck("p")], [{"type": "Schedulable", "status": "False"}], now=NOW + 1000)
        assert a.condition is None and a.failed == ()


def test_pod_failing_past_the_critical_seconds_marks_and_is_deleted() -> None:
    ws = adaptive(1, None, seconds=60)
    a = assess(ws, 0, [stuck("p"), pod("ok", "a")], [], now=NOW + 60.5)
    assert a.failed == ("p",)
    assert a.condition == {
        "type": "Schedulable",
        "status": "False",
        "lastTransitionTime": format_time(NOW + 60.5),
        "reason": "PodUnschedulable",
        "message": "pods unschedulable for more than 60s; new pods go to later subsets",
    }


def test_clock_starts_when_first_unschedulable_not_at_creation() -> None:
    """Created an hour ago, unschedulable for 30 s: not failed yet (OpenKruise would delete it)."""
    ws = adaptive(1, None, seconds=60)
    a = assess(ws, 0, [stuck("p", created="2026-03-01T09:00:00Z")], [], now=NOW + 30)
    assert a.failed == ()
    assert a.condition is not None and a.condition["status"] == "True" and a.condition["reason"] == "Sufficient"
    assert a.deadline == NOW + 60


def test_exactly_at_the_critical_seconds_is_not_failed() -> None:
    a = assess(adaptive(1, None, seconds=60), 0, [stuck("p")], [], now=NOW + 60)
    assert a.failed == () and a.deadline == NOW + 60


def test_last_subset_is_never_rescheduled() -> None:
    ws = adaptive(1, None, seconds=60)
    a = assess(ws, 1, [stuck("p")], [], now=NOW + 1000)
    assert a.failed == ()
    assert a.condition is not None and (a.condition["status"], a.condition["reason"]) == ("True", "Sufficient")


def test_first_transition_time_kept_while_pods_keep_failing() -> None:
    ws = adaptive(1, None, seconds=60)
    old = [
        {
            "type": "Schedulable",
            "status": "False",
            "lastTransitionTime": T0,
            "reason": "PodUnschedulable",
            "message": "m",
        }
    ]
    a = assess(ws, 0, [stuck("q", since="2026-03-01T10:02:00Z")], old, now=NOW + 200)
    assert a.failed == ("q",) and a.condition == old[0]


def test_recovers_after_the_window_from_the_first_transition() -> None:
    ws = adaptive(1, None, seconds=60)
    old = [
        {
            "type": "Schedulable",
            "status": "False",
            "lastTransitionTime": T0,
            "reason": "PodUnschedulable",
            "message": "m",
        }
    ]
    inside = assess(ws, 0, [], old, now=NOW + 300)
    assert inside.condition == old[0] and inside.event is None and inside.deadline == NOW + 300
    after = assess(ws, 0, [], old, now=NOW + 300.5)
    assert after.condition is not None
    assert (after.condition["status"], after.condition["reason"]) == ("True", "Sufficient")
    assert after.condition["lastTransitionTime"] == format_time(NOW + 300.5)
    assert after.event == (
        "Normal",
        "RecoverSchedulable",
        "Subset a of WorkloadSpread default/ws is recovered from unschedulable to schedulable",
    )


def test_true_with_other_reason_keeps_its_time() -> None:
    ws = adaptive(1, None, seconds=60)
    old = [{"type": "Schedulable", "status": "True", "lastTransitionTime": T0, "reason": "", "message": ""}]
    a = assess(ws, 0, [], old, now=NOW + 5)
    assert a.condition is not None and a.condition["lastTransitionTime"] == T0 and a.condition["reason"] == "Sufficient"


def test_status_marks_subset_deletes_pods_and_copies_condition_to_versions() -> None:
    ws = adaptive(2, None, seconds=60)
    buckets = {"v1": {"a": [stuck("p")]}, "v2": {"b": [pod("b0", "b", version="v2")]}}
    r = compute(ws, buckets, replicas=3, now=NOW + 61)
    assert r.failed == ["p"]
    a = r.status.subset_statuses[0]
    assert a.reason == "Unschedulable"
    assert a.message == "1 replica(s); pods unschedulable for more than 60s; new pods go to later subsets"
    assert r.status.versioned["v2"][0].conditions == a.conditions
    assert r.status.versioned["v1"][0].conditions == a.conditions


MARK = {
    "type": "Schedulable",
    "status": "False",
    "lastTransitionTime": T0,
    "reason": "PodUnschedulable",
    "message": "m",
}


def marked(*, seconds: int | None = 60, **status: Any) -> WorkloadSpread:
    """Subsets ``a`` (max 2, marked unschedulable at T0) and ``b``; Adaptive unless ``seconds`` is None."""
    entry = {"name": "a", "replicas": 0, "missingReplicas": 2, "conditions": [MARK]}
    strategy = {"scheduleStrategy": {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": seconds}}}
    return spread(2, None, status={"subsetStatuses": [entry], **status}, extra_spec=strategy if seconds else None)


def test_status_requeues_at_the_pods_timeout_and_the_windows_end() -> None:
    ws = adaptive(2, None, seconds=60)
    r = compute(ws, {"v1": {"a": [stuck("p", since="2026-03-01T10:00:20Z")]}}, replicas=3, now=NOW + 30)
    assert r.failed == [] and r.requeue_after == 50
    assert compute(marked(), {}, replicas=3, now=NOW + 100).requeue_after == 200


def test_conditions_removed_when_adaptive_is_off() -> None:
    r = compute(marked(seconds=None), {}, replicas=3, now=NOW)
    assert r.status.subset_statuses[0].conditions == ()


def test_delete_failed_event_names_pod_and_subset() -> None:
    assert delete_failed(adaptive(1, None), stuck("p")) == (
        "Warning",
        "DeletePodFailed",
        "Failed to delete unschedulabe Pod default/p in Subset a of WorkloadSpread default/ws",
    )


def test_pending_pod_not_seen_by_the_scheduler_is_not_unschedulable() -> None:
    fresh = pod("fresh", "a", phase="Pending", node=None, ready=None)
    assert unschedulable_since(fresh) is None


def test_status_sends_the_recovery_event_once() -> None:
    ws = marked(versionedSubsetStatuses={"v1": [{"name": "a", "replicas": 0, "missingReplicas": 2}]})
    r = compute(ws, {"v1": {"a": [pod("a0", "a")]}}, replicas=3, now=NOW + 301)
    assert [e[1] for e in r.events] == ["RecoverSchedulable"]
    assert r.status.subset_statuses[0].conditions[0]["status"] == "True"
