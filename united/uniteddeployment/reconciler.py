"""Reconcile one UnitedDeployment: level-triggered, cache-read, diff-first.

Every pass starts from the informer caches and the pure core and ends with the fewest writes
that make the cluster match: revisions, children (create, patch, delete, adopt, release),
then the status — which is written even when a child write failed, so users see why. A
pass with nothing to change makes no write at all (``united.uniteddeployment.diff``; status compared first).

Invalid input never reaches a child: the spec is admitted with the same rules as
``united validate``; a refusal becomes a ``Stalled`` condition and a Warning Event, and the
pass ends without touching children.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from united.api.conditions import Problem
from united.api.decode import Undecodable
from united.api.field import ManifestError
from united.api.mergepatch import identified, merge_patch
from united.api.selector import parse as parse_selector
from united.api.timestamp import format_time, now_rfc3339
from united.kube import ApiError, Conflict, KubeClient, NotFound, PatchType, Resource
from united.kube.client import CONTROLLER_REVISIONS, NAMESPACES, PODS
from united.kube.errors import AlreadyExists, namespace_terminating
from united.multicluster.health import CLUSTER_NOT_FOUND, CLUSTER_SYNCING, NAMESPACE_NOT_ALLOWED
from united.multicluster.lastknown import LastKnown, last_known
from united.runtime.controller import Result, RetryableError
from united.runtime.expectations import Expectations, LastWrite
from united.runtime.expectations import rv_of as _rv
from united.runtime.metrics import SubsetReplicas
from united.uniteddeployment import adaptive, history, intents, revision, sync
from united.uniteddeployment.admission import admission
from united.uniteddeployment.allocation import AllocationError, Plan
from united.uniteddeployment.children import Claim, claim, controller_uid, deleting, name_of, strays, uid_of
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import (
    PROGRESSIVE,
    TEMPLATE_VARIANTS,
    Template,
    UnitedDeployment,
)
from united.uniteddeployment.render import KINDS, owner_reference
from united.uniteddeployment.render.blueprints import Blueprints
from united.uniteddeployment.resources import resource_of
from united.uniteddeployment.status import stalled

if TYPE_CHECKING:
    from united.multicluster.identity import RemoteKeys
    from united.multicluster.member import Members

Json = dict[str, Any]
log = structlog.get_logger(__name__)


class Store(Protocol):
    def get(self, key: str) -> Json | None: ...
    def by_owner(self, uid: str, namespace: str | None = None) -> list[Json]: ...
    def orphans(self, namespace: str) -> list[Json]: ...
    def list(self, namespace: str | None = None) -> list[Json]: ...


class PodStore(Store, Protocol):
    def labelled(self, namespace: str, value: str) -> list[Json]: ...


class Recorder(Protocol):
    def event(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None: ...


class Gauges(Protocol):
    def set_subsets(self, namespace: str, name: str, subsets: Mapping[str, SubsetReplicas]) -> None: ...
    def forget_uniteddeployment(self, namespace: str, name: str) -> None: ...


@dataclass
class Caches:
    """Read side of the controller: informer stores, keyed by what they hold."""

    uniteddeployments: Store
    revisions: Store
    pods: PodStore
    """Indexed by the subset-name label's value."""
    children: dict[str, Store] = field(default_factory=dict)
    """By template variant (``deploymentTemplate`` …); only kinds the cluster serves."""
    unavailable: dict[str, str] = field(default_factory=dict)
    """By template variant: why a served kind cannot be used yet (``cannot list …: 403 …``)."""
    undecodable: Mapping[str, Undecodable] = field(default_factory=dict)
    """UnitedDeployments the informers skipped as unreadable (too deeply nested), by key."""
    members: Members | None = None
    """The member clusters (None until ``Cluster`` objects are served, and in the kruise group)."""


