"""Allocation with ``rounding: Monotone`` and ``subsets[].weight``: how Sainte-Laguë composes with
fixed replicas, percentages, elastic bounds and the adaptive state, over every total 0..1000."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from united.uniteddeployment import defaults
from united.uniteddeployment.allocation import (
    MAX,
    MIN,
    OVERFLOW,
    PERCENT,
    REMAINDER,
    SHARE,
    AllocationError,
    SubsetState,
    allocate,
    shared,
)
from united.uniteddeployment.model import Adaptive, ScheduleStrategy, Spec, Subset

TOTALS = range(0, 1001)


def spec(replicas: int, *subsets: Subset, rounding: str = "Monotone", adaptive: bool = False) -> Spec:
    schedule = ScheduleStrategy(type="Adaptive" if adaptive else "", adaptive=Adaptive())
    return defaults.spec_defaults(Spec(replicas=replicas, subsets=subsets, rounding=rounding, schedule=schedule))


def S(name: str, **kw: Any) -> Subset:  # noqa: N802 - reads like a constructor in tables
    return Subset(name=name, **kw)


def shape(s: Spec, state: dict[str, SubsetState] | None = None) -> tuple[int, ...]:
    return tuple(a.replicas for a in allocate(s, state).subsets)


def at(s: Spec, total: int) -> Spec:
    return dataclasses.replace(s, replicas=total)


def shrinks(s: Spec, totals: Sequence[int], state: dict[str, SubsetState] | None = None) -> list[int]:
    """Totals ``n`` whose allocation for ``n + 1`` lowers some subset."""
    out = []
    previous = shape(at(s, totals[0]), state)
    for n in totals[1:]:
        current = shape(at(s, n), state)
        if any(b < a for a, b in zip(previous, current, strict=True)):
            out.append(n - 1)
        previous = current
    return out


class TestHalfUpShrinksMonotoneDoesNot:
    SUBSETS = (S("a", replicas="25%"), S("b", replicas="25%"), S("c"))

    def test_half_up_takes_a_replica_away_while_the_total_grows(self) -> None:
        halfup = spec(1, *self.SUBSETS, rounding="")
        assert shape(halfup) == (0, 0, 1)
        assert shape(at(halfup, 2)) == (1, 1, 0)
        assert 1 in shrinks(halfup, TOTALS)

    def test_monotone_never_does_at_any_total(self) -> None:
        monotone = spec(1, *self.SUBSETS)
        assert shape(monotone) == (0, 0, 1)
        assert shape(at(monotone, 2)) == (1, 0, 1)
        assert shrinks(monotone, TOTALS) == []

    def test_percentages_that_half_up_cannot_add_up(self) -> None:
        subsets = (S("a", replicas="33%"), S("b", replicas="33%"), S("c", replicas="34%"))
        with pytest.raises(AllocationError, match=r"\(9\) is less than UnitedDeployment replica \(10\)"):
            allocate(spec(10, *subsets, rounding=""))
        assert shape(spec(10, *subsets)) == (3, 3, 4)
        assert shape(spec(3, S("a", replicas="50%"), S("b", replicas="50%"))) == (2, 1)


def test_explicit_half_up_is_the_default_byte_for_byte() -> None:
    cases = [
        (10, (S("a", replicas=2), S("b"), S("c"))),
        (7, (S("a", replicas="20%"), S("b", replicas="35%"), S("c"), S("d"))),
        (9, (S("a", min_replicas=2, max_replicas=4), S("b", max_replicas="30%"), S("c"))),
    ]
    state = {"c": SubsetState(replicas=5, ready_replicas=5)}
    for total, subsets in cases:
        assert allocate(spec(total, *subsets, rounding="HalfUp"), state) == allocate(
            spec(total, *subsets, rounding=""), state
        )


fixed_subsets = st.lists(st.integers(0, 6), max_size=2)
percent_subsets = st.lists(st.integers(0, 60), max_size=3).filter(lambda ps: sum(ps) <= 100)
weights = st.lists(st.none() | st.integers(0, 9), max_size=3).filter(lambda ws: not ws or any(w != 0 for w in ws))


def mixed(fixed: list[int], percents: list[int], ws: list[int | None]) -> Spec:
    subsets = [S(f"f{i}", replicas=n) for i, n in enumerate(fixed)]
    subsets += [S(f"p{i}", replicas=f"{p}%") for i, p in enumerate(percents)]
    subsets += [S(f"w{i}", weight=w) for i, w in enumerate(ws)]
    return spec(0, *subsets)


@settings(max_examples=30, deadline=None)
@given(fixed_subsets, percent_subsets, weights)
def test_fixed_percentages_and_weights_every_total(fixed: list[int], percents: list[int], ws: list[int | None]) -> None:
    """Sum exact, fixed subsets unchanged, and no subset lower at ``n + 1`` than at ``n``."""
    s = mixed(fixed, percents, ws)
    if not s.subsets:
        return
    floor = sum(fixed)
    previous: tuple[int, ...] | None = None
    for total in TOTALS:
        feasible = total >= floor and (ws or (percents and any(percents)) or total == floor)
        if not feasible:
            with pytest.raises(AllocationError):
                allocate(at(s, total))
            previous = None
            continue
        current = shape(at(s, total))
        assert sum(current) == total
        assert current[: len(fixed)] == tuple(fixed)
        assert current == shape(at(s, total)), "deterministic"
        if previous is not None:
            assert all(a <= b for a, b in zip(previous, current, strict=True)), (total, previous, current)
        previous = current


elastic_subset = st.tuples(st.integers(0, 9), st.integers(0, 4), st.none() | st.integers(0, 15))


@settings(max_examples=30, deadline=None)
@given(st.lists(elastic_subset, min_size=1, max_size=4))
def test_weights_with_integer_bounds_every_total(items: list[tuple[int, int, int | None]]) -> None:
    """The bounded divisor method: minimums first in order, maximums never exceeded, monotone."""
    subsets = [
        S(f"s{i}", weight=w, min_replicas=lo, max_replicas=None if room is None else lo + room)
        for i, (w, lo, room) in enumerate(items)
    ]
    subsets.append(S("last", weight=1))
    s = spec(0, *subsets)
    assert shrinks(s, TOTALS) == []
    for total in TOTALS:
        plan = allocate(at(s, total))
        assert plan.total == total
        if total >= sum(lo for _, lo, _ in items):
            for sub, a in zip(subsets, plan.subsets, strict=True):
                assert a.replicas >= (sub.min_replicas or 0)
                assert sub.max_replicas is None or a.replicas <= int(sub.max_replicas)


@settings(max_examples=15, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 9), st.integers(0, 6), st.booleans()), min_size=2, max_size=4),
    st.booleans(),
)
def test_adaptive_is_monotone_for_one_observed_state(items: list[tuple[int, int, bool]], weighted: bool) -> None:
    """With the state held (same ready pods, same subsets unschedulable), raising the total never
    lowers a subset, with or without weights; the adaptive moves themselves happen when the
    state changes, by design."""
    subsets = [S(f"s{i}", weight=w if weighted else None, max_replicas=10 + i) for i, (w, _, _) in enumerate(items)]
    subsets.append(S("last", weight=1 if weighted else None))
    state = {
        f"s{i}": SubsetState(replicas=ready, ready_replicas=ready, unschedulable=blocked)
        for i, (_, ready, blocked) in enumerate(items)
    }
    s = spec(0, *subsets, adaptive=True)
    assert shrinks(s, range(0, 301), state) == []


def test_weights_share_the_rest_in_proportion_with_either_rounding() -> None:
    for rounding in ("", "Monotone"):
        plan = allocate(spec(10, S("a", weight=3), S("b", weight=4), S("c", replicas=3), rounding=rounding))
        assert [(a.replicas, a.reason) for a in plan.subsets] == [(3, REMAINDER), (4, REMAINDER), (3, "fixed")]
        assert plan["a"].message == (
            "weight 3 of 7: Sainte-Laguë share of the 7 replicas no subset fixes: quotient 3/1 = 3 → 3"
        )


def test_unset_weight_counts_as_one_and_ties_go_to_the_earlier_subset() -> None:
    plan = allocate(spec(11, S("a"), S("b", weight=1), rounding=""))
    assert shape(spec(11, S("a"), S("b", weight=1))) == (6, 5)
    assert plan["a"].message.endswith("quotient 1/0.1818 = 5.5 (a tie: the earlier subset first) → 6")


def test_monotone_without_weights_splits_evenly_by_spec_order_not_by_current_size() -> None:
    state = {"b": SubsetState(replicas=9)}
    assert shape(spec(5, S("a"), S("b"), rounding=""), state) == (2, 3)
    assert shape(spec(5, S("a"), S("b")), state) == (3, 2)


def test_percent_message_explains_the_quotient() -> None:
    plan = allocate(spec(2, S("a", replicas="25%"), S("b", replicas="25%"), S("c")))
    assert plan["a"].reason == PERCENT
    assert plan["a"].message == (
        "25% of 2 replicas is 0.5; Sainte-Laguë with the other percentages and the rest (weight 50): "
        "quotient 25/50 = 0.5 (a tie: the earlier subset first) → 1"
    )


def test_elastic_weighted_reasons() -> None:
    plan = allocate(spec(20, S("a", weight=3, max_replicas=4), S("b", weight=1, min_replicas=2), S("c", weight=0)))
    assert [(a.replicas, a.reason) for a in plan.subsets] == [(4, MAX), (16, SHARE), (0, SHARE)]
    assert plan["a"].message == "weight 3 of 4: quotient 3/0.0625 = 48, capped at maxReplicas 4"
    assert plan["b"].message == "weight 1 of 4: Sainte-Laguë share: quotient 1/0.0625 = 16 → 16"
    plan = allocate(spec(3, S("a", weight=3, max_replicas=4), S("b", weight=1, min_replicas=2), S("c", weight=0)))
    assert [(a.replicas, a.reason) for a in plan.subsets] == [(1, SHARE), (2, MIN), (0, SHARE)]
    plan = allocate(spec(9, S("a", weight=3, max_replicas=4), S("b", weight=0, max_replicas=5)))
    assert [(a.replicas, a.reason) for a in plan.subsets] == [(4, MAX), (5, OVERFLOW)]


def test_monotone_leaves_unweighted_elastic_fill_as_the_reference() -> None:
    subsets = (S("a", min_replicas=1, max_replicas=3), S("b", max_replicas="40%"), S("c"))
    for total in range(0, 30):
        assert allocate(spec(total, *subsets)) == allocate(spec(total, *subsets, rounding=""))


def test_percentage_bounds_move_with_the_total() -> None:
    """The guarantee is for bounds that stay put: two 10 % maximums both rise at 15, taking 2
    from the third subset for 1 more replica, under either fill; a bound is not a rounding."""
    subsets = (S("a", weight=1, max_replicas="10%"), S("b", weight=1, max_replicas="10%"), S("c", weight=1))
    assert shape(spec(14, *subsets)) == (1, 1, 12)
    assert shape(spec(15, *subsets)) == (2, 2, 11)


def test_all_zero_weights_with_replicas_to_place_is_an_error() -> None:
    with pytest.raises(AllocationError, match="every subset without replicas has weight 0, but 4 replicas are left"):
        allocate(spec(6, S("a", replicas=2), S("b", weight=0), S("c", weight=0)))
    with pytest.raises(AllocationError, match="but 5 replicas are left"):
        allocate(spec(6, S("a", weight=0, min_replicas=1), S("b", weight=0)))
    assert shape(spec(2, S("a", replicas=2), S("b", weight=0))) == (2, 0)


def test_percentages_over_100_are_an_error() -> None:
    with pytest.raises(AllocationError, match="subset percentages sum to 110%, more than 100%"):
        allocate(spec(10, S("a", replicas="60%"), S("b", replicas="50%"), S("c")))


def test_shared_is_what_subsets_without_replicas_get() -> None:
    assert shared(spec(10, S("a", replicas="25%"), S("b", replicas=2), S("c"), S("d"))) == 5
    assert shared(spec(10, S("a", replicas="25%"), S("b", replicas=2), S("c"), rounding="")) == 5
    assert shared(spec(10, S("a", min_replicas=3), S("b", min_replicas="20%"))) == 5
