"""Split ``spec.replicas`` over subsets: OpenKruise's four allocators.

Selection, in OpenKruise's order: Adaptive with reservation → ``reservation``; Adaptive →
``adaptive``; any subset with ``minReplicas``/``maxReplicas`` → ``elastic``; otherwise
``specified``. Rounding, tie-breaks and error texts follow OpenKruise exactly; where
we deliberately differ it is named in the docstring of the function that differs.

Every subset's result carries a machine-readable ``reason`` and a one-line ``message`` saying
which rule decided it — no peer explains its arithmetic, and most user surprises in this
field are arithmetic they could not see (see ``docs/concepts/uniteddeployment.md``, "Allocation").

``spec.topology.rounding: Monotone`` and ``subsets[].weight`` are ours (OpenKruise has neither): they route
the shares through :mod:`united.uniteddeployment.apportionment` (Sainte-Laguë, house-monotone);
see :func:`_specified_monotone` and :func:`_weighted_shares` for how they compose.

Plain data in, plain data out: the same functions serve the controller, ``united plan`` and,
later, WorkloadSpread's capacity accounting.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from united.api.intstr import INT32_MAX, IntOrStr, resolve
from united.uniteddeployment.apportionment import Apportionment, Claim, apportion
from united.uniteddeployment.model import MANUAL, Spec, Subset

SPECIFIED = "specified"
ELASTIC = "elastic"
ADAPTIVE = "adaptive"
RESERVATION = "reservation"

FIXED = "fixed"
PERCENT = "percent"
REMAINDER = "remainder"
MIN = "min"
MAX = "max"
OVERFLOW = "overflow"
READY_KEPT = "adaptive-ready-kept"
READY_CAPPED = "adaptive-ready-capped"
RESERVED = "reserved"
SHARE = "share"
CLUSTER_FAILOVER = "cluster-failover"


@dataclass(frozen=True, slots=True)
class SubsetState:
    """What exists now for one subset; a subset without a state has no child workload yet."""

    replicas: int = 0
    """The child's ``spec.replicas``."""
    ready_replicas: int = 0
    unschedulable: bool = False
    """Marked unschedulable by adaptive scheduling (pods pending too long, or reserved)."""
    reserved_pods: int = 0
    unreachable: bool = False
    """Its cluster cannot be seen (a member cluster down, or refusing us): its counts are the
    last known ones. Marked ``unschedulable`` too once that has lasted
    ``rescheduleCriticalSeconds`` (``adaptive.cluster_down``): then none of its pods counts as
    ready, and Adaptive caps it at its minimum."""


@dataclass(frozen=True, slots=True)
class Allocation:
    name: str
    replicas: int
    partition: int
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Plan:
    allocator: str
    replicas: int
    subsets: tuple[Allocation, ...]

    def __getitem__(self, name: str) -> Allocation:
        for a in self.subsets:
            if a.name == name:
                return a
        raise KeyError(name)

    @property
    def total(self) -> int:
        return sum(a.replicas for a in self.subsets)


class AllocationError(ValueError):
    """The spec admits no allocation; the controller changes nothing and reports it."""


def choose(spec: Spec) -> str:
    if spec.schedule.reserves:
        return RESERVATION
    if spec.schedule.is_adaptive:
        return ADAPTIVE
    if any(s.elastic for s in spec.subsets):
        return ELASTIC
    return SPECIFIED


def allocate(spec: Spec, state: Mapping[str, SubsetState] | None = None) -> Plan:
    """Allocate ``spec.replicas`` over ``spec.subsets`` given what exists now."""
    state = state or {}
    allocator = choose(spec)
    if allocator == SPECIFIED:
        decided = _specified(spec, state)
    elif allocator == RESERVATION:
        decided = _reservation(spec, state)
    else:
        decided = _elastic(spec, state, adaptive=allocator == ADAPTIVE)
    subsets = tuple(
        Allocation(name=s.name, replicas=n, partition=partition(spec, s.name, n), reason=why, message=msg)
        for s, (n, why, msg) in zip(spec.subsets, decided, strict=True)
    )
    total = spec.replicas if spec.replicas is not None else sum(a.replicas for a in subsets)
    return Plan(allocator=allocator, replicas=total, subsets=subsets)


def partition(spec: Spec, name: str, replicas: int) -> int:
    """Effective partition: honoured only for the literal ``Manual`` type,
    capped at the subset's allocation."""
    if spec.update.type != MANUAL or not spec.update.partitions:
        return 0
    return max(0, min(spec.update.partitions.get(name, 0), replicas))


Decision = tuple[int, str, str]


