"""Which WorkloadSpread, if any, spreads a pod being created.

A pod is targeted when its controller, or its controller's controller and so on
(Pod -> ReplicaSet -> Deployment), is a WorkloadSpread's ``targetRef`` (group, kind and name;
the version is ignored), each link proven: ``owner`` must find the object a reference names,
with the reference's uid. The owners come from the caller's cache through ``owner``: admission
makes no API call, and a pod in a namespace without WorkloadSpreads is answered before any
lookup, so untargeted pods cost almost nothing.

Differences from OpenKruise: an owner missing from the cache means "not targeted" (OpenKruise
rejects the pod creation; a cold cache must not block a namespace's pods);
a ``targetFilter`` without a selector selects every pod, as the controller counts them (OpenKruise's
webhook selects none, so no pod of such a spread was ever placed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from united.api import selector
from united.api.document import Json
from united.api.field import Path
from united.workloadspread.model import TargetRef, WorkloadSpread, group_of

Owner = Callable[[str, Json], Json | None]

#: (group, kind) of the workloads whose pods may be spread, and of the owners walked through.
WORKLOADS = frozenset(
    {
        ("apps", "Deployment"),
        ("apps", "ReplicaSet"),
        ("apps", "StatefulSet"),
        ("apps.kruise.io", "StatefulSet"),
        ("apps.kruise.io", "CloneSet"),
        ("batch", "Job"),
    }
)

#: Longest owner chain walked (a cycle in a corrupt cache must not loop).
MAX_DEPTH = 8


def spread_for(pod: Json, spreads: Sequence[WorkloadSpread], owner: Owner) -> WorkloadSpread | None:
    """The first spread (in the given order) whose target owns ``pod``, else ``None``."""
    namespace = str(_meta(pod).get("namespace") or "")
    candidates = [ws for ws in spreads if ws.namespace == namespace and not ws.deleting and ws.spec.target_ref]
    if not candidates or not is_active(pod):
        return None
    ref = controller_ref(pod)
    if ref is None:
        return None
    chain = _chain(namespace, ref, owner)
    seen: list[Json] = []
    for ws in candidates:
        target = ws.spec.target_ref
        assert target is not None
        if _owned(target, seen, chain) and selects(ws, pod):
            return ws
    return None


def selects(ws: WorkloadSpread, pod: Json) -> bool:
    """The spread's ``targetFilter`` admits the pod (no filter, or no selector: every pod)."""
    f = ws.spec.target_filter
    if f is None or f.selector is None:
        return True
    if selector.errors(f.selector, Path("spec.targetFilter.selector")):
        return False
    return selector.parse(f.selector).matches(_meta(pod).get("labels") or {})


def is_active(pod: Json) -> bool:
    """Not being deleted and not finished: a pod that holds a place in a subset."""
    phase = (pod.get("status") or {}).get("phase")
    return not _meta(pod).get("deletionTimestamp") and phase not in ("Succeeded", "Failed")


def controller_ref(obj: Json) -> Json | None:
    refs = _meta(obj).get("ownerReferences")
    for ref in refs if isinstance(refs, list) else ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return dict(ref)
    return None


def _owned(target: TargetRef, seen: list[Json], chain: Iterator[Json]) -> bool:
    """``target`` is one of the controller refs up the chain; refs are fetched lazily and
    remembered in ``seen``, so every spread shares one walk."""
    key = (target.group, target.kind, target.name)
    if any(_key(r) == key for r in seen):
        return True
    for ref in chain:
        seen.append(ref)
        if _key(ref) == key:
            return True
    return False


def _chain(namespace: str, ref: Json, owner: Owner) -> Iterator[Json]:
    """The controller refs up from ``ref``, each one proven: ``owner`` found the object it
    names with its uid. The first unproven ref ends the chain, itself excluded — a review
    naming a target it does not carry the uid of books nothing."""
    for _ in range(MAX_DEPTH):
        if (group_of(str(ref.get("apiVersion") or "")), ref.get("kind")) not in WORKLOADS:
            return
        obj = owner(namespace, ref)
        if obj is None:
            return
        yield ref
        parent = controller_ref(obj)
        if parent is None:
            return
        ref = parent


def _key(ref: Json) -> tuple[str, str, str]:
    return group_of(str(ref.get("apiVersion") or "")), str(ref.get("kind") or ""), str(ref.get("name") or "")


def _meta(obj: Json) -> Json:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}
