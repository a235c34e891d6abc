"""Split ``spec.replicas`` over subsets: the four reference allocators (reference section 8).

Selection, in the reference's order: Adaptive with reservation → ``reservation``; Adaptive →
``adaptive``; any subset with ``minReplicas``/``maxReplicas`` → ``elastic``; otherwise
``specified``. Rounding, tie-breaks and error texts follow the reference exactly; where
we deliberately differ it is named in the docstring of the function that differs.

Every subset's result carries a machine-readable ``reason`` and a one-line ``message`` saying
which rule decided it — no peer explains its arithmetic, and most user surprises in this
field are arithmetic they could not see (see README "Allocation reasons").

Plain data in, plain data out: the same functions serve the controller, ``united plan`` and,
later, WorkloadSpread's capacity accounting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from united.placement.intstr import INT32_MAX, IntOrStr, resolve
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


@dataclass(frozen=True, slots=True)
class SubsetState:
    """What exists now for one subset; a subset without a state has no child workload yet."""

    replicas: int = 0
    """The child's ``spec.replicas``."""
    ready_replicas: int = 0
    unschedulable: bool = False
    """Marked unschedulable by adaptive scheduling (pods pending too long, or reserved)."""
    reserved_pods: int = 0


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
    """Effective partition (reference 9): honoured only for the literal ``Manual`` type,
    capped at the subset's allocation."""
    if spec.update.type != MANUAL or not spec.update.partitions:
        return 0
    return max(0, min(spec.update.partitions.get(name, 0), replicas))


Decision = tuple[int, str, str]


def _specified(spec: Spec, state: Mapping[str, SubsetState]) -> list[Decision]:
    """Fixed numbers and percentages; the rest split evenly (reference 8.3).

    The remainder goes to the unspecified subsets that have the most replicas now (least
    movement), ties to the alphabetically last name. Values that do not parse are ignored,
    as in the reference (validation rejects them before we get here).
    """
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
    if rest:
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
    """Elastic min/max (reference 8.4) and its adaptive variant (8.5).

    Adaptive: an unschedulable subset keeps at most its ready pods but never less than its
    minimum; a schedulable subset's ready pods are protected, so scale-in takes from later
    subsets first.
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
                b.min, b.max = max(ready, b.min), min(ready, b.max)
                capped[s.name] = ready
            elif ready > b.min:
                b.min = min(ready, b.max)
                kept[s.name] = ready
    _fill(total, bounds)
    out = []
    for s, b in zip(spec.subsets, bounds, strict=True):
        n = b.total
        if s.name in capped:
            ready = capped[s.name]
            msg = f"unschedulable: capped at its {_pods(ready, 'ready pod')}"
            if b.min0 > ready:
                # Reference bug 21: min > max after capping is silently "min wins"; say so.
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
        else:
            out.append(_elastic_reason(s, b))
    return out


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
    """Reservation (reference 8.7.3): an unschedulable subset keeps its pods (reserved,
    still pending) but only its healthy part counts; later subsets run substitutes.

    Deliberate difference: pass 2 never takes replicas away from a subset (the reference
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