def _specified(spec: Spec, state: Mapping[str, SubsetState]) -> list[Decision]:
    """Fixed numbers and percentages; the rest split evenly.

    The remainder goes to the unspecified subsets that have the most replicas now (least
    movement), ties to the alphabetically last name. Values that do not parse are ignored,
    as in OpenKruise (validation rejects them before we get here).
    """
    if spec.monotone and spec.replicas is not None:
        return _specified_monotone(spec)
    total = spec.replicas if spec.replicas is not None else -1
    order = sorted(spec.subsets, key=lambda s: (state[s.name].replicas if s.name in state else 0, s.name))
    fixed: dict[str, Decision] = {}
    ignored: dict[str, str] = {}
    for s in spec.subsets:
        if s.replicas is None:
            continue
        try:
            n = resolve(total, s.replicas)
        except ValueError as e:
            ignored[s.name] = str(e)
            continue
        if isinstance(s.replicas, str):
            fixed[s.name] = (n, PERCENT, f"{s.replicas} of {total} replicas, rounded half up: {n}")
        else:
            fixed[s.name] = (n, FIXED, f"replicas fixed at {n} by the subset")
    assigned = sum(d[0] for d in fixed.values())
    if total != -1:
        if assigned > total:
            raise AllocationError(
                f"specified subsets' replica ({assigned}) is greater than UnitedDeployment replica ({total})"
            )
        if assigned < total and len(fixed) == len(spec.subsets):
            raise AllocationError(
                f"specified subsets' replica ({assigned}) is less than UnitedDeployment replica ({total})"
            )
    elif len(fixed) != len(spec.subsets):
        raise AllocationError("all subsets must be specified when UnitedDeployment replica is unspecified")
    rest = [s for s in order if s.name not in fixed]
    out = dict(fixed)
    if rest and spec.weighted:
        shared = [s for s in spec.subsets if s.name not in fixed]
        out.update(_weighted_shares(shared, total - assigned, ignored))
    elif rest:
        left = total - assigned
        share, extra = divmod(left, len(rest))
        for s in reversed(rest):
            bonus = 1 if extra > 0 else 0
            extra -= bonus
            if len(rest) == 1:
                msg = f"takes the {left} replicas no subset fixes"
            else:
                msg = f"even share of the {left} replicas no subset fixes, over {len(rest)} subsets: {share}"
            if bonus:
                msg += " +1 remainder (to the subsets with the most replicas now, then the last by name)"
            if s.name in ignored:
                msg += f"; replicas ignored: {ignored[s.name]}"
            out[s.name] = (share + bonus, REMAINDER, msg)
    return [out[s.name] for s in spec.subsets]


ZERO_WEIGHTS = (
    "every subset without replicas has weight 0, but {left} replicas are left for them: give one a positive weight"
)


def _weight(s: Subset) -> int:
    return 1 if s.weight is None else s.weight


def _percent(value: str) -> int:
    """``N`` of a valid ``"N%"`` (:func:`resolve` against 100 is exact)."""
    return resolve(100, value)


@dataclass(frozen=True, slots=True)
class _Split:
    """Monotone rounding's first stage: the total between the percentage subsets and the rest."""

    fixed: dict[str, int]
    percents: dict[str, int]
    ignored: dict[str, str]
    result: Apportionment
    rest: int
    """Seats of the rest: fixed subsets plus what the subsets without replicas share."""


def split(spec: Spec) -> _Split:
    """Percentage subsets claim their ``N`` and the rest ``100 - ΣN`` of ``spec.replicas``, in one
    Sainte-Laguë apportionment, so each is monotone in the total (half up on its own is not: 25 %,
    25 % and a remainder subset give 0/0/1 at 1 replica, 1/1/0 at 2). The rest is at least what
    fixed subsets take, and exactly that when no subset is left to take more; a 0 % subset is 0."""
    total = spec.replicas or 0
    fixed: dict[str, int] = {}
    percents: dict[str, int] = {}
    ignored: dict[str, str] = {}
    for s in spec.subsets:
        if s.replicas is None:
            continue
        try:
            n = resolve(total, s.replicas)
        except ValueError as e:
            ignored[s.name] = str(e)
            continue
        if isinstance(s.replicas, str):
            percents[s.name] = _percent(s.replicas)
        else:
            fixed[s.name] = n
    taken = sum(fixed.values())
    if taken > total:
        raise AllocationError(
            f"specified subsets' replica ({taken}) is greater than UnitedDeployment replica ({total})"
        )
    if sum(percents.values()) > 100:
        raise AllocationError(f"subset percentages sum to {sum(percents.values())}%, more than 100%")
    sharing = len(fixed) + len(percents) < len(spec.subsets)
    claims = [Claim(weight=p, high=None if p else 0) for p in percents.values()]
    claims.append(Claim(weight=100 - sum(percents.values()), low=taken, high=None if sharing else taken))
    try:
        result = apportion(total, claims)
    except ValueError:
        raise AllocationError(
            f"specified subsets' replica ({taken}) is less than UnitedDeployment replica ({total}) "
            "and no subset without replicas or with a positive percentage can take the rest"
        ) from None
    return _Split(fixed=fixed, percents=percents, ignored=ignored, result=result, rest=result.seats[-1])


