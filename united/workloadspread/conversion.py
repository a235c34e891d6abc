"""Conversion between OpenKruise's two WorkloadSpread versions, and the CRD conversion webhook's
answer.

``apps.kruise.io`` serves ``v1alpha1`` and ``v1beta1`` (stored); they differ in two subset field
names and in the shape of status conditions, so the compat CRD needs a conversion webhook
(``strategy: None`` would only rewrite ``apiVersion`` and leave the alpha spellings to be
pruned). Everything else is copied as it is, unknown fields included: the API server has
already pruned what its schema does not know, and a converter that drops data loses it
for good. Our own group has one version and never converts.

**Round trips are lossless.** A subset condition one version cannot hold as it is (a
v1beta1 ``observedGeneration``; a v1alpha1 condition without ``reason``, which v1beta1
requires and gets ``Unknown``) is kept, whole and in the source's form, in the annotation
:data:`STASH_ANNOTATION` of the converted object, keyed by its position. Converting back
restores each kept condition whose position still holds exactly what it was converted to,
and drops the annotation: a client that reads in one version and writes back what it read
changes nothing, and a client that changed a condition keeps its change. The kept copy can
only add what the version it was converted to cannot express, so writing the annotation
gives nobody a status they could not write directly. One gap is the API server's: a write
to ``/status`` keeps the stored object's metadata, so the copy made while converting such a
write is not stored. A v1beta1 generation survives a v1alpha1 client's read and status
write (the copy travels in what it writes back); a v1alpha1 condition written through
``/status`` without a reason reads back with ``reason: Unknown``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any, Final

from united.api import decode
from united.api.document import Json
from united.workloadspread.model import KIND, KRUISE_ALPHA, KRUISE_BETA, subset_field_names

REVIEW_API_VERSIONS: Final = ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1")
#: v1alpha1 subset field -> its v1beta1 name.
_RENAMES: Final = dict(zip(subset_field_names(KRUISE_ALPHA), subset_field_names(KRUISE_BETA), strict=True))
STASH_ANNOTATION: Final = "conversion.apps.united.io/conditions"
"""Subset conditions the other version holds and this one cannot (see the module)."""
MAX_STASH_BYTES: Final = 64 * 1024
"""A larger stash is not written (those conditions convert as they would without it): an
object's annotations may hold 256 KiB in all."""

#: Where a condition is: ``["subsetStatuses", subset, index]`` or
#: ``["versionedSubsetStatuses", revision, subset, index]``.
_Where = tuple[str | int, ...]


class ConversionError(ValueError):
    """An object that cannot be converted; the message says why."""


def convert(obj: Json, to_api_version: str) -> Json:
    """``obj`` (an ``apps.kruise.io`` WorkloadSpread) in ``to_api_version``; a new object.

    alpha -> beta renames the subset fields and gives a condition without ``reason`` the
    reason ``Unknown`` (``metav1.Condition`` requires one); beta -> alpha renames back and
    drops the conditions' ``observedGeneration``, which alpha conditions do not have. What
    either drops is kept in :data:`STASH_ANNOTATION` for the way back (see the module).
    """
    if not isinstance(obj, dict):
        raise ConversionError("object: must be an object")
    source = obj.get("apiVersion")
    if obj.get("kind") != KIND:
        raise ConversionError(f"kind: {obj.get('kind')!r} is not {KIND}")
    for what, version in (("apiVersion", source), ("desiredAPIVersion", to_api_version)):
        if version not in (KRUISE_ALPHA, KRUISE_BETA):
            raise ConversionError(f"{what}: {version!r} is not one of {KRUISE_ALPHA}, {KRUISE_BETA}")
    out = copy.deepcopy(obj)
    out["apiVersion"] = to_api_version
    if source == to_api_version:
        return out
    to_beta = to_api_version == KRUISE_BETA
    renames = _RENAMES if to_beta else {new: old for old, new in _RENAMES.items()}
    for subset in _dicts(_get(out, "spec", "subsets")):
        for old, new in renames.items():
            if old in subset:
                subset[new] = subset.pop(old)
    kept = _take_stash(out)
    stash: list[list[Any]] = []
    for where, condition in _conditions(out.get("status")):
        original = dict(condition)
        restored = kept.get(where)
        converted = (
            copy.deepcopy(restored)
            if restored is not None and _converted(restored, to_beta=not to_beta) == original
            else _converted(original, to_beta=to_beta)
        )
        condition.clear()
        condition.update(converted)
        if _converted(converted, to_beta=not to_beta) != original:
            stash.append([list(where), original])
    _put_stash(out, stash)
    return out


