"""Book a subset slot for a pod being created, or note a pod being deleted.

Both are pure functions of (the WorkloadSpread with its status, the pod, the time): the
caller writes the returned status with the spread's ``resourceVersion`` and, on a conflict,
re-reads and books again, so two webhook processes can never both take the last slot.

Creation (as OpenKruise books it), against the status list of the pod's version
(:mod:`united.workloadspread.version`), created from the spec when absent:

* a pod whose name is already in a subset's ``creatingPods`` is re-admitted there (a retried
  request) without a new booking;
* the subsets are tried in spec order, skipping those marked ``Schedulable=False`` and those
  without a free slot: first any subset below its ``minReplicas`` (ours, kruise#2227), then
  the first one with room; a pod re-created with the name of a pod in a subset's
  ``deletingPods`` is tried in that subset first;
* a subset's *count* is its ``replicas`` (active pods the controller saw) plus its pending
  ``creatingPods``; its free slots are ``maxReplicas - count`` (percentages of ``replicas``,
  rounded up), and never more than the ``missingReplicas`` the controller wrote;
* the booking adds ``creatingPods[name or a new uid]`` and lowers ``missingReplicas``; a
  subset without a maximum is booked only when it has a minimum (its count matters);
* a single subset without a maximum takes every pod with no status write; a StatefulSet is
  placed by ordinal (cumulative ``maxReplicas``), with no status write either.

Never over-fill: a slot is freed only by the controller's recount, when it sees the pod
terminating or gone. Deleting or evicting a pod records it in ``deletingPods`` but frees
nothing, because the request may still be refused after this webhook (a PodDisruptionBudget,
another webhook); OpenKruise frees the slot at once and over-fills the subset for up to
15 s when that happens. Nor is a re-created pod whose name is still in
``deletingPods`` let in without a booking. Each rule holds however stale the
``missingReplicas`` is, since the count bounds it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from united.api.document import Json
from united.api.intstr import INT32_MAX, IntOrStr, int_value, scaled
from united.workloadspread.injection import matched
from united.workloadspread.matching import controller_ref, is_active
from united.workloadspread.model import Status, Subset, SubsetStatus, WorkloadSpread
from united.workloadspread.version import pod_version

_ORDINAL = re.compile(r"^(.*)-([0-9]+)$")


@dataclass(frozen=True, slots=True)
class Booking:
    """The subset chosen (``None``: none, the pod goes unplaced), the status to write
    (``None``: no write needed) and the uid given to a pod without a name."""

    subset: str | None
    status: Status | None = None
    uid: str | None = None


@dataclass(frozen=True, slots=True)
class Slot:
    """One subset as a booking sees it."""

    subset: Subset
    status: SubsetStatus
    #: Active pods seen by the controller plus pending bookings.
    count: int
    #: ``maxReplicas`` resolved, ``None`` for no maximum.
    limit: int | None
    minimum: int
    #: Slots left, ``None`` for no maximum.
    free: int | None
    unschedulable: bool

    @property
    def open(self) -> bool:
        return not self.unschedulable and (self.free is None or self.free > 0)


def book_create(ws: WorkloadSpread, pod: Json, *, replicas: int, now: datetime, new_uid: Callable[[], str]) -> Booking:
    """Choose the subset for a pod being created and book it (see the module docstring)."""
    subsets = ws.spec.subsets
    if not subsets:
        return Booking(None)
    if _single_unlimited(ws):
        return Booking(subsets[0].name)
    if _ordinal_based(ws):
        return Booking(_by_ordinal(ws, pod))
    version = pod_version(pod)
    statuses = versioned(ws, version, replicas=replicas)
    name = str((pod.get("metadata") or {}).get("name") or "")
    if name:
        again = next((s.name for s in statuses if name in s.creating_pods), None)
        if again is not None:
            return Booking(again)
    returning = next((s.name for s in statuses if name and name in s.deleting_pods), None)
    chosen = choose(slots(ws, statuses, replicas=replicas), returning=returning)
    if chosen is None:
        return Booking(None)
    if chosen.limit is None and not chosen.minimum:
        return Booking(chosen.subset.name)
    key = name or new_uid()
    booked = dataclasses.replace(
        chosen.status,
        creating_pods={**chosen.status.creating_pods, key: stamp(now)},
        deleting_pods={k: v for k, v in chosen.status.deleting_pods.items() if k != name},
        missing_replicas=-1 if chosen.free is None else chosen.free - 1,
    )
    return Booking(chosen.subset.name, _with(ws.status, version, statuses, booked), None if name else key)


def book_delete(ws: WorkloadSpread, pod: Json, *, now: datetime) -> Booking:
    """Note a pod being deleted or evicted in its subset's ``deletingPods``; frees no slot."""
    m = matched(pod)
    if m is None or m.name != ws.name or ws.spec.subset(m.subset) is None:
        return Booking(None)
    if not is_active(pod) or controller_ref(pod) is None or _single_unlimited(ws) or _ordinal_based(ws):
        return Booking(m.subset)
    version = pod_version(pod)
    name = str((pod.get("metadata") or {}).get("name") or "")
    current = ws.status.versioned.get(version) or ()
    if not name or any(name in s.creating_pods or name in s.deleting_pods for s in current):
        return Booking(m.subset)
    entry = next((s for s in current if s.name == m.subset), None)
    spec_subset = ws.spec.subset(m.subset)
    if entry is None or spec_subset is None or spec_subset.max_replicas is None:
        return Booking(m.subset)
    noted = dataclasses.replace(entry, deleting_pods={**entry.deleting_pods, name: stamp(now)})
    return Booking(m.subset, _with(ws.status, version, current, noted))