@dataclass
class Site:
    """Where a subset's child lives: the host (``cluster`` None) or a member cluster."""

    cluster: str | None
    client: KubeClient | None
    children: Store | None
    pods: PodStore | None
    owner_of: Callable[[Mapping[str, Any]], str | None] = controller_uid
    usable: bool = True
    """Reads and writes may go there now (host: always; member: ``Member.usable``)."""
    synced: bool = True
    """Its stores were listed at least once in this process: the last-known state."""
    reason: str = ""
    """Why not usable: the member's ``Ready`` reason, ``ClusterNotFound``, ``NamespaceNotAllowed``,
    ``ClusterSyncing``."""
    since: float = 0.0
    detail: str = ""
    remote: RemoteKeys | None = None
    suspect: Callable[[], None] | None = None
    create_namespaces: bool = False
    """The member's ``Cluster`` lets the controller create a missing namespace there."""


class OwnerChangedError(Exception):
    """The UnitedDeployment read afresh is being deleted or is another object: end the pass."""


SETTLE_SECONDS = 30.0
"""After a start, how long a pass waits for member clusters to be registered and their caches
to sync before it reports them as missing or syncing: a restart must not flap statuses (nor
write anything) while the ``Cluster`` objects are read and the member informers list."""


class Reconciler:
    """Owns no state but a record of the statuses it wrote (to compare against while the
    cache lags behind its own writes)."""

    def __init__(
        self,
        *,
        client: KubeClient,
        caches: Caches,
        recorder: Recorder,
        ud_resource: Resource,
        clock: Callable[[], str] = now_rfc3339,
        seconds: Callable[[], float] = time.time,
        gauges: Gauges | None = None,
        create_member_namespaces: bool = True,
    ) -> None:
        self.client = client
        self.create_member_namespaces = create_member_namespaces
        self.started = time.monotonic()
        self.caches = caches
        self.recorder = recorder
        self.ud_resource = ud_resource
        self.clock = clock
        self.seconds = seconds
        """Wall-clock epoch seconds for adaptive scheduling (pod timestamps are wall-clock)."""
        self.gauges = gauges
        self._written: LastWrite[Json] = LastWrite()
        """The status our last write of each UD recorded: compared against while the cache lags."""
        self._admitted: dict[str, tuple[tuple[Any, ...], UnitedDeployment | ManifestError]] = {}
        """The last admission of each UD, by what it was computed from (see :meth:`_admit`)."""
        self.expectations = Expectations()
        """Children and revisions this process wrote, by UD key: read instead of a cache that has
        not seen our own write yet, so a reconcile right after a write neither repeats it nor
        creates a second child for the subset."""
        self.blueprints = Blueprints()
        """What each UD's children are rendered from, kept while its spec and revision stay."""
        self.likeness: dict[str, history.Likeness] = {}
        """Which revisions of each UD hold its template, kept while the template stays."""

    async def reconcile(self, key: str) -> Result:
        obj = self.caches.uniteddeployments.get(key)
        if obj is None:
            skipped = self.caches.undecodable.get(key)
            if skipped is not None:
                await self._report_undecodable(key, skipped)
                return Result()
            self._written.forget(key)
            self.expectations.forget(key)
            self._admitted.pop(key, None)
            self.blueprints.forget(key)
            self.likeness.pop(key, None)
            if self.gauges is not None:
                namespace, _, name = key.partition("/")
                self.gauges.forget_uniteddeployment(namespace, name)
            return Result()
        if deleting(obj):
            if self._keys(obj).remote_children_finalizer in _finalizers(obj):
                return await self._finalize(key, obj)
            return Result()
        previous = self._previous_status(key, obj)
        generation = int((obj.get("metadata") or {}).get("generation") or 0)
        try:
            ud = await self._admit(key, obj)
        except ManifestError as e:
            lines = [str(x) for x in e.errors]
            message = "; ".join(lines[:5]) + (f" (and {len(lines) - 5} more)" if len(lines) > 5 else "")
            problem = Problem("InvalidSpec", message)
            self.recorder.event(obj, "Warning", "InvalidSpec", message)
            await self._write_status(
                key, obj, previous, stalled(previous, generation=generation, problem=problem, now=self.clock())
            )
            return Result()
        pass_ = _Pass(self, ud, obj, previous, generation)
        try:
            return await pass_.run()
        except OwnerChangedError as e:
            log.info("not adopting", reason=str(e))
            return Result()
        except ApiError as e:
            if not namespace_terminating(e):
                raise
            log.info("namespace is being deleted; nothing more to do", error=str(e))
            return Result()

    @staticmethod
    def _keys(obj: Mapping[str, Any]) -> Keys:
        return Keys(str(obj.get("apiVersion") or "").partition("/")[0] or Keys().group)

    async def set_finalizer(self, key: str, obj: Mapping[str, Any], previous: Json, *, present: bool) -> Json:
        """Add or remove the remote-children finalizer: a merge patch of the whole list, guarded by
        the resourceVersion read (the list is replaced whole). The answer's version is recorded as
        our last write, so this pass's status patch is not refused as stale. Returns the answer."""
        meta = obj.get("metadata") or {}
        finalizer = self._keys(obj).remote_children_finalizer
        current = _finalizers(obj)
        wanted = [*current, finalizer] if present else [f for f in current if f != finalizer]
        patch = {"metadata": {"finalizers": wanted or None, "resourceVersion": self._status_version(key, obj)}}
        answer = await self.client.patch(
            self.ud_resource, str(meta.get("name")), patch, patch_type=PatchType.MERGE, namespace=meta.get("namespace")
        )
        self._written.record(key, _rv(answer), previous)
        return answer

    async def _finalize(self, key: str, obj: Json) -> Result:
        """A UnitedDeployment being deleted with remote children: delete them in every cluster
        that can be used, wait for the others (unless abandoned), then remove the finalizer.
        Host children go by the host's garbage collector, as always."""
        keys = self._keys(obj)
        meta = obj.get("metadata") or {}
        namespace, uid = str(meta.get("namespace") or ""), str(meta.get("uid") or "")
        spec = obj.get("spec") or {}
        variant = next(iter((spec.get("template") or {}) or {"deploymentTemplate": None}))
        previous = self._previous_status(key, obj)
        clusters = {
            str(s.get("cluster"))
            for s in [*((spec.get("topology") or {}).get("subsets") or ()), *(previous.get("subsetStatuses") or ())]
            if isinstance(s, dict) and s.get("cluster")
        }
        abandoned = {
            c.strip() for c in str((meta.get("annotations") or {}).get(keys.abandon_remote_children, "")).split(",")
        }
        members = self.caches.members
        blocked: list[str] = []
        remaining = 0
        resource = resource_of(variant) if variant in KINDS else None
        for cluster in sorted(clusters):
            if "*" in abandoned or cluster in abandoned:
                continue
            member = members.get(cluster) if members is not None else None
            if member is None or resource is None:
                blocked.append(f"{cluster}: no Cluster object of that name")
                continue
            member.ensure(variant)
            children, _ = member.stores(variant)
            health = member.health
            if not health.ready:
                blocked.append(f"{cluster} unreachable since {format_time(health.since)}: {health.message}")
                continue
            if not member.usable(variant) or member.client is None:
                remaining += 1  # reachable, its caches syncing: soon
                continue
            for child in children.by_owner(uid, namespace):
                remaining += 1
                if deleting(child):
                    continue
                with contextlib.suppress(NotFound):
                    await member.client.delete(
                        resource,
                        name_of(child),
                        namespace=namespace,
                        propagation_policy="Background",
                        preconditions=_same(child),
                    )
        if blocked:
            message = (
                "waiting to delete the children in "
                + "; ".join(blocked)
                + f"; set annotation {keys.abandon_remote_children}=<clusters> to stop waiting"
            )
            told = {c.get("type"): c.get("message") for c in previous.get("conditions") or () if isinstance(c, dict)}
            if told.get("Reconciling") != message:
                self.recorder.event(obj, "Warning", "RemoteDeleteBlocked", message)
            generation = int(meta.get("generation") or 0)
            problem = Problem("RemoteChildrenPending", message, stalled=False)
            await self._write_status(
                key, obj, previous, stalled(previous, generation=generation, problem=problem, now=self.clock())
            )
            return Result(requeue_after=60.0)
        if remaining:
            return Result(requeue_after=2.0)
        with contextlib.suppress(NotFound):  # gone already: our removal, seen late by the cache
            await self.set_finalizer(key, obj, previous, present=False)
        return Result()

    async def _report_undecodable(self, key: str, problem: Undecodable) -> None:
        """A UnitedDeployment too deeply nested to read: a Warning Event and a ``Stalled``
        condition (reason ``Undecodable``) on it, from its stub (metadata and, when readable,
        status); its children are left alone, as for an invalid spec."""
        stub = problem.object
        if deleting(stub):
            return
        previous = self._previous_status(key, stub)
        generation = int((stub.get("metadata") or {}).get("generation") or 0)
        self.recorder.event(stub, "Warning", "Undecodable", problem.reason)
        status = stalled(
            previous, generation=generation, problem=Problem("Undecodable", problem.reason), now=self.clock()
        )
        await self._write_status(key, stub, previous, status)

    async def _admit(self, key: str, obj: Json) -> UnitedDeployment:
        """``admit(obj)``, letting the loop run between its steps (one per subset: each merges
        a patch). The outcome is kept per (uid, generation) and the metadata admit reads, as
        the spec changes only with the generation: a pass after a pod event validates nothing."""
        meta = obj.get("metadata") or {}
        generation = meta.get("generation")
        basis = (
            obj.get("apiVersion"),
            *(meta.get(k) for k in ("uid", "name", "namespace", "labels", "annotations")),
            generation,
        )
        known = self._admitted.get(key)
        if known is None or known[0] != basis or not generation:
            steps = admission(obj)
            outcome: UnitedDeployment | ManifestError
            while True:
                try:
                    next(steps)
                except StopIteration as done:
                    outcome = done.value
                    break
                except ManifestError as e:
                    outcome = e
                    break
                await asyncio.sleep(0)
            known = self._admitted[key] = (basis, outcome)
        if isinstance(known[1], ManifestError):
            raise known[1]
        return known[1]

    def _previous_status(self, key: str, obj: Mapping[str, Any]) -> Json:
        written = self._written.newer(key, obj)
        return written[1] if written is not None else dict(obj.get("status") or {})

    def _status_version(self, key: str, obj: Mapping[str, Any]) -> str:
        """The resourceVersion the status about to be written was computed from: the cached
        object's, or our last status write's while the cache lags behind it (that write was
        itself conditional on the cached version, so nothing but our status changed between)."""
        written = self._written.newer(key, obj)
        if written is not None:
            return str(written[0])
        return str((obj.get("metadata") or {}).get("resourceVersion") or "")

    async def _write_status(self, key: str, obj: Mapping[str, Any], previous: Json, status: Json) -> bool:
        """Merge-patch the status, conditional on the resourceVersion it was computed from: a
        newer status (another replica's, or one after a spec change) is never overwritten; the
        409 requeues the key."""
        if status == previous:
            return False
        meta = obj.get("metadata") or {}
        patch: Json = {"status": merge_patch(previous, status)}
        version = self._status_version(key, obj)
        if version:
            patch["metadata"] = {"resourceVersion": version}
        log.info("status", changed=changed_paths(patch["status"])[:20])
        answer = await self.client.patch(
            self.ud_resource,
            str(meta.get("name")),
            patch,
            patch_type=PatchType.MERGE,
            namespace=str(meta.get("namespace")),
            subresource="status",
        )
        self._written.record(key, _rv(answer), status)
        return True


