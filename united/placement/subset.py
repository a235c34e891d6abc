"""Place a pod template into a subset: node affinity, tolerations, then the subset patch.

This is the part of a subset that acts on pods, kept apart from workloads: :func:`place`
serves UnitedDeployment children, and its pieces (:func:`node_affinity`, :func:`require`,
:func:`tolerate`) the WorkloadSpread admission webhook, which places each admitted pod.

Order and rules of :func:`place` follow OpenKruise's UnitedDeployment: the
subset's ``nodeSelectorTerm.matchExpressions`` are ANDed into *every* required
node-selector term (terms are ORed, so each must carry the constraint); ``matchFields`` are
ignored there (WorkloadSpread ANDs them too); the subset's tolerations are appended; the
patch is a strategic merge patch applied last, so it may override anything above.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from united.api.document import Json
from united.placement.patch import strategic_merge

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def place(
    pod_template: Mapping[str, Any],
    *,
    node_selector_term: Mapping[str, Any] | None,
    tolerations: tuple[Json, ...] | None,
    patch: Mapping[str, Any] | None,
) -> Json:
    """Return a new pod template placed into the subset; inputs are never mutated."""
    out: Json = copy.deepcopy(dict(pod_template))
    expressions = (node_selector_term or {}).get("matchExpressions") or []
    # A null field is an absent one, as when Go decodes it into a nil pointer or slice.
    spec: Json = out.get("spec") or {}
    if expressions or tolerations is not None:
        out["spec"] = spec
    if expressions:
        require(node_affinity(spec), {"matchExpressions": expressions})
    if tolerations is not None:
        tolerate(spec, tolerations)
    if patch:
        out = strategic_merge(out, patch)
    return out


def node_affinity(spec: Json) -> Json:
    """``spec.affinity.nodeAffinity`` of a pod spec, created (in place) if absent or null."""
    affinity = spec["affinity"] = spec.get("affinity") or {}
    node: Json = affinity.get("nodeAffinity") or {}
    affinity["nodeAffinity"] = node
    return node


def require(node: Json, term: Mapping[str, Any]) -> None:
    """AND ``term``'s ``matchExpressions`` and ``matchFields`` into *every* required
    node-selector term of ``node`` (a ``nodeAffinity``, changed in place): the terms are ORed,
    so each must carry the constraint. With no required term, ``term`` becomes the only one."""
    required = node[_REQUIRED] = node.get(_REQUIRED) or {}
    terms = required["nodeSelectorTerms"] = required.get("nodeSelectorTerms") or []
    if not terms:
        terms.append({})
    for existing in terms:
        for key in ("matchExpressions", "matchFields"):
            extra = term.get(key) or []
            if extra:
                existing[key] = [*(existing.get(key) or []), *copy.deepcopy(list(extra))]


def tolerate(spec: Json, tolerations: tuple[Json, ...]) -> None:
    """Append ``tolerations`` to a pod spec's, in place."""
    spec["tolerations"] = [*(spec.get("tolerations") or []), *copy.deepcopy(list(tolerations))]


def patch_text(patch: Mapping[str, Any] | None) -> str:
    """The patch as the API server stores and serves it (Go's ``encoding/json`` of a generic map):
    compact, keys sorted, ``<>&`` and U+2028/U+2029 escaped, other non-ASCII kept. That is the
    text OpenKruise copies into the annotation, so children it created keep their value."""
    if patch is None:
        return ""
    text = json.dumps(patch, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for raw, escaped in _GO_ESCAPES:
        text = text.replace(raw, escaped)
    return text


_GO_ESCAPES = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))
