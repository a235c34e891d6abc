"""Adopt pods that were created before the WorkloadSpread (or while its webhook was down).

A pod of the target without this spread's annotation is put in the subset its node fits best,
if any. A subset *fits* when the node's every taint (any effect) is tolerated by the pod's
tolerations and the subset's, and the node satisfies the pod's required node-selector terms
with the subset's required term ANDed into each (the subset's term alone when the pod has
none). Among fitting subsets the highest score wins, ties to the earlier subset:
``100 * (weights of the subset's preferred terms the node matches) + 10 * (the subset's patch
changes nothing on the pod but annotations) + (the subset has quota left)``. Quota, per pod
version: the subset's ``maxReplicas`` (no maximum: unbounded) minus its annotated pods, minus
the webhook's bookings still pending in that version's status, and minus each pod adopted
into it.

Difference from OpenKruise: a subset without quota does not fit at all. OpenKruise
adopts into it anyway (quota only breaks ties), so pods admitted while the webhook was down
could push a subset past its maximum; here they stay unplaced and are removed first on
scale-in. The reconciler writes the status that counts them before it patches the pods, so a
booking racing the adoption fails on the resourceVersion instead of over-filling.

An adopted pod gets a merge patch with the annotation and, unless the spread carries
``workloadspread.kruise.io/ignore-patch-existing-pods-metadata: "true"``, the labels and
annotations of the subset's patch (the rest of the patch is a pod spec, which a running pod
cannot change). The patch names the pod's ``uid`` and ``resourceVersion``, so it is refused if
the pod changed meanwhile.

Pods that are not scheduled yet, whose node is unknown or that fit no subset stay unplaced.
Difference from OpenKruise: finished or terminating pods are not adopted (a patch that
changes nothing they do).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from united.api.document import Json
from united.api.intstr import INT32_MAX
from united.placement.patch import POD, PatchError, strategic_merge
from united.workloadspread.booking import resolve
from united.workloadspread.injection import Matched, annotation, matched
from united.workloadspread.matching import is_active
from united.workloadspread.model import (
    IGNORE_PATCH_EXISTING_PODS_ANNOTATION,
    MATCHED_ANNOTATION,
    Subset,
    WorkloadSpread,
)
from united.workloadspread.pods import subset_of
from united.workloadspread.version import pod_version

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def adopt(ws: WorkloadSpread, pods: Sequence[Json], *, nodes: Mapping[str, Json], replicas: int) -> dict[str, Json]:
    """Pod name -> merge patch, for each pod of the target adopted into a subset now."""
    quota: dict[str, dict[str, int]] = {}

    def left_in(version: str) -> dict[str, int]:
        if version not in quota:
            quota[version] = _quota(ws, replicas)
            for entry in ws.status.versioned.get(version, ()):
                if entry.name in quota[version]:
                    quota[version][entry.name] -= len(entry.creating_pods)
        return quota[version]

    for pod in pods:
        placed = subset_of(ws, pod)
        if placed is not None:
            left_in(pod_version(pod))[placed] -= 1
    out: dict[str, Json] = {}
    for pod in pods:
        if subset_of(ws, pod) is not None or not is_active(pod):
            continue
        node = nodes.get(str((pod.get("spec") or {}).get("nodeName") or ""))
        if node is None:
            continue
        left = left_in(pod_version(pod))
        best: Subset | None = None
        best_score = -1
        for subset in ws.spec.subsets:
            score = _score(pod, node, subset, left[subset.name])
            if score > best_score:
                best, best_score = subset, score
        if best is not None:
            left[best.name] -= 1
            out[_name(pod)] = _patch(ws, pod, best)
    return out


def adopted_subset(patch: Json) -> str:
    """The subset a patch from :func:`adopt` puts its pod in."""
    found = matched(patch)
    return found.subset if found is not None else ""


def _quota(ws: WorkloadSpread, replicas: int) -> dict[str, int]:
    out = {}
    for s in ws.spec.subsets:
        limit = resolve(s.max_replicas, replicas=replicas)
        out[s.name] = INT32_MAX if limit is None else limit
    return out


def _score(pod: Json, node: Json, subset: Subset, quota: int) -> int:
    """The subset's score for this pod on this node; ``-1`` when it does not fit."""
    taints = (node.get("spec") or {}).get("taints") or ()
    tolerations = [*((pod.get("spec") or {}).get("tolerations") or ()), *(subset.tolerations or ())]
    if not all(any(tolerates(t, taint) for t in tolerations) for taint in taints):
        return -1
    if subset.required_node_selector is not None:
        affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
        terms = (affinity.get(_REQUIRED) or {}).get("nodeSelectorTerms") or [{}]
        if not any(term_matches(_and(term, subset.required_node_selector), node) for term in terms):
            return -1
    preferred = sum(
        int(p.get("weight") or 0)
        for p in subset.preferred_node_selector or ()
        if term_matches(p.get("preference") or {}, node)
    )
    if quota <= 0:
        return -1
    return 100 * preferred + 10 * _patch_fits(pod, subset) + 1


def _patch_fits(pod: Json, subset: Subset) -> int:
    """1 when the subset's patch changes nothing on the pod but annotations (no patch: nothing)."""
    if not subset.patch:
        return 1
    try:
        patched = strategic_merge(pod, subset.patch, schema=POD)
    except PatchError:
        return 0
    return 1 if _without_annotations(patched) == _without_annotations(pod) else 0


def _without_annotations(pod: Mapping[str, Any]) -> Json:
    meta = {k: v for k, v in (pod.get("metadata") or {}).items() if k != "annotations"}
    return {**pod, "metadata": meta}


def _and(term: Mapping[str, Any], extra: Mapping[str, Any]) -> Json:
    return {key: [*(term.get(key) or ()), *(extra.get(key) or ())] for key in ("matchExpressions", "matchFields")}


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Kubernetes' ``Toleration.ToleratesTaint``: an empty effect or key matches all; ``Exists``
    ignores the value."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("key") and toleration.get("key") != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def term_matches(term: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """A node-selector term against a node: every expression on its labels, every field on its name.
    A term with no requirement matches nothing, as in Kubernetes."""
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    expressions = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    if not expressions and not fields:
        return False
    return all(_requirement(e, labels) for e in expressions) and all(
        _requirement(f, {"metadata.name": meta.get("name")}) for f in fields
    )


def _requirement(expr: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    key, op, values = str(expr.get("key")), expr.get("operator"), list(expr.get("values") or ())
    present = key in labels
    value = labels.get(key)
    if op == "In":
        return present and value in values
    if op == "NotIn":
        return not present or value not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, want = int(str(value)), int(str(values[0]))
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def _patch(ws: WorkloadSpread, pod: Json, subset: Subset) -> Json:
    meta: Json = {}
    source = pod.get("metadata") or {}
    for key in ("uid", "resourceVersion"):
        if source.get(key):
            meta[key] = source[key]
    ignore = str(ws.annotations.get(IGNORE_PATCH_EXISTING_PODS_ANNOTATION, "")).lower() == "true"
    patch_meta = (subset.patch or {}).get("metadata") or {} if not ignore else {}
    labels = patch_meta.get("labels") or {}
    if labels:
        meta["labels"] = dict(labels)
    meta["annotations"] = {
        **(patch_meta.get("annotations") or {}),
        MATCHED_ANNOTATION: annotation(Matched(ws.name, subset.name)),
    }
    return {"metadata": meta}


def _name(pod: Json) -> str:
    return str((pod.get("metadata") or {}).get("name") or "")
