"""Sainte-Laguë with bounds: equal to handing out seats one by one, for every total 0..1000."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from united.api.intstr import INT32_MAX
from united.uniteddeployment.apportionment import Claim, _settle, apportion


def one_by_one(total: int, claims: list[Claim]) -> tuple[int, ...]:
    """The definition: minimums in claim order, then seat by seat to the highest
    ``weight / (seats + ½)`` (earlier claim on ties), weight-0 claims last in claim order."""
    seats = [0] * len(claims)
    for _ in range(total):
        below = [i for i, c in enumerate(claims) if seats[i] < c.low]
        if below:
            seats[below[0]] += 1
            continue
        open_ = [i for i, c in enumerate(claims) if c.high is None or seats[i] < c.high]
        best = min(open_, key=lambda i: (claims[i].weight == 0, -Fraction(2 * claims[i].weight, 2 * seats[i] + 1), i))
        seats[best] += 1
    return tuple(seats)


claim = st.builds(
    lambda w, low, room: Claim(weight=w, low=low, high=None if room is None else low + room),
    st.integers(0, 60),
    st.integers(0, 4),
    st.none() | st.integers(0, 12),
)
claims_with_room = st.lists(claim, min_size=1, max_size=6).map(lambda cs: [*cs, Claim(weight=1)])


@settings(max_examples=60, deadline=None)
@given(claims_with_room)
def test_equals_handing_out_seats_one_by_one(claims: list[Claim]) -> None:
    for total in range(0, 120):
        assert apportion(total, claims).seats == one_by_one(total, claims), total


@settings(max_examples=25, deadline=None)
@given(claims_with_room)
def test_every_total_to_1000_exact_monotone_bounded(claims: list[Claim]) -> None:
    previous = apportion(0, claims).seats
    for total in range(1, 1001):
        seats = apportion(total, claims).seats
        assert sum(seats) == total
        assert all(a <= b for a, b in zip(previous, seats, strict=True)), (total, previous, seats)
        if total >= sum(c.low for c in claims):
            assert all(c.low <= n and (c.high is None or n <= c.high) for c, n in zip(claims, seats, strict=True))
        previous = seats


@settings(max_examples=60, deadline=None)
@given(claims_with_room, st.integers(0, 1000), st.data())
def test_exchanges_reach_the_same_seats_from_any_start(claims: list[Claim], total: int, data: st.DataObject) -> None:
    """The float estimate only saves steps: from any start between the bounds, the exact
    exchanges end at the same seats."""
    low = sum(c.low for c in claims)
    if total <= low or not all(c.weight for c in claims):
        return
    start = [data.draw(st.integers(c.low, c.high if c.high is not None else c.low + 50)) for c in claims]
    _settle(start, claims, list(range(len(claims))), total)
    assert tuple(start) == apportion(total, claims).seats


def test_divisor_explains_every_share() -> None:
    result = apportion(10, [Claim(weight=3), Claim(weight=4), Claim(weight=2, high=1)])
    assert result.seats == (4, 5, 1)
    assert result.divisor is not None
    assert [round(result.quotient(w) or 0) for w in (3, 4)] == [4, 5]
    assert not result.tie


def test_tie_goes_to_the_earlier_claim_and_is_reported() -> None:
    result = apportion(3, [Claim(weight=1), Claim(weight=1)])
    assert result.seats == (2, 1)
    assert result.tie
    assert result.quotient(1) == Fraction(3, 2)


def test_minimums_first_in_order_when_the_total_is_short() -> None:
    assert apportion(3, [Claim(weight=9, low=2), Claim(weight=1, low=2)]).seats == (2, 1)


def test_zero_weights_take_only_what_positive_ones_cannot() -> None:
    claims = [Claim(weight=0), Claim(weight=5, high=3), Claim(weight=0, high=2)]
    assert apportion(3, claims).seats == (0, 3, 0)
    assert apportion(7, claims).seats == (4, 3, 0)
    bounded = [Claim(weight=0, high=2), Claim(weight=5, high=3), Claim(weight=0, high=2)]
    assert apportion(6, bounded).seats == (2, 3, 1)
    with pytest.raises(ValueError, match="8 replicas do not fit: the maxReplicas allow at most 7"):
        apportion(8, bounded)


def test_int32_totals_and_weights() -> None:
    claims = [Claim(weight=INT32_MAX), Claim(weight=1), Claim(weight=7, high=5)]
    seats = apportion(INT32_MAX, claims).seats
    assert sum(seats) == INT32_MAX
    assert seats[1:] == (1, 5)
