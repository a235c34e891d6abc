"""What a pass writes, as data: the write intents (:class:`Write`, :class:`Emit`, ordered by
:class:`Stage`) and, as pure functions of plain data, each subset's child render and the create or
patch that brings the live child to it, the children to drain, delete or release.

:mod:`~united.uniteddeployment.planner` composes them into one pass's list, rendering one subset
per turn of the event loop (a render of the largest template is the longest stretch of a pass);
:mod:`~united.uniteddeployment.executor` sends the list in order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from united.api.document import Json
from united.uniteddeployment import adaptive
from united.uniteddeployment.allocation import Allocation, Plan
from united.uniteddeployment.children import Claim, name_of
from united.uniteddeployment.diff import child_patch, immutable_changes
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import Subset, Template, UnitedDeployment
from united.uniteddeployment.render import Rendered, spec_digest
from united.uniteddeployment.render import render as render_child
from united.uniteddeployment.render.blueprints import Blueprints
from united.uniteddeployment.render.kind import ChildKind

if TYPE_CHECKING:
    from united.multicluster.identity import RemoteKeys


@dataclass(frozen=True, slots=True)
class Target:
    """What one subset's child is rendered from: the UD (its key names the kept blueprint),
    the subset's allocation, the revision the child gets (``held``: an older one's template,
    None when it is the updated revision or gone) and the ``maxUnavailable`` override."""

    key: str
    ud: UnitedDeployment
    keys: Keys
    subset: Subset
    allocation: Allocation
    revision: str
    held: Template | None = None
    override: int = 0
    still: bool = False
    """The override is written exactly, even 0 (a rollout's wave that may take no pod down)."""


def render(
    t: Target, live: Json | None, blueprints: Blueprints, *, remote: RemoteKeys | None = None
) -> tuple[Rendered, bool]:
    """The child of ``t.subset`` with its override (and whether it has one). From the blueprint
    ``blueprints`` keeps when ``live`` carries the same spec digest: the diff then reads nothing
    of the pod template, which that child lacks; in full otherwise. A child held at an older
    revision (a Progressive rollout) is rendered in full from that revision's template."""
    a = t.allocation
    if t.held is not None:
        ud = dataclasses.replace(t.ud, spec=dataclasses.replace(t.ud.spec, templates=(t.held,)))
        rendered = render_child(
            ud,
            subset=t.subset,
            replicas=a.replicas,
            partition=a.partition,
            revision=t.revision,
            keys=t.keys,
            remote=remote,
        )
        return rendered, override(t.ud, t.keys, rendered.object, t.override, exact=t.still)
    complete = live is None
    while True:
        rendered = blueprints.render(
            t.key,
            t.ud,
            subset=t.subset,
            replicas=a.replicas,
            partition=a.partition,
            revision=t.revision,
            keys=t.keys,
            complete=complete,
            remote=remote,
        )
        overridden = override(t.ud, t.keys, rendered.object, t.override, exact=t.still)
        if rendered.complete or _digest(live, t.keys) == _digest(rendered.object, t.keys):
            return rendered, overridden
        complete = True


def override(ud: UnitedDeployment, keys: Keys, child: Json, value: int, *, exact: bool = False) -> bool:
    """Write a reservation's or a rollout's ``maxUnavailable`` into a rendered child and fold it into the
    child's spec digest, so the diff sees it come and go like any other rendered change
    (when it goes, the template's own strategy is written back)."""
    template = ud.spec.template
    assert template is not None
    if not adaptive.override_max_unavailable(template.variant, child["spec"], value, exact=exact):
        return False
    annotations = child["metadata"]["annotations"]
    annotations[keys.spec_hash] = spec_digest(rendered=annotations[keys.spec_hash], maxUnavailable=value)
    return True


def _digest(child: Mapping[str, Any] | None, keys: Keys) -> Any:
    return ((child or {}).get("metadata") or {}).get("annotations", {}).get(keys.spec_hash)


@dataclass(frozen=True, slots=True)
class ChildWrite:
    """A write to one subset's child: ``create`` (``body``: the rendered child) or ``update``
    (``body``: the merge patch, guarded by ``exact`` identification when it adopts), with the
    Event it earns (reason, message)."""

    verb: str
    body: Json
    success: tuple[str, str] | None
    exact: bool = False


@dataclass(frozen=True, slots=True)
class ChildDecision:
    """What to do to one subset's child (``write`` None: nothing) and, when the template changes
    a field the workload cannot take, why not (the status reports it)."""

    write: ChildWrite | None = None
    immutable: str = ""


def child_write(
    t: Target,
    kind: ChildKind,
    live: Json | None,
    rendered: Rendered,
    *,
    overridden: bool,
    updated: str,
    cluster: str | None,
    terminating: bool,
    redistributed: bool,
) -> ChildDecision:
    """The create or patch that brings ``live`` (None: no child) to ``rendered``; a subset whose
    old child is still being deleted waits for it to go. A patch of the replicas alone earns an
    Event only when the pass ``redistributed`` replicas between subsets: following a new total
    is recorded by whoever set it (an HPA's ``SuccessfulRescale``) and by the child's own
    controller, and one Event more per scale would be a write in every scale's path."""
    name, replicas = t.subset.name, t.allocation.replicas
    where = f" in cluster {cluster}" if cluster else ""
    if live is None:
        if terminating:
            return ChildDecision()
        created = ("SuccessfulCreate", f"Created {kind.kind} for subset {name}{where} with {replicas} replicas")
        return ChildDecision(ChildWrite("create", rendered.object, created))
    fields = immutable_changes(live, rendered.object, kind=kind)
    immutable = (
        f"subset {name}: {kind.kind} {name_of(live)} cannot change {', '.join(fields)} (immutable);"
        " delete it to have it recreated from the template (its pods are replaced), or revert the change"
        if fields
        else ""
    )
    patch = child_patch(live, rendered.object, kind=kind, keys=t.keys, partition_applied=rendered.partition_applied)
    if patch is None:
        return ChildDecision(immutable=immutable)
    before = int((live.get("spec") or {}).get("replicas") or 0)
    what = []
    if before != replicas:
        what.append(f"scaled from {before} to {replicas}")
    if (patch.get("spec") or {}).keys() - {"replicas"}:
        if ((live.get("metadata") or {}).get("labels") or {}).get(t.keys.revision) != updated:
            what.append(f"updated to revision {updated}")
        elif overridden:
            what.append(f"maxUnavailable {t.override} while its pods are reserved")
        else:
            what.append("spec updated")
    adopting = "ownerReferences" in (patch.get("metadata") or {})
    if adopting:
        what.append("adopted")
    message = f"{kind.kind} {name_of(live)} of subset {name}{where}: " + (", ".join(what) or "labels updated")
    reason = "ScaledSubset" if what and what[0].startswith("scaled") else "UpdatedSubset"
    quiet = not redistributed and patch.keys() == {"spec"} and patch["spec"].keys() == {"replicas"}
    return ChildDecision(ChildWrite("update", patch, None if quiet else (reason, message), exact=adopting), immutable)


def redistributes(before: Mapping[str, int], after: Mapping[str, int]) -> bool:
    """Whether going from ``before`` to ``after`` replicas (by subset, children that exist)
    moves replicas between subsets rather than following a new total: some subset changes
    while the total stays, or against the total's direction."""
    deltas = [after[name] - before[name] for name in before.keys() & after.keys()]
    total = sum(deltas)
    return any(d and (total == 0 or (d > 0) != (total > 0)) for d in deltas)


def drains(by_subset: Mapping[str, Json], plan: Plan, draining: Iterable[str]) -> list[tuple[str, Json, int, int]]:
    """The children of removed subsets kept while they drain whose replicas change:
    (subset, child, replicas now, replicas planned)."""
    out = []
    for name in draining:
        child = by_subset[name]
        before, after = int((child.get("spec") or {}).get("replicas") or 0), plan[name].replicas
        if before != after:
            out.append((name, child, before, after))
    return out


def unwanted(ud: UnitedDeployment, claimed: Claim, *, keep: Iterable[str] = ()) -> list[Json]:
    """Claimed children to delete: those of subsets no longer in the topology (but those kept
    while they drain), and duplicates."""
    wanted = {s.name for s in ud.spec.subsets} | set(keep)
    return [c for name, c in claimed.by_subset.items() if name not in wanted] + list(claimed.duplicates)


def release(ud: UnitedDeployment, child: Json) -> Json:
    """The merge patch that releases a child that stopped matching: its owner references
    without ours."""
    refs = [r for r in (child.get("metadata") or {}).get("ownerReferences") or [] if r.get("uid") != ud.uid]
    return {"metadata": {"ownerReferences": refs or None}}


class Stage(IntEnum):
    """When a write goes out. The executor sends the intents in list order, one at a time, and
    the list is sorted by stage: a stage's writes go out only once the previous stage's have been
    answered. The guard comes first (nothing is adopted for an owner being deleted), revisions
    next (a failed revision write ends the pass: children must not name a revision that does not
    exist), then pods' reserved labels, the owner's finalizer (on before any remote child
    exists), the children in topology order, the drains, the deletes and releases."""

    GUARD = 0
    REVISIONS = 1
    PODS = 2
    FINALIZER = 3
    CHILDREN = 4
    DRAIN = 5
    CLEANUP = 6


REVISION = "revision"
POD = "pod"
CHILD = "child"
OWNER = "owner"


@dataclass(frozen=True, slots=True)
class Write:
    """One request a pass intends, as data. ``target``: :data:`REVISION`, :data:`POD`,
    :data:`CHILD` (``variant`` names its kind) or :data:`OWNER` (the UnitedDeployment itself:
    ``recheck`` reads it afresh, ``finalizer`` sets ``present``); ``verb``: ``create``,
    ``patch``, ``delete``, ``recheck`` or ``finalizer``; ``cluster``: the member cluster (None:
    the host). ``body``: the object or merge patch, sent as is. ``action`` and ``what`` name the
    write in an error (``update web-a: conflict``), ``success`` is the Event it earns.

    ``collect``: a failure is collected (the status says why, the key is requeued) rather than
    ending the pass; ``missing_ok``: a 404 is no failure; ``remember``: the answer (a delete:
    the object gone, ``rv`` and ``uid`` naming what was deleted) stands in for the cache until
    it catches up, ``remember_missing`` even when it was gone already; ``exists``: a create that
    finds the name taken ends the pass with this message (a revision the cache has not shown)."""

    stage: Stage
    verb: str
    target: str
    name: str = ""
    body: Json | bytes | None = None
    variant: str = ""
    cluster: str | None = None
    action: str = ""
    what: str = ""
    success: tuple[str, str] | None = None
    collect: bool = True
    missing_ok: bool = False
    remember: bool = False
    remember_missing: bool = False
    rv: int = 0
    uid: str = ""
    preconditions: Json | None = None
    propagation: str | None = None
    present: bool = False
    exists: str = ""


@dataclass(frozen=True, slots=True)
class Emit:
    """An Event the pass posts at its place in the list (decisions, a rollout's wave, a refusal)."""

    stage: Stage
    type: str
    reason: str
    message: str


Intent = Write | Emit