POD_SECURITY_PREFIX = "pod-security.kubernetes.io/"


def pod_security_labels(namespace: Mapping[str, Any]) -> dict[str, str]:
    """The Pod Security admission labels (``pod-security.kubernetes.io/*``) of a host namespace,
    for the namespace the controller creates in a member: its pods must meet the same level."""
    labels = (namespace.get("metadata") or {}).get("labels") or {}
    return {k: str(v) for k, v in labels.items() if isinstance(k, str) and k.startswith(POD_SECURITY_PREFIX)}


def _finalizers(obj: Mapping[str, Any]) -> list[str]:
    return [str(f) for f in (obj.get("metadata") or {}).get("finalizers") or ()]


def _same(obj: Mapping[str, Any]) -> dict[str, str] | None:
    """Delete preconditions naming the object read: deletes go by name, and the name may belong
    to another object by the time the request arrives."""
    uid = uid_of(obj)
    return {"uid": uid} if uid else None


class _Pass:
    """One reconcile of one valid UnitedDeployment."""

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
        has = self.keys.remote_children_finalizer in _finalizers(self.obj)
        if remote == has or self.r._written.newer(self.key, self.obj) is not None:
            return  # as wanted, or the cache has not shown our last write yet
        answer = await self.r.set_finalizer(self.key, self.obj, self.previous, present=remote)
        self.obj = {**self.obj, "metadata": {**(self.obj.get("metadata") or {}), **(answer.get("metadata") or {})}}

    def claim_remote(self, resource: Resource, variant: str, claimed: Claim) -> None:
        """Where each remote subset's child lives (:attr:`sites`), and the children of this UD
        in member clusters merged into ``claimed``: a child counts for subset S only in S's own
        site; one anywhere else (the subset moved or was removed), like a duplicate, goes to
        :attr:`elsewhere` to be deleted. Clusters looked at: those of the spec and those the
        previous status names (a removed or moved subset's child is found there)."""
        previous = {
            str(e.get("cluster"))
            for e in self.previous.get("subsetStatuses") or ()
            if isinstance(e, Mapping) and e.get("cluster")
        }
        spec = {s.name: s.cluster for s in self.ud.spec.subsets if s.cluster}
        by_cluster = {c: self.site_of(c, variant) for c in sorted({*spec.values(), *previous})}
        self.sites = {name: by_cluster[c] for name, c in spec.items()}
        for name in list(claimed.by_subset):
            if name in self.sites:  # now remote: the host's child goes
                self.elsewhere.append((self.host, claimed.by_subset.pop(name)))
        for cluster, site in by_cluster.items():
            if site.children is None or not site.synced:
                continue
            cached = site.children.by_owner(self.ud.uid, self.namespace)
            found = claim(
                self.ud,
                self.r.expectations.fresh(self.key, resource, cached, cluster=cluster),
                self.keys,
                owner_of=site.owner_of,
            )
            for name, child in found.by_subset.items():
                if spec.get(name) == cluster:
                    claimed.by_subset[name] = child
                else:
                    self.elsewhere.append((site, child))
            for name, child in found.terminating.items():
                if spec.get(name) == cluster:
                    claimed.terminating[name] = child
            self.elsewhere += [(site, child) for child in found.duplicates]
        for name, cluster in spec.items():
            if not self.sites[name].synced:
                known = last_known(self.previous, name, cluster)
                if known is not None:
                    self.known[name] = known

    def site_of(self, cluster: str, variant: str) -> Site:
        """The site of ``cluster`` for this pass; unusable (with the reason) when there is no such
        ``Cluster``, it does not admit this namespace, or cannot be used now."""
        members = self.r.caches.members
        member = members.get(cluster) if members is not None else None
        remote = members.remote if members is not None else None
        if member is None or remote is None:
            return Site(cluster, None, None, None, usable=False, synced=False, reason=CLUSTER_NOT_FOUND)
        if not member.spec.allows(self.namespace):
            return Site(cluster, None, None, None, usable=False, synced=False, reason=NAMESPACE_NOT_ALLOWED)
        member.ensure(variant)
        children, pods = member.stores(variant)
        usable = member.usable(variant)
        health = member.health
        reason = "" if usable else (health.reason if not health.ready else CLUSTER_SYNCING)
        return Site(
            cluster,
            member.client,
            children,
            pods,
            owner_of=remote.owner_of,
            usable=usable,
            synced=member.synced(variant),
            reason=reason,
            since=health.since,
            detail="" if health.ready else health.message,
            remote=remote,
            suspect=member.suspect,
            create_namespaces=member.spec.create_namespaces,
        )

    async def create(self, site: Site, resource: Resource, body: Json) -> Any:
        """Create ``body`` in ``site``; in a member whose namespace is missing, create the
        namespace first (labelled with our host identity; never deleted) when both the controller
        (``--create-member-namespaces``) and the member's ``Cluster`` (``createNamespaces``) allow
        it. The host namespace's Pod Security labels go with it: a namespace the controller makes
        must not admit pods its host namespace would refuse."""
        assert site.client is not None
        try:
            return await site.client.create(resource, body, namespace=self.namespace)
        except NotFound as e:
            if site.remote is None or (e.body.get("details") or {}).get("kind") != "namespaces":
                raise
            if not (self.r.create_member_namespaces and site.create_namespaces):
                why = (
                    "the controller's namespace creation is off"
                    if site.create_namespaces
                    else f"Cluster {site.cluster} does not set createNamespaces: true"
                )
                raise ApiError(f"namespace {self.namespace} does not exist there ({why})", status=404) from None
        host_namespace = await self.r.client.get(NAMESPACES, self.namespace)
        labels = pod_security_labels(host_namespace)
        labels[self.keys.created_by_cluster] = site.remote.host_id
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace, "labels": labels}}
        with contextlib.suppress(AlreadyExists):
            await site.client.create(NAMESPACES, namespace)
            self.writes += 1
        return await site.client.create(resource, body, namespace=self.namespace)

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
                    CONTROLLER_REVISIONS, name, namespace=self.namespace, preconditions=_same(by_name[name])
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
        for name in draining:
            child = claimed.by_subset[name]
            before = int((child.get("spec") or {}).get("replicas") or 0)
            after = plan[name].replicas
            if before == after:
                continue
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
        topology = {s.name for s in self.ud.spec.subsets}
        kept = set(keep)
        doomed = [(c, resource) for name, c in claimed.by_subset.items() if name not in topology | kept]
        doomed += [(c, resource) for c in claimed.duplicates]
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
                    preconditions=_same(child),
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
            refs = [
                r for r in (child.get("metadata") or {}).get("ownerReferences") or [] if r.get("uid") != self.ud.uid
            ]
            await self.write(
                "release",
                name_of(child),
                self.r.client.patch(
                    resource,
                    name_of(child),
                    identified({"metadata": {"ownerReferences": refs or None}}, child, exact=True),
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


def owners_of(obj: Mapping[str, Any]) -> Iterable[str]:
    """Keys of the UnitedDeployments that control ``obj`` (at most one)."""
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == "UnitedDeployment":
            yield f"{meta.get('namespace')}/{ref.get('name')}"


def changed_paths(patch: Any, prefix: str = "", depth: int = 2) -> list[str]:
    """The fields a merge patch sets or removes, ``depth`` levels down, for the log line (a
    JSON patch diff of the whole status cost 4 % of a cold start's CPU)."""
    if not isinstance(patch, dict) or depth == 0 or not patch:
        return [prefix or "/"]
    return [p for k, v in patch.items() for p in changed_paths(v, f"{prefix}/{k}", depth - 1)]


__all__ = ["Caches", "Reconciler", "Result", "RetryableError"]