def versioned(ws: WorkloadSpread, version: str, *, replicas: int) -> tuple[SubsetStatus, ...]:
    """The version's status list in spec order; subsets it lacks (a new version, a subset added
    to the spec) start empty with their whole maximum free, as in OpenKruise; entries of
    subsets no longer in the spec are kept after them, untouched."""
    current = {s.name: s for s in ws.status.versioned.get(version) or ()}
    out = [current.get(s.name) or initial(s, replicas=replicas) for s in ws.spec.subsets]
    names = {s.name for s in ws.spec.subsets}
    return (*out, *(s for s in current.values() if s.name not in names))


def initial(subset: Subset, *, replicas: int) -> SubsetStatus:
    limit = resolve(subset.max_replicas, replicas=replicas)
    return SubsetStatus(name=subset.name, missing_replicas=-1 if limit is None else limit)


def slots(ws: WorkloadSpread, statuses: tuple[SubsetStatus, ...], *, replicas: int) -> list[Slot]:
    """Every spec subset with its count, limit and free slots."""
    by_name = {s.name: s for s in statuses}
    out = []
    for subset in ws.spec.subsets:
        st = by_name.get(subset.name) or initial(subset, replicas=replicas)
        count = st.replicas + len(st.creating_pods)
        limit = resolve(subset.max_replicas, replicas=replicas)
        free = None
        if limit is not None:
            free = max(0, limit - count if st.missing_replicas < 0 else min(limit - count, st.missing_replicas))
        out.append(
            Slot(
                subset=subset,
                status=st,
                count=count,
                limit=limit,
                minimum=resolve(subset.min_replicas, replicas=replicas) or 0,
                free=free,
                unschedulable=unschedulable(st),
            )
        )
    return out


def choose(candidates: list[Slot], *, returning: str | None = None) -> Slot | None:
    """The returning pod's old subset if open, else the first open subset below its minimum,
    else the first open subset."""
    open_slots = [s for s in candidates if s.open]
    return (
        next((s for s in open_slots if s.subset.name == returning), None)
        or next((s for s in open_slots if s.count < s.minimum), None)
        or next(iter(open_slots), None)
    )


def resolve(value: IntOrStr | None, *, replicas: int) -> int | None:
    """A ``maxReplicas``/``minReplicas`` against the workload's replicas (percentages rounded up,
    strict parsing; a value that does not parse counts as 0, as in OpenKruise)."""
    if value is None:
        return None
    try:
        return max(0, scaled(value, replicas))
    except ValueError:
        return 0


def unschedulable(status: SubsetStatus) -> bool:
    return any(c.get("type") == "Schedulable" and c.get("status") == "False" for c in status.conditions)


def stamp(now: datetime) -> str:
    """``now`` as the API server stores a ``metav1.Time``: RFC 3339 in UTC, whole seconds."""
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _with(status: Status, version: str, statuses: tuple[SubsetStatus, ...], entry: SubsetStatus) -> Status:
    items = [entry if s.name == entry.name else s for s in statuses]
    return dataclasses.replace(status, versioned={**status.versioned, version: tuple(items)})


def _single_unlimited(ws: WorkloadSpread) -> bool:
    subsets = ws.spec.subsets
    return len(subsets) == 1 and subsets[0].max_replicas is None


def _ordinal_based(ws: WorkloadSpread) -> bool:
    return ws.spec.target_ref is not None and ws.spec.target_ref.kind == "StatefulSet"


def _by_ordinal(ws: WorkloadSpread, pod: Json) -> str | None:
    """StatefulSet pods by ordinal: the first subset whose cumulative ``maxReplicas`` (no maximum:
    unbounded) exceeds it, skipping subsets marked unschedulable in the aggregate status; a pod
    without an ordinal takes the first such subset."""
    match = _ORDINAL.match(str((pod.get("metadata") or {}).get("name") or ""))
    ordinal = int(match.group(2)) if match and int(match.group(2)) <= INT32_MAX else -1
    aggregate: Mapping[str, SubsetStatus] = {s.name: s for s in ws.status.subset_statuses}
    threshold = 0
    for subset in ws.spec.subsets:
        st = aggregate.get(subset.name)
        if st is not None and unschedulable(st):
            continue
        threshold += INT32_MAX if subset.max_replicas is None else int_value(subset.max_replicas)
        if threshold > ordinal:
            return subset.name
    return None
