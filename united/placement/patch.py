"""Kubernetes strategic merge patch for pod templates, in pure Python.

Why strategic merge: a subset ``patch`` must say "give container ``main`` other CPU
limits" or "add a sidecar" without restating the whole container list. JSON merge patch
(RFC 7386) replaces lists wholesale; a strategic merge patch merges the lists the API marks
mergeable (``containers`` by ``name``, ``env`` by ``name``, ...). It is what ``kubectl patch
--type strategic`` sends and what OpenKruise applies to its subset patches, so users can
try a patch against a real pod with kubectl and get the same result here.

Semantics are those of ``StrategicMergeMapPatch`` in k8s.io/apimachinery
``pkg/util/strategicpatch`` as of Kubernetes 1.28-1.30 (the version that strips directives
from values copied into absent fields), driven by the table in :mod:`united.placement.patchschema`:

* maps merge recursively; ``null`` deletes a key (and is dropped where nothing is deleted);
* lists without a strategy are replaced; ``merge`` lists of scalars are unions; ``merge``
  lists of objects are merged element-wise by their merge key, a matching element in the
  original receiving the patch element recursively;
* order of a merged list: the elements the patch names, in patch order, interleaved with
  the original's other elements in their original order; an original element goes first
  only if the next patch element is also in the original and comes later there. So an
  element new to the list lands right after the patch element before it, ahead of the
  original-only elements: ``[sidecar]`` patched into ``[main]`` gives ``[sidecar, main]``
  (apimachinery's ``mergeSortedSlice``; kustomize calls this behaviour "prepend");
* ``$patch: replace`` / ``$patch: delete`` on a map (``delete`` leaves ``{}``),
  ``{"$patch": "replace"}`` and ``{<key>: ..., "$patch": "delete"}`` as list elements,
  ``$deleteFromPrimitiveList/<f>``, ``$setElementOrder/<f>`` and ``$retainKeys``.

Quirks of apimachinery that are kept on purpose, because kubectl shows them too: a map
carrying ``$patch`` under a key the original lacks is dropped (so ``$patch: replace`` there
adds nothing); values copied into absent fields lose their ``null`` entries and ``$patch``
maps, but elements appended to a merge list, atomic lists and ``$patch: replace`` maps are
taken verbatim; ``$patch: merge`` is rejected (it exists only as a struct tag); ``null``
values already in the original are kept.

Deviations, each where apimachinery has no single answer or the typed decode that follows
it in the API server would fail anyway:

* Fields missing from the table merge as plain JSON instead of failing with "unable to find
  api field": the API server ignores unknown fields when it decodes the result.
* Shape errors are caught up front with a path: a map where the table says list, a scalar
  where it says object, an object in ``finalizers``.
* Directives are validated everywhere, also inside values apimachinery would copy or drop
  unread: ``$patch`` must be ``replace`` or ``delete``, ``$retainKeys`` a list of strings,
  ``$deleteFromPrimitiveList/<f>`` a list of scalars, ``$setElementOrder/<f>`` a list; any
  other key starting with ``$`` is an error.
* Where apimachinery panics (map-valued merge keys, unhashable set elements) this raises
  :class:`PatchError`; no ``KeyError``/``TypeError`` escapes.
* Keys are applied in patch order; Go iterates a map, so a patch that both adds and
  deletes the same value of one primitive list has a random result there.
* ``$setElementOrder`` ranks server-only elements by the original list as it was before
  the patch; apimachinery reads that order from a Go slice its own deletions shifted in
  place, so its answer depends on slice capacity.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any, Final, TypeAlias

from united.placement.patchschema import POD, POD_TEMPLATE, ListSchema, ObjectSchema, ScalarSchema, Schema

__all__ = ["POD", "POD_TEMPLATE", "PatchError", "strategic_merge", "strategic_merge_touched"]

Json: TypeAlias = "dict[str, Json] | list[Json] | str | int | float | bool | None"
_Key: TypeAlias = tuple[str, str | int | float | bool | None]

_PATCH: Final = "$patch"
_RETAIN: Final = "$retainKeys"
_ORDER: Final = "$setElementOrder/"
_DELETE_FROM: Final = "$deleteFromPrimitiveList/"


class PatchError(ValueError):
    """A patch that cannot be applied.

    ``path`` is a dotted field path inside the patch (``spec.containers[0].ports``; empty
    for the patch as a whole), ``message`` says what is wrong there.
    """

    def __init__(self, message: str, *, path: str = "") -> None:
        self.message = message
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


def strategic_merge(
    original: Mapping[str, Any],
    patch: Mapping[str, Any],
    *,
    schema: ObjectSchema | None = POD_TEMPLATE,
) -> dict[str, Any]:
    """Apply ``patch`` to ``original`` as a strategic merge patch and return a new dict.

    ``schema`` describes the document (default: a ``PodTemplateSpec``; :data:`POD` for a
    Pod; ``None`` for plain JSON, where every list is atomic). Inputs are never mutated.
    Raises :class:`PatchError` for a patch that cannot be applied.
    """
    if not isinstance(original, Mapping):
        raise PatchError(f"the original must be an object, not {_describe(original)}")
    if not isinstance(patch, Mapping):
        raise PatchError(f"a patch must be an object, not {_describe(patch)}")
    doc = _copy_json(original, "", original=True)
    ops = _copy_patch(patch, schema, "")
    assert isinstance(doc, dict) and isinstance(ops, dict)
    return _merge_map(doc, ops, schema, "")


def strategic_merge_touched(
    original: Mapping[str, Any],
    patch: Mapping[str, Any],
    *,
    schema: ObjectSchema | None = POD_TEMPLATE,
) -> dict[str, Any]:
    """:func:`strategic_merge`, copying only what ``patch`` can change: the maps it names key by
    key (down to a list, a value, or a map with a ``$`` directive, merged whole); the rest of
    the result is ``original``'s own objects, shared. So the cost follows the patch, not the
    document (a pod of many tolerations, patched in one container, is not copied), and a
    comparison of the two finds the untouched parts identical at once. Neither is mutated."""
    if not isinstance(original, Mapping) or not isinstance(patch, Mapping):
        return strategic_merge(original, patch, schema=schema)
    merged = strategic_merge(_touched(original, patch), patch, schema=schema)
    grafted = _graft(original, merged, patch)
    assert isinstance(grafted, dict)
    return grafted


def _narrow(original: object, patch: object) -> bool:
    return isinstance(original, Mapping) and isinstance(patch, Mapping) and not any(k.startswith("$") for k in patch)


def _touched(original: Any, patch: Any) -> Any:
    """The part of ``original`` ``patch`` names (the same paths, so the same schema applies)."""
    if not _narrow(original, patch):
        return original
    return {key: _touched(original[key], value) for key, value in patch.items() if key in original}


def _graft(original: Any, merged: Any, patch: Any) -> Any:
    """``merged`` (the merge of :func:`_touched`'s part) put back into ``original``."""
    if not _narrow(original, patch) or not isinstance(merged, dict):
        return merged
    out = {}
    for key, value in original.items():
        if key not in patch:
            out[key] = value
        elif key in merged:
            out[key] = _graft(value, merged[key], patch[key])
    out.update((key, value) for key, value in merged.items() if key not in original)
    return out


# Copying: inputs become fresh dict/list trees, which the merge below may then change in
# place like apimachinery does; the patch is checked against the schema on the way.


def _copy_json(value: object, path: str, *, original: bool = False) -> Json:
    def fail(message: str) -> PatchError:
        if original:
            return PatchError(f"the original is not JSON at {path or '<root>'}: {message}")
        return PatchError(message, path=path)

    if isinstance(value, Mapping):
        out: dict[str, Json] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise fail(f"keys must be strings, not {k!r}")
            out[k] = _copy_json(v, _join(path, k), original=original)
        return out
    if isinstance(value, list | tuple):
        return [_copy_json(v, f"{path}[{i}]", original=original) for i, v in enumerate(value)]
    if value is None or isinstance(value, str | int | float):
        return value
    raise fail(f"{_describe(value)} is not a JSON value")


def _copy_patch(value: object, schema: Schema | None, path: str) -> Json:
    if value is None:
        return None
    if isinstance(value, Mapping):
        if isinstance(schema, ListSchema | ScalarSchema):
            raise PatchError(_shape(schema, value), path=path)
        out: dict[str, Json] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise PatchError(f"keys must be strings, not {k!r}", path=path)
            child = _join(path, k)
            if k.startswith("$"):
                out[k] = _copy_directive(k, v, schema, child)
            else:
                out[k] = _copy_patch(v, _child(schema, k), child)
        return out
    if isinstance(value, list | tuple):
        if isinstance(schema, ObjectSchema | ScalarSchema):
            raise PatchError(_shape(schema, value), path=path)
        items = schema.items if isinstance(schema, ListSchema) else None
        return [_copy_patch(v, items, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, str | int | float):
        if isinstance(schema, ObjectSchema | ListSchema):
            raise PatchError(_shape(schema, value), path=path)
        return value
    raise PatchError(f"{_describe(value)} is not a JSON value", path=path)


def _copy_directive(key: str, value: object, schema: Schema | None, path: str) -> Json:
    if key == _PATCH:
        if value in ("replace", "delete"):
            return str(value)
        if value == "merge":
            raise PatchError(
                "`$patch: merge` cannot be used in a patch: merging is the default, and "
                "apimachinery only knows `merge` as a struct tag",
                path=path,
            )
        raise PatchError(f"unknown patch directive {value!r}: use replace or delete", path=path)
    if key == _RETAIN:
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise PatchError("$retainKeys must be a list of field names", path=path)
        return list(value)
    for prefix in (_ORDER, _DELETE_FROM):
        if key.startswith(prefix) and len(key) > len(prefix):
            target = _child(schema, key[len(prefix) :])
            if isinstance(target, ObjectSchema | ScalarSchema):
                raise PatchError(f"{key[len(prefix) :]} is not a list", path=path)
            if not isinstance(value, list | tuple):
                raise PatchError(f"{prefix[:-1]} needs a list, not {_describe(value)}", path=path)
            items = [_copy_json(v, f"{path}[{i}]") for i, v in enumerate(value)]
            if prefix == _DELETE_FROM:
                for i, item in enumerate(items):
                    if item is None or isinstance(item, dict | list):
                        raise PatchError(f"can only delete scalars, not {_describe(item)}", path=f"{path}[{i}]")
            return items
    raise PatchError(f"unknown directive {key!r}", path=path)


# Merging, after apimachinery's mergeMap / mergeSlice.


def _merge_map(original: dict[str, Json], patch: dict[str, Json], schema: Schema | None, path: str) -> dict[str, Json]:
    if _PATCH in patch:
        if patch[_PATCH] == "delete":
            return {}
        del patch[_PATCH]
        return patch
    _retain_keys(original, patch, path)
    _set_element_orders(original, patch, schema, path)
    for key, value in list(patch.items()):
        deleting = key.startswith(_DELETE_FROM)
        field = key[len(_DELETE_FROM) :] if deleting else key
        here = _join(path, key)
        if value is None:
            original.pop(field, None)
            continue
        if field not in original or _kind(original[field]) != _kind(value):
            if not deleting:
                keep, taken = _strip(_drop_nulls(value))
                if keep:
                    original[field] = taken
                else:
                    original.pop(field, None)
            continue
        current = original[field]
        if isinstance(current, dict) and isinstance(value, dict):
            original[field] = _merge_map(current, value, _child(schema, field), here)
        elif isinstance(current, list) and isinstance(value, list):
            original[field] = _merge_list_field(
                current, value, _list_schema(schema, field), deleting=deleting, path=here
            )
        else:
            original[field] = value
    return original


def _retain_keys(original: dict[str, Json], patch: dict[str, Json], path: str) -> None:
    if _RETAIN not in patch:
        return
    listed = patch.pop(_RETAIN)
    assert isinstance(listed, list)
    keep = set(listed)
    for key, value in patch.items():
        if value is None or key.startswith((_DELETE_FROM, _ORDER)):
            continue
        if key not in keep:
            raise PatchError(f"{key} is not listed in $retainKeys", path=_join(path, key))
    for key in [k for k in original if k not in keep]:
        del original[key]


def _set_element_orders(original: dict[str, Json], patch: dict[str, Json], schema: Schema | None, path: str) -> None:
    for key in [k for k in patch if k.startswith(_ORDER)]:
        order = patch.pop(key)
        assert isinstance(order, list)
        field = key[len(_ORDER) :]
        here = _join(path, key)
        current, changes = original.get(field), patch.get(field)
        if field in original and not isinstance(current, list):
            raise PatchError(f"the original {field} is {_describe(current)}, not a list", path=here)
        if field in patch and not isinstance(changes, list):
            raise PatchError(f"{field} must be a list to be ordered", path=_join(path, field))
        ls = _list_schema(schema, field)
        merge_key = ls.merge_key if ls is not None else None
        old = current if isinstance(current, list) else []
        new = changes if isinstance(changes, list) else []
        _check_order(new, order, merge_key, here)
        if field not in patch:
            if field not in original:
                continue
            merged = old
        elif field not in original:
            merged = [v for keep, v in map(_strip, new) if keep]
        else:
            merged = _merge_list_field(old, new, ls, deleting=False, path=_join(path, field))
        kind = _element_kind(old + new, here)
        by_order, rest = _partition(merged, order, merge_key, here)
        original[field] = _normalize(by_order, rest, order, old, merge_key, kind == "map", here)
        patch.pop(field, None)


def _check_order(changes: list[Json], order: list[Json], merge_key: str | None, path: str) -> None:
    """The patch list must follow ``$setElementOrder`` (deletions and directives aside)."""
    if not order or not changes:
        return
    if merge_key is not None:
        for i, item in enumerate(changes):
            if not isinstance(item, dict):
                raise PatchError(f"expected an object, got {_describe(item)}", path=f"{path}[{i}]")
        changes = [c for c in changes if not (isinstance(c, dict) and c.get(_PATCH) == "delete")]
    i = j = 0
    while i < len(changes) and j < len(order):
        item = changes[i]
        if isinstance(item, dict) and _PATCH in item:
            i += 1
            continue
        if _item_key(item, merge_key, path) == _item_key(order[j], merge_key, path):
            i += 1
        j += 1
    if i < len(changes):
        raise PatchError("the order of the patch list doesn't match $setElementOrder", path=path)


def _merge_list_field(
    original: list[Json],
    patch: list[Json],
    schema: ListSchema | None,
    *,
    deleting: bool,
    path: str,
) -> list[Json]:
    if not deleting and (schema is None or not schema.merge):
        return patch
    merge_key = schema.merge_key if schema is not None else None
    if not original and not patch:
        return original
    kind = _element_kind(original + patch, path)
    if kind != "map":
        if deleting:
            gone = {_key(v, path) for v in patch}
            return [v for v in original if _key(v, path) not in gone]
        if merge_key is not None:
            raise PatchError(f"elements must be objects with a {merge_key!r} key", path=path)
        merged = _unique(original + patch, path)
        upserts = patch
    else:
        if merge_key is None:
            raise PatchError("cannot merge a list of objects without a merge key", path=path)
        original, plain = _special_elements(original, patch, merge_key, path)
        merged = _merge_elements(original, plain, merge_key, schema, path)
        upserts = [item for _, item in plain]
    by_patch, rest = _partition(merged, upserts, merge_key, path)
    return _normalize(by_patch, rest, upserts, original, merge_key, kind == "map", path)


def _special_elements(
    original: list[Json], patch: list[Json], merge_key: str, path: str
) -> tuple[list[Json], list[tuple[int, dict[str, Json]]]]:
    """Apply the ``$patch`` elements of a merge list.

    Returns what is left of the original and the other patch elements with their indices.
    Deletions are collected first and applied in one sweep, so the cost is linear.
    """
    plain: list[tuple[int, dict[str, Json]]] = []
    doomed: set[_Key] = set()
    replace = False
    for i, item in enumerate(patch):
        assert isinstance(item, dict)
        if _PATCH not in item:
            plain.append((i, item))
        elif item[_PATCH] == "replace":
            replace = True
        else:
            if merge_key not in item:
                raise PatchError(
                    f"a `$patch: delete` element needs the merge key {merge_key!r}",
                    path=f"{path}[{i}]",
                )
            key = _key(item[merge_key], f"{path}[{i}].{merge_key}")
            if not doomed:
                _index(original, merge_key, path, strict=True)
            doomed.add(key)
    if replace:
        return [item for _, item in plain], []
    if doomed:
        original = [e for e in original if _element_key(e, merge_key, path) not in doomed]
    return original, plain


def _merge_elements(
    original: list[Json],
    patch: list[tuple[int, dict[str, Json]]],
    merge_key: str,
    schema: ListSchema | None,
    path: str,
) -> list[Json]:
    """Merge each patch element into the first element with its key, or append it.

    The elements are indexed by merge key, so a patch of m elements into a list of n costs
    O(n + m), not O(n·m): a subset patch is user input and runs on the controller's loop.
    """
    items = schema.items if schema is not None else None
    merged = list(original)
    at, unreadable = _index(merged, merge_key, path, strict=False)
    for i, item in patch:
        here = f"{path}[{i}]"
        if merge_key not in item:
            raise PatchError(f"missing the merge key {merge_key!r}", path=here)
        wanted = _key(item[merge_key], f"{here}.{merge_key}")
        places = at.get(wanted)
        j = places[0] if places else len(merged)
        if unreadable is not None and unreadable < j:
            _element_key(merged[unreadable], merge_key, path)
        if places:
            candidate = merged[j]
            assert isinstance(candidate, dict)
            merged[j] = result = _merge_map(candidate, item, items, here)
            if merge_key not in result:
                # A merge keeps the key's value, except that ``name: null`` deletes it.
                places.popleft()
        else:
            at.setdefault(wanted, deque()).append(len(merged))
            merged.append(item)
    return merged


def _index(
    elements: list[Json], merge_key: str, path: str, *, strict: bool
) -> tuple[dict[_Key, deque[int]], int | None]:
    """Positions of ``elements`` by merge key, in list order, and the position of the first
    element whose merge key is not a scalar (``strict`` raises there, as a scan would)."""
    at: dict[_Key, deque[int]] = {}
    unreadable = None
    for j, e in enumerate(elements):
        if not isinstance(e, dict) or merge_key not in e:
            continue
        value = e[merge_key]
        if isinstance(value, dict | list):
            if strict:
                _key(value, path)
            if unreadable is None:
                unreadable = j
            continue
        at.setdefault(_key(value, path), deque()).append(j)
    return at, unreadable


def _partition(merged: list[Json], by: list[Json], merge_key: str | None, path: str) -> tuple[list[Json], list[Json]]:
    """Split ``merged`` into the elements named in ``by`` and the rest, keeping their order."""
    if merge_key is None:
        named = {_key(v, path) for v in by}
    else:
        named = set()
        for v in by:
            if not isinstance(v, dict):
                raise PatchError(f"expected an object, got {_describe(v)}", path=path)
            if merge_key in v:
                named.add(_key(v[merge_key], path))
    hit: list[Json] = []
    miss: list[Json] = []
    for v in merged:
        (hit if _item_key(v, merge_key, path) in named else miss).append(v)
    return hit, miss


def _normalize(
    from_patch: list[Json],
    server_only: list[Json],
    patch_order: list[Json],
    server_order: list[Json],
    merge_key: str | None,
    maps: bool,
    path: str,
) -> list[Json]:
    """Order patch elements by the patch and the others by the original, then interleave."""
    left = _sort_by(server_only, server_order, merge_key, maps, path)
    right = _sort_by(from_patch, patch_order, merge_key, maps, path)
    rank = _ranks(server_order, merge_key, path)
    out: list[Json] = []
    i = j = 0
    while i < len(left) and j < len(right):
        li = rank.get(_item_key(left[i], merge_key, path))
        ri = rank.get(_item_key(right[j], merge_key, path))
        if li is not None and ri is not None and li < ri:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out + left[i:] + right[j:]


def _sort_by(items: list[Json], order: list[Json], merge_key: str | None, maps: bool, path: str) -> list[Json]:
    deleted: list[Json] = []
    if maps:
        for v in items + order:
            if not isinstance(v, dict) or merge_key is None or merge_key not in v:
                raise PatchError(f"every element needs the merge key {merge_key!r}", path=path)
        deleted = [v for v in items if isinstance(v, dict) and v.get(_PATCH) == "delete"]
        items = [v for v in items if not (isinstance(v, dict) and v.get(_PATCH) == "delete")]
    rank = _ranks(order, merge_key, path)
    ranked = sorted(items, key=lambda v: rank.get(_item_key(v, merge_key, path), len(order)))
    return ranked + deleted


def _ranks(order: list[Json], merge_key: str | None, path: str) -> dict[_Key, int]:
    rank: dict[_Key, int] = {}
    for i, v in enumerate(order):
        if merge_key is None or (isinstance(v, dict) and merge_key in v):
            rank.setdefault(_item_key(v, merge_key, path), i)
    return rank


# Values copied from the patch into fields the original lacks.


def _drop_nulls(value: Json) -> Json:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _strip(value: Json) -> tuple[bool, Json]:
    """Remove every map that carries ``$patch``; ``(False, None)`` if ``value`` is one."""
    if isinstance(value, dict):
        if _PATCH in value:
            return False, None
        return True, {k: v for k, (keep, v) in ((k, _strip(v)) for k, v in value.items()) if keep}
    if isinstance(value, list):
        return True, [v for keep, v in map(_strip, value) if keep]
    return True, value


# Small helpers.


def _kind(value: Json) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    return "map" if isinstance(value, dict) else "list"


def _key(value: Json, path: str) -> _Key:
    """A hashable identity with Go's ``==`` on JSON values: ``1``, ``1.0`` and ``true`` differ."""
    if isinstance(value, dict | list):
        raise PatchError(f"cannot compare {_describe(value)}: expected a scalar", path=path)
    return (_kind(value), value)


def _item_key(item: Json, merge_key: str | None, path: str) -> _Key:
    if merge_key is None:
        return _key(item, path)
    if not isinstance(item, dict) or merge_key not in item:
        raise PatchError(f"every element needs the merge key {merge_key!r}", path=path)
    return _key(item[merge_key], path)


def _element_key(item: Json, merge_key: str, path: str) -> _Key | None:
    """The merge key of an original element, ``None`` when it has none."""
    if not isinstance(item, dict) or merge_key not in item:
        return None
    return _key(item[merge_key], path)


def _element_kind(items: list[Json], path: str) -> str:
    kinds = {_kind(v) for v in items}
    if not kinds:
        raise PatchError("cannot order an empty list", path=path)
    if "list" in kinds:
        raise PatchError("lists of lists cannot be merged", path=path)
    if "null" in kinds:
        raise PatchError("null elements cannot be merged", path=path)
    if len(kinds) > 1:
        raise PatchError(f"list elements must all have one type, found {sorted(kinds)}", path=path)
    return kinds.pop()


def _unique(items: list[Json], path: str) -> list[Json]:
    seen: set[_Key] = set()
    out: list[Json] = []
    for v in items:
        k = _key(v, path)
        if k not in seen:
            seen.add(k)
            out.append(v)
    return out


def _child(schema: Schema | None, key: str) -> Schema | None:
    return schema.child(key) if isinstance(schema, ObjectSchema) else None


def _list_schema(schema: Schema | None, key: str) -> ListSchema | None:
    child = _child(schema, key)
    return child if isinstance(child, ListSchema) else None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _describe(value: object) -> str:
    names: dict[type, str] = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), f"a {type(value).__name__}")


def _shape(schema: Schema, value: object) -> str:
    wanted = {ObjectSchema: "an object", ListSchema: "a list", ScalarSchema: "a scalar"}
    return f"expected {wanted[type(schema)]}, got {_describe(value)}"
