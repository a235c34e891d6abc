"""One controller pass over a WorkloadSpread, as a pure function of what the caches hold.

:func:`sync` takes the spread, the namespace's pods, the target workload (``None``: not
found), its ReplicaSets and the nodes, and ``now``; it returns everything the reconciler
writes: the status, the deletion costs and adoption patches to apply to pods, the pods to
delete (Adaptive), the Events, and when to run again. The steps are OpenKruise's:
the target's pods, adoption of unplaced pods whose node fits a subset, deletion costs, the
status recount, Adaptive rescheduling.

A spread being deleted is left alone. A pass with nothing to change returns no costs,
adoptions or deletions, no Events, and the input's status unchanged (``status ==
ws.status``), so the reconciler writes nothing.

A ``targetFilter.replicasPathList`` that does not lead to integers in the workload stops the
pass: the status gets ``Stalled`` (reason ``InvalidReplicasPath``) and a Warning Event once,
and no pod is touched. A workload whose latest version cannot be told yet (a Deployment
whose new ReplicaSet does not exist yet) gets no cost changes in that pass; the rest goes on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from united.api.conditions import Problem
from united.api.document import Json
from united.api.field import ManifestError
from united.workloadspread import cost
from united.workloadspread.adoption import adopt, adopted_subset
from united.workloadspread.model import Status, WorkloadSpread
from united.workloadspread.pods import group, pods_of, replicas_of
from united.workloadspread.status import compute, stalled
from united.workloadspread.version import workload_version


@dataclass(frozen=True, slots=True)
class Sync:
    """What one pass decided. ``costs``: pod name -> annotation value; ``adoptions``: pod name ->
    merge patch; ``deletions``: pod names; ``events``: ``(type, reason, message)``."""

    status: Status
    costs: dict[str, str] = field(default_factory=dict)
    adoptions: dict[str, Json] = field(default_factory=dict)
    deletions: list[str] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)
    requeue_after: float | None = None


def sync(
    ws: WorkloadSpread,
    *,
    pods: Sequence[Json],
    workload: Json | None,
    replicasets: Sequence[Json],
    nodes: Mapping[str, Json],
    now: datetime,
) -> Sync:
    """One pass (module docstring)."""
    at = now.timestamp()
    target = ws.spec.target_ref
    if target is None or ws.deleting:
        return Sync(ws.status)
    try:
        replicas = replicas_of(ws, workload)
    except ManifestError as e:
        status = stalled(ws, e.errors, now=at, reason="InvalidReplicasPath")
        if status == ws.status:
            return Sync(ws.status)
        message = "; ".join(str(x) for x in e.errors)
        return Sync(status, events=[("Warning", "InvalidReplicasPath", message)])
    mine = pods_of(ws, workload=workload, replicasets=replicasets, pods=pods)
    adoptions = adopt(ws, mine, nodes=nodes, replicas=replicas)
    buckets = group(ws, mine, adopted={name: adopted_subset(p) for name, p in adoptions.items()})
    latest = workload_version(target.kind, workload, replicasets=replicasets) if workload is not None else None
    costs = cost.changes(cost.costs(ws, buckets, replicas=replicas, latest=latest), mine) if latest else {}
    problem = (
        None
        if workload is not None
        else Problem("TargetNotFound", f"{target.kind} {target.name} not found", stalled=False)
    )
    recount = compute(ws, buckets, replicas=replicas, now=at, problem=problem)
    status = ws.status if recount.status == ws.status else recount.status
    return Sync(status, costs, adoptions, recount.failed, recount.events, recount.requeue_after)
