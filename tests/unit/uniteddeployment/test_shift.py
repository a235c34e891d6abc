"""Capacity-safe shifts: receivers first, donors as availability allows, removed children last."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from united.uniteddeployment.shift import Holding, Shift, shift

ORDER = ["a", "b"]


def test_removing_a_subset_grows_the_others_first_and_drains_it_within_the_budget() -> None:
    children = {"a": Holding(3, 3), "b": Holding(3, 3), "c": Holding(3, 3)}
    first = shift({"a": 5, "b": 4}, children, order=ORDER, total=9, budget=2)
    assert first == Shift({"a": 5, "b": 4, "c": 1}, ("c",), ())
    lagging = {"a": Holding(5, 3), "b": Holding(4, 3), "c": Holding(1, 3)}
    assert shift({"a": 5, "b": 4}, lagging, order=ORDER, total=9, budget=2).replicas["c"] == 1
    ready = {"a": Holding(5, 5), "b": Holding(4, 3), "c": Holding(1, 1)}
    assert shift({"a": 5, "b": 4}, ready, order=ORDER, total=9, budget=2) == Shift({"a": 5, "b": 4}, (), ("c",))


def test_moving_replicas_shrinks_the_donor_as_the_receiver_becomes_available() -> None:
    children = {"a": Holding(6, 6), "b": Holding(2, 2)}
    assert shift({"a": 2, "b": 6}, children, order=ORDER, total=8, budget=1).replicas == {"a": 5, "b": 6}
    children = {"a": Holding(5, 5), "b": Holding(6, 4)}
    assert shift({"a": 2, "b": 6}, children, order=ORDER, total=8, budget=1).replicas == {"a": 3, "b": 6}


def test_a_scale_down_is_never_held_back() -> None:
    children = {"a": Holding(5, 0), "b": Holding(5, 0)}
    assert shift({"a": 2, "b": 2}, children, order=ORDER, total=4, budget=1).replicas == {"a": 2, "b": 2}


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8)), min_size=3, max_size=3),
    st.integers(0, 3),
    st.integers(1, 3),
)
def test_available_pods_stay_above_the_floor_and_a_scale_down_always_proceeds(
    live: list[tuple[int, int]], wanted_a: int, budget: int
) -> None:
    children = {n: Holding(r, min(a, r)) for n, (r, a) in zip(["a", "b", "c"], live, strict=True)}
    total = sum(r for r, _ in live[:2])
    allocation = {"a": min(wanted_a, total), "b": total - min(wanted_a, total)}
    out = shift(allocation, children, order=ORDER, total=total, budget=budget)
    before = sum(h.available for h in children.values())
    removed = sum(max(0, children[n].replicas - out.replicas.get(n, 0)) for n in children)
    assert all(out.replicas[n] >= allocation[n] for n in ORDER)
    if sum(r for r, _ in live) <= total:
        assert before - removed >= min(total - budget, before)
    else:
        assert removed >= sum(r for r, _ in live) - total - sum(
            max(0, allocation[n] - children[n].available) for n in ORDER
        )
    assert set(out.drained) | set(out.draining) == {"c"}
    assert ("c" in out.drained) == (out.replicas.get("c", 0) == 0)
