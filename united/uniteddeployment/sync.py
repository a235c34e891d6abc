"""One UnitedDeployment pass's decisions, as pure functions of what the caches hold.

The reconciler reads its caches (the UnitedDeployment, its children in every site, their pods,
its revisions), asks these functions what to do and executes the answer. Everything here is a
function of plain data, with the wall clock (``seconds``, epoch seconds: pod timestamps are
wall-clock) and the status clock (``now``, RFC 3339) passed in, so each decision is testable
without a client, a loop or time passing:

* :func:`states` and :func:`allocation` — what each subset holds and gets (adaptive
  scheduling's decisions folded in: unschedulable subsets capped, reserved pods, regrowth);
* :func:`capacity`, :func:`rollout_decision`, :func:`apply_wave` — a Progressive rollout:
  donors held back while receivers' pods become available, the wave's partitions and
  ``maxUnavailable`` overrides;
* :func:`report` — the status the pass reports, and :func:`status_due` whether it must be
  written; :func:`requeue` — when to run again.

Nothing here imports the client or the runtime (the import-linter contract checks it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from united.api.conditions import Problem
from united.api.document import Json
from united.api.timestamp import parse_time
from united.multicluster.health import CLUSTER_NOT_FOUND, CLUSTER_SYNCING, cluster_ready
from united.uniteddeployment import adaptive, rollout
from united.uniteddeployment.allocation import Allocation, Plan, SubsetState, allocate, partition
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import DEPLOYMENT, Progressive, UnitedDeployment
from united.uniteddeployment.render import KINDS
from united.uniteddeployment.shift import Holding, Shift, shift
from united.uniteddeployment.status import UPDATED, ChildView, Facts, compute, hpa_selector, observe

DEADLINE_MARGIN = 0.05
"""Seconds added to a requeue for an adaptive deadline: the timeouts are strict (``<``), so
the pass must run just after the deadline, not at it."""
TERMINATING_REQUEUE = 2.0
"""Seconds until the next pass while a subset's child is being deleted (its successor waits)."""


@dataclass(frozen=True, slots=True)
class Inputs:
    """What every decision of one pass reads: the admitted spec, the status it starts from (ours
    when the cache lags behind our last write), the label and annotation keys, and the wall clock."""

    ud: UnitedDeployment
    previous: Mapping[str, Any]
    keys: Keys
    seconds: float

    def previous_subsets(self) -> dict[Any, Mapping[str, Any]]:
        """The previous status' ``subsetStatuses``, by name."""
        return {s.get("name"): s for s in self.previous.get("subsetStatuses") or () if isinstance(s, dict)}


@dataclass(frozen=True, slots=True)
class Unusable:
    """A remote subset whose cluster cannot be used now, and why (``reason``: the member's
    ``Ready`` reason, ``ClusterNotFound``, ``NamespaceNotAllowed``, ``ClusterSyncing``)."""

    cluster: str
    reason: str
    since: float = 0.0
    detail: str = ""


def replicas_of(child: Mapping[str, Any]) -> int:
    return int((child.get("spec") or {}).get("replicas") or 0)


def status_int(obj: Mapping[str, Any], name: str) -> int:
    return int((obj.get("status") or {}).get(name) or 0)


def states(
    by_subset: Mapping[str, Json], known: Mapping[str, SubsetState], down: Mapping[str, Unusable]
) -> dict[str, SubsetState]:
    """What allocation reads of each subset: its child's replicas and ready replicas, or the
    last-known counts of a cluster never synced; those in a cluster that cannot be used marked
    unreachable."""
    state = {
        name: SubsetState(replicas=replicas_of(c), ready_replicas=status_int(c, "readyReplicas"))
        for name, c in by_subset.items()
    }
    state |= known
    for name in down:
        if name in state:
            state[name] = dataclasses.replace(state[name], unreachable=True)
    return state


def decide(
    i: Inputs,
    settings: adaptive.Settings,
    by_subset: Mapping[str, Json],
    pods: Mapping[str, list[Json]],
    updated: str,
) -> dict[str, adaptive.Decision]:
    """Adaptive decisions for every subset with a child, in topology order."""
    previous = i.previous_subsets()
    updated_since = None
    for c in i.previous.get("conditions") or ():
        if isinstance(c, dict) and c.get("type") == UPDATED:
            updated_since = parse_time(c.get("lastTransitionTime"))
    out = {}
    for subset in i.ud.spec.subsets:
        child = by_subset.get(subset.name)
        if child is None:
            continue
        replicas = replicas_of(child)
        out[subset.name] = adaptive.decide(
            settings,
            pods.get(subset.name, []),
            subset=subset.name,
            previous=adaptive.schedulable_condition(previous.get(subset.name)),
            now=i.seconds,
            keys=i.keys,
            updated_revision=updated,
            updated_since=updated_since,
            replicas=replicas,
            partition=partition(i.ud.spec, subset.name, replicas),
        )
    return out


