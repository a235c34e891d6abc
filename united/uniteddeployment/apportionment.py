"""Split an integer in proportion to weights, within bounds, house-monotonically (Sainte-Laguë).

Why a divisor method: rounding every share on its own (half up, OpenKruise's rule) makes the
shares add up to more or less than the total, and whichever subset absorbs the difference can
shrink while the total grows; largest-remainder (Hamilton) has the Alabama paradox. A divisor
method hands out seat after seat to the claim with the highest quotient ``weight / (seats + ½)``,
so the result for ``n + 1`` is the result for ``n`` plus one seat: raising the total never lowers
a share, lowering it never raises one, and the sum is exact. The ``½`` (Webster/Sainte-Laguë)
is the divisor method without bias toward large or small claims.

One fixed ranking of every (claim, seat) pair defines the result for every total, which is the
whole monotonicity argument:

1. seats below a claim's ``low``, in claim order (OpenKruise meets minimums in order too);
2. the other seats of positive weights by quotient, highest first; equal quotients go to the
   earlier claim (deterministic, documented tie rule);
3. seats of weight-0 claims, in claim order: they take only what no positive claim has room for.

No seat at or above a claim's ``high`` is ranked. An apportionment of ``n`` is the first ``n``
pairs. The code finds them without walking ``n`` seats: a floating-point divisor estimate, then
exact integer exchanges until no excluded pair outranks an included one.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True, slots=True)
class Claim:
    weight: int
    low: int = 0
    high: int | None = None
    """None: unbounded."""


@dataclass(frozen=True, slots=True)
class Apportionment:
    seats: tuple[int, ...]
    divisor: Fraction | None
    """A Sainte-Laguë divisor: every claim strictly between its bounds has ``weight / divisor``
    rounding (half up) to its seats. None when no seat went by quotient."""
    tie: bool = False
    """The divisor sits exactly on a quotient: claims tied on it were ordered by position."""

    def quotient(self, weight: int) -> Fraction | None:
        return None if self.divisor is None else Fraction(weight) / self.divisor


def apportion(total: int, claims: Sequence[Claim]) -> Apportionment:
    """The first ``total`` seats of the ranking; ``ValueError`` when they do not fit the highs."""
    if total < 0:
        raise ValueError(f"cannot apportion {total} seats")
    seats = [c.low for c in claims]
    left = total - sum(seats)
    if left <= 0:
        return Apportionment(_in_order(total, [0] * len(claims), [c.low for c in claims]), None)
    positive = [i for i, c in enumerate(claims) if c.weight > 0]
    rooms = [_room(claims[i]) for i in positive]
    if all(r is not None for r in rooms) and left >= sum(r or 0 for r in rooms):
        for i in positive:
            seats[i] = claims[i].high or 0
        left -= sum(r or 0 for r in rooms)
        caps = [_room(c) if c.weight == 0 else 0 for c in claims]
        filled = _in_order(left, seats, caps)
        if sum(filled) < total:
            raise ValueError(f"{total} replicas do not fit: the maxReplicas allow at most {sum(filled)}")
        return Apportionment(filled, _divisor(claims, seats)[0])
    _estimate(seats, claims, positive, total - sum(c.low for c in claims if c.weight == 0))
    _settle(seats, claims, positive, total)
    divisor, tie = _divisor(claims, seats)
    return Apportionment(tuple(seats), divisor, tie)


def _below_high(c: Claim, n: int) -> bool:
    return c.high is None or n < c.high


def _room(c: Claim) -> int | None:
    return None if c.high is None else c.high - c.low


def _in_order(n: int, base: Sequence[int], caps: Sequence[int | None]) -> tuple[int, ...]:
    """``base`` plus ``n`` seats filled in claim order, each claim up to its cap (None: no cap)."""
    out = list(base)
    for i, cap in enumerate(caps):
        add = n if cap is None else min(cap, n)
        out[i] += add
        n -= add
    return tuple(out)


def _clamp(n: int, c: Claim) -> int:
    return max(c.low, n if c.high is None else min(c.high, n))


def _estimate(seats: list[int], claims: Sequence[Claim], positive: list[int], target: int) -> None:
    """Seats of the positive claims from a divisor found by bisection in floating point, summing
    to at most ``target``: close enough that the exact exchanges after it are a handful."""

    def count(d: float) -> int:
        return sum(_clamp(math.floor(claims[i].weight / d + 0.5), claims[i]) for i in positive)

    lo, hi = 1e-12, 4.0 * max(claims[i].weight for i in positive) + 1.0
    for _ in range(80):
        mid = math.sqrt(lo * hi)
        n = count(mid)
        if n > target:
            lo = mid
        else:
            hi = mid
            if n == target:
                break
    for i in positive:
        seats[i] = _clamp(math.floor(claims[i].weight / hi + 0.5), claims[i])


def _before(a: tuple[int, int], b: tuple[int, int], claims: Sequence[Claim]) -> bool:
    """Does seat ``a[1]`` (0-based) of claim ``a[0]`` rank before seat ``b[1]`` of ``b[0]``?
    Quotients ``w / (k + ½)`` compared exactly, ties to the earlier claim."""
    (i, k), (j, m) = a, b
    left, right = claims[i].weight * (2 * m + 1), claims[j].weight * (2 * k + 1)
    return left > right or (left == right and i < j)


def _settle(seats: list[int], claims: Sequence[Claim], positive: list[int], total: int) -> None:
    """Exact steps until ``seats`` are the first ``total`` ranked pairs: seats added best first
    or removed worst first (heaps) until the sum is right, then exchanges while an excluded pair
    outranks an included one (none after a divisor estimate, which already gives a ranked prefix)."""
    have = sum(seats)
    if have < total:
        grow = [
            (-Fraction(2 * claims[i].weight, 2 * seats[i] + 1), i) for i in positive if _below_high(claims[i], seats[i])
        ]
        heapq.heapify(grow)
        while have < total and grow:
            _, i = heapq.heappop(grow)
            seats[i] += 1
            have += 1
            if _below_high(claims[i], seats[i]):
                heapq.heappush(grow, (-Fraction(2 * claims[i].weight, 2 * seats[i] + 1), i))
    elif have > total:
        shrink = [(Fraction(2 * claims[i].weight, 2 * seats[i] - 1), -i) for i in positive if seats[i] > claims[i].low]
        heapq.heapify(shrink)
        while have > total and shrink:
            _, j = heapq.heappop(shrink)
            seats[-j] -= 1
            have -= 1
            if seats[-j] > claims[-j].low:
                heapq.heappush(shrink, (Fraction(2 * claims[-j].weight, 2 * seats[-j] - 1), j))
    while True:
        nxt = _best_next(seats, claims, positive)
        last = _worst_last(seats, claims, positive)
        if nxt is None or last is None or not _before(nxt, last, claims):
            return
        seats[nxt[0]] += 1
        seats[last[0]] -= 1


def _best_next(seats: list[int], claims: Sequence[Claim], positive: list[int]) -> tuple[int, int] | None:
    best: tuple[int, int] | None = None
    for i in positive:
        if not _below_high(claims[i], seats[i]):
            continue
        pair = (i, seats[i])
        if best is None or _before(pair, best, claims):
            best = pair
    return best


def _worst_last(seats: list[int], claims: Sequence[Claim], positive: list[int]) -> tuple[int, int] | None:
    worst: tuple[int, int] | None = None
    for i in positive:
        if seats[i] <= claims[i].low:
            continue
        pair = (i, seats[i] - 1)
        if worst is None or _before(worst, pair, claims):
            worst = pair
    return worst


def _divisor(claims: Sequence[Claim], seats: list[int]) -> tuple[Fraction | None, bool]:
    """A divisor between the last quotient given a seat and the best one refused (half the last
    when every claim is full, twice the best when none is above its low): the plain
    one (weights over seats of the claims not at a bound) when it is, else the midpoint."""
    positive = [i for i, c in enumerate(claims) if c.weight > 0]
    nxt, last = _best_next(seats, claims, positive), _worst_last(seats, claims, positive)

    def quotient(pair: tuple[int, int]) -> Fraction:
        return Fraction(2 * claims[pair[0]].weight, 2 * pair[1] + 1)

    if nxt is None and last is None:
        return None, False
    if last is None:
        assert nxt is not None
        return quotient(nxt) * 2, False
    if nxt is None:
        return quotient(last) / 2, False
    low, high = quotient(nxt), quotient(last)
    if low == high:
        return low, True
    between = [i for i in positive if claims[i].low < seats[i] and _below_high(claims[i], seats[i])]
    plain = Fraction(sum(claims[i].weight for i in between), sum(seats[i] for i in between) or 1)
    return (plain if low < plain < high else (low + high) / 2), False
