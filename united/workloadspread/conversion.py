"""Conversion between OpenKruise's two WorkloadSpread versions, and the CRD conversion webhook's
answer.

``apps.kruise.io`` serves ``v1alpha1`` and ``v1beta1`` (stored); they differ in two subset field
names and in the shape of status conditions, so the compat CRD needs a conversion webhook
(``strategy: None`` would only rewrite ``apiVersion`` and leave the alpha spellings to be
pruned). Everything else is copied as it is, unknown fields included: the API server has
already pruned what its schema does not know, and a converter that drops data loses it
for good. Our own group has one version and never converts.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any, Final

from united.workloadspread.model import KIND, KRUISE_ALPHA, KRUISE_BETA, Json, subset_field_names

REVIEW_API_VERSIONS: Final = ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1")
#: v1alpha1 subset field -> its v1beta1 name.
_RENAMES: Final = dict(zip(subset_field_names(KRUISE_ALPHA), subset_field_names(KRUISE_BETA), strict=True))


class ConversionError(ValueError):
    """An object that cannot be converted; the message says why."""


def convert(obj: Json, to_api_version: str) -> Json:
    """``obj`` (an ``apps.kruise.io`` WorkloadSpread) in ``to_api_version``; a new object.

    alpha -> beta renames the subset fields and gives a condition without ``reason`` the
    reason ``Unknown`` (``metav1.Condition`` requires one); beta -> alpha renames back and
    drops the conditions' ``observedGeneration``, which alpha conditions do not have.
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
    for condition in _conditions(out.get("status")):
        if to_beta:
            if not condition.get("reason"):
                condition["reason"] = "Unknown"
        else:
            condition.pop("observedGeneration", None)
    return out


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


def _conditions(status: Any) -> Iterator[Json]:
    """The subsets' conditions, in ``subsetStatuses`` and every version of
    ``versionedSubsetStatuses``. The top-level ``status.conditions`` are ours, the same in
    both versions, and left as they are."""
    lists = [_get(status, "subsetStatuses")]
    versioned = _get(status, "versionedSubsetStatuses")
    if isinstance(versioned, dict):
        lists += versioned.values()
    for subsets in lists:
        for subset in _dicts(subsets):
            yield from _dicts(subset.get("conditions"))