def cluster_down(
    i: Inputs, settings: adaptive.Settings, down: Mapping[str, Unusable], state: Mapping[str, SubsetState]
) -> dict[str, adaptive.Decision]:
    """Adaptive decisions for the subsets whose cluster cannot be used: marked once that has
    lasted ``rescheduleCriticalSeconds`` (:func:`~united.uniteddeployment.adaptive.cluster_down`)."""
    previous = i.previous_subsets()
    out = {}
    for name, site in down.items():
        mark = adaptive.schedulable_condition(previous.get(name))
        if site.reason == CLUSTER_SYNCING and (mark is None or mark.status):
            continue  # reachable, caches syncing (a restart): nothing moves; a mark is held
        out[name] = adaptive.cluster_down(
            settings,
            subset=name,
            cluster=site.cluster,
            since=site.since or i.seconds,
            now=i.seconds,
            previous=mark,
            replicas=state[name].replicas if name in state else 0,
        )
    return out


def with_decisions(
    state: Mapping[str, SubsetState], decisions: Mapping[str, adaptive.Decision]
) -> dict[str, SubsetState]:
    """``state`` with each decision's unschedulable mark and reserved pods."""
    out = dict(state)
    for name, d in decisions.items():
        if name not in out and not d.unschedulable:
            continue  # nothing known of it: no state, as for a subset without a child
        st = out.get(name, SubsetState(unreachable=True))
        out[name] = dataclasses.replace(st, unschedulable=d.unschedulable, reserved_pods=d.held)
    return out


def allocation(
    i: Inputs,
    settings: adaptive.Settings | None,
    state: Mapping[str, SubsetState],
    decisions: Mapping[str, adaptive.Decision],
) -> tuple[Plan, dict[str, adaptive.Decision]]:
    """The allocation, and the decisions as regrowth left them (raises ``AllocationError``)."""
    plan = allocate(i.ud.spec, state)
    if settings is None or not settings.reserve:
        return plan, dict(decisions)
    return regrow(i, settings, plan, state, decisions)


def regrow(
    i: Inputs,
    settings: adaptive.Settings,
    plan: Plan,
    state: Mapping[str, SubsetState],
    decisions: Mapping[str, adaptive.Decision],
) -> tuple[Plan, dict[str, adaptive.Decision]]:
    """Reservation: a recovered subset that grows keeps its substitutes until its new pods
    prove ready; allocate again with its new pods counted as reserved."""
    previous = i.previous_subsets()
    state, decisions = dict(state), dict(decisions)
    grown = False
    for name, d in list(decisions.items()):
        st = state[name]
        again = adaptive.regrow(
            settings,
            d,
            subset=name,
            previous=adaptive.schedulable_condition(previous.get(name)),
            replicas=st.replicas,
            allocated=plan[name].replicas,
            now=i.seconds,
        )
        if again is None:
            continue
        decisions[name] = again
        state[name] = SubsetState(
            replicas=plan[name].replicas,
            ready_replicas=st.ready_replicas,
            unschedulable=True,
            reserved_pods=again.held,
        )
        grown = True
    return (allocate(i.ud.spec, state) if grown else plan), decisions


def max_unavailable(
    settings: adaptive.Settings | None,
    by_subset: Mapping[str, Json],
    plan: Plan,
    decisions: Mapping[str, adaptive.Decision],
) -> dict[str, int]:
    """Reservation: how many pods a rollout of each unschedulable subset may take down, so
    its reserved (pending) pods can be replaced by the new revision."""
    if settings is None or not settings.reserve:
        return {}
    out = {}
    for name, d in decisions.items():
        if not d.unschedulable or name not in by_subset:
            continue
        out[name] = adaptive.max_unavailable(
            plan[name].replicas, status_int(by_subset[name], "readyReplicas"), d.update_timeout_pods
        )
    return out


def counts(i: Inputs, pods: Mapping[str, list[Json]], updated: str) -> dict[str, rollout.Counts]:
    """Each subset's pods counted for a Progressive rollout (available: Ready for the
    template's ``minReadySeconds``)."""
    template = i.ud.spec.template
    assert template is not None
    min_ready = template.spec.get("minReadySeconds")
    return {
        name: rollout.counts(
            subset_pods,
            revision_label=i.keys.revision,
            updated=updated,
            min_ready_seconds=min_ready if isinstance(min_ready, int) else 0,
            now=i.seconds,
        )
        for name, subset_pods in pods.items()
    }


