"""Where the next pods of a WorkloadSpread's target would land, and why (``united plan``).

The plan is the webhook's own booking run once per pod: N pods created one after another
now, each booked against the status the previous one left, so the answer is exactly what
the webhook would do (minimums first, then first fit, full and unschedulable subsets
skipped). The state says how many pods each subset holds already; percentages are of the
workload's replicas, taken to be those pods plus the N new ones.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from united.workloadspread.booking import book_create, resolve
from united.workloadspread.model import VERSION_IGNORED, Status, SubsetStatus, WorkloadSpread


@dataclass(frozen=True, slots=True)
class Load:
    """A subset's state before the plan: its active pods, and whether it is marked unschedulable."""

    pods: int = 0
    unschedulable: bool = False


@dataclass(frozen=True, slots=True)
class SubsetPlan:
    name: str
    #: New pods placed in the subset.
    replicas: int
    max_replicas: int | None
    reason: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "replicas": self.replicas,
            "maxReplicas": self.max_replicas,
            "reason": self.reason,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class Plan:
    name: str
    replicas: int
    subsets: tuple[SubsetPlan, ...]
    #: New pods no subset would take (admitted without placement).
    unplaced: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "WorkloadSpread",
            "name": self.name,
            "replicas": self.replicas,
            "subsets": [s.to_dict() for s in self.subsets],
            "unplaced": self.unplaced,
        }


def plan(ws: WorkloadSpread, *, replicas: int, state: Mapping[str, Load], now: datetime) -> Plan:
    """Place ``replicas`` new pods one after another (see the module docstring)."""
    total = replicas + sum(load.pods for load in state.values())
    statuses = tuple(_status(s.name, s.max_replicas, state.get(s.name, Load()), total) for s in ws.spec.subsets)
    current = dataclasses.replace(
        ws, status=Status(subset_statuses=statuses, versioned={VERSION_IGNORED: statuses} if statuses else {})
    )
    uids = (f"plan-{i}" for i in itertools.count(1))
    target = ws.spec.target_ref.name if ws.spec.target_ref else ws.name
    existing = sum(load.pods for load in state.values())
    placed = dict.fromkeys((s.name for s in ws.spec.subsets), 0)
    for i in range(replicas):
        # StatefulSet pods are named by ordinal, after the existing ones; others get a uid.
        pod = {"metadata": {"name": f"{target}-{existing + i}"}} if _ordinal(ws) else {"metadata": {}}
        booking = book_create(current, pod, replicas=total, now=now, new_uid=lambda: next(uids))
        if booking.subset is None:
            continue
        placed[booking.subset] += 1
        if booking.status is not None:
            current = dataclasses.replace(current, status=booking.status)
    subsets = tuple(
        _explain(
            s.name,
            limit=resolve(s.max_replicas, replicas=total),
            minimum=resolve(s.min_replicas, replicas=total) or 0,
            load=state.get(s.name, Load()),
            new=placed[s.name],
            replicas=replicas,
        )
        for s in ws.spec.subsets
    )
    return Plan(name=ws.name, replicas=replicas, subsets=subsets, unplaced=replicas - sum(placed.values()))


def _status(name: str, max_replicas: int | str | None, load: Load, total: int) -> SubsetStatus:
    limit = resolve(max_replicas, replicas=total)
    conditions = (
        ({"type": "Schedulable", "status": "False", "reason": "PodUnschedulable"},) if load.unschedulable else ()
    )
    return SubsetStatus(
        name=name,
        replicas=load.pods,
        missing_replicas=-1 if limit is None else max(0, limit - load.pods),
        conditions=conditions,
    )


def _ordinal(ws: WorkloadSpread) -> bool:
    return ws.spec.target_ref is not None and ws.spec.target_ref.kind == "StatefulSet"


def _explain(name: str, *, limit: int | None, minimum: int, load: Load, new: int, replicas: int) -> SubsetPlan:
    count = load.pods + new
    held = f"{load.pods} existing + {new} new"
    if load.unschedulable:
        reason, message = "Unschedulable", f"skipped: marked Schedulable=False (pods stayed pending there); {held}"
    elif limit is not None and count >= limit:
        reason = "Full"
        message = "full: maxReplicas is 0" if limit == 0 else f"full: {count} of maxReplicas {limit} ({held})"
    elif new:
        room = "no maximum" if limit is None else f"{limit - count} of maxReplicas {limit} left"
        reason, message = "Placed", f"{new} new pod(s), {count} in all; {room}"
    else:
        reason = "NotReached"
        taken = f"other subsets took all {replicas} new pod(s) first (minimums, then spec order)"
        message = f"{taken if replicas else 'no new pods to place'}; {load.pods} existing"
    if minimum:
        message += f"; minReplicas {minimum} " + ("met" if count >= minimum else f"not met ({count})")
    return SubsetPlan(name=name, replicas=new, max_replicas=limit, reason=reason, message=message)
