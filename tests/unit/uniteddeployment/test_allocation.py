"""Allocation: OpenKruise's exact arithmetic, its documented sequences, and properties."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from united.api.intstr import INT32_MAX
from united.uniteddeployment import defaults
from united.uniteddeployment.allocation import (
    ADAPTIVE,
    ELASTIC,
    RESERVATION,
    SPECIFIED,
    AllocationError,
    SubsetState,
    allocate,
    partition,
)
from united.uniteddeployment.model import Adaptive, ScheduleStrategy, Spec, Subset, UpdateStrategy


def spec(replicas: int | None, *subsets: Subset, adaptive: bool = False, reserve: bool = False) -> Spec:
    schedule = ScheduleStrategy(
        type="Adaptive" if adaptive else "", adaptive=Adaptive(reserve_unschedulable_pods=reserve)
    )
    return defaults.spec_defaults(Spec(replicas=replicas, subsets=subsets, schedule=schedule))


def shape(s: Spec, state: dict[str, SubsetState] | None = None) -> tuple[int, ...]:
    return tuple(a.replicas for a in allocate(s, state).subsets)


def S(name: str, **kw: Any) -> Subset:  # noqa: N802 - reads like a constructor in tables
    return Subset(name=name, **kw)


class TestSpecified:
    def test_fixed_and_even_remainder(self) -> None:
        plan = allocate(spec(10, S("a", replicas=2), S("b"), S("c")))
        assert plan.allocator == SPECIFIED
        assert [(a.replicas, a.reason) for a in plan.subsets] == [(2, "fixed"), (4, "remainder"), (4, "remainder")]

    def test_remainder_goes_to_alphabetically_last_without_children(self) -> None:
        assert shape(spec(5, S("b"), S("a"))) == (3, 2)

    def test_remainder_goes_to_the_subsets_with_most_replicas_now(self) -> None:
        state = {"a": SubsetState(replicas=7), "b": SubsetState(replicas=1)}
        assert shape(spec(5, S("a"), S("b")), state) == (3, 2)

    def test_remainder_ties_on_current_replicas_break_by_name(self) -> None:
        state = {"x": SubsetState(replicas=3), "y": SubsetState(replicas=3), "z": SubsetState(replicas=0)}
        assert shape(spec(7, S("z"), S("y"), S("x")), state) == (2, 3, 2)

    @pytest.mark.parametrize(
        ("total", "percents", "expected"),
        [
            (10, ("20%", "20%", "60%"), (2, 2, 6)),
            (10, ("35%", "65%"), (4, 7)),  # 3.5 -> 4 and 6.5 -> 7: each rounds half up on its own
            (7, ("33%",), (2,)),
            (0, ("50%",), (0,)),
        ],
    )
    def test_percentages_round_half_up_each(
        self, total: int, percents: tuple[str, ...], expected: tuple[int, ...]
    ) -> None:
        subsets = [S(f"s{i}", replicas=p) for i, p in enumerate(percents)]
        s = spec(total, *subsets, S("rest"))
        if sum(expected) > total:
            with pytest.raises(
                AllocationError, match=rf"\({sum(expected)}\) is greater than UnitedDeployment replica \({total}\)"
            ):
                allocate(s)
        else:
            plan = allocate(s)
            assert tuple(a.replicas for a in plan.subsets[:-1]) == expected
            assert plan.subsets[0].reason == "percent"
            assert plan.total == total

    def test_specified_more_than_total_is_an_error(self) -> None:
        with pytest.raises(
            AllocationError, match=r"specified subsets' replica \(6\) is greater than UnitedDeployment replica \(5\)"
        ):
            allocate(spec(5, S("a", replicas=3), S("b", replicas=3)))

    def test_all_specified_less_than_total_is_an_error(self) -> None:
        with pytest.raises(AllocationError, match=r"\(4\) is less than UnitedDeployment replica \(5\)"):
            allocate(spec(5, S("a", replicas=1), S("b", replicas=3)))

    def test_unset_total_needs_every_subset_specified(self) -> None:
        s = Spec(replicas=None, subsets=(S("a", replicas=1), S("b")))
        with pytest.raises(AllocationError, match="all subsets must be specified"):
            allocate(s)
        assert allocate(Spec(replicas=None, subsets=(S("a", replicas=1), S("b", replicas=2)))).replicas == 3

    def test_empty_topology(self) -> None:
        assert allocate(spec(0)).subsets == ()
        with pytest.raises(AllocationError, match=r"\(0\) is less than"):
            allocate(spec(3))

    def test_unparsable_value_is_ignored_like_the_reference(self) -> None:
        plan = allocate(spec(4, S("a", replicas="lots"), S("b")))
        assert [(a.replicas, a.reason) for a in plan.subsets] == [(2, "remainder"), (2, "remainder")]
        assert "replicas ignored" in plan.subsets[0].message


class TestElastic:
    def test_reference_example(self) -> None:
        plan = allocate(spec(5, S("a", min_replicas=2, max_replicas=4), S("b", min_replicas=2)))
        assert plan.allocator == ELASTIC
        assert [(a.replicas, a.reason) for a in plan.subsets] == [(3, "overflow"), (2, "min")]

    def test_pool_then_elastic(self) -> None:
        plan = allocate(spec(130, S("normal", max_replicas=100), S("elastic")))
        assert [(a.replicas, a.reason) for a in plan.subsets] == [(100, "max"), (30, "overflow")]
        plan = allocate(spec(60, S("normal", max_replicas=100), S("elastic")))
        assert [(a.replicas, a.reason) for a in plan.subsets] == [(60, "overflow"), (0, "overflow")]

    def test_scale_in_in_reverse_order(self) -> None:
        s = [S("a", max_replicas=3), S("b", max_replicas=3), S("c")]
        assert [shape(spec(n, *s)) for n in (9, 6, 4, 2)] == [(3, 3, 3), (3, 3, 0), (3, 1, 0), (2, 0, 0)]

    def test_earlier_minimums_win_when_they_exceed_the_total(self) -> None:
        plan = allocate(spec(3, S("a", min_replicas=2), S("b", min_replicas=2), S("c")))
        assert shape(spec(3, S("a", min_replicas=2), S("b", min_replicas=2), S("c"))) == (2, 1, 0)
        assert "only 1 left" in plan.subsets[1].message

    def test_all_bounded_may_stay_below_total(self) -> None:
        assert shape(spec(10, S("a", max_replicas=2), S("b", max_replicas=3))) == (2, 3)

    def test_percent_bounds(self) -> None:
        assert shape(spec(10, S("a", max_replicas="30%"), S("b", min_replicas="10%"))) == (3, 7)

    def test_replicas_are_ignored_in_elastic_mode(self) -> None:
        assert shape(spec(4, S("a", replicas=3, max_replicas=1), S("b"))) == (1, 3)

    def test_min_above_max_is_an_error(self) -> None:
        with pytest.raises(
            AllocationError, match=r"subset\[0\].maxReplicas\(1\) must be more than or equal to minReplicas\(2\)"
        ):
            allocate(spec(4, S("a", min_replicas=2, max_replicas=1), S("b")))

    def test_zero_max(self) -> None:
        plan = allocate(spec(2, S("a", max_replicas=0), S("b")))
        assert [(a.replicas, a.reason) for a in plan.subsets] == [(0, "max"), (2, "overflow")]


class TestAdaptive:
    """The sequences of OpenKruise's e2e suite, driven through states."""

    def test_capped_subset_moves_replicas_on_and_back(self) -> None:
        subsets = (S("s0", max_replicas=2), S("s1", max_replicas=2), S("s2"))

        def run(total: int, state: dict[str, SubsetState]) -> tuple[int, ...]:
            return shape(spec(total, *subsets, adaptive=True), state)

        assert run(3, {}) == (2, 1, 0)
        s1_stuck = {"s0": SubsetState(2, 2), "s1": SubsetState(1, 0, unschedulable=True), "s2": SubsetState(0, 0)}
        assert run(3, s1_stuck) == (2, 0, 1)
        assert run(5, {**s1_stuck, "s2": SubsetState(1, 1)}) == (2, 0, 3)
        assert run(4, {**s1_stuck, "s2": SubsetState(3, 3)}) == (2, 0, 2)
        recovered = {"s0": SubsetState(2, 2), "s1": SubsetState(0, 0), "s2": SubsetState(2, 2)}
        assert run(4, recovered) == (2, 0, 2)
        assert run(5, recovered) == (2, 1, 2)
        assert run(4, {**recovered, "s1": SubsetState(1, 0, unschedulable=True)}) == (2, 0, 2)
        assert run(3, {**recovered, "s1": SubsetState(0, 0, unschedulable=True)}) == (2, 0, 1)

    def test_unschedulable_subset_keeps_its_minimum(self) -> None:
        subsets = (S("s0", min_replicas=1, max_replicas=2), S("s1"))

        def run(total: int, state: dict[str, SubsetState]) -> tuple[int, ...]:
            return shape(spec(total, *subsets, adaptive=True), state)

        stuck = {"s0": SubsetState(2, 0, unschedulable=True), "s1": SubsetState(1, 1)}
        plan = allocate(spec(3, *subsets, adaptive=True), stuck)
        assert plan.allocator == ADAPTIVE
        assert (plan["s0"].replicas, plan["s0"].reason) == (1, "adaptive-ready-capped")
        assert "keeps minReplicas 1" in plan["s0"].message
        assert run(4, {**stuck, "s1": SubsetState(2, 2)}) == (1, 3)
        assert run(3, {**stuck, "s1": SubsetState(3, 3)}) == (1, 2)
        fixed = {"s0": SubsetState(1, 1), "s1": SubsetState(2, 2)}
        assert run(3, fixed) == (1, 2)
        assert run(5, fixed) == (2, 3)
        assert run(4, {"s0": SubsetState(2, 2), "s1": SubsetState(3, 3)}) == (2, 2)
        assert run(3, {"s0": SubsetState(2, 2), "s1": SubsetState(2, 2)}) == (2, 1)
        assert run(1, {"s0": SubsetState(2, 2), "s1": SubsetState(1, 1)}) == (1, 0)

    def test_ready_pods_of_schedulable_subsets_are_protected(self) -> None:
        state = {"a": SubsetState(1, 1), "b": SubsetState(2, 2), "c": SubsetState(2, 2)}
        plan = allocate(spec(3, S("a"), S("b"), S("c"), adaptive=True), state)
        assert [(a.replicas, a.reason) for a in plan.subsets] == [
            (1, "adaptive-ready-kept"),
            (2, "adaptive-ready-kept"),
            (0, "overflow"),
        ]
        assert plan["c"].message == "0 left after earlier subsets; 2 of its 2 ready pods scale in"
        assert plan["a"].message == "keeps its 1 ready pods; later subsets scale in first"

    def test_unschedulable_without_child_is_ignored(self) -> None:
        assert shape(spec(3, S("a", max_replicas=2), S("b"), adaptive=True), {}) == (2, 1)


