"""One UnitedDeployment pass, decided: from what the reconciler read, the list of writes the pass
intends (:class:`~united.uniteddeployment.intents.Write` and ``Emit``, in stage order) and the
status it reports — pure, so a pass is tested as data.

It composes :mod:`~united.uniteddeployment.history` (revisions), :mod:`~united.uniteddeployment.sync`
(adaptive scheduling, the allocation, a Progressive rollout's wave, the status) and
:mod:`~united.uniteddeployment.intents` (each child's render and diff; drains, deletes, releases).
:mod:`~united.uniteddeployment.executor` sends the list and folds the failed writes into the status
(:meth:`Report.status`): the status names what failed, which only sending can tell.

:func:`plan` is a generator: it yields between two subsets' renders, so the caller lets the event
loop run (a render of the largest template is the longest stretch of a pass).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from united.api.conditions import Problem
from united.api.document import Json
from united.api.mergepatch import identified
from united.multicluster.identity import RemoteKeys
from united.uniteddeployment import adaptive, history, intents, revision, rollout, sync
from united.uniteddeployment.allocation import AllocationError, Plan
from united.uniteddeployment.children import Claim, deleting, name_of, same, uid_of
from united.uniteddeployment.intents import CHILD, OWNER, POD, REVISION, Emit, Intent, Stage, Write
from united.uniteddeployment.lastknown import LastKnown
from united.uniteddeployment.model import PROGRESSIVE, Template
from united.uniteddeployment.render import KINDS, owner_reference
from united.uniteddeployment.render.blueprints import Blueprints
from united.uniteddeployment.status import stalled


class SiteView(Protocol):
    """What the plan reads of a site (the host, or a member cluster): never its client."""

    @property
    def cluster(self) -> str | None: ...
    @property
    def usable(self) -> bool: ...
    @property
    def remote(self) -> RemoteKeys | None: ...
    @property
    def reason(self) -> str: ...
    @property
    def since(self) -> float: ...
    @property
    def detail(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Revisions:
    """This UD's revisions as read: its own (with our recent writes), the namespace's orphans,
    whether a name is taken by another's, and the template's likeness (kept between passes)."""

    owned: list[Json]
    orphans: list[Json]
    taken: Callable[[str], bool]
    likeness: history.Likeness


@dataclass(frozen=True, slots=True)
class Seen:
    """Everything one pass of a valid UnitedDeployment reads (the reconciler gathers it)."""

    i: sync.Inputs
    key: str
    generation: int
    now: str
    variant: str
    revisions: Revisions
    claimed: Claim
    host: SiteView
    sites: Mapping[str, SiteView] = field(default_factory=dict)
    """The site of each remote subset (host subsets: :attr:`host`)."""
    elsewhere: Sequence[tuple[SiteView, Json]] = ()
    """Children of this UD in a site their subset is not in (moved, removed, duplicates)."""
    known: Mapping[str, LastKnown] = field(default_factory=dict)
    """Remote subsets whose cluster's stores never synced: their previous status' counts."""
    pods: Mapping[str, list[Json]] = field(default_factory=dict)
    others: Sequence[tuple[str, Json]] = ()
    """(variant, child) of this UD's children of another kind (the template's kind changed)."""
    template_of: Callable[[str], Template | None] = lambda name: None
    """The template of a revision, from the revision cache (None: gone)."""
    finalizers: Sequence[str] = ()
    owner_settled: bool = True
    """The cache shows our last write to the UnitedDeployment (else its finalizers may be stale)."""
    settling: bool = False
    """Just started, member clusters still being read: write revisions, say nothing yet."""
    blueprints: Blueprints = field(default_factory=Blueprints)


@dataclass(frozen=True, slots=True)
class Report:
    """The status a pass reports. ``fixed``: written whenever it differs, whatever the writes did
    (a stalled pass); ``outcome``: the status from :func:`~united.uniteddeployment.sync.report`
    once the failed writes are known (:meth:`status`); neither: nothing to report this pass."""

    requeue_after: float | None = None
    fixed: Json | None = None
    outcome: sync.Outcome | None = None
    inputs: sync.Inputs | None = None
    settings: adaptive.Settings | None = None
    immutable: tuple[str, ...] = ()
    wave: rollout.Decision | None = None
    down: Mapping[str, sync.Unusable] = field(default_factory=dict)

    def status(self, errors: Sequence[str]) -> Json | None:
        if self.fixed is not None or self.outcome is None or self.inputs is None:
            return self.fixed
        problem = sync.problem(list(errors), list(self.immutable), self.wave, self.down)
        return sync.report(self.inputs, self.settings, dataclasses.replace(self.outcome, problem=problem))


@dataclass(frozen=True, slots=True)
class Pass:
    """What one pass intends: the writes, in order, and the status it reports."""

    intents: list[Intent]
    report: Report


def unavailable(i: sync.Inputs, *, generation: int, now: str, variant: str, message: str | None) -> Pass:
    """The template's kind is not served: a Warning and a stalled status, no write to a child."""
    kind = KINDS[variant]
    message = message or f"{kind.kind} ({kind.api_version}) is not served by this cluster; install its CRD (OpenKruise)"
    status = stalled(i.previous, generation=generation, problem=Problem("ChildKindUnavailable", message), now=now)
    return Pass([Emit(Stage.GUARD, "Warning", "ChildKindUnavailable", message)], Report(fixed=status))


