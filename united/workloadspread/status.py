"""WorkloadSpread status, recounted from the live pods, plus what users asked for.

Per subset, in spec order (entries of removed subsets disappear), once over all versions
(``subsetStatuses``) and once per pod version (``versionedSubsetStatuses``, what the webhook
books against):

* ``replicas``: active pods (not finished, not being deleted) placed in the subset;
* ``creatingPods``: the webhook's bookings not yet seen as pods. A record is dropped when its
  pod shows up (by name, or by the ``uid`` in the annotation of a pod admitted without a name),
  or 30 s after its time (strictly: ``time + 30 < now``), with a Warning ``CreatePodFailed``;
* ``deletingPods``: pods whose delete was admitted; dropped when the pod is gone or inactive,
  or 15 s after its time, with a Warning ``DeletePodFailed`` ("expected to be deleted");
* ``missingReplicas``: ``-1`` without a maximum; otherwise the maximum (percentages of the
  target's replicas, rounded up) minus active pods and pending bookings, plus pending deletes
  (at most back to the maximum), never below 0.

The pass asks to run again at the exact second the earliest record expires.

Beyond OpenKruise:

* each ``subsetStatuses[]`` entry says **why** it looks as it does, in ``reason`` and
  ``message`` (``Unschedulable``, ``OverMaximum``, ``Full``, ``BelowMinimum``, ``Skipped``,
  ``Empty``, ``Available``, ``NoMaximum``), like a UnitedDeployment's subsets;
* ``status.unplacedReplicas`` counts the target's active pods that belong to no subset
  (admitted while the webhook was down, or placed in a subset since removed); scale-in
  removes them first (:mod:`united.workloadspread.cost`);
* kstatus conditions ``Ready``, ``Reconciling`` and ``Stalled`` (:func:`stalled` builds the
  status of a spread the controller cannot act on);
* every versioned list carries the subset's ``Schedulable`` condition as the aggregate has it,
  so pods of every version avoid a subset marked unschedulable (OpenKruise judges each
  version by its own pods only).

Times are RFC 3339 strings with whole seconds; ``now`` is passed in as epoch seconds.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from united.api.conditions import Problem, Said, kstatus
from united.api.document import Json
from united.api.field import FieldError
from united.api.timestamp import format_time, parse_time
from united.workloadspread.booking import resolve
from united.workloadspread.injection import matched
from united.workloadspread.matching import is_active
from united.workloadspread.model import FAKE_SUBSET, Status, Subset, SubsetStatus, WorkloadSpread
from united.workloadspread.reschedule import SCHEDULABLE, assess

Event = tuple[str, str, str]

CREATE_TIMEOUT = 30.0
DELETE_TIMEOUT = 15.0


@dataclass(frozen=True, slots=True)
class Recount:
    status: Status
    events: list[Event]
    requeue_after: float | None
    #: Adaptive: pods to delete so their workload recreates them in a later subset.
    failed: list[str]


def compute(
    ws: WorkloadSpread,
    buckets: Mapping[str, Mapping[str, Sequence[Json]]],
    *,
    replicas: int,
    now: float,
    problem: Problem | None = None,
) -> Recount:
    """The status for these pods (``buckets``: version -> subset -> pods, see ``pods.group``)."""
    counter = _Counter(ws, replicas=replicas, now=now)
    merged: dict[str, list[Json]] = {}
    for by_subset in buckets.values():
        for name, pods in by_subset.items():
            merged.setdefault(name, []).extend(pods)
    aggregate = counter.subsets(ws.status.subset_statuses, merged, aggregate=True)
    schedulable = {s.name: [c for c in s.conditions if c.get("type") == SCHEDULABLE] for s in aggregate}
    versioned = {}
    for version in sorted({*buckets, *ws.status.versioned}):
        entries = counter.subsets(ws.status.versioned.get(version, ()), buckets.get(version, {}), aggregate=False)
        entries = tuple(dataclasses.replace(e, conditions=tuple(schedulable.get(e.name, ()))) for e in entries)
        if version in buckets or any(e.replicas or e.creating_pods or e.deleting_pods for e in entries):
            versioned[version] = entries
    lists = [aggregate, *versioned.values()]
    creating = {
        s.name: {k for entries in lists for e in entries if e.name == s.name for k in e.creating_pods}
        for s in ws.spec.subsets
    }
    deleting = {k for entries in lists for e in entries for k in e.deleting_pods}
    aggregate = tuple(
        _explained(s, e, replicas=replicas, pending=len(creating[s.name]))
        for s, e in zip(ws.spec.subsets, aggregate, strict=True)
    )
    unplaced = sum(1 for p in merged.get(FAKE_SUBSET, ()) if is_active(p))
    extra: dict[str, Any] = {k: v for k, v in ws.status.extra.items() if k not in ("conditions", "unplacedReplicas")}
    extra["unplacedReplicas"] = unplaced
    status = Status(ws.generation, aggregate, versioned, extra)
    pending = (sum(len(keys) for keys in creating.values()), len(deleting))
    extra["conditions"] = conditions(ws, _verdict(ws, aggregate, unplaced, pending, problem), now=now)
    return Recount(status, counter.events, counter.requeue_after(), counter.failed)


def stalled(ws: WorkloadSpread, errors: Sequence[FieldError], *, now: float, reason: str = "InvalidSpec") -> Status:
    """The status of a spread the controller cannot act on (an invalid spec: the reconciler
    passes the validation errors; ``now`` in epoch seconds): counts as they were, conditions say why."""
    message = "; ".join(str(e) for e in errors)
    extra = dict(ws.status.extra)
    extra["conditions"] = conditions(ws, _Verdict(Problem(reason, message)), now=now)
    return dataclasses.replace(ws.status, observed_generation=ws.generation, extra=extra)


@dataclass(frozen=True, slots=True)
class _Verdict:
    problem: Problem | None = None
    progress: str | None = None
    ready: str = ""


def _verdict(
    ws: WorkloadSpread,
    aggregate: Sequence[SubsetStatus],
    unplaced: int,
    pending: tuple[int, int],
    problem: Problem | None,
) -> _Verdict:
    """``pending``: the webhook's creating and deleting records still open, over every list."""
    if problem is not None:
        return _Verdict(problem)
    creating, deleting = pending
    if creating or deleting:
        return _Verdict(progress=f"{creating} pod(s) being created, {deleting} being deleted")
    if unplaced:
        target = ws.spec.target_ref
        what = f"{target.kind} {target.name}" if target else "the target"
        message = (
            f"{unplaced} pod(s) of {what} belong to no subset (admitted while the webhook was unavailable, "
            "or their subset was removed); scale-in removes them first"
        )
        return _Verdict(Problem("UnplacedPods", message, stalled=False))
    placed = sum(s.replicas for s in aggregate)
    return _Verdict(ready=f"{placed} pod(s) placed in {len(aggregate)} subset(s)")


