"""UnitedDeployment status, computed from plain facts (OpenKruise's fields, plus ours).

The status carries OpenKruise's fields (counts, revisions, ``labelSelector`` for HPA,
the v1alpha1 ``updateStatus`` and ``subsetReplicas`` maps) and what users asked for and
no peer gives: per-subset ``subsetStatuses`` that say how many replicas a subset should
have and **why** (the allocator's reason and message), whether its partition is really held,
and kstatus conditions (``Ready``, ``Reconciling``, ``Stalled``) that GitOps tools read.

Unlike OpenKruise, entries of removed subsets disappear, and the status is computed (and
written) even when a reconcile fails part-way, so a failure is visible where users look.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from united.api.conditions import Problem, Said, kstatus
from united.api.document import Json
from united.api.selector import EQUALS, Requirement, Selector
from united.api.selector import parse as parse_selector
from united.uniteddeployment.allocation import Plan

UPDATED = "UnitedDeploymentUpdated"


@dataclass(frozen=True, slots=True)
class ChildView:
    """What one child workload and its pods say."""

    name: str
    spec_replicas: int = 0
    replicas: int = 0
    ready: int = 0
    updated: int = 0
    """Active pods carrying the UnitedDeployment's updated revision."""
    updated_ready: int = 0
    reserved: int = 0
    current: bool = True
    """The child's controller has observed the child's latest generation."""


@dataclass(frozen=True)
class Facts:
    generation: int
    previous: Mapping[str, Any]
    label_selector: str
    now: str
    plan: Plan | None = None
    children: Mapping[str, ChildView] = field(default_factory=dict)
    partition_applied: Mapping[str, bool] = field(default_factory=dict)
    updated_revision: str | None = None
    current_revision: str | None = None
    collision_count: int = 0
    problem: Problem | None = None
    extra_children: int = 0
    """Children still to delete (removed subsets, duplicates, other kinds)."""
    schedulable: Mapping[str, Json] = field(default_factory=dict)
    """Adaptive scheduling: each subset's ``Schedulable`` condition (``subsetStatuses[].conditions``)."""
    clusters: Mapping[str, str] = field(default_factory=dict)
    """Multi-cluster: each remote subset's ``Cluster`` (``subsetStatuses[].cluster``)."""
    cluster_conditions: Mapping[str, Json] = field(default_factory=dict)
    """Multi-cluster: the ``ClusterReady=False`` condition of each remote subset whose cluster
    cannot be used now (``united.multicluster.health.cluster_ready``)."""
    rollout: Json | None = None
    """A Progressive rollout's ``status.rollout`` (:mod:`united.uniteddeployment.rollout`)."""
    rollout_states: Mapping[str, str] = field(default_factory=dict)
    """A Progressive rollout: where each subset is (``subsetStatuses[].rollout``)."""


def hpa_selector(selector: Mapping[str, Any] | None, *, reserved_label: str | None = None) -> str:
    """``status.labelSelector``, the string HPA reads through the scale subresource.

    In reservation mode reserved pods must not count for HPA, so ``<reserved_label>=false`` is
    added as one more requirement and the whole selector is printed canonically (sorted by
    key, as apimachinery's ``Selector.String()``); OpenKruise appends it at the end instead.
    Both parse to the same selector.
    """
    parsed = parse_selector(selector) if selector else Selector(())
    if reserved_label is not None:
        parsed = Selector((*parsed.requirements, Requirement(reserved_label, EQUALS, ("false",))))
    return str(parsed)


