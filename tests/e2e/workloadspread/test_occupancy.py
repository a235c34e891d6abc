"""The burst invariant checker's counting, on recorded event sequences (no cluster needed)."""

from __future__ import annotations

from typing import Any

from tests.e2e.workloadspread.occupancy import Occupancy, Violation
from united.workloadspread.injection import Matched, annotation
from united.workloadspread.model import MATCHED_ANNOTATION

JSON = dict[str, Any]
MAXIMA = {"a": 2, "b": 3, "rest": None}


def pod(name: str, subset: str | None, *, spread: str = "ws", phase: str = "Pending", deleting: bool = False) -> JSON:
    meta: JSON = {"name": name, "namespace": "ns", "uid": f"uid-{name}"}
    if subset is not None:
        meta["annotations"] = {MATCHED_ANNOTATION: annotation(Matched(spread, subset, ""))}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": phase}}


def replay(events: list[tuple[str, JSON]]) -> Occupancy:
    occupancy = Occupancy("ws", MAXIMA)
    for kind, obj in events:
        occupancy.observe(kind, obj)
    return occupancy


def test_counts_active_pods_per_subset_through_adds_updates_and_deletes() -> None:
    occupancy = replay([
        ("ADDED", pod("p1", "a")),
        ("ADDED", pod("p2", "a")),
        ("ADDED", pod("p3", "b")),
        ("MODIFIED", pod("p3", "b", phase="Running")),
        ("ADDED", pod("p4", "rest")),
        ("DELETED", pod("p2", "a")),
    ])  # fmt: skip
    assert occupancy.counts() == {"a": 1, "b": 1, "rest": 1}
    assert occupancy.peaks == {"a": 2, "b": 1, "rest": 1}
    assert occupancy.violations == []
    assert occupancy.events == 6


def test_terminating_and_finished_pods_free_their_slot() -> None:
    occupancy = replay([
        ("ADDED", pod("p1", "a")),
        ("ADDED", pod("p2", "a")),
        ("MODIFIED", pod("p1", "a", deleting=True)),
        ("ADDED", pod("p3", "a")),
        ("MODIFIED", pod("p2", "a", phase="Succeeded")),
        ("ADDED", pod("p4", "a")),
    ])  # fmt: skip
    assert occupancy.counts() == {"a": 2}
    assert occupancy.violations == []


def test_a_momentary_overfill_is_caught_at_its_event_even_when_undone_next() -> None:
    occupancy = replay([
        ("ADDED", pod("p1", "a")),
        ("ADDED", pod("p2", "a")),
        ("ADDED", pod("p3", "a")),
        ("DELETED", pod("p3", "a")),
    ])  # fmt: skip
    assert occupancy.counts() == {"a": 2}
    assert occupancy.violations == [Violation(event=3, subset="a", count=3, maximum=2, pod="p3")]
    assert occupancy.peaks["a"] == 3


def test_a_modified_pod_is_recounted_where_it_is_now() -> None:
    # A MODIFIED event replaces what was known: a pod moved by its update is counted once, where it is now.
    occupancy = replay([("ADDED", pod("p1", None)), ("MODIFIED", pod("p1", "b"))])
    assert occupancy.counts() == {"b": 1}
    assert occupancy.unplaced() == 0
    assert occupancy.unplaced_peak == 1
    assert occupancy.adopted == {"p1"}


def test_pods_of_no_subset_of_this_spread_are_unplaced_and_never_count_against_a_maximum() -> None:
    occupancy = replay([
        ("ADDED", pod("p1", "a")),
        ("ADDED", pod("p2", "a")),
        ("ADDED", pod("u1", None)),
        ("ADDED", pod("u2", "a", spread="other")),
        ("ADDED", pod("u3", None, deleting=True)),
    ])  # fmt: skip
    assert occupancy.counts() == {"a": 2}
    assert occupancy.unplaced() == 2
    assert occupancy.unplaced_peak == 2
    assert occupancy.violations == []


def test_a_subset_without_maximum_never_violates() -> None:
    occupancy = replay([("ADDED", pod(f"p{i}", "rest")) for i in range(50)])
    assert occupancy.counts() == {"rest": 50}
    assert occupancy.violations == []


def test_by_version_each_template_version_has_its_own_maxima() -> None:
    def versioned(name: str, subset: str, version: str) -> JSON:
        obj = pod(name, subset)
        obj["metadata"]["labels"] = {"pod-template-hash": version}
        return obj

    occupancy = Occupancy("ws", MAXIMA, by="pod-template-hash")
    for kind, obj in [
        ("ADDED", versioned("o1", "a", "old")),
        ("ADDED", versioned("o2", "a", "old")),
        ("ADDED", versioned("n1", "a", "new")),
        ("ADDED", versioned("n2", "a", "new")),
        ("ADDED", versioned("n3", "a", "new")),
    ]:
        occupancy.observe(kind, obj)
    assert occupancy.counts() == {"a": 5}
    assert occupancy.counts("new") == {"a": 3}
    assert occupancy.violations == [Violation(event=5, subset="a", count=3, maximum=2, pod="n3", version="new")]