def conditions(ws: WorkloadSpread, verdict: _Verdict, *, now: float) -> list[Json]:
    """kstatus conditions; a condition's ``lastTransitionTime`` moves only when its status does."""
    problem = verdict.problem
    reconciling: Said | None = None
    stalled: Said | None = None
    if problem is not None:
        ready = (False, problem.reason, problem.message)
        if problem.stalled:
            stalled = (problem.reason, problem.message)
    elif verdict.progress is not None:
        ready = (False, "Progressing", verdict.progress)
        reconciling = ("Progressing", verdict.progress)
    else:
        ready = (True, "Placed", verdict.ready)
    previous = {c.get("type"): c for c in ws.status.extra.get("conditions") or () if isinstance(c, Mapping)}
    return kstatus(
        previous,
        ready=ready,
        reconciling=reconciling,
        stalled=stalled,
        generation=ws.generation,
        now=format_time(now),
    )


class _Counter:
    """Recounts subset lists, collecting Events, the earliest expiry and Adaptive's failed pods."""

    def __init__(self, ws: WorkloadSpread, *, replicas: int, now: float) -> None:
        self.ws = ws
        self.replicas = replicas
        self.now = now
        self.events: list[Event] = []
        self.failed: list[str] = []
        self._expiries: list[float] = []

    def requeue_after(self) -> float | None:
        """Seconds to the earliest expiry; 1 s when that is now (a record expires strictly after it)."""
        if not self._expiries:
            return None
        delay = min(self._expiries) - self.now
        return delay if delay > 0 else 1.0

    def subsets(
        self, old: Sequence[SubsetStatus], pods: Mapping[str, Sequence[Json]], *, aggregate: bool
    ) -> tuple[SubsetStatus, ...]:
        by_name = {s.name: s for s in old}
        out = []
        for index, subset in enumerate(self.ws.spec.subsets):
            entry = self._one(subset, pods.get(subset.name, ()), by_name.get(subset.name), record=aggregate)
            if aggregate:
                a = assess(self.ws, index, pods.get(subset.name, ()), entry.conditions, now=self.now)
                entry = dataclasses.replace(entry, conditions=() if a.condition is None else (a.condition,))
                self.failed.extend(a.failed)
                if a.event:
                    self.events.append(a.event)
                if a.deadline is not None:
                    self._expiries.append(a.deadline)
            out.append(entry)
        return tuple(out)

    def _one(self, subset: Subset, pods: Sequence[Json], old: SubsetStatus | None, *, record: bool) -> SubsetStatus:
        limit = resolve(subset.max_replicas, replicas=self.replicas)
        maximum = -1 if limit is None else limit
        missing = maximum
        creating = dict(old.creating_pods) if old else {}
        deleting = old.deleting_pods if old else {}
        kept_deleting: dict[str, str] = {}
        active = 0
        for pod in pods:
            name = str((pod.get("metadata") or {}).get("name") or "")
            m = matched(pod)
            creating.pop(m.uid if m is not None and m.uid else name, None)
            if not is_active(pod):
                continue
            active += 1
            if missing > 0:
                missing -= 1
            if name in deleting:
                since = deleting[name]
                if self._expired(since, DELETE_TIMEOUT):
                    if record:
                        self._event(
                            "DeletePodFailed",
                            f"Pod {self.ws.namespace}/{name} was expected to be deleted but it wasn't",
                        )
                else:
                    kept_deleting[name] = since
                    if missing < maximum:
                        missing += 1
        kept_creating: dict[str, str] = {}
        for key, since in creating.items():
            if self._expired(since, CREATE_TIMEOUT):
                if record:
                    self._event(
                        "CreatePodFailed", f"Pod {self.ws.namespace}/{key} was expected to be created but it wasn't"
                    )
            else:
                kept_creating[key] = since
                if missing > 0:
                    missing -= 1
        return SubsetStatus(
            name=subset.name,
            replicas=active,
            missing_replicas=missing,
            creating_pods=kept_creating,
            deleting_pods=kept_deleting,
            conditions=old.conditions if old else (),
        )

    def _expired(self, since: str, timeout: float) -> bool:
        """``since + timeout < now``; a pending record asks for a pass at its expiry."""
        at = parse_time(since)
        if at is None:
            return True
        expiry = math.floor(at) + timeout
        if expiry < self.now:
            return True
        self._expiries.append(expiry)
        return False

    def _event(self, reason: str, message: str) -> None:
        self.events.append(("Warning", reason, message))


