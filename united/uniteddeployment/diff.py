"""The smallest write that brings a live child to what we rendered, or none at all.

A reconcile with nothing to change must make zero writes, but the API server defaults a
child's spec on every write, so the live spec never equals our rendering. We therefore
compare what *we* decide — our labels and annotations, the ``spec-hash`` digest of our
rendered spec, replicas and the partition — and only then build a JSON merge patch:

* labels/annotations: our keys only; other writers' keys are kept;
* owner references: our controller reference added when adopting;
* spec, when the digest differs: replaced as OpenKruise does (keys we no longer render
  are set to ``null``; the API server re-applies its defaults) — but only the fields an
  update may change (:attr:`ChildKind.mutable`): a patch touching an immutable one is
  refused whole, replicas included, and the child could never be scaled again. What the
  child cannot take is reported instead (:func:`immutable_changes`);
* otherwise just ``spec.replicas`` and the partition, so scaling never touches the template.

Merge patches (never JSON patches, which a dict body would default to for custom
resources) work for built-in kinds and CRDs alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from united.api.document import Json
from united.api.mergepatch import merge_patch
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.render.kind import ChildKind


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
    wanted = want_meta.get("ownerReferences")
    refs = list(live_meta.get("ownerReferences") or [])
    owner = wanted[0] if wanted else None  # none in a member cluster: owner labels stand in
    if owner is not None and not any(r.get("uid") == owner.get("uid") and r.get("controller") for r in refs):
        meta["ownerReferences"] = [r for r in refs if r.get("uid") != owner.get("uid")] + [owner]
    live_spec = live.get("spec") or {}
    want_spec = desired.get("spec") or {}
    spec: Json = {}
    digest = (live_meta.get("annotations") or {}).get(keys.spec_hash)
    if digest != (want_meta.get("annotations") or {}).get(keys.spec_hash):
        spec = merge_patch(_only(live_spec, kind.mutable), _only(want_spec, kind.mutable))
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


def immutable_changes(live: Mapping[str, Any], desired: Mapping[str, Any], *, kind: ChildKind) -> list[str]:
    """The immutable spec fields (``spec.serviceName`` …) whose rendered value the live child
    does not hold: it cannot take them without being recreated. A field counts as held when
    every value we render is there; what the API server added (defaults) is not a change."""
    live_spec = live.get("spec") or {}
    return [
        f"spec.{key}"
        for key, value in (desired.get("spec") or {}).items()
        if key not in kind.mutable and not _holds(live_spec.get(key), value)
    ]


def _only(spec: Mapping[str, Any], keys: frozenset[str]) -> Json:
    return {k: v for k, v in spec.items() if k in keys}


def _holds(live: Any, want: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(live, dict) and all(_holds(live.get(k), v) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(live, list) and len(live) == len(want) and all(map(_holds, live, want))
    return bool(live == want or (isinstance(live, str) and isinstance(want, str) and _same_quantity(live, want)))


_QUANTITY = re.compile(r"^([+-]?[0-9]*\.?[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE]?)$")
_SUFFIX: dict[str, Decimal | int] = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_SUFFIX.update({"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": 1, "k": 10**3, "M": 10**6})
_SUFFIX.update({"G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18})


def _same_quantity(a: str, b: str) -> bool:
    """Resource quantities the API server rewrites in canonical form (``1024Mi`` → ``1Gi``)."""
    first, second = _quantity(a), _quantity(b)
    return first is not None and first == second


def _quantity(text: str) -> Decimal | None:
    m = _QUANTITY.match(text)
    if m is None:
        return None
    number, suffix = Decimal(m.group(1)), m.group(2)
    if len(suffix) > 1 and suffix[0] in "eE":
        return number * Decimal(10) ** int(suffix[1:])
    return number * Decimal(_SUFFIX[suffix])