def _specified_monotone(spec: Spec) -> list[Decision]:
    """``rounding: Monotone``: fixed subsets keep their numbers; percentages and the rest share
    the total by Sainte-Laguë (:func:`split`); the subsets without replicas share the rest by
    weight (:func:`_weighted_shares`, equal weights by default: the earlier subset gets the +1).
    Both stages are house-monotone and the second's total is the first's rest, so raising
    ``spec.replicas`` never lowers any subset. Without a subset to take the rest, percentages are
    shares of what fixed subsets leave (33 %, 33 %, 34 % of 10 is 3, 3, 4; OpenKruise rejects
    that spec because its half-up numbers add up to 9)."""
    total = spec.replicas or 0
    parts = split(spec)
    rest_weight = 100 - sum(parts.percents.values())
    rest = f" and the rest (weight {rest_weight})" if rest_weight else ""
    out: dict[str, Decision] = {}
    for name, n in parts.fixed.items():
        out[name] = (n, FIXED, f"replicas fixed at {n} by the subset")
    for (name, p), n in zip(parts.percents.items(), parts.result.seats[:-1], strict=True):
        exact = _num(Fraction(total * p, 100))
        out[name] = (
            n,
            PERCENT,
            f"{p}% of {total} replicas is {exact}; Sainte-Laguë with the other percentages{rest}"
            f"{_quotient(parts.result, p)} → {n}",
        )
    shared = [s for s in spec.subsets if s.name not in out]
    out.update(_weighted_shares(shared, parts.rest - sum(parts.fixed.values()), parts.ignored))
    return [out[s.name] for s in spec.subsets]


def _weighted_shares(subsets: Sequence[Subset], left: int, ignored: Mapping[str, str]) -> dict[str, Decision]:
    """What no subset fixes, in proportion to weight, by Sainte-Laguë (ties to the earlier
    subset). Weights use the divisor method under either rounding: half up cannot split an
    integer exactly, and largest remainder has the Alabama paradox; no reference manifest has
    weights, so no compatibility asks for anything else."""
    weights = [_weight(s) for s in subsets]
    if left > 0 and not any(weights):
        raise AllocationError(ZERO_WEIGHTS.format(left=left))
    result = apportion(left, [Claim(weight=w) for w in weights])
    out: dict[str, Decision] = {}
    for s, w, n in zip(subsets, weights, result.seats, strict=True):
        if len(subsets) == 1:
            msg = f"takes the {left} replicas no subset fixes"
        else:
            msg = (
                f"weight {w} of {sum(weights)}: Sainte-Laguë share of the {left} replicas no subset fixes"
                f"{_quotient(result, w)} → {n}"
            )
        if s.name in ignored:
            msg += f"; replicas ignored: {ignored[s.name]}"
        out[s.name] = (n, REMAINDER, msg)
    return out


def _quotient(result: Apportionment, weight: int) -> str:
    q = result.quotient(weight)
    if q is None or result.divisor is None:
        return ""
    tie = " (a tie: the earlier subset first)" if result.tie and q.denominator == 2 else ""
    return f": quotient {weight}/{_num(result.divisor)} = {_num(q)}{tie}"


