"""The smallest write that brings a live child to what we rendered, or none at all.

A reconcile with nothing to change must make zero writes, but the API server defaults a
child's spec on every write, so the live spec never equals our rendering. We therefore
compare what *we* decide — our labels and annotations, the ``spec-hash`` digest of our
rendered spec, replicas and the partition — and only then build a JSON merge patch:

* labels/annotations: our keys only; other writers' keys are kept;
* owner references: our controller reference added when adopting;
* spec, when the digest differs: replaced as the reference does (keys we no longer render
  are set to ``null``; the API server re-applies its defaults);
* otherwise just ``spec.replicas`` and the partition, so scaling never touches the template.

Merge patches (never JSON patches, which a dict body would default to for custom
resources) work for built-in kinds and CRDs alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from united.api.keys import Keys
from united.render.kind import ChildKind

Json = dict[str, Any]


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


def child_patch(
    live: Mapping[str, Any],
    desired: Mapping[str, Any],
    *,
    kind: ChildKind,
    keys: Keys,
    partition_applied: bool,
) -> Json | None:
    """A merge patch for ``live``, or None when it already is what we rendered."""
    live_meta = live.get("metadata") or {}
    want_meta = desired.get("metadata") or {}
    meta: Json = {}
    for field in ("labels", "annotations"):
        have = live_meta.get(field) or {}
        changed = {k: v for k, v in (want_meta.get(field) or {}).items() if have.get(k) != v}
        if changed:
            meta[field] = changed
    owner = (want_meta.get("ownerReferences") or [{}])[0]
    refs = list(live_meta.get("ownerReferences") or [])
    if not any(r.get("uid") == owner.get("uid") and r.get("controller") for r in refs):
        meta["ownerReferences"] = [r for r in refs if r.get("uid") != owner.get("uid")] + [owner]
    live_spec = live.get("spec") or {}
    want_spec = desired.get("spec") or {}
    spec: Json = {}
    digest = (live_meta.get("annotations") or {}).get(keys.spec_hash)
    if digest != (want_meta.get("annotations") or {}).get(keys.spec_hash):
        spec = merge_patch(live_spec, want_spec)
    else:
        if live_spec.get("replicas") != want_spec.get("replicas"):
            spec["replicas"] = want_spec.get("replicas")
        want_partition = kind.read_partition({"spec": want_spec})
        if partition_applied and kind.read_partition(dict(live)) != want_partition:
            spec["updateStrategy"] = want_spec.get("updateStrategy")
    patch: Json = {}
    if meta:
        patch["metadata"] = meta
    if spec:
        patch["spec"] = spec
    return patch or None