class TestReservation:
    def test_reserved_subsets_keep_pods_and_substitutes_run_later(self) -> None:
        subsets = (S("s0"), S("s1"), S("s2"))

        def run(total: int, state: dict[str, SubsetState]) -> tuple[int, ...]:
            return shape(spec(total, *subsets, adaptive=True, reserve=True), state)

        assert run(2, {}) == (2, 0, 0)
        s0_reserved = {"s0": SubsetState(2, 0, unschedulable=True, reserved_pods=2)}
        assert run(2, s0_reserved) == (2, 2, 0)
        both = {**s0_reserved, "s1": SubsetState(2, 0, unschedulable=True, reserved_pods=2), "s2": SubsetState(0, 0)}
        plan = allocate(spec(2, *subsets, adaptive=True, reserve=True), both)
        assert plan.allocator == RESERVATION
        assert [(a.replicas, a.reason) for a in plan.subsets] == [(2, "reserved"), (2, "reserved"), (2, "overflow")]
        assert "substitutes for 4 reserved pods" in plan["s2"].message
        assert run(4, both) == (2, 2, 4)
        assert run(2, {**both, "s2": SubsetState(4, 4)}) == (2, 2, 2)
        recovered = {"s0": SubsetState(2, 2), "s1": SubsetState(2, 0, unschedulable=True, reserved_pods=2)}
        assert run(4, {**recovered, "s2": SubsetState(2, 2)}) == (4, 0, 0)

    def test_reserved_subsets_keep_their_minimum(self) -> None:
        subsets = (S("s0", min_replicas=1), S("s1", min_replicas=1), S("s2"))

        def run(total: int, state: dict[str, SubsetState]) -> tuple[int, ...]:
            return shape(spec(total, *subsets, adaptive=True, reserve=True), state)

        assert run(2, {}) == (1, 1, 0)
        stuck = {n: SubsetState(1, 0, unschedulable=True, reserved_pods=1) for n in ("s0", "s1")}
        assert run(2, stuck) == (1, 1, 2)
        assert run(4, {**stuck, "s2": SubsetState(2, 2)}) == (1, 1, 4)
        assert run(2, {**stuck, "s2": SubsetState(4, 4)}) == (1, 1, 2)
        fixed = {**stuck, "s0": SubsetState(1, 1), "s2": SubsetState(2, 2)}
        assert run(4, fixed) == (4, 1, 0)
        assert run(5, fixed) == (5, 1, 0)
        # s0 marked a second before s1: s0's substitute lands in s1, whose pods are then all
        # kept when s1 is marked too (pass 2's target for it is its current size).
        assert run(2, {"s0": stuck["s0"], "s1": SubsetState(1, 0)}) == (1, 2, 0)
        assert run(2, {"s0": stuck["s0"], "s1": SubsetState(2, 0, unschedulable=True, reserved_pods=2)}) == (1, 2, 2)

    def test_pass_two_never_lowers_a_subset_below_its_minimum(self) -> None:
        s = spec(4, S("a", min_replicas=3), S("b"), adaptive=True, reserve=True)
        assert shape(s, {"a": SubsetState(2, 0, unschedulable=True, reserved_pods=2)}) == (3, 4)