def revision_writes(s: Seen) -> tuple[history.HistoryPlan, list[Intent]]:
    """Adopt, create, bump and trim this UD's revisions (``history.plan`` decides)."""
    ud, r = s.i.ud, s.revisions
    owner = owner_reference(ud)
    hp = history.plan(
        ud,
        r.owned,
        owner_reference=owner,
        current=s.i.previous.get("currentRevision") or None,
        collision_count=int(s.i.previous.get("collisionCount") or 0),
        others=r.orphans,
        taken=r.taken,
        likeness=r.likeness,
    )
    by_name = {name_of(x): x for x in [*r.owned, *hp.adopt]}
    out: list[Intent] = []
    common: dict[str, Any] = {"stage": Stage.REVISIONS, "target": REVISION, "collect": False, "remember": True}
    for orphan in hp.adopt:
        refs = [*((orphan.get("metadata") or {}).get("ownerReferences") or ()), owner]
        body = identified({"metadata": {"ownerReferences": refs}}, orphan, exact=True)
        out.append(Write(verb="patch", name=name_of(orphan), body=body, **common))
    if hp.create is not None:
        exists = f"ControllerRevision {hp.updated} exists but is not cached yet; requeued to compare its data"
        out.append(Write(verb="create", name=hp.updated, body=revision.go_json(hp.create), exists=exists, **common))
    if hp.bump is not None:
        name, number = hp.bump
        out.append(Write(verb="patch", name=name, body=identified({"revision": number}, by_name[name]), **common))
    for name in hp.delete:
        gone = by_name[name]
        out.append(
            Write(
                verb="delete",
                name=name,
                missing_ok=True,
                remember_missing=True,
                rv=_rv(gone),
                preconditions=same(gone),
                **common,
            )
        )
    return hp, out