def capacity(
    ud: UnitedDeployment, plan: Plan, by_subset: Mapping[str, Json], counts: Mapping[str, rollout.Counts]
) -> tuple[Plan, Shift]:
    """The allocation with donors held back until the receivers' pods are available, and
    the removed subsets' children kept meanwhile (:mod:`united.uniteddeployment.shift`)."""
    children = {
        name: Holding(replicas_of(c), counts[name].available if name in counts else 0) for name, c in by_subset.items()
    }
    progressive = ud.spec.update.progressive or Progressive()
    moved = shift(
        {a.name: a.replicas for a in plan.subsets},
        children,
        order=[a.name for a in plan.subsets],
        total=plan.replicas,
        budget=rollout.budget(progressive, plan.replicas),
    )
    subsets = [
        a
        if moved.replicas[a.name] == a.replicas
        else dataclasses.replace(
            a,
            replicas=moved.replicas[a.name],
            message=f"{a.message}; {moved.replicas[a.name]} kept until the other subsets' new pods are available",
        )
        for a in plan.subsets
    ]
    subsets += [
        Allocation(n, moved.replicas[n], 0, "draining", "removed: kept until the other subsets' new pods are available")
        for n in moved.draining
    ]
    return dataclasses.replace(plan, subsets=tuple(subsets)), moved


def rollout_decision(
    i: Inputs,
    by_subset: Mapping[str, Json],
    counts: Mapping[str, rollout.Counts],
    plan: Plan,
    updated: str,
) -> rollout.Decision:
    """A Progressive rollout's decision for this pass, from each subset's child and pods."""
    template = i.ud.spec.template
    assert template is not None
    kind = KINDS[template.variant]
    partitioned = template.variant != DEPLOYMENT
    facts = {}
    for a in plan.subsets:
        subset_counts = counts.get(a.name, rollout.Counts())
        child = by_subset.get(a.name)
        if child is None:
            facts[a.name] = rollout.SubsetFacts(a.replicas, partitioned, exists=False, counts=subset_counts)
            continue
        meta = child.get("metadata") or {}
        facts[a.name] = rollout.SubsetFacts(
            a.replicas,
            partitioned,
            revision=(meta.get("labels") or {}).get(i.keys.revision),
            child_replicas=replicas_of(child),
            partition=kind.read_partition(child) or 0,
            max_unavailable=rollout.rolling_max_unavailable(child),
            max_surge=rollout.rolling_max_surge(child),
            settled=status_int(child, "observedGeneration") >= int(meta.get("generation") or 0),
            reported=None
            if partitioned
            else (
                status_int(child, "replicas"),
                status_int(child, "updatedReplicas"),
                status_int(child, "availableReplicas"),
            ),
            counts=subset_counts,
        )
    return rollout.decide(
        i.ud.spec.update.progressive or Progressive(),
        replicas=plan.replicas,
        revision=updated,
        facts=facts,
        subsets=[s.name for s in i.ud.spec.subsets],
        previous=i.previous.get("rollout") or {},
        progress=(
            sum(f.counts.updated for f in facts.values()),
            sum(f.counts.updated_ready for f in facts.values()),
        ),
        previous_progress=(
            int(i.previous.get("updatedReplicas") or 0),
            int(i.previous.get("updatedReadyReplicas") or 0),
        ),
        annotations=i.ud.annotations,
        now=i.seconds,
    )


@dataclass(frozen=True, slots=True)
class Wave:
    """What a rollout's wave does to the children: their partitions (in the plan), the
    ``maxUnavailable`` overrides, the subsets held at an older revision (by revision name),
    and those that may take no pod down (the override written exactly)."""

    plan: Plan
    overrides: dict[str, int]
    held: dict[str, str]
    still: frozenset[str]


def apply_wave(plan: Plan, wave: rollout.Decision | None, updated: str) -> Wave:
    """The plan and the children's overrides under the rollout's decision (none: as planned)."""
    if wave is None:
        return Wave(plan, {}, {}, frozenset())
    targets = wave.targets
    plan = dataclasses.replace(
        plan,
        subsets=tuple(
            dataclasses.replace(a, partition=targets[a.name].partition) if a.name in targets else a
            for a in plan.subsets
        ),
    )
    return Wave(
        plan,
        {n: t.max_unavailable for n, t in targets.items() if t.max_unavailable},
        {n: t.revision for n, t in targets.items() if t.revision != updated},
        frozenset(n for n, t in targets.items() if t.max_unavailable == 0),
    )


def unavailable(down: Mapping[str, Unusable]) -> Problem:
    """The UD's condition while some subsets' clusters cannot be used: the others converge;
    ``Stalled`` only when a ``Cluster`` is missing (a spec problem)."""
    messages = [
        f"subset {name}: "
        + cluster_ready(site.cluster, site.reason, site.since)["message"].removesuffix(
            "; showing the last-known counts"
        )
        for name, site in down.items()
    ]
    missing = any(site.reason == CLUSTER_NOT_FOUND for site in down.values())
    return Problem(CLUSTER_NOT_FOUND if missing else "ClusterUnavailable", "; ".join(messages), stalled=missing)


