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

from collections.abc import Callable, Generator, Iterator, Mapping, Sequence

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
    candidates = _candidates(namespace, spreads)
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


def bystander(pod: Json, spreads: Sequence[WorkloadSpread], owner: Owner) -> Json | None:
    """``pod``'s controller reference when no spread of ``spreads`` targets any pod of that
    controller: its chain of owners was walked to its end (every link proven by ``owner``) and
    reaches no spread's target. As long as neither the spreads nor those owners change, every
    pod of that controller is answered the same — whatever its labels or phase. None when
    that is not known (no spreads, no controller, an owner missing)."""
    namespace = str(_meta(pod).get("namespace") or "")
    candidates = _candidates(namespace, spreads)
    ref = controller_ref(pod)
    if not candidates or ref is None:
        return None
    walk, refs = _chain(namespace, ref, owner), []
    while True:
        try:
            refs.append(next(walk))
        except StopIteration as end:
            complete = bool(end.value)
            break
    chain = {_key(r) for r in refs}
    targets = {(t.group, t.kind, t.name) for ws in candidates if (t := ws.spec.target_ref) is not None}
    return ref if complete and not chain & targets else None


def _candidates(namespace: str, spreads: Sequence[WorkloadSpread]) -> list[WorkloadSpread]:
    return [ws for ws in spreads if ws.namespace == namespace and not ws.deleting and ws.spec.target_ref]


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


def _chain(namespace: str, ref: Json, owner: Owner) -> Generator[Json, None, bool]:
    """The controller refs up from ``ref``, each one proven: ``owner`` found the object it
    names with its uid. The first unproven ref ends the chain, itself excluded — a review
    naming a target it does not carry the uid of books nothing. Returns whether the walk
    reached the chain's end (a top owner, a kind no spread targets, :data:`MAX_DEPTH`) rather
    than an owner ``owner`` did not find."""
    for _ in range(MAX_DEPTH):
        if (group_of(str(ref.get("apiVersion") or "")), ref.get("kind")) not in WORKLOADS:
            return True
        obj = owner(namespace, ref)
        if obj is None:
            return False
        yield ref
        parent = controller_ref(obj)
        if parent is None:
            return True
        ref = parent
    return True


def _key(ref: Json) -> tuple[str, str, str]:
    return group_of(str(ref.get("apiVersion") or "")), str(ref.get("kind") or ""), str(ref.get("name") or "")


def _meta(obj: Json) -> Json:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}
