"""Revisions: a stable name for "this version of the workload template".

Algorithm (OpenKruise's, restated):

1. **Data**: ``{"spec": {"template": {<variant>: {metadata, spec}, "$patch": "replace"}}}``
   encoded as JSON the way Go's ``encoding/json`` does for generic maps: keys sorted at
   every level, no spaces, ``<``, ``>`` and ``&`` escaped as ``\\u003c`` ``\\u003e``
   ``\\u0026``, U+2028/U+2029 escaped, other non-ASCII kept as UTF-8. Only the template
   is revisioned — not replicas, topology, selector or update strategy — so scaling and
   re-balancing never roll pods.
2. **Hash**: 32-bit FNV-1 (not 1a) over the Data bytes followed by the decimal text of the
   collision count (``"0"`` unless two different templates collide).
3. **Text**: the hash's decimal digits, each mapped to ``bcdfghjklmnpqrstvwxz2456789``
   by ``byte value mod 27`` — no vowels, so no accidental words, and short (≤ 10 chars).
4. **Name**: ``<ud name, at most 223 chars>-<text>``, also the value of the
   ``<group>/controller-revision-hash`` label on children and pods.

The Data a Go controller stores can differ from ours in zero-value fields its structs emit
(``"creationTimestamp":null``, ``"resources":{}``), so names may differ from OpenKruise's for
the same template. The controller therefore reuses any existing ControllerRevision whose
Data is *semantically* equal (:func:`same`), which keeps pods from rolling on migration.
"""

from __future__ import annotations

import json
from typing import Any

from united.api.names import revision_name
from united.uniteddeployment.model import Template

ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def data(template: Template) -> bytes:
    """The revision Data for a template, byte-stable across runs and machines."""
    body = {
        "spec": {
            "template": {template.variant: {"metadata": template.metadata, "spec": template.spec}, "$patch": "replace"}
        }
    }
    return go_json(body)


def go_json(value: Any) -> bytes:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text.encode()


def fnv1_32(payload: bytes) -> int:
    h = _FNV_OFFSET
    for byte in payload:
        h = (h * _FNV_PRIME) & 0xFFFFFFFF
        h ^= byte
    return h


def hash_text(payload: bytes, collision_count: int = 0) -> str:
    digits = str(fnv1_32(payload + str(collision_count).encode()))
    return "".join(ALPHABET[ord(c) % len(ALPHABET)] for c in digits)


def name(ud_name: str, template: Template, collision_count: int = 0) -> str:
    return revision_name(ud_name, hash_text(data(template), collision_count))


def same(stored: bytes | str | dict[str, Any], template: Template | Any) -> bool:
    """Whether a stored revision's Data describes the same template, ignoring encoding
    and the ``null``/empty zero values a Go encoder adds. ``template`` may also be its
    :func:`comparable` form, computed once to compare many revisions."""
    parsed = json.loads(stored) if isinstance(stored, bytes | str) else stored
    wanted = comparable(template) if isinstance(template, Template) else template
    return bool(_prune(parsed) == wanted)


def comparable(template: Template) -> Any:
    """The form of a template's Data that :func:`same` compares."""
    return _prune(json.loads(data(template)))


def _prune(value: Any) -> Any:
    if isinstance(value, dict):
        pruned = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v not in (None, {}, [], "")}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


def template_of(stored: Any, variant: str) -> Template | None:
    """The template a revision's Data holds for ``variant`` (None when it holds another kind or
    is malformed): what a subset held back by a Progressive rollout is rendered from."""
    held = json.loads(stored) if isinstance(stored, bytes | str) else stored
    for key in ("spec", "template", variant):
        held = held.get(key) if isinstance(held, dict) else None
    if not isinstance(held, dict) or not isinstance(held.get("spec"), dict):
        return None
    metadata = held.get("metadata")
    return Template(variant=variant, metadata=metadata if isinstance(metadata, dict) else {}, spec=held["spec"])
