"""Put an admitted pod into its subset, and read back which subset a pod was put in.

The order is OpenKruise's, because each step may see the previous one:
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
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass

from united.api import decode
from united.api.document import Json
from united.placement.patch import POD, strategic_merge_touched
from united.placement.subset import node_affinity, require, tolerate
from united.workloadspread.model import MATCHED_ANNOTATION, WorkloadSpread

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


MAX_ANNOTATION_CHARS = 2048
"""Longest annotation value read. Ours is under 400 characters (a spread's name, a subset's, a
uid); anything longer is not one we wrote, and is not decoded: a tenant may write 256 KiB."""

CACHE_CHARS = 8 * 1024 * 1024
"""What the parsed-annotation cache may hold, counted as the characters of its keys plus
:data:`_ENTRY_COST` per entry: about 17,000 typical annotations (the reads of every pass of
every spread), and about 8 MiB however many pods carry however many distinct values."""

_ENTRY_COST = 384
"""Bytes an entry costs besides its key's characters (the key's header, the dict slot, the
parsed result): measured ~370 for a typical annotation."""


def matched(pod: Json) -> Matched | None:
    """The pod's annotation, read as Go's ``encoding/json`` reads it: keys match case-insensitively
    (``{"Name": ..., "Subset": ...}`` is valid, as in Go) and the last of two spellings wins;
    ``None`` when absent, empty, longer than :data:`MAX_ANNOTATION_CHARS`, nested too deep or
    not an object of strings — whatever the pod holds, never an exception."""
    meta = pod.get("metadata") if isinstance(pod, dict) else None
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    text = annotations.get(MATCHED_ANNOTATION) if isinstance(annotations, dict) else None
    if not text or not isinstance(text, str) or len(text) > MAX_ANNOTATION_CHARS:
        return None
    return _CACHE.get(text)


class _Cache:
    """Parsed annotations by their text, least recently used first out, bounded in characters.

    Every pass of a spread's controller reads every pod's annotation, which never changes
    (decoding them was a quarter of its CPU during a burst of admissions). Thread-safe: the
    webhook may serve from another thread than the controller's."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.used = 0
        self._entries: OrderedDict[str, Matched | None] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> Matched | None:
        with self._lock:
            if text in self._entries:
                self._entries.move_to_end(text)
                return self._entries[text]
        found = _parse(text)
        with self._lock:
            if text not in self._entries:
                self._entries[text] = found
                self.used += len(text) + _ENTRY_COST
                while self.used > self.budget:
                    old, _ = self._entries.popitem(last=False)
                    self.used -= len(old) + _ENTRY_COST
        return found

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.used = 0


_CACHE = _Cache(CACHE_CHARS)


def _parse(text: str) -> Matched | None:
    try:
        raw = decode.small(text)
    except ValueError:
        return None
    if not isinstance(raw, dict):
        return None
    fields = {key.lower(): value for key, value in raw.items() if key.lower() in ("name", "subset", "uid")}
    if any(v is not None and not isinstance(v, str) for v in fields.values()):
        return None
    return Matched(fields.get("name") or "", fields.get("subset") or "", fields.get("uid") or "")
