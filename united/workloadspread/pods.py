"""Which pods a WorkloadSpread manages, and how many replicas its target wants.

The pods are those whose controller is the target — for a Deployment, those of the
ReplicaSets it controls (a Deployment's own pods only when it controls none) — in the spread's
namespace, kept by ``targetFilter.selector`` (no selector: every pod). Inactive pods are
included: the status recount needs them to drop a ``creatingPods`` record of a pod that has
already finished.

Difference from OpenKruise: a workload scaled to zero still shows its pods. OpenKruise's
pod finder answers "no pods" when the target's replicas are 0, so the pods still terminating
(or never deleted) vanish from the status and get no deletion cost; here they are counted
until they are gone.

Replicas (percentages of ``maxReplicas`` are of this number): the sum of the
``targetFilter.replicasPathList`` values when given, else a Job's ``spec.parallelism``, else
``spec.replicas`` (1 when absent, the API server's default). A path that does not lead to an
integer is a field error (:class:`ManifestError`) the caller reports, never a crash.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from united.api.document import Json
from united.api.field import ManifestError, Path, invalid
from united.workloadspread.injection import matched
from united.workloadspread.matching import controller_ref, selects
from united.workloadspread.model import FAKE_SUBSET, WorkloadSpread
from united.workloadspread.version import pod_version


def pods_of(
    ws: WorkloadSpread, *, workload: Json | None, replicasets: Sequence[Json], pods: Sequence[Json]
) -> list[Json]:
    """The pods of the spread's target (active or not), in the order given."""
    target = ws.spec.target_ref
    if target is None or workload is None or _meta(workload).get("deletionTimestamp"):
        return []
    uid = _meta(workload).get("uid")
    owners = {uid}
    if target.kind == "Deployment":
        controlled = {
            _meta(rs).get("uid")
            for rs in replicasets
            if not _meta(rs).get("deletionTimestamp") and (controller_ref(rs) or {}).get("uid") == uid
        }
        owners = controlled or owners
    return [
        pod
        for pod in pods
        if _meta(pod).get("namespace", ws.namespace) == ws.namespace
        and (controller_ref(pod) or {}).get("uid") in owners
        and selects(ws, pod)
    ]


def subset_of(ws: WorkloadSpread, pod: Json) -> str | None:
    """The subset the pod's annotation places it in, if that names this spread and a subset of
    its spec; ``None`` otherwise (unplaced, or a candidate for adoption)."""
    m = matched(pod)
    if m is None or m.name != ws.name or not m.subset or ws.spec.subset(m.subset) is None:
        return None
    return m.subset


def group(ws: WorkloadSpread, pods: Sequence[Json], *, adopted: Mapping[str, str]) -> dict[str, dict[str, list[Json]]]:
    """Pods by version, then by subset: the annotated one, else the one adopting them this pass
    (``adopted``: pod name -> subset), else :data:`FAKE_SUBSET` (unplaced)."""
    out: dict[str, dict[str, list[Json]]] = {}
    for pod in pods:
        name = str(_meta(pod).get("name") or "")
        subset = subset_of(ws, pod) or adopted.get(name) or FAKE_SUBSET
        out.setdefault(pod_version(pod), {}).setdefault(subset, []).append(pod)
    return out


def replicas_of(ws: WorkloadSpread, workload: Json | None) -> int:
    """The target's replicas (see the module docstring); 0 without a workload."""
    if workload is None:
        return 0
    target_filter = ws.spec.target_filter
    if target_filter is not None and target_filter.replicas_paths:
        root = Path("spec.targetFilter.replicasPathList")
        return sum(_at(workload, path, root.index(i)) for i, path in enumerate(target_filter.replicas_paths))
    spec = workload.get("spec") or {}
    kind = ws.spec.target_ref.kind if ws.spec.target_ref else ""
    key = "parallelism" if kind == "Job" else "replicas"
    value = spec.get(key)
    value = 1 if value is None else value
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ManifestError([invalid(Path(f"{kind or 'workload'}.spec.{key}"), value, "must be a whole number")])
    return value


