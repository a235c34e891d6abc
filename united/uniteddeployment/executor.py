"""Execute one UnitedDeployment pass, in phases: read, write revisions, decide, write children, report.

1. Read: the children this UD owns or may adopt, in the host and in every member cluster its
   subsets (or its previous status) name, with our own recent writes in place of what the
   caches lack (:mod:`united.runtime.expectations`); each child's pods.
2. Revisions: adopt, create, bump and trim (:func:`united.uniteddeployment.history.plan`
   decides); the updated revision's name is what the children get.
3. Decide (:mod:`united.uniteddeployment.sync`, pure): adaptive scheduling, the allocation,
   a Progressive rollout's wave.
4. Write: reserved-pod labels, the remote-children finalizer, each subset's child (one subset
   per turn of the loop; :mod:`united.uniteddeployment.intents` decides), draining and
   deleting what is no longer wanted. A failed write is collected, not raised: the status says
   why and the key is requeued.
5. Report: the status (:func:`united.uniteddeployment.sync.report`), written when due.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import structlog

from united.api.conditions import Problem
from united.api.document import Json
from united.api.mergepatch import identified
from united.api.selector import parse as parse_selector
from united.kube import ApiError, Conflict, NotFound, PatchType, Resource
from united.kube.client import CONTROLLER_REVISIONS, PODS
from united.kube.errors import AlreadyExists, namespace_terminating
from united.multicluster.health import CLUSTER_NOT_FOUND, CLUSTER_SYNCING
from united.runtime.controller import Result, RetryableError
from united.runtime.expectations import rv_of as _rv
from united.runtime.metrics import SubsetReplicas
from united.uniteddeployment import adaptive, history, intents, revision, sync
from united.uniteddeployment.allocation import AllocationError, Plan
from united.uniteddeployment.children import Claim, claim, deleting, name_of, strays, uid_of
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.lastknown import LastKnown
from united.uniteddeployment.model import PROGRESSIVE, TEMPLATE_VARIANTS, Template, UnitedDeployment
from united.uniteddeployment.render import KINDS, owner_reference
from united.uniteddeployment.resources import resource_of
from united.uniteddeployment.sites import Site, Store, claim_remote, create_in, same
from united.uniteddeployment.status import stalled

if TYPE_CHECKING:
    from united.uniteddeployment.reconciler import Reconciler

log = structlog.get_logger(__name__)


class OwnerChangedError(Exception):
    """The UnitedDeployment read afresh is being deleted or is another object: end the pass."""


SETTLE_SECONDS = 30.0
"""After a start, how long a pass waits for member clusters to be registered and their caches
to sync before it reports them as missing or syncing: a restart must not flap statuses (nor
write anything) while the ``Cluster`` objects are read and the member informers list."""


def finalizers(obj: Mapping[str, Any]) -> list[str]:
    return [str(f) for f in (obj.get("metadata") or {}).get("finalizers") or ()]


class Executor:
    """One pass over one valid UnitedDeployment: reads the sites and caches, asks
    :mod:`~united.uniteddeployment.sync` and :mod:`~united.uniteddeployment.intents`, executes."""

    def __init__(self, r: Reconciler, ud: UnitedDeployment, obj: Json, previous: Json, generation: int) -> None:
        self.r = r
        self.ud = ud
        self.obj = obj
        self.previous = previous
        self.generation = generation
        self.keys = Keys(ud.group)
        self.key = _key(obj)
        self.namespace = ud.namespace
        self.errors: list[str] = []
        self.immutable: list[str] = []
        self.rechecked = False
        """Children that cannot take the template without being recreated, and why."""
        self.done: dict[str, list[str]] = {}
        """Messages of this pass's successful writes by Event reason: one Event per reason
        per pass (a new UD with 3 subsets gets one ``SuccessfulCreate``, not three)."""
        self.writes = 0
        self.requeue_after: float | None = None
        self.host = Site(None, r.client, None, r.caches.pods)
        self.sites: dict[str, Site] = {}
        """The site of each remote subset (host subsets: :attr:`host`)."""
        self.elsewhere: list[tuple[Site, Json]] = []
        """Children of this UD in a site their subset is not in (moved, removed, duplicates)."""
        self.known: dict[str, LastKnown] = {}
        """Remote subsets whose cluster's stores never synced: their previous status' counts."""

    def event(self, type_: str, reason: str, message: str) -> None:
        self.r.recorder.event(self.obj, type_, reason, message)

    async def run(self) -> Result:
        template = self.ud.spec.template
        assert template is not None
        variant = template.variant
        store = self.r.caches.children.get(variant)
        now = self.r.clock()
        if store is None:
            kind = KINDS[variant]
            message = self.r.caches.unavailable.get(variant) or (
                f"{kind.kind} ({kind.api_version}) is not served by this cluster; install its CRD (OpenKruise)"
            )
            self.event("Warning", "ChildKindUnavailable", message)
            status = stalled(
                self.previous, generation=self.generation, problem=Problem("ChildKindUnavailable", message), now=now
            )
            await self.r._write_status(self.key, self.obj, self.previous, status)
            return Result()
        owner = owner_reference(self.ud)
        plan_ = await self.revisions(owner)
        updated = plan_.updated
        resource = resource_of(variant)
        self.host.children = store
        claimed = claim(self.ud, self.r.expectations.fresh(self.key, resource, self.candidates(store)), self.keys)
        if self.r.caches.members is not None or any(s.cluster for s in self.ud.spec.subsets):
            self.claim_remote(resource, variant, claimed)
            settling = time.monotonic() - self.r.started < SETTLE_SECONDS
            if settling and any(s.reason in (CLUSTER_SYNCING, CLUSTER_NOT_FOUND) for s in self.sites.values()):
                return Result(requeue_after=1.0)  # just started: members are being read; nothing to say yet
        await self.recover(resource, claimed)
        if claimed.adopt:
            await self.recheck()
        pods = await self.pods_by_subset(claimed.by_subset)
        down = {
            name: sync.Unusable(str(site.cluster), site.reason, site.since, site.detail)
            for name, site in self.sites.items()
            if not site.usable
        }
        state = sync.states(claimed.by_subset, {n: k.state() for n, k in self.known.items()}, down)
        settings = adaptive.Settings.of(self.ud.spec)
        i = sync.Inputs(self.ud, self.previous, self.keys, self.r.seconds())
        decisions = sync.decide(i, settings, claimed.by_subset, pods, updated) if settings else {}
        if settings is not None:
            decisions |= sync.cluster_down(i, settings, down, state)
        try:
            plan, decisions = sync.allocation(i, settings, sync.with_decisions(state, decisions), decisions)
        except AllocationError as e:
            self.event("Warning", "AllocationFailed", str(e))
            failed = Problem("AllocationFailed", str(e))
            status = stalled(self.previous, generation=self.generation, problem=failed, now=now)
            await self.r._write_status(self.key, self.obj, self.previous, status)
            return Result()
        for d in decisions.values():
            if d.event is not None:
                self.event(d.event.type, d.event.reason, d.event.message)
        await self.label_pods(decisions)
        overrides = sync.max_unavailable(settings, claimed.by_subset, plan, decisions)
        wave = moved = None
        if self.ud.spec.update.type == PROGRESSIVE:
            counts = sync.counts(i, pods, updated)
            plan, moved = sync.capacity(self.ud, plan, claimed.by_subset, counts)
            wave = sync.rollout_decision(i, claimed.by_subset, counts, plan, updated)
        waved = sync.apply_wave(plan, wave, updated)
        plan, overrides = waved.plan, overrides | waved.overrides
        for type_, reason, message in wave.events if wave is not None else ():
            self.event(type_, reason, message)
        await self.finalizer(claimed)
        applied = await self.children(resource, claimed, plan, updated, overrides, waved.held, waved.still)
        draining = moved.draining if moved is not None else ()
        await self.drain(resource, claimed, plan, draining)
        extra = await self.cleanup(resource, variant, claimed, keep=draining) + len(draining)
        for reason, messages in self.done.items():
            self.event("Normal", reason, "; ".join(messages))
        views = sync.views(self.keys, claimed.by_subset, pods, updated, decisions)
        views |= {name: known.view() for name, known in self.known.items()}
        outcome = sync.Outcome(
            generation=self.generation,
            now=now,
            plan=plan,
            children=views,
            applied=applied,
            updated=updated,
            collision_count=plan_.collision_count,
            problem=sync.problem(self.errors, self.immutable, wave, down),
            extra_children=extra,
            decisions=decisions,
            wave=wave,
            draining=draining,
            clusters={n: site.cluster for n, site in self.sites.items() if site.cluster},
            down=down,
        )
        status = sync.report(i, settings, outcome)
        if self.r.gauges is not None:
            self.r.gauges.set_subsets(
                self.namespace,
                self.ud.name,
                {
                    s["name"]: SubsetReplicas(desired=s["desired"], ready=s["readyReplicas"])
                    for s in status["subsetStatuses"]
                },
            )
        if sync.status_due(status, self.previous, writes=self.writes, failed=bool(self.errors)):
            await self.r._write_status(self.key, self.obj, self.previous, status)
        if self.errors:
            raise RetryableError("; ".join(self.errors))
        return Result(
            requeue_after=sync.requeue(i.seconds, terminating=bool(claimed.terminating), decisions=decisions, wave=wave)
        )

    def site(self, subset: str) -> Site:
        return self.sites.get(subset, self.host)

    async def finalizer(self, claimed: Claim) -> None:
        """The remote-children finalizer is on while this UD has a remote subset or a remote
        child (so deleting it deletes them first), and only then: host-only UDs never get it."""
        remote = bool(self.sites) or any(site.cluster for site, _ in self.elsewhere)
        has = self.keys.remote_children_finalizer in finalizers(self.obj)
        if remote == has or self.r._written.newer(self.key, self.obj) is not None:
            return  # as wanted, or the cache has not shown our last write yet
        answer = await self.r.set_finalizer(self.key, self.obj, self.previous, present=remote)
        self.obj = {**self.obj, "metadata": {**(self.obj.get("metadata") or {}), **(answer.get("metadata") or {})}}

    def claim_remote(self, resource: Resource, variant: str, claimed: Claim) -> None:
        """The remote subsets' sites and children (:func:`~united.uniteddeployment.sites.claim_remote`)."""

        def fresh(cached: list[Json], cluster: str) -> list[Json]:
            return self.r.expectations.fresh(self.key, resource, cached, cluster=cluster)

        members = self.r.caches.members
        found = claim_remote(self.ud, self.previous, self.keys, members, self.host, claimed, variant, fresh)
        self.sites, self.elsewhere, self.known = found.sites, found.elsewhere, found.known

    async def create(self, site: Site, resource: Resource, body: Json) -> Json:
        """Create ``body`` in ``site`` (:func:`~united.uniteddeployment.sites.create_in`), counting a
        namespace created for it as a write."""
        answer, made = await create_in(
            site,
            resource,
            body,
            namespace=self.namespace,
            host=self.r.client,
            keys=self.keys,
            allowed=self.r.create_member_namespaces,
        )
        self.writes += made
        return answer

    def candidates(self, store: Store) -> list[Json]:
        """Children this UD may keep or adopt: its own and the namespace's orphans (from the
        stores' indexes, so a pass costs what it owns, not what the namespace holds). Only its
        own namespace: anything elsewhere that names our uid is forged."""
        return [*store.by_owner(self.ud.uid, self.namespace), *store.orphans(self.namespace)]

    async def recover(self, resource: Resource, claimed: Claim) -> None:
        """Before creating a child for a subset the cache shows none for, look for ours that
        lost its subset label (:func:`~united.uniteddeployment.children.strays`): one namespaced LIST, of our
        selector's workloads without that label, in the passes that would create — so it holds
        after a restart too, needs no cache of objects the informers cannot see, and no verb
        the controller does not have. Such a child is kept, and its label written back."""
        missing = {s.name for s in self.ud.spec.subsets if s.name not in self.sites}
        missing -= claimed.by_subset.keys() | claimed.terminating.keys()
        if not missing or self.ud.spec.selector is None or not self.previous.get("subsetStatuses"):
            # A UD whose status never listed its subsets has no child to lose (those it just
            # created stand in the expectations): a cold start makes no extra LIST.
            return
        ours = str(parse_selector(self.ud.spec.selector.to_dict()))
        unlabelled = ",".join(filter(None, (ours, f"!{self.keys.subset_name}")))
        listed = await self.r.client.list(resource, namespace=self.namespace, label_selector=unlabelled)
        claimed.by_subset.update(strays(self.ud, listed.items, self.keys, missing))

    async def pods_by_subset(self, by_subset: Mapping[str, Json]) -> dict[str, list[Json]]:
        """Each child's pods: those its selector matches in the pod cache (which holds only
        pods carrying the subset-name label). A selector that pins that label (ours always
        do) reads only the pods with that value, from the cache's index, so a pass costs its
        own pods, not subsets x the namespace's; other selectors scan the namespace, one
        child per step of the loop."""
        out = {}
        for subset, child in by_subset.items():
            pods = self.site(subset).pods
            if pods is None:
                continue
            raw = (child.get("spec") or {}).get("selector") or {}
            sel = parse_selector(raw)
            value = (raw.get("matchLabels") or {}).get(self.keys.subset_name)
            candidates = pods.labelled(self.namespace, value) if isinstance(value, str) else pods.list(self.namespace)
            out[subset] = [p for p in candidates if sel.matches((p.get("metadata") or {}).get("labels") or {})]
            await asyncio.sleep(0)
        return out

    def held_template(self, name: str) -> Template | None:
        """The template of revision ``name``, from the revision cache; None when it is gone."""
        template = self.ud.spec.template
        assert template is not None
        stored = self.r.caches.revisions.get(f"{self.namespace}/{name}")
        return revision.template_of((stored or {}).get("data"), template.variant) if stored else None

    async def label_pods(self, decisions: Mapping[str, adaptive.Decision]) -> None:
        """Reservation: set the reserved-pod label where it changed (a merge patch of one label;
        the ClusterRole's ``patch`` on pods exists for this alone)."""
        for name, d in decisions.items():
            site = self.site(name)
            if not site.usable or site.client is None:
                continue
            for change in d.labels:
                body = {"metadata": {"labels": {self.keys.reserved_pod: change.value}}}
                await self.write(
                    "label",
                    f"pod {change.pod}",
                    site.client.patch(PODS, change.pod, body, patch_type=PatchType.MERGE, namespace=self.namespace),
                    success=None,
                    missing_ok=True,
                    site=site,
                )

    async def revisions(self, owner: Json) -> history.HistoryPlan:
        """Adopt, create, bump and trim this UD's revisions (``history.plan`` decides). Our own
        writes stand in for a lagging cache as for children; a name taken by a revision the
        cache has not shown yet ends the pass, so the next one compares its data."""
        cache = self.r.caches.revisions
        owned = self.r.expectations.fresh(self.key, CONTROLLER_REVISIONS, cache.by_owner(self.ud.uid, self.namespace))
        mine = {name_of(r) for r in owned}
        orphans = [r for r in cache.orphans(self.namespace) if name_of(r) not in mine]

        def taken(name: str) -> bool:
            return name not in mine and cache.get(f"{self.namespace}/{name}") is not None

        current = self.previous.get("currentRevision") or None
        count = int(self.previous.get("collisionCount") or 0)
        likeness = await self.likeness(owned)
        hp = history.plan(
            self.ud,
            owned,
            owner_reference=owner,
            current=current,
            collision_count=count,
            others=orphans,
            taken=taken,
            likeness=likeness,
        )
        by_name = {name_of(r): r for r in [*owned, *hp.adopt]}
        if hp.adopt:
            await self.recheck()
        for orphan in hp.adopt:
            refs = [*((orphan.get("metadata") or {}).get("ownerReferences") or ()), owner]
            body = identified({"metadata": {"ownerReferences": refs}}, orphan, exact=True)
            name = name_of(orphan)
            answer = await self.r.client.patch(
                CONTROLLER_REVISIONS, name, body, patch_type=PatchType.MERGE, namespace=self.namespace
            )
            self.mark(name, answer)
        if hp.create is not None:
            try:
                created = await self.r.client.create(
                    CONTROLLER_REVISIONS, revision.go_json(hp.create), namespace=self.namespace
                )
            except AlreadyExists as e:
                raise RetryableError(
                    f"ControllerRevision {hp.updated} exists but is not cached yet; requeued to compare its data"
                ) from e
            self.mark(hp.updated, created)
        if hp.bump is not None:
            name, number = hp.bump
            body = identified({"revision": number}, by_name[name])
            answer = await self.r.client.patch(
                CONTROLLER_REVISIONS, name, body, patch_type=PatchType.MERGE, namespace=self.namespace
            )
            self.mark(name, answer)
        for name in hp.delete:
            with contextlib.suppress(NotFound):
                await self.r.client.delete(
                    CONTROLLER_REVISIONS, name, namespace=self.namespace, preconditions=same(by_name[name])
                )
                self.writes += 1
            self.r.expectations.remember(self.key, CONTROLLER_REVISIONS, name, None, rv=_rv(by_name[name]))
        return hp

    async def likeness(self, owned: list[Json]) -> history.Likeness:
        """The template's :class:`~united.uniteddeployment.history.Likeness`, kept while the template stays, with
        every owned revision compared: one new revision per step of the loop."""
        template = self.ud.spec.template
        assert template is not None
        kept = self.r.likeness.get(self.key)
        if kept is None or (kept.template is not template and kept.template != template):
            kept = self.r.likeness[self.key] = history.Likeness(template)
        kept.keep(owned)
        for r in owned:
            if not kept.known(r):
                kept(r)
                await asyncio.sleep(0)
        return kept

    def mark(self, name: str, answer: Json) -> None:
        """A revision write went through: count it and remember it for the next pass."""
        self.writes += 1
        self.r.expectations.remember(self.key, CONTROLLER_REVISIONS, name, answer, rv=_rv(answer))

    async def recheck(self) -> None:
        """client-go's RecheckDeletionTimestamp: before adopting anything, read the
        UnitedDeployment afresh (the cache may lag) and give up the pass if it is being
        deleted or has been replaced by another of the same name."""
        if self.rechecked:
            return
        try:
            live = await self.r.client.get(self.r.ud_resource, self.ud.name, namespace=self.namespace)
        except NotFound:
            live = {}
        if uid_of(live) != self.ud.uid or deleting(live):
            raise OwnerChangedError(f"{self.key} is being deleted or was replaced; nothing adopted")
        self.rechecked = True

    async def children(
        self,
        resource: Resource,
        claimed: Any,
        plan: Plan,
        updated: str,
        overrides: Mapping[str, int],
        held: Mapping[str, str],
        still: frozenset[str] = frozenset(),
    ) -> dict[str, bool]:
        """Create or patch each subset's child (:mod:`~united.uniteddeployment.intents` decides),
        one subset per turn of the loop, in topology order. Returns whether each child holds
        its partition."""
        applied: dict[str, bool] = {}
        kind = KINDS[resource_variant(resource)]
        templates = {name: self.held_template(name) for name in set(held.values()) if name != updated}
        for subset in self.ud.spec.subsets:
            await asyncio.sleep(0)  # one subset's render and diff per step of the loop
            live = claimed.by_subset.get(subset.name)
            site = self.site(subset.name)
            revision_name = held.get(subset.name, updated)
            target = intents.Target(
                self.key,
                self.ud,
                self.keys,
                subset,
                plan[subset.name],
                revision_name if templates.get(revision_name) is not None else updated,
                templates.get(revision_name),
                overrides.get(subset.name, 0),
                still=subset.name in still,
            )
            rendered, overridden = intents.render(target, live, self.r.blueprints, remote=site.remote)
            applied[subset.name] = rendered.partition_applied
            if not site.usable or site.client is None:
                continue  # no request to a cluster we cannot use; the status says why
            decided = intents.child_write(
                target,
                kind,
                live,
                rendered,
                overridden=overridden,
                updated=updated,
                cluster=site.cluster,
                terminating=subset.name in claimed.terminating,
            )
            if decided.immutable:
                self.immutable.append(decided.immutable)
            w = decided.write
            if w is None:
                continue
            where = f" in cluster {site.cluster}" if site.cluster else ""
            if w.verb == "create":
                call = self.create(site, resource, w.body)
                answer = await self.write("create", f"{subset.name}{where}", call, success=w.success, site=site)
            else:
                assert live is not None
                body = identified(w.body, live, exact=w.exact)
                call = site.client.patch(
                    resource, name_of(live), body, patch_type=PatchType.MERGE, namespace=self.namespace
                )
                answer = await self.write("update", subset.name, call, success=w.success, site=site)
            if answer:
                self.r.expectations.remember(
                    self.key, resource, name_of(answer), answer, rv=_rv(answer), cluster=site.cluster or ""
                )
        return applied

    async def drain(self, resource: Resource, claimed: Any, plan: Plan, draining: Iterable[str]) -> None:
        """Scale the children of removed subsets that are kept while they drain."""
        for name, child, before, after in intents.drains(claimed.by_subset, plan, draining):
            patched = await self.write(
                "update",
                name,
                self.r.client.patch(
                    resource,
                    name_of(child),
                    identified({"spec": {"replicas": after}}, child),
                    patch_type=PatchType.MERGE,
                    namespace=self.namespace,
                ),
                success=(
                    "ScaledSubset",
                    f"{name_of(child)} of removed subset {name}: draining from {before} to {after}",
                ),
            )
            if patched:
                self.r.expectations.remember(self.key, resource, name_of(patched), patched, rv=_rv(patched))

    async def cleanup(self, resource: Resource, variant: str, claimed: Any, *, keep: Iterable[str] = ()) -> int:
        """Delete children of removed subsets, duplicates and children of other kinds; release
        children that stopped matching. Returns how many children remain to go."""
        doomed = [(c, resource) for c in intents.unwanted(self.ud, claimed, keep=keep)]
        for other, store in self.r.caches.children.items():
            if other != variant:
                res = resource_of(other)
                doomed += [(c, res) for c in store.by_owner(self.ud.uid, self.namespace)]
        sited = [(self.host, c, res) for c, res in doomed] + [(site, c, resource) for site, c in self.elsewhere]
        remaining = 0
        for site, child, res in sited:
            remaining += 1
            if deleting(child) or not site.usable or site.client is None:
                continue
            where = f" in cluster {site.cluster}" if site.cluster else ""
            gone = await self.write(
                "delete",
                f"{name_of(child)}{where}",
                site.client.delete(
                    res,
                    name_of(child),
                    namespace=self.namespace,
                    propagation_policy="Background",
                    preconditions=same(child),
                ),
                success=("SuccessfulDelete", f"Deleted {child.get('kind', res.kind)} {name_of(child)}{where}"),
                missing_ok=True,
                site=site,
            )
            if gone is not None:
                self.r.expectations.remember(
                    self.key, res, name_of(child), None, rv=_rv(child), cluster=site.cluster or "", uid=uid_of(child)
                )
        for child in claimed.release:
            await self.write(
                "release",
                name_of(child),
                self.r.client.patch(
                    resource,
                    name_of(child),
                    identified(intents.release(self.ud, child), child, exact=True),
                    patch_type=PatchType.MERGE,
                    namespace=self.namespace,
                ),
                success=("Released", f"Released {name_of(child)}: it no longer matches the selector"),
                missing_ok=True,
            )
        return remaining

    async def write(
        self,
        verb: str,
        target: str,
        call: Any,
        *,
        success: tuple[str, str] | None,
        missing_ok: bool = False,
        site: Site | None = None,
    ) -> Json | None:
        """Await one write; failures are collected (the status reports them, the key is
        requeued), never raised — but a namespace being deleted ends the pass. Returns the API
        server's answer, or None on failure. A member that failed in transport is probed at once."""
        try:
            answer = await call
        except NotFound:
            if not missing_ok:
                self.errors.append(f"{verb} {target}: not found")
            return None
        except Conflict as e:
            self.errors.append(f"{verb} {target}: conflict ({e})")
            return None
        except ApiError as e:
            if namespace_terminating(e):
                raise
            if site is not None and site.suspect is not None and (e.status == 0 or e.status >= 500):
                site.suspect()
            self.errors.append(f"{verb} {target}: {e}")
            self.event("Warning", f"Failed{verb.capitalize()}", f"{verb} {target}: {e}")
            return None
        self.writes += 1
        if success is not None:
            reason, message = success
            self.done.setdefault(reason, []).append(message)
        return answer if isinstance(answer, dict) else {}


def resource_variant(resource: Resource) -> str:
    for variant in TEMPLATE_VARIANTS:
        if resource_of(variant) == resource:
            return variant
    raise KeyError(resource)


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"