class TestPartition:
    def test_capped_at_allocation_and_only_for_manual(self) -> None:
        base = Spec(update=UpdateStrategy(type="Manual", partitions={"a": 5}))
        assert partition(base, "a", 3) == 3
        assert partition(base, "a", 9) == 5
        assert partition(base, "b", 9) == 0
        assert partition(Spec(update=UpdateStrategy(type="", partitions={"a": 5})), "a", 9) == 0

    def test_in_plan(self) -> None:
        s = Spec(replicas=4, subsets=(S("a"), S("b")), update=UpdateStrategy(type="Manual", partitions={"b": 9}))
        assert [a.partition for a in allocate(s).subsets] == [0, 2]


# --- properties -------------------------------------------------------------------------------

replica_value = st.one_of(st.integers(0, 60), st.integers(0, 100).map(lambda n: f"{n}%"))


@st.composite
def elastic_specs(
    draw: st.DrawFn, *, adaptive: bool = False, reserve: bool = False
) -> tuple[Spec, dict[str, SubsetState]]:
    n = draw(st.integers(1, 6))
    total = draw(st.integers(0, 120))
    subsets = []
    state = {}
    for i in range(n):
        lo = draw(st.none() | st.integers(0, 20))
        hi = draw(st.none() | st.integers(lo or 0, 60))
        subsets.append(S(f"s{i}", min_replicas=lo, max_replicas=hi))
        if draw(st.booleans()):
            replicas = draw(st.integers(0, 40))
            ready = draw(st.integers(0, replicas))
            reserved = draw(st.integers(0, replicas - ready)) if reserve else 0
            state[f"s{i}"] = SubsetState(replicas, ready, draw(st.booleans()), reserved)
    if all(s.max_replicas is not None for s in subsets):
        subsets[-1] = S(subsets[-1].name, min_replicas=subsets[-1].min_replicas)
    if not any(s.elastic for s in subsets):
        subsets[0] = S(subsets[0].name, min_replicas=0)
    return spec(total, *subsets, adaptive=adaptive, reserve=reserve), state


