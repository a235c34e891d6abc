"""Simulated OpenKruise workload controllers: CloneSet and Advanced StatefulSet.

Just enough of Kruise's behaviour for the UnitedDeployment controller's tests: pods
created from ``spec.template`` (labels included, controller owner reference to the
workload), ``spec.replicas`` honoured up and down, a partition honoured, and the
status a controller reads (``replicas``, ``readyReplicas``, ``updatedReplicas``,
``observedGeneration``, ``updateRevision``, ``labelSelector`` …).

Simplifications, on purpose:

* Revisions are ``<name>-<hash of spec.template>`` and stamped on pods as the
  ``controller-revision-hash`` label. Old templates are remembered in memory only,
  so after a simulator restart pods kept at an old revision are recreated at the
  update revision.
* Updates are recreate-only and all at once: a pod that must move to the update
  revision is deleted and a new one created (no in-place update, no maxUnavailable,
  no maxSurge).
* CloneSet partition (``spec.updateStrategy.partition`` or
  ``spec.updateStrategy.rollingUpdate.partition``; an int or a percentage of
  replicas, rounded up) is the *number* of pods kept at the old revision.
  Advanced StatefulSet partition (``spec.updateStrategy.rollingUpdate.partition``)
  is an *ordinal*: pods with a lower ordinal keep their revision.
* Advanced StatefulSet pods are ``<name>-<ordinal>``, managed in parallel (no
  OrderedReady); CloneSet pods get generated names. Scale-down removes unscheduled,
  then not-ready, then the lowest ``controller.kubernetes.io/pod-deletion-cost`` (as the
  real CloneSet does; WorkloadSpread relies on it), then old-revision, then the newest pods
  first (CloneSet), or the highest ordinals (Advanced StatefulSet).
* Each reconcile lists the workload's pods from the API server (not from a cache),
  so it never acts on stale state and needs no expectations.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import json
import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from united.kube.client import (
    ADVANCED_STATEFUL_SETS,
    CLONE_SETS,
    JSON,
    PODS,
    KubeClient,
    PatchType,
    Resource,
)
from united.kube.errors import AlreadyExists, ApiError, Conflict, Forbidden, NotFound
from united.workloadspread.model import DELETION_COST_ANNOTATION

from .background import Background
from .nodes import is_pod_ready
from .reflector import Reflector, object_key

log = logging.getLogger(__name__)

REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
KINDS = {"CloneSet": CLONE_SETS, "StatefulSet": ADVANCED_STATEFUL_SETS}
_DECIMAL = re.compile(r"[+-]?[0-9]+")
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def selector_string(selector: Mapping[str, Any]) -> str:
    """A LabelSelector as the API's query string (``a=b,c in (d,e),!f``)."""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(sorted(values))})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(sorted(values))})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
        else:
            raise ValueError(f"unknown selector operator {op!r}")
    return ",".join(parts)


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` satisfy ``selector`` (an empty selector matches nothing here,
    as a workload with an empty selector would claim every pod)."""
    match = selector.get("matchLabels") or {}
    exprs = selector.get("matchExpressions") or []
    if not match and not exprs:
        return False
    if any(labels.get(k) != v for k, v in match.items()):
        return False
    for expr in exprs:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def template_revision(name: str, template: JSON) -> str:
    """``<name>-<10 hex digits of the template's canonical JSON hash>``."""
    canonical = json.dumps(template, sort_keys=True, separators=(",", ":"))
    return f"{name}-{hashlib.sha256(canonical.encode()).hexdigest()[:10]}"


def partition_count(workload: JSON, replicas: int) -> int:
    """The CloneSet partition as a pod count in [0, replicas] (percentages round up)."""
    strategy = (workload.get("spec") or {}).get("updateStrategy") or {}
    value = strategy.get("partition")
    if value is None:
        value = (strategy.get("rollingUpdate") or {}).get("partition")
    if value is None:
        return 0
    if isinstance(value, str) and value.endswith("%"):
        count = math.ceil(replicas * int(value[:-1]) / 100)
    else:
        count = int(value)
    return max(0, min(count, replicas))


def ordinal_partition(workload: JSON) -> int:
    """The Advanced StatefulSet partition ordinal (0 when unset)."""
    strategy = (workload.get("spec") or {}).get("updateStrategy") or {}
    return max(0, int((strategy.get("rollingUpdate") or {}).get("partition") or 0))


def pod_revision(pod: JSON) -> str:
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(REVISION_LABEL, ""))


def ordinal(pod: JSON, workload_name: str) -> int | None:
    """The ordinal of an Advanced StatefulSet pod ``<name>-<n>``, or None."""
    suffix = str((pod.get("metadata") or {}).get("name", "")).removeprefix(f"{workload_name}-")
    return int(suffix) if suffix.isdigit() else None


def deletion_cost(pod: JSON) -> int:
    """The pod's ``controller.kubernetes.io/pod-deletion-cost``: a base-10 int32 as the API
    server validates it; absent or anything else counts as 0, as in Kubernetes' ranking."""
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(DELETION_COST_ANNOTATION)
    if isinstance(value, str) and _DECIMAL.fullmatch(value):
        cost = int(value)
        if -(2**31) <= cost < 2**31:
            return cost
    return 0


def scale_down_order(pod: JSON, update_revision: str) -> tuple[bool, int, bool, int, bool, str]:
    """Sort key, cheapest to lose first (CloneSet), in the order of Kubernetes'
    ``ActivePodsWithRanks`` that Kruise's CloneSet uses: unassigned, then Pending < Unknown <
    Running, then not ready, then the **lowest pod-deletion-cost**; then (a simplification of
    CloneSet's revision-first choice) old revisions, then the newest."""
    meta = pod.get("metadata") or {}
    created = str(meta.get("creationTimestamp", ""))
    phase = str((pod.get("status") or {}).get("phase", "Pending"))
    return (
        bool((pod.get("spec") or {}).get("nodeName")),
        _PHASE_RANK.get(phase, 0),
        is_pod_ready(pod),
        deletion_cost(pod),
        pod_revision(pod) == update_revision,
        "".join(chr(0x10FFFF - ord(c)) for c in created),
    )


@dataclass(frozen=True)
class Plan:
    """What one reconcile does: pods to create (per revision) and pods to delete."""

    create: tuple[tuple[str, int | None], ...]
    delete: tuple[str, ...]


def plan_clone_set(
    pods: list[JSON],
    *,
    replicas: int,
    partition: int,
    update_revision: str,
    current_revision: str | None,
) -> Plan:
    """Scale to ``replicas``; keep ``partition`` pods at the old revision when there
    is one to keep (``current_revision``), and move the rest to the update revision."""
    active = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
    old = [p for p in active if pod_revision(p) != update_revision]
    keep_old = partition if current_revision and current_revision != update_revision else 0
    if len(active) < replicas:
        missing = replicas - len(active)
        at_old = min(max(0, keep_old - len(old)), missing)
        create = [(str(current_revision), None)] * at_old + [(update_revision, None)] * (missing - at_old)
        return Plan(tuple(create), ())
    if len(active) > replicas:
        victims = sorted(active, key=lambda p: scale_down_order(p, update_revision))
        excess = victims[: len(active) - replicas]
        return Plan((), tuple(object_key(p)[1] for p in excess))
    if len(old) > keep_old:
        victims = sorted(old, key=lambda p: scale_down_order(p, update_revision))
        return Plan((), tuple(object_key(p)[1] for p in victims[: len(old) - keep_old]))
    return Plan((), ())


def plan_stateful_set(
    pods: list[JSON],
    *,
    name: str,
    replicas: int,
    partition: int,
    update_revision: str,
    current_revision: str | None,
) -> Plan:
    """Ordinals 0..replicas-1; ordinals below ``partition`` keep (or are recreated
    at) the old revision, the others move to the update revision."""
    by_ordinal: dict[int, JSON] = {}
    delete: list[str] = []
    for pod in pods:
        n = ordinal(pod, name)
        if n is None:
            continue
        by_ordinal[n] = pod
    for n, pod in sorted(by_ordinal.items()):
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        if n >= replicas or (n >= partition and pod_revision(pod) != update_revision):
            delete.append(object_key(pod)[1])
    create: list[tuple[str, int | None]] = []
    for n in range(replicas):
        if n in by_ordinal:
            continue
        old = current_revision and current_revision != update_revision and n < partition
        create.append((str(current_revision) if old else update_revision, n))
    return Plan(tuple(create), tuple(delete))


def workload_status(
    workload: JSON,
    pods: list[JSON],
    *,
    update_revision: str,
    current_revision: str,
    partition: int,
) -> JSON:
    """The status a Kruise controller reports, computed from the live pods."""
    active = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
    updated = [p for p in active if pod_revision(p) == update_revision]
    spec = workload.get("spec") or {}
    replicas = int(spec.get("replicas", 1))
    status: JSON = {
        "observedGeneration": (workload.get("metadata") or {}).get("generation", 0),
        "replicas": len(active),
        "readyReplicas": sum(1 for p in active if is_pod_ready(p)),
        "availableReplicas": sum(1 for p in active if is_pod_ready(p)),
        "updatedReplicas": len(updated),
        "updatedReadyReplicas": sum(1 for p in updated if is_pod_ready(p)),
        "currentReplicas": sum(1 for p in active if pod_revision(p) == current_revision),
        "updateRevision": update_revision,
        "currentRevision": current_revision,
        "labelSelector": selector_string(spec.get("selector") or {}),
    }
    if workload.get("kind") == "CloneSet":
        status["expectedUpdatedReplicas"] = max(0, replicas - partition)
    return status


def namespace_terminating(error: ApiError) -> bool:
    """Whether a write was refused because its namespace is being deleted (nothing to
    retry: the namespace's deletion will remove the workload too)."""
    causes = (error.body.get("details") or {}).get("causes") or []
    return any(c.get("reason") == "NamespaceTerminating" for c in causes) or (
        "because it is being terminated" in error.message
    )


def status_changed(old: JSON, new: JSON) -> bool:
    return any(old.get(k) != v for k, v in new.items())


class WorkloadSimulator(Background):
    """Plays Kruise's CloneSet and Advanced StatefulSet controllers cluster-wide."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self._reflectors = [
            Reflector(client, CLONE_SETS, self._on_workload),
            Reflector(client, ADVANCED_STATEFUL_SETS, self._on_workload),
            Reflector(client, PODS, self._on_pod),
        ]
        self._queue: asyncio.Queue[tuple[str, str, str]] = asyncio.Queue()
        self._queued: set[tuple[str, str, str]] = set()
        self._templates: dict[tuple[str, str, str], dict[str, JSON]] = {}
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Start watching; returns once every watch has listed once."""
        self._tasks = [asyncio.create_task(r.run()) for r in self._reflectors]
        self._tasks.append(asyncio.create_task(self._worker(), name="workload-simulator"))
        async with asyncio.timeout(60):  # awaited one by one: no gathering future left unread on a cancel
            for reflector in self._reflectors:
                await reflector.synced.wait()

    def _enqueue(self, kind: str, namespace: str, name: str) -> None:
        key = (kind, namespace, name)
        if key not in self._queued:
            self._queued.add(key)
            self._queue.put_nowait(key)

    async def _on_workload(self, event: str, obj: JSON) -> None:
        namespace, name = object_key(obj)
        kind = str(obj.get("kind", ""))
        if event == "DELETED":
            self._templates.pop((kind, namespace, name), None)
            return
        self._enqueue(kind, namespace, name)

    async def _on_pod(self, event: str, pod: JSON) -> None:
        namespace, _ = object_key(pod)
        for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
            if (
                ref.get("controller")
                and str(ref.get("apiVersion", "")).startswith("apps.kruise.io/")
                and ref.get("kind") in KINDS
            ):
                self._enqueue(str(ref["kind"]), namespace, str(ref["name"]))

    async def _worker(self) -> None:
        while True:
            key = await self._queue.get()
            self._queued.discard(key)
            try:
                await self.reconcile(*key)
            except (Conflict, NotFound, AlreadyExists):
                await asyncio.sleep(0.2)
                self._enqueue(*key)
            except Forbidden as exc:
                if not namespace_terminating(exc):
                    log.warning("reconcile %s forbidden: %s", key, exc)
            except ApiError as exc:
                log.warning("reconcile %s failed: %s", key, exc)
                await asyncio.sleep(1.0)
                self._enqueue(*key)
            except Exception:
                log.exception("reconcile %s crashed", key)

    async def reconcile(self, kind: str, namespace: str, name: str) -> None:
        """Bring one workload's pods and status in line with its spec."""
        resource = KINDS[kind]
        try:
            workload = await self.client.get(resource, name, namespace=namespace)
        except NotFound:
            return
        meta = workload.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            return
        spec = workload.get("spec") or {}
        selector = spec.get("selector") or {}
        template: JSON = spec.get("template") or {}
        labels = (template.get("metadata") or {}).get("labels") or {}
        if not selector_matches(selector, labels):
            log.warning("%s %s/%s: selector does not match template labels", kind, namespace, name)
            return
        replicas = int(spec.get("replicas", 1))
        update_revision = template_revision(name, template)
        templates = self._templates.setdefault((kind, namespace, name), {})
        templates[update_revision] = template
        previous = str((workload.get("status") or {}).get("currentRevision") or "")
        current_revision = previous if previous in templates else update_revision

        pods = [
            p
            for p in (await self.client.list(PODS, namespace=namespace, label_selector=selector_string(selector))).items
            if self._owned(p, workload)
        ]
        if kind == "CloneSet":
            partition = partition_count(workload, replicas)
            plan = plan_clone_set(
                pods,
                replicas=replicas,
                partition=partition,
                update_revision=update_revision,
                current_revision=current_revision,
            )
        else:
            partition = ordinal_partition(workload)
            plan = plan_stateful_set(
                pods,
                name=name,
                replicas=replicas,
                partition=partition,
                update_revision=update_revision,
                current_revision=current_revision,
            )
        for pod_name in plan.delete:
            with contextlib.suppress(NotFound):
                await self.client.delete(PODS, pod_name, namespace=namespace)
        for revision, number in plan.create:
            pod = self._pod(workload, resource, templates[revision], revision, number)
            try:
                await self.client.create(PODS, pod, namespace=namespace)
            except AlreadyExists:
                continue  # a same-named pod is still terminating; its deletion requeues us
        if plan.create or plan.delete:
            self._enqueue(kind, namespace, name)
            return

        updated_all = all(pod_revision(p) == update_revision for p in pods)
        if updated_all and len(pods) == replicas:
            current_revision = update_revision
        status = workload_status(
            workload, pods, update_revision=update_revision, current_revision=current_revision, partition=partition
        )
        if status_changed(workload.get("status") or {}, status):
            await self.client.patch(
                resource,
                name,
                {"status": status},
                namespace=namespace,
                subresource="status",
                patch_type=PatchType.MERGE,
            )

    @staticmethod
    def _owned(pod: JSON, workload: JSON) -> bool:
        uid = (workload.get("metadata") or {}).get("uid")
        return any(
            ref.get("uid") == uid and ref.get("controller")
            for ref in (pod.get("metadata") or {}).get("ownerReferences") or []
        )

    @staticmethod
    def _pod(workload: JSON, resource: Resource, template: JSON, revision: str, number: int | None) -> JSON:
        meta = workload["metadata"]
        tmeta = template.get("metadata") or {}
        labels = {**(tmeta.get("labels") or {}), REVISION_LABEL: revision}
        pod_meta: JSON = {
            "namespace": meta["namespace"],
            "labels": labels,
            "annotations": dict(tmeta.get("annotations") or {}),
            "ownerReferences": [
                {
                    "apiVersion": resource.api_version,
                    "kind": workload.get("kind", resource.kind),
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        }
        pod_spec: JSON = copy.deepcopy(template.get("spec") or {})
        if number is None:
            pod_meta["generateName"] = f"{meta['name']}-"
        else:
            pod_meta["name"] = f"{meta['name']}-{number}"
            labels[POD_NAME_LABEL] = pod_meta["name"]
            pod_spec.setdefault("hostname", pod_meta["name"])
            service = (workload.get("spec") or {}).get("serviceName")
            if service:
                pod_spec.setdefault("subdomain", service)
        return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": pod_spec}