def _at(workload: Json, dotted: str, path: Path) -> int:
    """The integer at ``dotted`` (``spec.replicas``, ``spec.subsets.1.replicas``); ``""`` counts 0."""
    if not dotted:
        return 0
    value: Any = workload
    for part in dotted.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise ManifestError([invalid(path, dotted, f"the workload has no field {part!r} on this path")])
    if isinstance(value, bool) or not isinstance(value, int):
        raise ManifestError([invalid(path, dotted, f"the value there is not an integer: {value!r}")])
    return value


_REF_STRINGS = ("apiVersion", "kind", "name", "uid")
_META_STRINGS = ("name", "generateName", "namespace", "uid", "resourceVersion", "deletionTimestamp")
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def malformed(pod: Any) -> str | None:
    """What makes ``pod`` unlike any pod the API server sends (``field: why``), or None.

    The API server decodes a pod into its typed form before it asks a webhook, so a real
    review always passes; a forged one may hold anything. Checked before any booking: every
    field booking, matching and injection read has the shape they expect, so none of them
    raises after a slot was taken."""
    if not isinstance(pod, dict):
        return "object: must be an object"
    meta = pod.get("metadata")
    if not isinstance(meta, dict):
        return "metadata: must be an object"
    for key in _META_STRINGS:
        if meta.get(key) is not None and not isinstance(meta[key], str):
            return f"metadata.{key}: must be a string"
    for key in ("labels", "annotations"):
        if not _string_map(meta.get(key)):
            return f"metadata.{key}: must map strings to strings"
    refs = meta.get("ownerReferences")
    if refs is not None and not isinstance(refs, list):
        return "metadata.ownerReferences: must be a list"
    for i, ref in enumerate(refs or ()):
        if not isinstance(ref, dict):
            return f"metadata.ownerReferences[{i}]: must be an object"
        if any(ref.get(k) is not None and not isinstance(ref[k], str) for k in _REF_STRINGS):
            return f"metadata.ownerReferences[{i}]: apiVersion, kind, name and uid must be strings"
        if ref.get("controller") is not None and not isinstance(ref["controller"], bool):
            return f"metadata.ownerReferences[{i}].controller: must be a boolean"
    status = pod.get("status")
    if status is not None and (not isinstance(status, dict) or not _optional(status.get("phase"), str)):
        return "status: must be an object whose phase is a string"
    return _malformed_spec(pod.get("spec"))


def _malformed_spec(spec: Any) -> str | None:
    if spec is None:
        return None
    if not isinstance(spec, dict):
        return "spec: must be an object"
    if not _optional(spec.get("priorityClassName"), str):
        return "spec.priorityClassName: must be a string"
    if not _list_of_objects(spec.get("tolerations")):
        return "spec.tolerations: must be a list of objects"
    affinity = spec.get("affinity")
    if not _optional(affinity, dict):
        return "spec.affinity: must be an object"
    node = (affinity or {}).get("nodeAffinity")
    if not _optional(node, dict):
        return "spec.affinity.nodeAffinity: must be an object"
    if not _list_of_objects((node or {}).get(_PREFERRED)):
        return f"spec.affinity.nodeAffinity.{_PREFERRED}: must be a list of objects"
    required = (node or {}).get(_REQUIRED)
    if not _optional(required, dict) or not _list_of_objects((required or {}).get("nodeSelectorTerms")):
        return f"spec.affinity.nodeAffinity.{_REQUIRED}: must be an object with a list of nodeSelectorTerms"
    for term in (required or {}).get("nodeSelectorTerms") or ():
        if not all(_list_of_objects(term.get(key)) for key in ("matchExpressions", "matchFields")):
            return f"spec.affinity.nodeAffinity.{_REQUIRED}.nodeSelectorTerms: must hold lists of objects"
    return None


def _optional(value: Any, kind: type) -> bool:
    return value is None or isinstance(value, kind)


def _string_map(value: Any) -> bool:
    return value is None or (isinstance(value, dict) and all(isinstance(v, str) for v in value.values()))


def _list_of_objects(value: Any) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(item, dict) for item in value))


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}