@settings(max_examples=300)
@given(elastic_specs())
def test_elastic_properties(case: tuple[Spec, dict[str, SubsetState]]) -> None:
    s, state = case
    plan = allocate(s, state)
    assert all(a.replicas >= 0 for a in plan.subsets)
    assert plan.total == s.replicas  # one subset is unbounded
    mins = [int(x.min_replicas or 0) for x in s.subsets]
    maxs = [INT32_MAX if x.max_replicas is None else int(x.max_replicas) for x in s.subsets]
    for a, lo, hi in zip(plan.subsets, mins, maxs, strict=True):
        assert a.replicas <= hi
        if sum(mins) <= (s.replicas or 0):
            assert a.replicas >= lo


@settings(max_examples=300)
@given(elastic_specs(adaptive=True))
def test_adaptive_properties(case: tuple[Spec, dict[str, SubsetState]]) -> None:
    s, state = case
    plan = allocate(s, state)
    assert all(a.replicas >= 0 for a in plan.subsets)
    assert plan.total <= (s.replicas or 0)
    for sub, a in zip(s.subsets, plan.subsets, strict=True):
        st_ = state.get(sub.name)
        if st_ is not None and st_.unschedulable:
            assert a.replicas <= max(st_.ready_replicas, int(sub.min_replicas or 0))
    open_ended = [
        x for x in s.subsets if x.max_replicas is None and not (x.name in state and state[x.name].unschedulable)
    ]
    if open_ended:
        assert plan.total == s.replicas


