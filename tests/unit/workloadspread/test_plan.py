"""``united plan`` for a WorkloadSpread: repeated bookings, and a reason for every subset."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from united.workloadspread.model import WorkloadSpread, parse
from united.workloadspread.plan import Load, plan

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def spread(*subsets: dict[str, Any], kind: str = "Deployment") -> WorkloadSpread:
    return parse(
        {
            "apiVersion": "apps.united.io/v1alpha1",
            "kind": "WorkloadSpread",
            "metadata": {"name": "ws"},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": kind, "name": "db"}, "subsets": list(subsets)},
        }
    )


ZONES = ({"name": "a", "maxReplicas": 2}, {"name": "b", "maxReplicas": 3}, {"name": "c"})


def rows(ws: WorkloadSpread, n: int, state: dict[str, Load] | None = None) -> list[tuple[str, int, str]]:
    p = plan(ws, replicas=n, state=state or {}, now=NOW)
    return [(s.name, s.replicas, s.reason) for s in p.subsets]


def test_pods_fill_subsets_in_order() -> None:
    p = plan(spread(*ZONES), replicas=7, state={}, now=NOW)
    assert p.to_dict() == {
        "kind": "WorkloadSpread",
        "name": "ws",
        "replicas": 7,
        "subsets": [
            {
                "name": "a",
                "replicas": 2,
                "maxReplicas": 2,
                "reason": "Full",
                "message": "full: 2 of maxReplicas 2 (0 existing + 2 new)",
            },
            {
                "name": "b",
                "replicas": 3,
                "maxReplicas": 3,
                "reason": "Full",
                "message": "full: 3 of maxReplicas 3 (0 existing + 3 new)",
            },
            {
                "name": "c",
                "replicas": 2,
                "maxReplicas": None,
                "reason": "Placed",
                "message": "2 new pod(s), 2 in all; no maximum",
            },
        ],
        "unplaced": 0,
    }


def test_untouched_subsets_say_why() -> None:
    p = plan(spread(*ZONES), replicas=1, state={}, now=NOW)
    assert [(s.reason, s.message) for s in p.subsets] == [
        ("Placed", "1 new pod(s), 1 in all; 1 of maxReplicas 2 left"),
        ("NotReached", "other subsets took all 1 new pod(s) first (minimums, then spec order); 0 existing"),
        ("NotReached", "other subsets took all 1 new pod(s) first (minimums, then spec order); 0 existing"),
    ]
    assert plan(spread(*ZONES), replicas=0, state={}, now=NOW).subsets[0].message == "no new pods to place; 0 existing"


def test_state_counts_existing_pods_and_unschedulable_subsets() -> None:
    state = {"a": Load(pods=1), "b": Load(pods=0, unschedulable=True)}
    p = plan(spread(*ZONES), replicas=3, state=state, now=NOW)
    assert [(s.name, s.replicas, s.reason) for s in p.subsets] == [
        ("a", 1, "Full"),
        ("b", 0, "Unschedulable"),
        ("c", 2, "Placed"),
    ]
    assert p.subsets[0].message == "full: 2 of maxReplicas 2 (1 existing + 1 new)"
    assert p.subsets[1].message.startswith("skipped: marked Schedulable=False")


def test_pods_nowhere_to_go_are_unplaced() -> None:
    ws = spread({"name": "a", "maxReplicas": 1}, {"name": "b", "maxReplicas": 0})
    p = plan(ws, replicas=3, state={}, now=NOW)
    assert p.unplaced == 2
    assert p.subsets[1].message == "full: maxReplicas is 0"


def test_percentages_are_of_existing_plus_new_pods() -> None:
    ws = spread({"name": "a", "maxReplicas": "50%"}, {"name": "b", "maxReplicas": "50%"})
    p = plan(ws, replicas=6, state={"a": Load(pods=2)}, now=NOW)
    assert [(s.replicas, s.max_replicas) for s in p.subsets] == [(2, 4), (4, 4)]


def test_minimums_first() -> None:
    ws = spread({"name": "a", "maxReplicas": 5}, {"name": "b", "minReplicas": 2})
    assert rows(ws, 3) == [("a", 1, "Placed"), ("b", 2, "Placed")]
    p = plan(ws, replicas=1, state={}, now=NOW)
    assert p.subsets[1].message.endswith("minReplicas 2 not met (1)")


def test_statefulset_ordinals_continue_after_existing_pods() -> None:
    ws = spread({"name": "a", "maxReplicas": 2}, {"name": "b", "maxReplicas": 2}, kind="StatefulSet")
    assert rows(ws, 3, {"a": Load(pods=1)}) == [("a", 1, "Full"), ("b", 2, "Full")]
    assert plan(ws, replicas=5, state={}, now=NOW).unplaced == 1


def test_single_unlimited_subset_takes_all() -> None:
    assert rows(spread({"name": "only"}), 4) == [("only", 4, "Placed")]
