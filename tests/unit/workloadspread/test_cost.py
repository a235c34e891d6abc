"""Deletion cost: OpenKruise's formula, our percentage ranking (kruise#877), unplaced pods."""

from __future__ import annotations

import itertools
import math
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.workloadspread.factories import pod, spread
from united.workloadspread.cost import changes, costs, delete_order
from united.workloadspread.model import FAKE_SUBSET


def by_subset(**pods: int) -> dict[str, list[dict]]:
    return {s: [pod(f"{s}{i}", s) for i in range(n)] for s, n in pods.items()}


def test_reference_examples_n3_latest_version() -> None:
    ws = spread(1, 1, 1)
    buckets = {"v1": {**by_subset(a=2, b=2, c=2), FAKE_SUBSET: [pod("f0")]}}
    assert costs(ws, buckets, replicas=6, latest="v1") == {
        "a0": -100,
        "a1": 300,
        "b0": -200,
        "b1": 200,
        "c0": -300,
        "c1": 100,
        "f0": -400,
    }


def test_old_versions_are_reversed() -> None:
    ws = spread(1, 1, 1)
    buckets = {"old": by_subset(a=2, b=2, c=2)}
    assert costs(ws, buckets, replicas=6, latest="new") == {
        "a0": -300,
        "a1": 100,
        "b0": -200,
        "b1": 200,
        "c0": -100,
        "c1": 300,
    }


def test_limit_applies_per_version() -> None:
    """3 old and 3 new pods in a subset of at most 3: none over the limit (reference test "multiVersion pods")."""
    ws = spread(3, None)
    buckets = {
        "v1": {"a": [pod(f"old{i}", "a", version="v1") for i in range(3)]},
        "v2": {"a": [pod(f"new{i}", "a", version="v2") for i in range(3)]},
    }
    result = costs(ws, buckets, replicas=6, latest="v2")
    assert {result[f"new{i}"] for i in range(3)} == {200}
    assert {result[f"old{i}"] for i in range(3)} == {100}


def test_doc_scale_in_order_is_b_then_a_then_c() -> None:
    """DOC: 20/20/20 pods against 10/10/unlimited scale in b, then a, then c (then b, a)."""
    ws = spread(10, 10, None)
    result = costs(ws, {"v1": by_subset(a=20, b=20, c=20)}, replicas=60, latest="v1")
    order = [name[0] for name, _ in sorted(result.items(), key=lambda kv: kv[1])]
    phases = [order[0]] + [s for prev, s in itertools.pairwise(order) if s != prev]
    assert phases == ["b", "a", "c", "b", "a"]
    assert Counter(result.values()) == {-200: 10, -100: 10, 100: 20, 200: 10, 300: 10}


def test_unlimited_subsets_are_all_positive() -> None:
    ws = spread(None, None)
    assert set(costs(ws, {"v1": by_subset(a=3, b=2)}, replicas=5, latest="v1").values()) == {200, 100}


def test_unplaced_pods_cost_the_least() -> None:
    ws = spread(2, 2)
    result = costs(ws, {"v1": {**by_subset(a=3, b=3), FAKE_SUBSET: [pod("x"), pod("y")]}}, replicas=4, latest="v1")
    assert result["x"] == result["y"] == -300 < min(v for k, v in result.items() if k not in "xy")


def test_inactive_pods_get_no_cost() -> None:
    ws = spread(1, None)
    buckets = {
        "v1": {
            "a": [pod("gone", "a", deleting=True), pod("done", "a", phase="Succeeded"), pod("a0", "a")],
            FAKE_SUBSET: [pod("f", deleting=True)],
        }
    }
    assert costs(ws, buckets, replicas=1, latest="v1") == {"a0": 200}


def test_only_deployment_replicaset_cloneset() -> None:
    buckets = {"v1": by_subset(a=2)}
    for kind, api in (("Job", "batch/v1"), ("StatefulSet", "apps/v1")):
        assert costs(spread(1, kind=kind, api_version=api), buckets, replicas=2, latest="v1") == {}
    for kind, api in (("ReplicaSet", "apps/v1"), ("CloneSet", "apps.kruise.io/v1alpha1")):
        assert costs(spread(1, kind=kind, api_version=api), buckets, replicas=2, latest="v1") == {"a0": -100, "a1": 100}


def test_unparsable_maximum_skips_the_subset() -> None:
    ws = spread(1, subsets=[{"name": "a", "maxReplicas": 1}, {"name": "b", "maxReplicas": "x%"}])
    assert costs(ws, {"v1": by_subset(a=1, b=2)}, replicas=3, latest="v1") == {"a0": 200}


def test_delete_order_is_active_pods_less() -> None:
    pods = [
        pod("old-ready", created="2026-01-01T00:00:00Z", ready="2026-01-01T00:00:10Z"),
        pod("new-ready", created="2026-01-01T00:01:00Z", ready="2026-01-01T00:00:10Z"),
        pod("restarted", restarts=3, ready="2026-01-01T00:00:10Z"),
        pod("recently-ready", ready="2026-01-01T00:05:00Z"),
        pod("not-ready", ready=None),
        pod("unknown", phase="Unknown", ready=None),
        pod("pending", phase="Pending", ready=None),
        pod("unassigned", node=None, phase="Pending", ready=None),
        pod("gone", deleting=True),
    ]
    assert [p["metadata"]["name"] for p in delete_order(pods)] == [
        "unassigned",
        "pending",
        "unknown",
        "not-ready",
        "recently-ready",
        "restarted",
        "new-ready",
        "old-ready",
    ]