@settings(max_examples=300)
@given(elastic_specs(adaptive=True, reserve=True))
def test_reservation_properties(case: tuple[Spec, dict[str, SubsetState]]) -> None:
    s, state = case
    plan = allocate(s, state)
    assert all(a.replicas >= 0 for a in plan.subsets)
    for sub, a in zip(s.subsets, plan.subsets, strict=True):
        st_ = state.get(sub.name)
        if st_ is not None and st_.unschedulable:
            assert a.replicas <= max(st_.replicas, int(sub.min_replicas or 0))


@settings(max_examples=300)
@given(st.integers(0, 500), st.lists(st.none() | replica_value, min_size=1, max_size=6))
def test_specified_properties(total: int, values: list[int | str | None]) -> None:
    s = spec(total, *(S(f"s{i}", replicas=v) for i, v in enumerate(values)))
    try:
        plan = allocate(s)
    except AllocationError:
        fixed = [v for v in values if v is not None]
        resolved = [v if isinstance(v, int) else (total * int(v[:-1]) + 50) // 100 for v in fixed]
        assert sum(resolved) > total or (len(fixed) == len(values) and sum(resolved) < total)
        return
    assert all(a.replicas >= 0 for a in plan.subsets)
    assert plan.total == total
    shares = [a.replicas for a in plan.subsets if a.reason == "remainder"]
    if shares:
        assert max(shares) - min(shares) <= 1


class TestClusterFailover:
    """A subset whose member cluster is down past rescheduleCriticalSeconds."""

    def test_cluster_failover(self) -> None:
        s = spec(
            9,
            S("h", max_replicas=3),
            S("m1", cluster="member-1", max_replicas=3),
            S("m2", cluster="member-2"),
            adaptive=True,
        )
        state = {
            "h": SubsetState(replicas=3, ready_replicas=3),
            "m1": SubsetState(replicas=3, ready_replicas=3, unschedulable=True, unreachable=True),
            "m2": SubsetState(replicas=3, ready_replicas=3),
        }
        plan = allocate(s, state)
        assert plan.total == 9
        assert [(a.name, a.replicas, a.reason) for a in plan.subsets] == [
            ("h", 3, "adaptive-ready-kept"),
            ("m1", 0, "cluster-failover"),
            ("m2", 6, "overflow"),
        ]
        assert plan["m1"].message == (
            "cluster member-1 unreachable: capped at 0 (minReplicas); the rest moves to later subsets"
        )

    def test_capped_at_the_minimum(self) -> None:
        s = spec(10, S("m1", cluster="member-1", min_replicas=2), S("h"), adaptive=True)
        state = {"m1": SubsetState(replicas=5, ready_replicas=5, unschedulable=True, unreachable=True)}
        plan = allocate(s, state)
        assert [(a.replicas, a.reason) for a in plan.subsets] == [(2, "cluster-failover"), (8, "overflow")]
        assert plan["m1"].message.startswith("cluster member-1 unreachable: capped at 2 (minReplicas)")

    def test_before_the_mark_last_known_ready_pods_are_kept(self) -> None:
        """Before the critical time nothing moves: the subset keeps its last-known ready pods
        as if it were seen (the controller cannot scale it in anyway)."""
        s = spec(4, S("m1", cluster="member-1"), S("h"), adaptive=True)
        unseen = {"m1": SubsetState(replicas=4, ready_replicas=4, unreachable=True)}
        assert [(a.replicas, a.reason) for a in allocate(s, unseen).subsets] == [
            (4, "adaptive-ready-kept"),
            (0, "overflow"),
        ]

    def test_only_an_unreachable_mark_ignores_ready_pods(self) -> None:
        """A subset marked for unschedulable pods keeps its ready ones; one marked for its
        cluster has none we can see."""
        s = spec(4, S("m1", cluster="member-1"), S("h"), adaptive=True)
        pods = {"m1": SubsetState(replicas=4, ready_replicas=3, unschedulable=True)}
        down = {"m1": SubsetState(replicas=4, ready_replicas=3, unschedulable=True, unreachable=True)}
        assert shape(s, pods) == (3, 1)
        assert shape(s, down) == (0, 4)

    def test_other_allocators_ignore_it(self) -> None:
        s = spec(6, S("h", replicas=2), S("m1", cluster="member-1"))
        state = {"m1": SubsetState(replicas=4, ready_replicas=4, unschedulable=True, unreachable=True)}
        assert shape(s, state) == shape(s) == (2, 4)