def plan(s: Seen) -> Generator[None, None, Pass]:
    """The pass over a valid UnitedDeployment whose child kind is served (see the module docstring)."""
    i, ud, keys, claimed = s.i, s.i.ud, s.i.keys, s.claimed
    hp, out = revision_writes(s)
    if claimed.adopt or hp.adopt:
        out.insert(0, Write(Stage.GUARD, "recheck", OWNER, name=ud.name))
    if s.settling:
        return Pass(out, Report(requeue_after=1.0))
    updated = hp.updated
    down = {
        name: sync.Unusable(str(site.cluster), site.reason, site.since, site.detail)
        for name, site in s.sites.items()
        if not site.usable
    }
    state = sync.states(claimed.by_subset, {n: k.state() for n, k in s.known.items()}, down)
    settings = adaptive.Settings.of(ud.spec)
    decisions = sync.decide(i, settings, claimed.by_subset, s.pods, updated) if settings else {}
    if settings is not None:
        decisions |= sync.cluster_down(i, settings, down, state)
    try:
        alloc, decisions = sync.allocation(i, settings, sync.with_decisions(state, decisions), decisions)
    except AllocationError as e:
        failed = Problem("AllocationFailed", str(e))
        out.append(Emit(Stage.REVISIONS, "Warning", "AllocationFailed", str(e)))
        return Pass(out, Report(fixed=stalled(i.previous, generation=s.generation, problem=failed, now=s.now)))
    out += [Emit(Stage.PODS, d.event.type, d.event.reason, d.event.message) for d in decisions.values() if d.event]
    out += _labels(s, decisions)
    overrides = sync.max_unavailable(settings, claimed.by_subset, alloc, decisions)
    wave = moved = None
    if ud.spec.update.type == PROGRESSIVE:
        counts = sync.counts(i, s.pods, updated)
        alloc, moved = sync.capacity(ud, alloc, claimed.by_subset, counts)
        wave = sync.rollout_decision(i, claimed.by_subset, counts, alloc, updated)
    waved = sync.apply_wave(alloc, wave, updated)
    alloc, overrides = waved.plan, overrides | waved.overrides
    out += [Emit(Stage.PODS, *e) for e in (wave.events if wave is not None else ())]
    out += _finalizer(s)
    applied: dict[str, bool] = {}
    immutable: list[str] = []
    current = {name: int((c.get("spec") or {}).get("replicas") or 0) for name, c in claimed.by_subset.items()}
    redistributed = intents.redistributes(current, {a.name: a.replicas for a in alloc.subsets})
    for subset in ud.spec.subsets:
        yield  # one subset's render and diff per step of the loop
        write, applied[subset.name], problem = _child(s, subset.name, alloc, updated, overrides, waved, redistributed)
        out += [write] if write is not None else []
        immutable += [problem] if problem else []
    draining = moved.draining if moved is not None else ()
    out += _drains(s, alloc, draining)
    cleanup, extra = _cleanup(s, keep=draining)
    out += cleanup
    views = sync.views(keys, claimed.by_subset, s.pods, updated, decisions)
    views |= {name: known.view() for name, known in s.known.items()}
    outcome = sync.Outcome(
        generation=s.generation,
        now=s.now,
        plan=alloc,
        children=views,
        applied=applied,
        updated=updated,
        collision_count=hp.collision_count,
        problem=None,
        extra_children=extra + len(draining),
        decisions=decisions,
        wave=wave,
        draining=draining,
        clusters={n: str(site.cluster) for n, site in s.sites.items() if site.cluster},
        down=down,
    )
    requeue = sync.requeue(i.seconds, terminating=bool(claimed.terminating), decisions=decisions, wave=wave)
    report = Report(requeue, None, outcome, i, settings, tuple(immutable), wave, down)
    return Pass(out, report)


def _site(s: Seen, subset: str) -> SiteView:
    return s.sites.get(subset, s.host)


def _labels(s: Seen, decisions: Mapping[str, adaptive.Decision]) -> list[Intent]:
    """Reservation: set the reserved-pod label where it changed (a merge patch of one label)."""
    out: list[Intent] = []
    for name, d in decisions.items():
        site = _site(s, name)
        if not site.usable:
            continue
        for change in d.labels:
            body = {"metadata": {"labels": {s.i.keys.reserved_pod: change.value}}}
            out.append(
                Write(
                    Stage.PODS,
                    "patch",
                    POD,
                    name=change.pod,
                    body=body,
                    cluster=site.cluster,
                    action="label",
                    what=f"pod {change.pod}",
                    missing_ok=True,
                )
            )
    return out


def _finalizer(s: Seen) -> list[Intent]:
    """The remote-children finalizer is on while this UD has a remote subset or a remote child
    (so deleting it deletes them first), and only then: host-only UDs never get it."""
    remote = bool(s.sites) or any(site.cluster for site, _ in s.elsewhere)
    has = s.i.keys.remote_children_finalizer in s.finalizers
    if remote == has or not s.owner_settled:
        return []  # as wanted, or the cache has not shown our last write yet
    return [Write(Stage.FINALIZER, "finalizer", OWNER, name=s.i.ud.name, present=remote, collect=False)]