def test_delete_order_is_stable_for_equal_pods() -> None:
    pods = [pod(n) for n in ("z", "a", "m")]
    assert [p["metadata"]["name"] for p in delete_order(pods)] == ["z", "a", "m"]
    ws = spread(1)
    assert costs(ws, {"v1": {"a": pods}}, replicas=1, latest="v1") == {"z": -100, "a": -100, "m": 100}


def test_percentages_keep_the_split_on_scale_in() -> None:
    """kruise#877: 34/33/33 % with 4/3/3 pods scaled to 6 keeps 2/2/2 (OpenKruise removes c's pods: 4/2/0)."""
    ws = spread("34%", "33%", "33%")
    result = costs(ws, {"v1": by_subset(a=4, b=3, c=3)}, replicas=10, latest="v1")
    assert sorted(result.values()) == list(range(1, 11))
    kept = sorted(result, key=result.__getitem__, reverse=True)[:6]
    assert Counter(name[0] for name in kept) == {"a": 2, "b": 2, "c": 2}


def test_percentage_ranking_order_is_the_interleave() -> None:
    ws = spread("34%", "33%", "33%")
    result = costs(ws, {"v1": by_subset(a=4, b=3, c=3)}, replicas=10, latest="v1")
    assert "".join(n[0] for n in sorted(result, key=result.__getitem__, reverse=True)) == "abcabcabca"


def test_percentage_remainder_goes_to_the_first_unlimited_subset() -> None:
    ws = spread("25%", None, None)
    result = costs(ws, {"v1": by_subset(a=2, b=6, c=2)}, replicas=8, latest="v1")
    top4 = sorted(result, key=result.__getitem__, reverse=True)[:4]
    assert Counter(n[0] for n in top4) == {"a": 1, "b": 3}
    assert {result["c0"], result["c1"]} == {1, 2}


def test_percentage_old_version_breaks_ties_towards_later_subsets() -> None:
    ws = spread("50%", "50%")
    new = costs(ws, {"v1": by_subset(a=1, b=1)}, replicas=2, latest="v1")
    old = costs(ws, {"v1": by_subset(a=1, b=1)}, replicas=2, latest="v2")
    assert new == {"a0": 2, "b0": 1}
    assert old == {"a0": 1, "b0": 2}


def test_percentage_ranking_within_a_subset_keeps_the_best_pods() -> None:
    ws = spread("50%", "50%")
    pods = {"a": [pod("a-pending", "a", phase="Pending", ready=None), pod("a-ready", "a")], "b": []}
    result = costs(ws, {"v1": pods}, replicas=2, latest="v1")
    assert result["a-ready"] > result["a-pending"]


@st.composite
def spreads(draw: st.DrawFn) -> tuple[list[int | None], list[int]]:
    n = draw(st.integers(1, 4))
    cuts = sorted(draw(st.lists(st.integers(0, 100), min_size=n - 1, max_size=n - 1)))
    shares: list[int | None] = [b - a for a, b in zip([0, *cuts], [*cuts, 100], strict=True)]
    if n > 1 and draw(st.booleans()):
        shares[-1] = None
    counts = draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))
    return shares, counts


@settings(max_examples=300, deadline=None)
@given(spreads(), st.booleans())
def test_property_every_count_keeps_the_ceiled_split(case: tuple[list[int | None], list[int]], latest: bool) -> None:
    """For every m: keeping the m highest-cost pods gives each subset at most ceil(share * m), whenever
    the pods allow that split for every count up to m."""
    shares, counts = case
    names = "abcd"
    ws = spread(*(None if p is None else f"{p}%" for p in shares))
    effective = [p if p is not None else 100 - sum(q for q in shares if q is not None) for p in shares]
    buckets = {"v1": {names[i]: [pod(f"{names[i]}{j}", names[i]) for j in range(c)] for i, c in enumerate(counts)}}
    result = costs(ws, buckets, replicas=sum(counts), latest="v1" if latest else "v0")
    assert sorted(result.values()) == list(range(1, sum(counts) + 1))
    ranked = sorted(result, key=result.__getitem__, reverse=True)
    for m in range(1, len(ranked) + 1):
        feasible = all(
            sum(min(c, math.ceil(p * k / 100)) for c, p in zip(counts, effective, strict=True)) >= k
            for k in range(1, m + 1)
        )
        if not feasible:
            break
        kept = Counter(name[0] for name in ranked[:m])
        for i, p in enumerate(effective):
            assert kept[names[i]] <= math.ceil(p * m / 100), (m, kept, effective)


def test_changes_only_where_different() -> None:
    pods = [pod("same", cost="300"), pod("other", cost="-100"), pod("bare"), pod("zero"), pod("unknown")]
    assert changes({"same": 300, "other": 200, "bare": 100, "zero": 0}, pods) == {"other": "200", "bare": "100"}


def test_negative_or_bad_percentage_maximum_skips_the_subset() -> None:
    ws = spread(subsets=[{"name": "a", "maxReplicas": "-10%"}, {"name": "b", "maxReplicas": "x%"}, {"name": "c"}])
    assert costs(ws, {"v1": by_subset(a=1, b=1, c=1)}, replicas=30, latest="v1") == {"c0": 100}
