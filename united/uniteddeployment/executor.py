"""Send what a UnitedDeployment pass intends: a plain loop over the
:mod:`~united.uniteddeployment.intents` the pure :mod:`~united.uniteddeployment.planner` returned,
in their order (sorted by stage), one request at a time.

What it adds is what only sending can tell: a failed write is collected, not raised (the status
says why and the key is requeued) unless the intent says it ends the pass; a namespace being
deleted ends the pass; a member that fails in transport is probed at once; every answer is
remembered for the next pass (:mod:`united.runtime.expectations`), and the successes are told in
one Event per reason. Then the status: the planner's, with the failures folded in, written when
due (:func:`united.uniteddeployment.sync.status_due`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from united.api.document import Json
from united.kube import ApiError, Conflict, NotFound, PatchType, Resource
from united.kube.client import CONTROLLER_REVISIONS, PODS
from united.kube.errors import AlreadyExists, namespace_terminating
from united.runtime.controller import Result, RetryableError
from united.runtime.expectations import rv_of
from united.runtime.metrics import SubsetReplicas
from united.uniteddeployment import sync
from united.uniteddeployment.children import deleting, name_of, uid_of
from united.uniteddeployment.intents import CHILD, POD, REVISION, Emit, Write
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.planner import Pass
from united.uniteddeployment.resources import resource_of
from united.uniteddeployment.sites import Site, create_in

if TYPE_CHECKING:
    from united.uniteddeployment.reconciler import Reconciler


class OwnerChangedError(Exception):
    """The UnitedDeployment read afresh is being deleted or is another object: end the pass."""


class Execution:
    """One pass's list of intents being sent (see the module docstring): the failures, the
    successes by Event reason, and how many writes went through."""

    def __init__(self, r: Reconciler, obj: Json, previous: Json, sites: Mapping[str | None, Site]) -> None:
        self.r = r
        self.obj = obj
        self.previous = previous
        meta = obj.get("metadata") or {}
        self.key = f"{meta.get('namespace')}/{meta.get('name')}"
        self.namespace = str(meta.get("namespace"))
        self.keys = Keys(str(obj.get("apiVersion") or "").partition("/")[0] or Keys().group)
        self.sites = sites
        """Where each write goes, by cluster (None: the host)."""
        self.errors: list[str] = []
        self.done: dict[str, list[str]] = {}
        """Messages of this pass's successful writes by Event reason: one Event per reason
        per pass (a new UD with 3 subsets gets one ``SuccessfulCreate``, not three)."""
        self.writes = 0

    async def run(self, planned: Pass) -> Result:
        """Send every intent in order, then report; the pass's :class:`Result`."""
        for intent in planned.intents:
            if isinstance(intent, Emit):
                self.r.recorder.event(self.obj, intent.type, intent.reason, intent.message)
            else:
                await self.send(intent)
        for reason, messages in self.done.items():
            self.r.recorder.event(self.obj, "Normal", reason, "; ".join(messages))
        report = planned.report
        if report.fixed is not None:
            await self.r._write_status(self.key, self.obj, self.previous, report.fixed)
            return Result()
        status = report.status(self.errors)
        if status is not None:
            await self.report(status)
        if self.errors:
            raise RetryableError("; ".join(self.errors))
        return Result(requeue_after=report.requeue_after)

    async def report(self, status: Json) -> None:
        """Export the subsets' gauges; write the status when due."""
        if self.r.gauges is not None:
            rows = status["subsetStatuses"]
            subsets = {s["name"]: SubsetReplicas(desired=s["desired"], ready=s.get("readyReplicas", 0)) for s in rows}
            self.r.gauges.set_subsets(self.namespace, str((self.obj.get("metadata") or {}).get("name")), subsets)
        if sync.status_due(status, self.previous, writes=self.writes, failed=bool(self.errors)):
            await self.r._write_status(self.key, self.obj, self.previous, status)

    def resource(self, w: Write) -> Resource:
        if w.target == REVISION:
            return CONTROLLER_REVISIONS
        if w.target == POD:
            return PODS
        return resource_of(w.variant)

    async def send(self, w: Write) -> None:
        """Send one write; failures are collected or raised as the intent says."""
        if w.verb == "recheck":
            return await self.recheck()
        if w.verb == "finalizer":
            answer = await self.r.set_finalizer(self.key, self.obj, self.previous, present=w.present)
            meta = {**(self.obj.get("metadata") or {}), **(answer.get("metadata") or {})}
            self.obj = {**self.obj, "metadata": meta}
            return None
        site = self.sites.get(w.cluster)
        if site is None or site.client is None:
            return None  # no request to a cluster we cannot use; the status says why
        client, resource, body = site.client, self.resource(w), w.body
        call: Any
        if w.verb == "create" and isinstance(body, dict) and w.target == CHILD:
            call = self.create(site, resource, body)
        elif w.verb == "create" and body is not None:
            call = client.create(resource, body, namespace=self.namespace)
        elif w.verb == "patch" and isinstance(body, dict):
            call = client.patch(resource, w.name, body, patch_type=PatchType.MERGE, namespace=self.namespace)
        elif w.verb == "delete":
            call = client.delete(
                resource,
                w.name,
                namespace=self.namespace,
                propagation_policy=w.propagation,
                preconditions=w.preconditions,
            )
        else:
            raise ValueError(f"not a write: {w}")
        # A member cluster's write goes to its own API server: no status here waits for it.
        acting = self.r.ordering.acting() if w.cluster is None else contextlib.nullcontext()
        try:
            with acting:
                answer = await call
        except NotFound:
            if w.remember_missing:
                self.remember(w, resource, None)
            if not w.missing_ok:
                self.failed(w, "not found")
            return None
        except Conflict as e:
            self.failed(w, f"conflict ({e})")
            return None
        except AlreadyExists as e:
            if w.exists:
                raise RetryableError(w.exists) from e
            self.failed(w, str(e), error=e, site=site)
            return None
        except ApiError as e:
            self.failed(w, str(e), error=e, site=site)
            return None
        self.writes += 1
        if w.success is not None:
            reason, message = w.success
            self.done.setdefault(reason, []).append(message)
        if w.remember or w.remember_missing:
            self.remember(w, resource, answer if isinstance(answer, dict) else {})
        return None

    def failed(self, w: Write, why: str, *, error: ApiError | None = None, site: Site | None = None) -> None:
        """A write that failed: collected for the status, or the pass ends (the intent's
        ``collect`` off, or a namespace being deleted). An API error other than a 404 or a
        conflict also earns a Warning, and a member that failed in transport is probed at once.
        Called while the failure is handled: ending the pass re-raises it."""
        if not w.collect or (error is not None and namespace_terminating(error)):
            raise
        transport = error is not None and (error.unanswered or error.status >= 500)
        if transport and site is not None and site.suspect is not None:
            site.suspect()
        self.errors.append(f"{w.action} {w.what}: {why}")
        if error is not None:
            self.r.recorder.event(self.obj, "Warning", f"Failed{w.action.capitalize()}", f"{w.action} {w.what}: {why}")

    def remember(self, w: Write, resource: Resource, answer: Json | None) -> None:
        """The answer (or, for a delete, the object gone) stands in for the cache until it catches up."""
        cluster = w.cluster or ""
        if w.verb == "delete":
            self.r.expectations.remember(self.key, resource, w.name, None, rv=w.rv, cluster=cluster, uid=w.uid)
        elif answer is not None and (answer or w.target == REVISION):
            # A revision is known by the name decided; a child by its answer's (created: generated).
            name = w.name if w.target == REVISION else name_of(answer)
            self.r.expectations.remember(self.key, resource, name, answer, rv=rv_of(answer), cluster=cluster)

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

    async def recheck(self) -> None:
        """client-go's RecheckDeletionTimestamp: before adopting anything, read the
        UnitedDeployment afresh (the cache may lag) and give up the pass if it is being
        deleted or has been replaced by another of the same name."""
        meta = self.obj.get("metadata") or {}
        try:
            live = await self.r.client.get(self.r.ud_resource, str(meta.get("name")), namespace=self.namespace)
        except NotFound:
            live = {}
        if uid_of(live) != str(meta.get("uid") or "") or deleting(live):
            raise OwnerChangedError(f"{self.key} is being deleted or was replaced; nothing adopted")