def observe(
    child: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], *, revision_label: str, updated: str
) -> ChildView:
    """Count a child's pods at the updated revision (active: not terminal, not deleting)."""
    meta = child.get("metadata") or {}
    spec = child.get("spec") or {}
    status = child.get("status") or {}
    at_revision = ready = 0
    for pod in pods:
        pmeta = pod.get("metadata") or {}
        phase = (pod.get("status") or {}).get("phase")
        if pmeta.get("deletionTimestamp") or phase in ("Succeeded", "Failed"):
            continue
        if (pmeta.get("labels") or {}).get(revision_label) != updated:
            continue
        at_revision += 1
        if pod_ready(pod):
            ready += 1
    generation = meta.get("generation") or 0
    return ChildView(
        name=str(meta.get("name", "")),
        spec_replicas=int(spec.get("replicas") or 0),
        replicas=int(status.get("replicas") or 0),
        ready=int(status.get("readyReplicas") or 0),
        updated=at_revision,
        updated_ready=ready,
        current=int(status.get("observedGeneration") or 0) >= int(generation),
    )


def pod_ready(pod: Mapping[str, Any]) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def compute(facts: Facts) -> Json:
    """The whole status for these facts; stable (same facts, same dict) so writes can be skipped."""
    prev = facts.previous
    status: Json = {"observedGeneration": facts.generation}
    views = facts.children
    status["replicas"] = sum(max(0, v.replicas - v.reserved) for v in views.values())
    status["readyReplicas"] = sum(v.ready for v in views.values())
    status["updatedReplicas"] = sum(v.updated for v in views.values())
    status["updatedReadyReplicas"] = sum(v.updated_ready for v in views.values())
    status["reservedPods"] = sum(v.reserved for v in views.values())
    status["collisionCount"] = facts.collision_count
    status["labelSelector"] = facts.label_selector
    updated = facts.updated_revision or prev.get("updatedRevision") or ""
    current = facts.current_revision or prev.get("currentRevision") or updated
    if (
        facts.plan is not None
        and updated
        and current != updated
        and status["updatedReadyReplicas"] >= facts.plan.replicas
    ):
        current = updated
    status["currentRevision"] = current
    status["updatedRevision"] = updated
    subsets = _subset_statuses(facts) if facts.plan is not None else list(prev.get("subsetStatuses") or [])
    status["subsetStatuses"] = subsets
    status["subsetReplicas"] = {s["name"]: s["desired"] for s in subsets}
    status["updateStatus"] = {
        "updatedRevision": updated,
        "currentPartitions": {s["name"]: s["partition"] for s in subsets},
    }
    if facts.rollout is not None:
        status["rollout"] = dict(facts.rollout)
    status["conditions"] = _conditions(facts, status, subsets)
    if facts.plan is not None:
        status["subsetStatuses"] = [_sparse_subset(s) for s in subsets]
    return _sparse(status, SPARSE_TOP)


SPARSE_SUBSET = ("replicas", "readyReplicas", "updatedReplicas", "updatedReadyReplicas", "reservedPods", "partition")
SPARSE_TOP = ("updatedReadyReplicas", "reservedPods", "collisionCount")
"""Counts written only when not zero (a reader takes an absent count as 0), as Kubernetes' own
workloads and OpenKruise write theirs: the API server pays for every field of a status on
every write and on every write to the object's other subresources (``/scale``), through its
field-manager record too. A subset's ``partitionApplied`` is written only with a partition."""


def _sparse(entry: Json, counts: Sequence[str]) -> Json:
    return {k: v for k, v in entry.items() if not (k in counts and v == 0)}


def _sparse_subset(entry: Json) -> Json:
    out = _sparse(entry, SPARSE_SUBSET)
    if not out.get("partition"):
        out.pop("partitionApplied", None)
    return out


def _subset_statuses(facts: Facts) -> list[Json]:
    assert facts.plan is not None
    out = []
    for a in facts.plan.subsets:
        view = facts.children.get(a.name)
        applied = facts.partition_applied.get(a.name, True)
        message = a.message
        if a.partition and not applied:
            message += f"; partition {a.partition} not applied: this workload kind cannot hold pods at the old revision"
        entry: Json = {
            "name": a.name,
            "desired": a.replicas,
            "replicas": view.replicas if view else 0,
            "readyReplicas": view.ready if view else 0,
            "updatedReplicas": view.updated if view else 0,
            "updatedReadyReplicas": view.updated_ready if view else 0,
            "reservedPods": view.reserved if view else 0,
            "partition": a.partition,
            "partitionApplied": applied,
            "reason": a.reason,
            "message": message,
        }
        if a.name in facts.rollout_states:
            entry["rollout"] = facts.rollout_states[a.name]
        if a.name in facts.clusters:
            entry["cluster"] = facts.clusters[a.name]
        conditions = [dict(c[a.name]) for c in (facts.schedulable, facts.cluster_conditions) if a.name in c]
        if conditions:
            entry["conditions"] = conditions
        out.append(entry)
    return out


