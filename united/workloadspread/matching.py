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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from united.api import selector
from united.api.document import Json
from united.api.field import Path
from united.workloadspread.model import WorkloadSpread, group_of

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


@dataclass(frozen=True, slots=True)
class Match:
    """What a pod's owners say: the spread that targets it, or else, when known, its
    controller's reference as a *bystander* — its chain of owners walked to the end (every
    link proven) reaching no spread's target. As long as neither the spreads nor those owners
    change, every pod of that controller is answered the same, whatever its labels or phase."""

    spread: WorkloadSpread | None = None
    bystander: Json | None = None


def match(pod: Json, spreads: Sequence[WorkloadSpread], owner: Owner) -> Match:
    """The first spread (in the given order) whose target owns ``pod`` and whose filter
    selects it; else whether the pod's controller is a bystander. One walk up the owners,
    taken only as far as the answer needs, serves every spread."""
    namespace = str(_meta(pod).get("namespace") or "")
    candidates = _candidates(namespace, spreads)
    ref = controller_ref(pod)
    if not candidates or ref is None:
        return Match()
    walk = _Walk(namespace, ref, owner)
    if is_active(pod):
        for ws in candidates:
            target = ws.spec.target_ref
            assert target is not None
            if walk.reaches((target.group, target.kind, target.name)) and selects(ws, pod):
                return Match(ws)
    targets = {(t.group, t.kind, t.name) for ws in candidates if (t := ws.spec.target_ref) is not None}
    if not walk.complete() or any(_key(r) in targets for r in walk.seen):
        return Match()
    return Match(bystander=ref)


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


class _Walk:
    """The controller refs up from ``ref``, walked lazily and remembered in ``seen``, each one
    proven: ``owner`` found the object it names with its uid. The first unproven ref ends the
    walk, itself excluded — a review naming a target it does not carry the uid of books
    nothing."""

    def __init__(self, namespace: str, ref: Json, owner: Owner) -> None:
        self.namespace, self.next, self.owner = namespace, ref, owner
        self.seen: list[Json] = []
        self.ended: bool | None = None

    def reaches(self, key: tuple[str, str, str]) -> bool:
        if any(_key(r) == key for r in self.seen):
            return True
        while self._step():
            if _key(self.seen[-1]) == key:
                return True
        return False

    def complete(self) -> bool:
        """Walked to the chain's end (a top owner, a kind no spread targets, :data:`MAX_DEPTH`)
        rather than to an owner ``owner`` did not find."""
        while self._step():
            pass
        return bool(self.ended)

    def _step(self) -> bool:
        """One link more; False once the walk has ended (``ended`` says how)."""
        if self.ended is not None:
            return False
        ref = self.next
        kind = (group_of(str(ref.get("apiVersion") or "")), ref.get("kind"))
        if len(self.seen) == MAX_DEPTH or kind not in WORKLOADS:
            self.ended = True
            return False
        obj = self.owner(self.namespace, ref)
        if obj is None:
            self.ended = False
            return False
        self.seen.append(ref)
        parent = controller_ref(obj)
        if parent is None:
            self.ended = True
        else:
            self.next = parent
        return True


def _key(ref: Json) -> tuple[str, str, str]:
    return group_of(str(ref.get("apiVersion") or "")), str(ref.get("kind") or ""), str(ref.get("name") or "")


def _meta(obj: Json) -> Json:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}
