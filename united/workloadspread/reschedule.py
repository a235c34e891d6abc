"""Adaptive scheduling: mark a subset whose pods cannot be scheduled, and move those pods.

On with ``scheduleStrategy.type: Adaptive`` and ``adaptive.rescheduleCriticalSeconds > 0``;
otherwise every subset's ``Schedulable`` condition is removed. For each subset but the last:

* a pod *fails* when it is active, ``Pending``, bound to no node, its ``PodScheduled``
  condition is ``False`` with reason ``Unschedulable``, and that has been so for more than
  ``rescheduleCriticalSeconds`` (strictly);
* a failed pod sets ``Schedulable=False`` (reason ``PodUnschedulable``); the time of the
  first transition is kept while pods keep failing, and the failed pods are deleted, so their
  workload recreates them and the webhook places them in a later subset;
* a subset marked ``False`` recovers (``True``, reason ``Sufficient``, Normal Event
  ``RecoverSchedulable``) once the recovery window has passed since the first transition.

The last subset is never rescheduled: it is ``Schedulable=True`` always.

Differences from OpenKruise (kruise#1088), for clusters that add nodes on demand:

* the clock starts when the scheduler first found the pod unschedulable (the ``PodScheduled``
  condition's ``lastTransitionTime``; its creation time when that is missing), not at the
  pod's creation: time spent before scheduling (a long image-pull-free queue, a gated pod)
  does not count, and ``rescheduleCriticalSeconds`` means "how long a cluster autoscaler may
  take to bring a node for it";
* no cap of ``295 / (n - 1)`` seconds on ``rescheduleCriticalSeconds``. The cap made sure a
  pod could walk through every subset before the first one recovers; here the recovery
  window grows instead: :func:`window` is 300 s or ``(n - 1) * rescheduleCriticalSeconds + 5``
  when that is longer. The constants live here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from united.api.document import Json
from united.api.timestamp import format_time, parse_time
from united.workloadspread.injection import matched
from united.workloadspread.model import WorkloadSpread

SCHEDULABLE = "Schedulable"
UNSCHEDULABLE = "PodUnschedulable"
SUFFICIENT = "Sufficient"
RECOVER_EVENT = "RecoverSchedulable"
#: OpenKruise's ``MaxScheduledFailedDuration``: the shortest recovery window, seconds.
RECOVERY_WINDOW = 300.0
#: Slack OpenKruise leaves in its cap (``300 - 5``), kept in the longer window.
WINDOW_SLACK = 5.0


@dataclass(frozen=True, slots=True)
class Assessment:
    """One subset's ``Schedulable`` condition (``None``: none, Adaptive is off), the pods to delete,
    when to look again without any watch event (epoch seconds), and the Event to send."""

    condition: Json | None
    failed: tuple[str, ...] = ()
    deadline: float | None = None
    event: tuple[str, str, str] | None = None


def window(ws: WorkloadSpread) -> float:
    """How long a marked subset stays unschedulable (module docstring)."""
    critical = ws.spec.schedule_strategy.reschedule_critical_seconds or 0
    return max(RECOVERY_WINDOW, (len(ws.spec.subsets) - 1) * critical + WINDOW_SLACK)


def assess(ws: WorkloadSpread, index: int, pods: Sequence[Json], old: Sequence[Json], *, now: float) -> Assessment:
    """The ``Schedulable`` condition of subset ``index`` given its pods and its old conditions."""
    strategy = ws.spec.schedule_strategy
    if not strategy.reschedules:
        return Assessment(None)
    previous = next((c for c in old if c.get("type") == SCHEDULABLE), None)
    if index == len(ws.spec.subsets) - 1:
        return Assessment(_set(previous, True, SUFFICIENT, "the last subset takes every pod left", now))
    critical = float(strategy.reschedule_critical_seconds or 0)
    failed, deadline = [], None
    for pod in pods:
        since = unschedulable_since(pod)
        if since is None:
            continue
        if since + critical < now:
            failed.append(str((pod.get("metadata") or {}).get("name") or ""))
        else:
            deadline = _earliest(deadline, since + critical)
    if failed:
        message = f"pods unschedulable for more than {critical:g}s; new pods go to later subsets"
        return Assessment(_set(previous, False, UNSCHEDULABLE, message, now), tuple(failed), deadline)
    if previous is not None and previous.get("status") == "False":
        marked = parse_time(previous.get("lastTransitionTime"))
        until = (marked or now) + window(ws)
        if until >= now:
            return Assessment(previous, (), _earliest(deadline, until))
        subset = ws.spec.subsets[index].name
        event = (
            "Normal",
            RECOVER_EVENT,
            f"Subset {subset} of WorkloadSpread {ws.namespace}/{ws.name} is recovered "
            "from unschedulable to schedulable",
        )
        return Assessment(_set(previous, True, SUFFICIENT, "", now), (), deadline, event)
    return Assessment(_set(previous, True, SUFFICIENT, "", now), (), deadline)


def delete_failed(ws: WorkloadSpread, pod: Mapping[str, Any]) -> tuple[str, str, str]:
    """The Warning Event when deleting a failed pod did not work (OpenKruise's wording)."""
    found = matched(dict(pod))
    subset = found.subset if found is not None else ""
    name = (pod.get("metadata") or {}).get("name")
    return (
        "Warning",
        "DeletePodFailed",
        f"Failed to delete unschedulabe Pod {ws.namespace}/{name} in Subset {subset} of WorkloadSpread "
        f"{ws.namespace}/{ws.name}",
    )


def unschedulable_since(pod: Mapping[str, Any]) -> float | None:
    """When the scheduler first found this pod unschedulable (module docstring), else ``None``."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    if meta.get("deletionTimestamp") or status.get("phase") != "Pending" or (pod.get("spec") or {}).get("nodeName"):
        return None
    for c in status.get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == "PodScheduled":
            if c.get("status") != "False" or c.get("reason") != "Unschedulable":
                return None
            return parse_time(c.get("lastTransitionTime")) or parse_time(meta.get("creationTimestamp"))
    return None


def _set(previous: Json | None, value: bool, reason: str, message: str, now: float) -> Json:
    """OpenKruise's setter: same status and reason keep the old condition; same status, other
    reason keep its time; a new status starts now."""
    status = "True" if value else "False"
    if previous is not None and previous.get("status") == status:
        if previous.get("reason") == reason:
            return previous
        since = previous.get("lastTransitionTime") or format_time(now)
    else:
        since = format_time(now)
    return {"type": SCHEDULABLE, "status": status, "lastTransitionTime": since, "reason": reason, "message": message}


def _earliest(a: float | None, b: float) -> float:
    return b if a is None else min(a, b)