def _converged(facts: Facts, subsets: Sequence[Json]) -> str | None:
    """None when every child is where the plan wants it; otherwise what is still moving."""
    if facts.extra_children:
        return f"{facts.extra_children} child workload(s) to delete"
    for s in subsets:
        view = facts.children.get(s["name"])
        want = s["desired"]
        if view is None:
            if want:
                return f"subset {s['name']}: child not created yet"
            continue
        held = s["partition"] if s["partitionApplied"] else 0
        if not view.current or view.spec_replicas != want or view.replicas != want:
            return f"subset {s['name']}: {view.replicas} of {want} replicas"
        if view.ready < want:
            reserved = f" ({view.reserved} reserved: unschedulable)" if view.reserved else ""
            return f"subset {s['name']}: {view.ready} of {want} replicas ready{reserved}"
        if view.updated < want - held:
            return f"subset {s['name']}: {view.updated} of {want - held} replicas updated"
    return None


def _conditions(facts: Facts, status: Json, subsets: Sequence[Json]) -> list[Json]:
    previous = {c.get("type"): c for c in facts.previous.get("conditions") or () if isinstance(c, dict)}
    problem = facts.problem
    progress = None if facts.plan is None else _converged(facts, subsets)
    stalled = problem is not None and problem.stalled
    rollout = facts.rollout or {}
    if progress is None and rollout.get("phase") == "Progressing":
        progress = str(rollout.get("message") or "rolling out")
    reconciling: Said | None = None
    stalled_c: Said | None = None
    if rollout.get("phase") == "Paused" and problem is None:
        # Suspended, not progressing: GitOps tools must not wait on a rollout held on purpose.
        ready_c = (False, str(rollout.get("reason") or "Paused"), str(rollout.get("message") or ""))
    elif stalled and problem is not None:
        stalled_c = (problem.reason, problem.message)
        ready_c = (False, problem.reason, problem.message)
    elif problem is not None:
        reconciling = (problem.reason, problem.message)
        ready_c = (False, problem.reason, problem.message)
    elif progress is not None:
        reconciling = ("Progressing", progress)
        ready_c = (False, "Progressing", progress)
    else:
        ready_c = (True, "AllReplicasReady", f"{status['readyReplicas']} replicas ready")
    revision = status["updatedRevision"]
    done = status["currentRevision"] == revision
    updated_c = (
        done,
        "UnitedDeploymentRevisionUpdated" if done else "UnitedDeploymentRevisionUpdating",
        f"{'updated' if done else 'updating'} to revision {revision}",
    )
    return kstatus(
        previous,
        ready=ready_c,
        reconciling=reconciling,
        stalled=stalled_c,
        others={UPDATED: updated_c},
        generation=facts.generation,
        now=facts.now,
    )


def stalled(previous: Mapping[str, Any], *, generation: int, problem: Problem, now: str) -> Json:
    """Status for a UnitedDeployment we cannot act on (invalid spec, child kind not served):
    the last known counts stay, the conditions say why nothing moves."""
    status: Json = {k: v for k, v in previous.items() if k != "conditions"}
    status["observedGeneration"] = generation
    facts = Facts(generation=generation, previous=previous, label_selector="", now=now, problem=problem)
    status["updatedRevision"] = previous.get("updatedRevision") or ""
    status["currentRevision"] = previous.get("currentRevision") or ""
    status["conditions"] = _conditions(facts, status, [])
    return status
