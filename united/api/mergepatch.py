"""JSON merge patches (RFC 7386): the smallest write from what is live to what is wanted.

Merge patches, never JSON patches, which a dict body would default to for custom resources:
they work for built-in kinds and CRDs alike, and every kind writes its objects with them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from united.api.document import Json


def merge_patch(live: Any, desired: Any) -> Any:
    """RFC 7386 patch turning ``live`` into ``desired`` (lists are replaced whole)."""
    if not isinstance(live, dict) or not isinstance(desired, dict):
        return desired
    patch: Json = {}
    for key in live.keys() - desired.keys():
        patch[key] = None
    for key, value in desired.items():
        if key not in live:
            patch[key] = value
        elif live[key] != value:
            patch[key] = merge_patch(live[key], value) if isinstance(value, dict) else value
    return patch


def identified(patch: Json, obj: Mapping[str, Any], *, exact: bool = False) -> Json:
    """``patch`` naming the object it was computed from, since writes go by name and a name can
    be reused: with its uid the API server refuses the patch if the name now belongs to another
    object; with ``exact`` also its resourceVersion (409 if it changed since it was read), for
    writes decided from the object's whole state (adopting, releasing)."""
    meta = obj.get("metadata") or {}
    ident = {k: meta[k] for k in ("uid", "resourceVersion")[: 2 if exact else 1] if meta.get(k)}
    return {**patch, "metadata": {**(patch.get("metadata") or {}), **ident}} if ident else patch
