"""The WorkloadSpread controller: informers, event mapping and the pass.

A pass is level-triggered and reads only the caches: admit the spread (invalid, or a second
spread on the same workload: a ``Stalled`` condition and a Warning Event, nothing else
touched), :func:`~united.workloadspread.sync.sync` decides, and the writes follow — first the
status (merge patch on the status subresource with the spread's resourceVersion: a booking
the webhook wrote meanwhile is never overwritten, the 409 requeues, and nothing is adopted
into a slot booked meanwhile), then pod deletion costs and adoptions (merge patches naming
the pod's uid, only what differs), Adaptive deletions (uid precondition), Events. A pass with
nothing to change writes nothing.

Events that concern a spread (as OpenKruise's controller, plus StatefulSet scale, which it forgot): the
spread itself; a pod of its target (owner chain) or naming it in its annotation; its target
workload's spec or replica count, or a ReplicaSet of a target Deployment; a Node's labels,
taints or schedulability (adoption of unplaced pods goes by node).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from united.api.document import Json
from united.api.field import ManifestError
from united.api.groups import GROUP, KRUISE_GROUP
from united.api.mergepatch import identified, merge_patch
from united.kube import ApiError, Conflict, KubeClient, NotFound, PatchType, Resource
from united.kube.client import CLONE_SETS, DEPLOYMENTS, NODES, PODS, REPLICA_SETS, STATEFUL_SETS
from united.kube.discovery import served
from united.kube.errors import namespace_terminating
from united.runtime.controller import Controller, Host, Result, Stores
from united.runtime.informer import DELETED, MODIFIED, Informer
from united.workloadspread import matching
from united.workloadspread.admission import admit
from united.workloadspread.bystanders import Bystanders
from united.workloadspread.injection import matched
from united.workloadspread.model import DELETION_COST_ANNOTATION, PLURAL, Spec, Status, WorkloadSpread, group_of, parse
from united.workloadspread.status import stalled
from united.workloadspread.statuses import Statuses
from united.workloadspread.sync import sync
from united.workloadspread.validation import conflicts

log = structlog.get_logger(__name__)
JOBS = Resource("batch", "v1", "jobs", True, "Job")
WORKLOADS: Mapping[tuple[str, str], Resource] = {
    ("apps", "Deployment"): DEPLOYMENTS,
    ("apps", "ReplicaSet"): REPLICA_SETS,
    ("apps", "StatefulSet"): STATEFUL_SETS,
    ("batch", "Job"): JOBS,
    ("apps.kruise.io", "CloneSet"): CLONE_SETS,
}
"""The workloads a spread may target, and the owners a pod's chain walks through."""


def ws_resource(api_group: str) -> Resource:
    return Resource(api_group, "v1alpha1" if api_group == GROUP else "v1beta1", PLURAL, True, "WorkloadSpread")