def _child(
    s: Seen,
    name: str,
    alloc: Plan,
    updated: str,
    overrides: Mapping[str, int],
    waved: sync.Wave,
    redistributed: bool,
) -> tuple[Write | None, bool, str]:
    """One subset's child write (None: none), whether it holds its partition, and why the
    template cannot be applied to it (empty: it can)."""
    subset = next(x for x in s.i.ud.spec.subsets if x.name == name)
    live = s.claimed.by_subset.get(name)
    site = _site(s, name)
    revision_name = waved.held.get(name, updated)
    held = s.template_of(revision_name) if revision_name != updated else None
    target = intents.Target(
        s.key,
        s.i.ud,
        s.i.keys,
        subset,
        alloc[name],
        revision_name if held is not None else updated,
        held,
        overrides.get(name, 0),
        still=name in waved.still,
    )
    rendered, overridden = intents.render(target, live, s.blueprints, remote=site.remote)
    if not site.usable:
        return None, rendered.partition_applied, ""  # no request to a cluster we cannot use
    decided = intents.child_write(
        target,
        KINDS[s.variant],
        live,
        rendered,
        overridden=overridden,
        updated=updated,
        cluster=site.cluster,
        terminating=name in s.claimed.terminating,
        redistributed=redistributed,
    )
    w, where = decided.write, f" in cluster {site.cluster}" if site.cluster else ""
    if w is None:
        return None, rendered.partition_applied, decided.immutable
    common: dict[str, Any] = {"variant": s.variant, "cluster": site.cluster, "success": w.success, "remember": True}
    if w.verb == "create":
        write = Write(Stage.CHILDREN, "create", CHILD, body=w.body, action="create", what=f"{name}{where}", **common)
    else:
        assert live is not None
        body = identified(w.body, live, exact=w.exact)
        write = Write(Stage.CHILDREN, "patch", CHILD, name_of(live), body, action="update", what=name, **common)
    return write, rendered.partition_applied, decided.immutable


def _drains(s: Seen, alloc: Plan, draining: Sequence[str]) -> list[Intent]:
    """Scale the children of removed subsets that are kept while they drain."""
    return [
        Write(
            Stage.DRAIN,
            "patch",
            CHILD,
            name_of(child),
            identified({"spec": {"replicas": after}}, child),
            variant=s.variant,
            action="update",
            what=name,
            success=("ScaledSubset", f"{name_of(child)} of removed subset {name}: draining from {before} to {after}"),
            remember=True,
        )
        for name, child, before, after in intents.drains(s.claimed.by_subset, alloc, draining)
    ]


def _cleanup(s: Seen, *, keep: Sequence[str]) -> tuple[list[Intent], int]:
    """Delete children of removed subsets, duplicates and children of other kinds; release
    children that stopped matching. Also returns how many children remain to go."""
    doomed = [(s.host, c, s.variant) for c in intents.unwanted(s.i.ud, s.claimed, keep=keep)]
    doomed += [(s.host, c, variant) for variant, c in s.others]
    doomed += [(site, c, s.variant) for site, c in s.elsewhere]
    out: list[Intent] = []
    for site, child, variant in doomed:
        if deleting(child) or not site.usable:
            continue
        where = f" in cluster {site.cluster}" if site.cluster else ""
        kind = child.get("kind", KINDS[variant].kind)
        out.append(
            Write(
                Stage.CLEANUP,
                "delete",
                CHILD,
                name_of(child),
                variant=variant,
                cluster=site.cluster,
                action="delete",
                what=f"{name_of(child)}{where}",
                success=("SuccessfulDelete", f"Deleted {kind} {name_of(child)}{where}"),
                missing_ok=True,
                remember=True,
                rv=_rv(child),
                uid=uid_of(child),
                preconditions=same(child),
                propagation="Background",
            )
        )
    for child in s.claimed.release:
        out.append(
            Write(
                Stage.CLEANUP,
                "patch",
                CHILD,
                name_of(child),
                identified(intents.release(s.i.ud, child), child, exact=True),
                variant=s.variant,
                action="release",
                what=name_of(child),
                success=("Released", f"Released {name_of(child)}: it no longer matches the selector"),
                missing_ok=True,
            )
        )
    return out, len(doomed)


def _rv(obj: Mapping[str, Any]) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0
