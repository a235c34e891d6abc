"""Reconcile one UnitedDeployment: level-triggered, cache-read, diff-first.

Every pass starts from the informer caches and the pure core and ends with the fewest writes
that make the cluster match: revisions, children (create, patch, delete, adopt, release),
then the status — which is written even when a child write failed, so users see why. A
pass with nothing to change makes no write at all (``united.uniteddeployment.diff``; status compared first).

Invalid input never reaches a child: the spec is admitted with the same rules as
``united validate``; a refusal becomes a ``Stalled`` condition and a Warning Event, and the
pass ends without touching children.

This module holds what outlives a pass (admissions, blueprints, our recent writes) and the
UnitedDeployment's own writes (status, finalizer, remote children on deletion). A valid
UnitedDeployment's pass reads the caches (:mod:`~united.uniteddeployment.read`), asks the pure
:mod:`~united.uniteddeployment.planner` for the list of writes it intends and the status, and
sends the list (:mod:`~united.uniteddeployment.executor`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

import structlog

from united.api.conditions import Problem
from united.api.decode import Undecodable
from united.api.document import Json
from united.api.field import ManifestError
from united.api.mergepatch import merge_patch
from united.api.timestamp import now_rfc3339
from united.kube import ApiError, KubeClient, NotFound, PatchType, Resource
from united.kube.errors import namespace_terminating
from united.runtime.controller import Result, RetryableError
from united.runtime.expectations import Expectations, LastWrite
from united.runtime.expectations import rv_of as _rv
from united.runtime.metrics import SubsetReplicas
from united.runtime.ordering import Ordering
from united.uniteddeployment import history, planner
from united.uniteddeployment.admission import admission
from united.uniteddeployment.children import deleting, name_of, same
from united.uniteddeployment.executor import Execution, OwnerChangedError
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import UnitedDeployment
from united.uniteddeployment.read import finalizers, read
from united.uniteddeployment.render.blueprints import Blueprints
from united.uniteddeployment.sites import Caches, Site, delete_remote_children
from united.uniteddeployment.status import stalled
from united.uniteddeployment.sync import Inputs

log = structlog.get_logger(__name__)


class Recorder(Protocol):
    def event(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None: ...


class Gauges(Protocol):
    def set_subsets(self, namespace: str, name: str, subsets: Mapping[str, SubsetReplicas]) -> None: ...
    def forget_uniteddeployment(self, namespace: str, name: str) -> None: ...


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
        self.ordering = Ordering()
        """Status writes wait for the host's child and revision writes in flight (bounded)."""
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
            if self._keys(obj).remote_children_finalizer in finalizers(obj):
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
        try:
            return await self._pass(ud, obj, previous, generation)
        except OwnerChangedError as e:
            log.info("not adopting", reason=str(e))
            return Result()
        except ApiError as e:
            if not namespace_terminating(e):
                raise
            log.info("namespace is being deleted; nothing more to do", error=str(e))
            return Result()

    async def _pass(self, ud: UnitedDeployment, obj: Json, previous: Json, generation: int) -> Result:
        """Read, decide (pure), send: one pass over a valid UnitedDeployment."""
        template = ud.spec.template
        assert template is not None
        host = Site(None, self.client, None, self.caches.pods)
        if template.variant not in self.caches.children:
            i = Inputs(ud, previous, Keys(ud.group), self.seconds())
            message = self.caches.unavailable.get(template.variant)
            planned = planner.unavailable(
                i, generation=generation, now=self.clock(), variant=template.variant, message=message
            )
            return await Execution(self, obj, previous, {None: host}).run(planned)
        seen, sites = await read(self, ud, obj, previous, generation, host)
        steps = planner.plan(seen)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                planned = done.value
                break
            await asyncio.sleep(0)
        return await Execution(self, obj, previous, sites).run(planned)

    @staticmethod
    def _keys(obj: Mapping[str, Any]) -> Keys:
        return Keys(str(obj.get("apiVersion") or "").partition("/")[0] or Keys().group)

    async def set_finalizer(self, key: str, obj: Mapping[str, Any], previous: Json, *, present: bool) -> Json:
        """Add or remove the remote-children finalizer: a merge patch of the whole list, guarded by
        the resourceVersion read (the list is replaced whole). The answer's version is recorded as
        our last write, so this pass's status patch is not refused as stale. Returns the answer."""
        meta = obj.get("metadata") or {}
        finalizer = self._keys(obj).remote_children_finalizer
        current = finalizers(obj)
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
        previous = self._previous_status(key, obj)
        blocked, remaining, deletes = delete_remote_children(self.caches.members, obj, previous, keys)
        for client, resource, child in deletes:
            with contextlib.suppress(NotFound):
                await client.delete(
                    resource,
                    name_of(child),
                    namespace=str(meta.get("namespace") or ""),
                    propagation_policy="Background",
                    preconditions=same(child),
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
        the spec changes only with the generation: a pass after a pod event validates nothing.
        The model is named by the version owner references should name (``api_version``)."""
        meta = obj.get("metadata") or {}
        generation = meta.get("generation")
        named = self.caches.owner_api_version
        basis = (
            obj.get("apiVersion"),
            named,
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
                    outcome = done.value if named is None else dataclasses.replace(done.value, api_version=named)
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
        409 requeues the key. It goes after the child writes other passes have in flight."""
        if status == previous:
            return False
        meta = obj.get("metadata") or {}
        patch: Json = {"status": merge_patch(previous, status)}
        version = self._status_version(key, obj)
        if version:
            patch["metadata"] = {"resourceVersion": version}
        log.info("status", changed=changed_paths(patch["status"])[:20])
        await self.ordering.reporting()
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