def _converted(condition: Json, *, to_beta: bool) -> Json:
    """One subset condition in the other version, without the stash."""
    out = dict(condition)
    if to_beta:
        if not out.get("reason"):
            out["reason"] = "Unknown"
    else:
        out.pop("observedGeneration", None)
    return out


def _take_stash(obj: Json) -> dict[_Where, Json]:
    """Remove :data:`STASH_ANNOTATION` from ``obj`` (and the annotations it was put in, if the
    stash created them); the conditions it keeps by position, none when it is malformed: it
    is only ever a hint, checked against the condition it would replace."""
    annotations = _get(obj, "metadata", "annotations")
    if not isinstance(annotations, dict) or STASH_ANNOTATION not in annotations:
        return {}
    raw = annotations.pop(STASH_ANNOTATION)
    try:
        stash = decode.loads(raw) if isinstance(raw, str) else None
    except (ValueError, RecursionError):
        stash = None
    if not isinstance(stash, dict) or not decode.within(stash):
        return {}
    if "annotations" in stash and not annotations:
        del obj["metadata"]["annotations"]
    entries = stash.get("conditions")
    return {
        tuple(entry[0]): entry[1]
        for entry in (entries if isinstance(entries, list) else ())
        if isinstance(entry, list)
        and len(entry) == 2
        and isinstance(entry[0], list)
        and all(isinstance(part, str | int) and not isinstance(part, bool) for part in entry[0])
        and isinstance(entry[1], dict)
    }


def _put_stash(obj: Json, stash: list[list[Any]]) -> None:
    """Keep ``stash`` in :data:`STASH_ANNOTATION` when it fits; ``"annotations": null`` in it
    says the annotations were created for it (so the way back removes them)."""
    metadata = obj.get("metadata")
    if not stash or not isinstance(metadata, dict) or not isinstance(metadata.get("annotations", {}), dict):
        return
    value: Json = {"conditions": stash}
    if "annotations" not in metadata:
        value["annotations"] = None
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if len(text.encode()) <= MAX_STASH_BYTES:
        metadata.setdefault("annotations", {})[STASH_ANNOTATION] = text


def review(request: Any) -> Json:
    """Answer a ``ConversionReview``: every object converted to ``desiredAPIVersion`` with
    result ``Success``, or none and result ``Failure`` saying which object failed and why.
    Never raises: the API server shows the message to whoever read the object."""
    api_version = request.get("apiVersion") if isinstance(request, dict) else None
    response: Json = {"uid": "", "result": {"status": "Success"}}
    answer: Json = {
        "apiVersion": api_version if api_version in REVIEW_API_VERSIONS else REVIEW_API_VERSIONS[0],
        "kind": "ConversionReview",
        "response": response,
    }
    body = request.get("request") if isinstance(request, dict) else None
    if not isinstance(body, dict):
        return _failed(answer, "request: a ConversionReview must carry a request object")
    uid = body.get("uid")
    response["uid"] = uid if isinstance(uid, str) else ""
    desired = body.get("desiredAPIVersion")
    objects = body.get("objects")
    if not isinstance(objects, list):
        return _failed(answer, "request.objects: must be an array")
    converted = []
    for i, obj in enumerate(objects):
        try:
            converted.append(convert(obj, str(desired)))
        except ConversionError as e:
            return _failed(answer, f"request.objects[{i}]{_name(obj)}: {e}")
    response["convertedObjects"] = converted
    return answer


def _failed(answer: Json, message: str) -> Json:
    answer["response"]["result"] = {"status": "Failure", "message": message}
    return answer


def _name(obj: Any) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    if not isinstance(name, str):
        return ""
    return f" ({namespace}/{name})" if isinstance(namespace, str) and namespace else f" ({name})"


def _get(obj: Any, *keys: str) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _dicts(items: Any) -> Iterator[Json]:
    return (item for item in (items if isinstance(items, list) else ()) if isinstance(item, dict))


def _conditions(status: Any) -> Iterator[tuple[_Where, Json]]:
    """The subsets' conditions, with their positions, in ``subsetStatuses`` and every version
    of ``versionedSubsetStatuses``. The top-level ``status.conditions`` are ours, the same in
    both versions, and left as they are."""
    lists: list[tuple[_Where, Any]] = [(("subsetStatuses",), _get(status, "subsetStatuses"))]
    versioned = _get(status, "versionedSubsetStatuses")
    if isinstance(versioned, dict):
        lists += [(("versionedSubsetStatuses", revision), subsets) for revision, subsets in versioned.items()]
    for where, subsets in lists:
        for i, subset in enumerate(subsets if isinstance(subsets, list) else ()):
            conditions = subset.get("conditions") if isinstance(subset, dict) else None
            for j, condition in enumerate(conditions if isinstance(conditions, list) else ()):
                if isinstance(condition, dict):
                    yield (*where, i, j), condition