def problem(
    errors: Sequence[str], immutable: Sequence[str], wave: rollout.Decision | None, down: Mapping[str, Unusable]
) -> Problem | None:
    """The one problem the status reports, most pressing first: failed writes, immutable
    fields, a stuck rollout, clusters that cannot be used."""
    if errors:
        return Problem("WriteFailed", "; ".join(errors[:3]), stalled=False)
    if immutable:
        return Problem("ImmutableField", "; ".join(immutable))
    if wave is not None and wave.status["phase"] == rollout.STALLED:
        return Problem(rollout.ROLLOUT_STUCK, wave.status["message"])
    if down:
        return unavailable(down)
    return None


def views(
    keys: Keys,
    by_subset: Mapping[str, Json],
    pods: Mapping[str, list[Json]],
    updated: str,
    decisions: Mapping[str, adaptive.Decision],
) -> dict[str, ChildView]:
    """What the status reads of each subset's child and pods (reserved pods from adaptive)."""
    out = {}
    for subset, child in by_subset.items():
        view = observe(child, pods.get(subset, []), revision_label=keys.revision, updated=updated)
        d = decisions.get(subset)
        out[subset] = dataclasses.replace(view, reserved=d.reserved) if d is not None else view
    return out


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the pass did and saw, for the status: the plan written, each child's view, whether
    each child took its partition, the revisions, the rollout, the clusters."""

    generation: int
    now: str
    plan: Plan
    children: Mapping[str, ChildView]
    applied: Mapping[str, bool]
    updated: str
    collision_count: int
    problem: Problem | None
    extra_children: int
    decisions: Mapping[str, adaptive.Decision]
    wave: rollout.Decision | None
    draining: Sequence[str]
    clusters: Mapping[str, str]
    down: Mapping[str, Unusable]


def report(i: Inputs, settings: adaptive.Settings | None, o: Outcome) -> Json:
    """The status the pass reports."""
    selector = i.ud.spec.selector.to_dict() if i.ud.spec.selector else None
    reserved_label = i.keys.reserved_pod if settings and settings.reserve else None
    facts = Facts(
        generation=o.generation,
        previous=i.previous,
        label_selector=hpa_selector(selector, reserved_label=reserved_label),
        now=o.now,
        plan=o.plan,
        children=o.children,
        partition_applied=o.applied,
        updated_revision=o.updated,
        current_revision=i.previous.get("currentRevision") or None,
        collision_count=o.collision_count,
        problem=o.problem,
        extra_children=o.extra_children,
        schedulable={n: d.condition.to_dict() for n, d in o.decisions.items() if d.condition is not None},
        rollout=o.wave.status if o.wave is not None else None,
        rollout_states={
            **({n: t.state for n, t in o.wave.targets.items()} if o.wave is not None else {}),
            **dict.fromkeys(o.draining, rollout.DRAINING),
        },
        clusters=o.clusters,
        cluster_conditions={n: cluster_ready(s.cluster, s.reason, s.since, s.detail) for n, s in o.down.items()},
    )
    return compute(facts)


def schedulable(status: Mapping[str, Any]) -> dict[str, Any]:
    """The ``Schedulable`` conditions of a status, by subset."""
    return {
        str(s.get("name")): s.get("conditions")
        for s in status.get("subsetStatuses") or ()
        if isinstance(s, dict) and s.get("conditions")
    }


def status_due(status: Mapping[str, Any], previous: Mapping[str, Any], *, writes: int, failed: bool) -> bool:
    """Whether the pass writes its status now. A pass that wrote children leaves the status to
    the next pass (which sees the children's answers), except when a write failed (users see
    why), and except for the Schedulable conditions and ``status.rollout``: they are the memory
    of adaptive scheduling (when a subset was marked) and of a rollout (its wave, since when),
    written in the same pass as the child writes they cause, or the next pass would not know
    why a subset was capped or when a pause began."""
    return (
        not writes
        or failed
        or schedulable(status) != schedulable(previous)
        or status.get("rollout") != previous.get("rollout")
    )


def requeue(
    seconds: float,
    *,
    terminating: bool,
    decisions: Mapping[str, adaptive.Decision],
    wave: rollout.Decision | None,
) -> float | None:
    """When to run again: soon while a child is being deleted, just after the earliest
    adaptive deadline, when the rollout asks; None: on the next event."""
    delays = [TERMINATING_REQUEUE] if terminating else []
    deadline = min((d.deadline for d in decisions.values() if d.deadline is not None), default=None)
    if deadline is not None:
        delays.append(max(0.0, deadline - seconds) + DEADLINE_MARGIN)
    if wave is not None and wave.requeue_after is not None:
        delays.append(wave.requeue_after)
    return min(delays, default=None)
