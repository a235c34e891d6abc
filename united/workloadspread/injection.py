"""Put an admitted pod into its subset, and read back which subset a pod was put in.

The order is the reference's (section 2.6), because each step may see the previous one:
tolerations appended; ``affinity.nodeAffinity`` created even when the subset has no
selector; preferred terms appended; the subset's required term ANDed into every required
term; then the subset's strategic-merge patch on the whole pod, which may override all of
the above; ``spec.priority`` dropped when the patch changed ``priorityClassName`` (the API
server's Priority admission then resolves the new class instead of refusing a mismatch);
last the ``apps.kruise.io/matched-workloadspread`` annotation. The affinity and toleration
steps are the same code that places a UnitedDeployment subset's pod template.
"""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass
from typing import Any

from united.placement.patch import POD, strategic_merge_touched
from united.placement.subset import node_affinity, require, tolerate
from united.workloadspread.model import MATCHED_ANNOTATION, WorkloadSpread

Json = dict[str, Any]

_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True, slots=True)
class Matched:
    """The annotation's content: the spread and subset a pod was placed in, and the uid the
    webhook gave a pod admitted without a name (its key in ``creatingPods``)."""

    name: str
    subset: str
    uid: str = ""


def inject(pod: Json, ws: WorkloadSpread, subset: str, *, uid: str | None) -> Json:
    """A new pod placed into ``subset`` of ``ws``; the pod as is when the spec has no such subset.
    The new pod shares what placement leaves alone with ``pod`` (neither is to be mutated).

    Raises :class:`united.placement.patch.PatchError` when the subset's patch cannot be applied.
    """
    spec_subset = ws.spec.subset(subset)
    out = {**pod}
    if spec_subset is None:
        return out
    # Copied only along what placement changes: the rest is the pod's own (json_patch skips it).
    spec: Json = {**(out.get("spec") or {})}
    out["spec"] = spec
    affinity = spec.get("affinity")
    if isinstance(affinity, dict):
        spec["affinity"] = {**affinity, "nodeAffinity": copy.deepcopy(affinity.get("nodeAffinity"))}
    if spec_subset.tolerations:
        tolerate(spec, spec_subset.tolerations)
    node = node_affinity(spec)
    if spec_subset.preferred_node_selector:
        node[_PREFERRED] = [*(node.get(_PREFERRED) or []), *copy.deepcopy(list(spec_subset.preferred_node_selector))]
    if spec_subset.required_node_selector is not None:
        require(node, spec_subset.required_node_selector)
    if spec_subset.patch:
        before = spec.get("priorityClassName")
        out = strategic_merge_touched(out, spec_subset.patch, schema=POD)
        spec = out.get("spec") or {}
        if spec.get("priorityClassName") != before:
            spec.pop("priority", None)
    meta = out["metadata"] = {**(out.get("metadata") or {})}
    meta["labels"] = meta.get("labels") or {}
    annotations = meta["annotations"] = {**(meta.get("annotations") or {})}
    annotations[MATCHED_ANNOTATION] = annotation(Matched(ws.name, subset, uid or ""))
    return out


def annotation(matched: Matched) -> str:
    """The annotation value: compact JSON, keys ``name``, ``subset`` and ``uid`` (only when set)."""
    value = {"name": matched.name, "subset": matched.subset}
    if matched.uid:
        value["uid"] = matched.uid
    return json.dumps(value, separators=(",", ":"))


def matched(pod: Json) -> Matched | None:
    """The pod's annotation, read as Go's ``encoding/json`` reads it: keys match case-insensitively
    (``{"Name": ..., "Subset": ...}`` is valid, EDGE-10) and the last of two spellings wins;
    ``None`` when absent, empty or not an object of strings."""
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(MATCHED_ANNOTATION)
    if not text:
        return None
    return _parse(text) if isinstance(text, str) else _parse.__wrapped__(text)


@functools.lru_cache(maxsize=16_384)
def _parse(text: Any) -> Matched | None:
    """Memoised: every pass of a spread's controller reads every pod's annotation, which never
    changes (decoding them was a quarter of its CPU during a burst of admissions)."""
    try:
        raw = json.loads(text)
    except (TypeError, ValueError):
        return None
    if not isinstance(raw, dict):
        return None
    fields = {key.lower(): value for key, value in raw.items() if key.lower() in ("name", "subset", "uid")}
    if any(v is not None and not isinstance(v, str) for v in fields.values()):
        return None
    return Matched(fields.get("name") or "", fields.get("subset") or "", fields.get("uid") or "")