def _num(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{float(x):.4g}"


def shared(spec: Spec) -> int:
    """Replicas the subsets without ``replicas`` share by weight: what fixed and percentage
    subsets leave, or in elastic mode what the minimums leave (0 when the spec admits none)."""
    total = spec.replicas or 0
    if any(s.elastic for s in spec.subsets):
        return max(0, total - sum(_resolve_or_zero(total, s.min_replicas or 0) for s in spec.subsets))
    if spec.monotone:
        try:
            parts = split(spec)
        except AllocationError:
            return 0
        return parts.rest - sum(parts.fixed.values())
    return max(0, total - sum(_resolve_or_zero(total, s.replicas) for s in spec.subsets if s.replicas is not None))


@dataclass(slots=True)
class _Bounds:
    min: int
    max: int
    min0: int = 0
    max0: int = INT32_MAX
    first: int = 0
    second: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.first + self.second


def _bounds(spec: Spec, total: int) -> list[_Bounds]:
    out = []
    for i, s in enumerate(spec.subsets):
        lo = _resolve_or_zero(total, s.min_replicas) if s.min_replicas is not None else 0
        hi = _resolve_or_zero(total, s.max_replicas) if s.max_replicas is not None else INT32_MAX
        if lo > hi:
            raise AllocationError(f"subset[{i}].maxReplicas({hi}) must be more than or equal to minReplicas({lo})")
        out.append(_Bounds(min=lo, max=hi, min0=lo, max0=hi))
    return out


def _resolve_or_zero(total: int, value: IntOrStr) -> int:
    try:
        return resolve(total, value)
    except ValueError:
        return 0


def _fill(total: int, bounds: Sequence[_Bounds]) -> None:
    """``allocateByMinMax``: minimums first in order, then fill up to each maximum in order."""
    allocated = 0
    for b in bounds:
        b.first = max(0, min(b.min, total - allocated))
        allocated += b.first
    if allocated >= total:
        return
    for b in bounds:
        b.second = max(0, min(b.max - b.min, total - allocated))
        allocated += b.second


def _elastic(spec: Spec, state: Mapping[str, SubsetState], *, adaptive: bool) -> list[Decision]:
    """Elastic min/max and its adaptive variant.

    Adaptive: an unschedulable subset keeps at most its ready pods but never less than its
    minimum; a schedulable subset's ready pods are protected, so scale-in takes from later
    subsets first. A subset marked because its cluster is unreachable has no ready pod we can
    see: it is capped at its minimum (``cluster-failover``).
    """
    total = spec.replicas or 0
    bounds = _bounds(spec, total)
    capped: dict[str, int] = {}
    kept: dict[str, int] = {}
    if adaptive:
        for s, b in zip(spec.subsets, bounds, strict=True):
            st = state.get(s.name)
            ready = st.ready_replicas if st else 0
            if st is not None and st.unschedulable:
                ready = 0 if st.unreachable else ready
                b.min, b.max = max(ready, b.min), min(ready, b.max)
                capped[s.name] = ready
            elif ready > b.min:
                b.min = min(ready, b.max)
                kept[s.name] = ready
    weighted = _weigh(spec, total, bounds) if spec.weighted else None
    if weighted is None:
        _fill(total, bounds)
    out = []
    for s, b in zip(spec.subsets, bounds, strict=True):
        n = b.total
        st = state.get(s.name)
        if s.name in capped and st is not None and st.unreachable:
            out.append(
                (
                    n,
                    CLUSTER_FAILOVER,
                    f"cluster {s.cluster} unreachable: capped at {n} (minReplicas); the rest moves to later subsets",
                )
            )
        elif s.name in capped:
            ready = capped[s.name]
            msg = f"unschedulable: capped at its {_pods(ready, 'ready pod')}"
            if b.min0 > ready:
                # min > max after capping: OpenKruise silently lets min win; say so.
                msg += (
                    f", but keeps minReplicas {b.min0} (the minimum wins over the cap: "
                    f"{_pods(b.min0 - ready, 'pod')} may stay pending)"
                )
            out.append((n, READY_CAPPED, msg + "; the rest moves to later subsets"))
        elif s.name in kept and b.second == 0 and n == b.min and n > b.min0:
            out.append((n, READY_KEPT, f"keeps its {kept[s.name]} ready pods; later subsets scale in first"))
        elif s.name in kept and n < min(b.min, kept[s.name]):
            ready = kept[s.name]
            out.append((n, OVERFLOW, f"{n} left after earlier subsets; {ready - n} of its {ready} ready pods scale in"))
        elif weighted is not None:
            out.append(_share_reason(s, b, weighted))
        else:
            out.append(_elastic_reason(s, b))
    return out


def _weigh(spec: Spec, total: int, bounds: Sequence[_Bounds]) -> tuple[Apportionment, int]:
    """Weights in elastic mode: minimums first in order, as OpenKruise, then Sainte-Laguë in
    proportion to weight up to each maximum, instead of filling subsets in order. Bounds fixed,
    this is house-monotone (the bounded divisor method); the adaptive allocator feeds it its
    state-adjusted bounds, so for one observed state it is monotone too."""
    weights = [_weight(s) for s in spec.subsets]
    left = total - sum(b.min for b in bounds)
    if left > 0 and not any(weights):
        raise AllocationError(ZERO_WEIGHTS.format(left=left))
    claims = [
        Claim(weight=w, low=b.min, high=None if b.max >= INT32_MAX else b.max)
        for w, b in zip(weights, bounds, strict=True)
    ]
    try:
        result = apportion(total, claims)
    except ValueError as e:
        raise AllocationError(str(e)) from None
    for b, n in zip(bounds, result.seats, strict=True):
        b.first = min(n, b.min)
        b.second = n - b.first
    return result, sum(weights)


def _share_reason(s: Subset, b: _Bounds, weighted: tuple[Apportionment, int]) -> Decision:
    result, weights = weighted
    n, weight = b.total, _weight(s)
    q = result.quotient(weight)
    rounded = None if q is None else math.floor(q + Fraction(1, 2))
    if n < b.min:
        return _elastic_reason(s, b)
    if weight == 0:
        if n > b.min:
            return n, OVERFLOW, f"weight 0: {b.second} the weighted subsets have no room for (all at maxReplicas)"
        if b.min == 0:
            return n, SHARE, "weight 0: takes replicas only when every weighted subset is at maxReplicas"
    if b.max < INT32_MAX and n == b.max and (rounded is None or rounded > n):
        return n, MAX, f"weight {weight} of {weights}{_quotient(result, weight)}, capped at maxReplicas {b.max}"
    if n == b.min and (rounded is None or rounded < n):
        return n, MIN, f"minReplicas {b.min} (weight {weight} of {weights}{_quotient(result, weight)})"
    return n, SHARE, f"weight {weight} of {weights}: Sainte-Laguë share{_quotient(result, weight)} → {n}"


def _elastic_reason(s: Subset, b: _Bounds) -> Decision:
    n = b.total
    bounded = b.max < INT32_MAX
    if b.second > 0:
        if bounded and n == b.max:
            return n, MAX, f"filled up to maxReplicas {b.max}"
        cap = f"maxReplicas {b.max}" if bounded else "no maxReplicas"
        base = f"minReplicas {b.min} plus " if b.first else ""
        return n, OVERFLOW, f"{base}{b.second} of the remaining replicas ({cap})"
    if b.min > 0:
        if n < b.min:
            return n, MIN, f"minReplicas {b.min}, but only {n} left after earlier subsets' minimums"
        return n, MIN, f"minReplicas {b.min}; nothing left for it above the minimum"
    if bounded and b.max == 0:
        return n, MAX, "maxReplicas 0"
    return n, OVERFLOW, "0: earlier subsets took every replica"


def _reservation(spec: Spec, state: Mapping[str, SubsetState]) -> list[Decision]:
    """Reservation: an unschedulable subset keeps its pods (reserved,
    still pending) but only its healthy part counts; later subsets run substitutes.

    Deliberate difference: pass 2 never takes replicas away from a subset (OpenKruise
    can lower an unschedulable subset below its minimum when its current size is smaller).
    """
    remaining = spec.replicas or 0
    bounds = _bounds(spec, remaining)
    healthy: list[int] = []
    for s in spec.subsets:
        st = state.get(s.name)
        marked = st is not None and st.unschedulable
        healthy.append(st.replicas - st.reserved_pods if marked and st else INT32_MAX)

    def take(i: int, target: int, rest: int, *, second: bool) -> int:
        """Add up to ``target``; return how much of the addition is schedulable."""
        b = bounds[i]
        add = max(0, min(target - b.total, rest))
        if second:
            b.second += add
        else:
            b.first += add
        healthy[i] -= add
        return max(0, add + healthy[i]) if healthy[i] < 0 else add

    for i in range(len(bounds)):
        if remaining <= 0:
            break
        remaining -= take(i, bounds[i].min, remaining, second=False)
    for i, s in enumerate(spec.subsets):
        if remaining <= 0:
            break
        st = state.get(s.name)
        target = st.replicas if st is not None and st.unschedulable else bounds[i].max
        remaining -= take(i, target, remaining, second=True)
    substitutes = 0
    out: list[Decision] = []
    for s, b in zip(spec.subsets, bounds, strict=True):
        st = state.get(s.name)
        if st is not None and st.unschedulable:
            pending = max(0, b.total - (st.replicas - st.reserved_pods))
            substitutes += pending
            out.append(
                (
                    b.total,
                    RESERVED,
                    f"unschedulable: keeps its {_pods(b.total, 'pod')} ({st.reserved_pods} reserved); "
                    f"substitutes for the reserved ones run in later subsets",
                )
            )
            continue
        n, why, msg = _elastic_reason(s, b)
        if substitutes and b.second > 0:
            msg += f", including temporary substitutes for {substitutes} reserved pods"
        out.append((n, why, msg))
    return out


def _pods(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