def _explained(subset: Subset, entry: SubsetStatus, *, replicas: int, pending: int) -> SubsetStatus:
    reason, message = explain(subset, entry, replicas=replicas, pending=pending)
    return dataclasses.replace(entry, reason=reason, message=message)


def explain(subset: Subset, entry: SubsetStatus, *, replicas: int, pending: int) -> Said:
    """Why a subset looks as it does: ``(reason, message)``; ``pending``: the webhook's open
    bookings for the subset, in any version's list (the aggregate's own count none)."""
    limit = resolve(subset.max_replicas, replicas=replicas)
    minimum = resolve(subset.min_replicas, replicas=replicas) or 0
    n = entry.replicas
    room = None if limit is None else max(0, min(entry.missing_replicas, limit - n - pending))
    booked = f", {pending} being created" if pending else ""
    of_max = ""
    if limit is not None:
        shown = subset.max_replicas
        of_max = f"maxReplicas {shown}" + (
            f" of {replicas} replicas, rounded up: {limit}" if isinstance(shown, str) else ""
        )
    for c in entry.conditions:
        if c.get("type") == SCHEDULABLE and c.get("status") == "False":
            return "Unschedulable", f"{n} replica(s){booked}; {c.get('message') or 'pods could not be scheduled'}"
    if limit is not None and n > limit:
        return "OverMaximum", f"{n} replicas, over {of_max}: the extra pods are removed first on scale-in"
    if limit is not None and limit == 0:
        return "Skipped", f"{of_max}: no pod is placed here"
    if room == 0:
        return "Full", f"{n} replica(s){booked}, {of_max}: new pods go to later subsets"
    if n < minimum:
        return (
            "BelowMinimum",
            f"{n} replica(s){booked}, below minReplicas {subset.min_replicas}: new pods come here first",
        )
    if n == 0 and not pending:
        return "Empty", "no pods yet: " + (f"{of_max}, room for {limit}" if limit is not None else "no maximum")
    if limit is None:
        return "NoMaximum", f"{n} replica(s){booked}; no maxReplicas: takes the pods earlier subsets have no room for"
    return "Available", f"{n} replica(s){booked}, {of_max}: room for {room} more"