def key_of(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


_SPREAD_INPUTS = (
    ("spec",),
    ("metadata", "generation"),
    ("metadata", "deletionTimestamp"),
    ("metadata", "labels"),
    ("metadata", "annotations"),
    ("metadata", "uid"),
)
"""What a spread's pass reads besides its status."""

POD_EVENT_DELAY = 0.2
"""Seconds a pod event, or a change of a spread's status only, waits before the spread's
pass: a pass reads every pod of the namespace, and a scale-out brings several events per pod
(and a booking per pod), so one pass per event is quadratic in the burst and its status
writes race the webhook's bookings; the events of this window share one pass."""


def status_patch(ws: WorkloadSpread, status: Status) -> Json:
    """The merge patch writing ``status`` over the spread's, conditional on its resourceVersion."""
    body: Json = {"status": merge_patch(ws.status.to_dict(), status.to_dict())}
    if ws.resource_version:
        body["metadata"] = {"resourceVersion": ws.resource_version}
    return body


def _stub(obj: Json) -> WorkloadSpread:
    """A spread whose spec cannot be read, for its ``Stalled`` status: metadata and status only."""
    meta = obj.get("metadata") or {}
    try:
        status = parse({**obj, "spec": {}}).status
    except ManifestError:
        status = Status()
    generation = meta.get("generation")
    return WorkloadSpread(
        api_version=str(obj.get("apiVersion") or ""),
        name=str(meta.get("name") or ""),
        namespace=str(meta.get("namespace") or ""),
        spec=Spec(target_ref=None),
        status=status,
        generation=generation if isinstance(generation, int) else 0,
        resource_version=str(meta.get("resourceVersion") or ""),
    )


class Caches:
    """What the pass and the webhook read: spreads (admitted once per resourceVersion), pods,
    workloads by kind, nodes."""

    def __init__(self, spreads: Stores, pods: Stores, workloads: dict[tuple[str, str], Stores], nodes: Stores) -> None:
        self.spreads = spreads
        self.pods = pods
        self.workloads = workloads
        self.nodes = nodes
        self.bystanders = Bystanders()
        """Controllers whose pods no spread targets, for the webhook server's thread; forgotten
        on every event that may change a walk up a pod's owners."""
        self._admitted: dict[str, tuple[str, WorkloadSpread | ManifestError]] = {}

    def admitted(self, obj: Json) -> WorkloadSpread | ManifestError:
        key, rv = key_of(obj), str((obj.get("metadata") or {}).get("resourceVersion") or "")
        known = self._admitted.get(key)
        if known is None or known[0] != rv or not rv:
            try:
                outcome: WorkloadSpread | ManifestError = admit(obj)
            except ManifestError as e:
                outcome = e
            known = self._admitted[key] = (rv, outcome)
        return known[1]

    def spreads_in(self, namespace: str) -> list[WorkloadSpread]:
        """The namespace's valid spreads, oldest first (OpenKruise's order for two claimants)."""
        objs = sorted(
            self.spreads.list(namespace),
            key=lambda o: (str((o.get("metadata") or {}).get("creationTimestamp") or ""), key_of(o)),
        )
        return [ws for o in objs if isinstance(ws := self.admitted(o), WorkloadSpread)]

    def forget(self, key: str) -> None:
        self._admitted.pop(key, None)

    def owner(self, namespace: str, ref: Json) -> Json | None:
        """The owner object ``ref`` names, from the caches; None when it is not cached or when
        ``ref`` does not prove it: a reference without the owner's uid (the API server never
        stores one; a forged review does) is not looked up by name."""
        uid, name = ref.get("uid"), ref.get("name")
        if not uid or not isinstance(uid, str) or not isinstance(name, str):
            return None
        store = self.workloads.get((group_of(str(ref.get("apiVersion") or "")), str(ref.get("kind") or "")))
        obj = store.get(f"{namespace}/{name}") if store is not None else None
        if obj is None or _uid(obj) != uid:
            return None
        return obj

    def target(self, ws: WorkloadSpread) -> tuple[Json | None, list[Json]]:
        """The target workload and, for a Deployment, its ReplicaSets."""
        ref = ws.spec.target_ref
        if ref is None:
            return None, []
        store = self.workloads.get((ref.group, ref.kind))
        workload = store.get(f"{ws.namespace}/{ref.name}") if store is not None else None
        if workload is None or ref.kind != "Deployment":
            return workload, []
        uid = str((workload.get("metadata") or {}).get("uid") or "")
        return workload, self.workloads[("apps", "ReplicaSet")].by_owner(uid, ws.namespace)


def _namespace(obj: Json) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def _changed(old: Json | None, new: Json, *paths: tuple[str, ...]) -> bool:
    if old is None:
        return True

    def at(obj: Json, path: tuple[str, ...]) -> Any:
        for part in path:
            obj = obj.get(part) if isinstance(obj, dict) else None  # type: ignore[assignment]
        return obj

    return any(at(old, p) != at(new, p) for p in paths)


class WorkloadSpreadController(Controller):
    name = "workloadspread"
    log_key = "workloadspread"

    def __init__(
        self,
        host: Host,
        *,
        api_group: str,
        clock: Callable[[], datetime.datetime] | None = None,
        statuses: Statuses | None = None,
    ) -> None:
        super().__init__(host)
        self.resource = ws_resource(api_group)
        workloads: dict[tuple[str, str], list[Informer]] = {
            kind: host.watch(resource, None, self._on_workload)
            for kind, resource in WORKLOADS.items()
            if resource is not CLONE_SETS
        }
        self.caches = Caches(
            spreads=Stores(host.watch(self.resource, None, self._on_spread)),
            pods=Stores(host.watch(PODS, None, self._on_pod)),
            workloads={kind: Stores(i) for kind, i in workloads.items()},
            nodes=Stores(host.watch(NODES, None, self._on_node)),
        )
        self.spreads = Reconciler(
            client=host.client,
            caches=self.caches,
            resource=self.resource,
            recorder=host.recorder,
            clock=clock,
            statuses=statuses,
        )
        self.reconciler = self.spreads

    async def discover(self) -> None:
        """CloneSets are watched once OpenKruise's CRD (or the simulated one) is served."""
        kind = ("apps.kruise.io", "CloneSet")
        if kind in self.caches.workloads or not await served(self.host.client, CLONE_SETS):
            return
        informers = self.host.watch(CLONE_SETS, None, self._on_workload)
        self.caches.workloads[kind] = Stores(informers)

    # -- event mapping ---------------------------------------------------------------------

    def _on_spread(self, kind: str, obj: Json, old: Json | None) -> None:
        if kind == MODIFIED and not _changed(old, obj, *_SPREAD_INPUTS):
            # A status-only change: a webhook booking, or our own write. A burst of bookings
            # shares one recount instead of racing the webhook's writes one for one.
            self.queue.add_after(key_of(obj), POD_EVENT_DELAY)
            return
        self.caches.bystanders.forget(_namespace(obj))
        self.enqueue(obj)

    def _on_pod(self, kind: str, obj: Json, old: Json | None) -> None:
        for key in self._spreads_of_pod(obj):
            self.queue.add_after(key, POD_EVENT_DELAY)

    def _spreads_of_pod(self, pod: Json) -> set[str]:
        """The spreads a pod event concerns. The namespace comes first: every pod event of the
        cluster passes here, and one in a namespace without spreads costs a dictionary lookup,
        not a parse of what its owner wrote in its annotations."""
        meta = pod.get("metadata")
        namespace = meta.get("namespace") if isinstance(meta, dict) else None
        if not isinstance(namespace, str):
            return set()
        spreads = {key_of(o) for o in self.caches.spreads.list(namespace)}
        if not spreads:
            return set()
        keys = set()
        m = matched(pod)
        if m is not None and f"{namespace}/{m.name}" in spreads:
            keys.add(f"{namespace}/{m.name}")
        ref = matching.controller_ref(pod)
        for _ in range(matching.MAX_DEPTH):
            if ref is None:
                break
            keys |= self._targeting(namespace, ref)
            owner = self.caches.owner(namespace, ref)
            ref = matching.controller_ref(owner) if owner is not None else None
        return keys

    def _targeting(self, namespace: str, ref: Mapping[str, Any]) -> set[str]:
        group, kind, name = group_of(str(ref.get("apiVersion") or "")), ref.get("kind"), ref.get("name")
        out = set()
        for obj in self.caches.spreads.list(namespace):
            target = (obj.get("spec") or {}).get("targetRef") or {}
            if (
                isinstance(target, dict)
                and target.get("kind") == kind
                and target.get("name") == name
                and group_of(str(target.get("apiVersion") or "")) == group
            ):
                out.add(key_of(obj))
        return out

    def _on_workload(self, kind: str, obj: Json, old: Json | None) -> None:
        namespace = _namespace(obj)
        if kind == DELETED or (kind == MODIFIED and _changed(old, obj, ("metadata", "ownerReferences"))):
            self.caches.bystanders.forget(namespace)
        if kind == MODIFIED and not _changed(
            old, obj, ("spec",), ("status", "replicas"), ("metadata", "uid"), ("metadata", "labels")
        ):
            return
        ref = {
            "apiVersion": obj.get("apiVersion") or "",
            "kind": obj.get("kind") or "",
            "name": key_of(obj).split("/", 1)[1],
        }
        keys = self._targeting(namespace, ref)
        parent = matching.controller_ref(obj)
        if parent is not None:
            keys |= self._targeting(namespace, parent)
        for key in keys:
            self.queue.add(key)

    def _on_node(self, kind: str, obj: Json, old: Json | None) -> None:
        if kind == MODIFIED and not _changed(
            old, obj, ("metadata", "labels"), ("spec", "taints"), ("spec", "unschedulable")
        ):
            return
        for spread in self.caches.spreads.list():
            self.enqueue(spread)


class Reconciler:
    """One pass per key; holds nothing but the clock."""

    def __init__(
        self,
        *,
        client: KubeClient,
        caches: Caches,
        resource: Resource,
        recorder: Any,
        clock: Callable[[], datetime.datetime] | None = None,
        statuses: Statuses | None = None,
    ) -> None:
        self.client = client
        self.caches = caches
        self.resource = resource
        self.recorder = recorder
        self.clock = clock or (lambda: datetime.datetime.now(datetime.UTC))
        self.statuses = statuses if statuses is not None else Statuses()
        """Shared with the webhook's ledger: turns at each spread's status, and the last answer,
        read instead of a cache that has not shown it yet (a pass neither repeats it nor 409s)."""

    async def reconcile(self, key: str) -> Result:
        obj = self.caches.spreads.get(key)
        if obj is None:
            self.caches.forget(key)
            self.statuses.forget(key)
            return Result()
        obj = self.statuses.freshest(key, obj)
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            return Result()
        now = self.clock()
        outcome = self.caches.admitted(obj)
        if isinstance(outcome, WorkloadSpread):
            others = [ws for ws in self.caches.spreads_in(outcome.namespace) if ws.name != outcome.name]
            earlier = [ws for ws in others if _older(ws, outcome)]
            errors = conflicts(outcome, earlier)
            if errors:
                outcome = ManifestError(errors)
        try:
            if isinstance(outcome, ManifestError):
                return await self._stalled(obj, outcome, now)
            return await self._pass(obj, outcome, now)
        except (StaleStatusError, Conflict) as e:
            # Mostly the webhook booked meanwhile and this pass counted against the older status;
            # that write's event brings the pass again, or this delay does. Not a failure.
            log.info("a write met a newer object; the pass runs again", workloadspread=key, error=str(e))
            return Result(requeue_after=POD_EVENT_DELAY)
        except ApiError as e:
            if not namespace_terminating(e):
                raise
            log.info("namespace is being deleted; nothing more to do", error=str(e))
            return Result()

    async def _stalled(self, obj: Json, error: ManifestError, now: datetime.datetime) -> Result:
        """Invalid: a ``Stalled`` condition and a Warning Event; pods and workload untouched."""
        ws = _stub(obj)
        lines = [str(x) for x in error.errors]
        message = "; ".join(lines[:5]) + (f" (and {len(lines) - 5} more)" if len(lines) > 5 else "")
        status = stalled(ws, error.errors, now=now.timestamp())
        if status != ws.status:
            self.recorder.event(obj, "Warning", "InvalidSpec", message)
            await self.write_status(ws, status)
        return Result()

    async def _pass(self, obj: Json, ws: WorkloadSpread, now: datetime.datetime) -> Result:
        workload, replicasets = self.caches.target(ws)
        decided = sync(
            ws,
            pods=self.caches.pods.list(ws.namespace),
            workload=workload,
            replicasets=replicasets,
            nodes={key_of(n).split("/", 1)[1]: n for n in self.caches.nodes.list()},
            now=now,
        )
        if decided.status != ws.status:
            # First: it counts the adoptions and is conditional on the version the webhook
            # books against, so a pod is never adopted into a slot booked meanwhile.
            await self.write_status(ws, decided.status)
        pods = {key_of(p).split("/", 1)[1]: p for p in self.caches.pods.list(ws.namespace)}
        patches: dict[str, Json] = {}
        for name, value in decided.costs.items():
            patches[name] = {"metadata": {"annotations": {DELETION_COST_ANNOTATION: value}}}
        for name, patch in decided.adoptions.items():
            patches[name] = merge_patch_union(patches.get(name, {}), patch)
        for name, patch in patches.items():
            pod = pods.get(name)
            if pod is None:
                continue
            try:
                await self.client.patch(
                    PODS, name, identified(patch, pod), patch_type=PatchType.MERGE, namespace=ws.namespace
                )
            except NotFound:
                continue
        for name in decided.deletions:
            pod = pods.get(name)
            if pod is None:
                continue
            uid = (pod.get("metadata") or {}).get("uid")
            try:
                await self.client.delete(
                    PODS, name, namespace=ws.namespace, preconditions={"uid": str(uid)} if uid else None
                )
            except NotFound:
                continue
        for event_type, reason, message in decided.events:
            self.recorder.event(obj, event_type, reason, message)
        return Result(decided.requeue_after)

    async def write_status(self, ws: WorkloadSpread, status: Status) -> Json:
        body = status_patch(ws, status)
        log.info("status", workloadspread=ws.name, changed=sorted(body["status"])[:20])
        key = f"{ws.namespace}/{ws.name}"
        async with self.statuses.turn(key):
            if self.statuses.superseded(key, resource_version=ws.resource_version, uid=ws.uid):
                raise StaleStatusError(f"{key} was written after resourceVersion {ws.resource_version}")
            answer = await self.client.patch(
                self.resource,
                ws.name,
                body,
                patch_type=PatchType.MERGE,
                namespace=ws.namespace,
                subresource="status",
            )
            self.statuses.record(key, answer)
        return answer


class StaleStatusError(Exception):
    """A status write not sent: it was computed from a spread this process has written since."""


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def merge_patch_union(a: Json, b: Json) -> Json:
    """Two merge patches of one object as one (``b`` wins where both set a value)."""
    out = dict(a)
    for key, value in b.items():
        out[key] = (
            merge_patch_union(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


def _older(a: WorkloadSpread, b: WorkloadSpread) -> bool:
    ca = str(a.raw.get("metadata", {}).get("creationTimestamp") or "")
    cb = str(b.raw.get("metadata", {}).get("creationTimestamp") or "")
    return (ca, a.name) < (cb, b.name)


__all__ = ["KRUISE_GROUP", "Caches", "Reconciler", "WorkloadSpreadController", "ws_resource"]
