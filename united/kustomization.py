"""Just enough of kustomize to render the shipped ``manifests/`` overlays without it.

``united install`` must print or apply what ``kubectl apply -k manifests/<overlay>`` would,
on machines that have neither kustomize nor the repository. The overlays use ``resources``,
``bases``, ``namespace`` and ``patchesJson6902``; anything else is refused rather than
ignored, so an overlay that grows a feature fails the unit tests instead of installing
something different (the e2e suite compares the result with ``kubectl kustomize``).
"""

from __future__ import annotations

import posixpath
from importlib.resources.abc import Traversable
from typing import Any

import jsonpatch
import yaml

JSON = dict[str, Any]
FILE = "kustomization.yaml"
CLUSTER_SCOPED = frozenset(
    {
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "PriorityClass",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    }
)
"""Kinds that get no ``namespace`` (kustomize's own list; the kustomize in kubectl 1.20 still
gave one to webhook configurations, which the API server ignores)."""
_FIELDS = frozenset({"apiVersion", "kind", "namespace", "resources", "bases", "patchesJson6902"})


class KustomizationError(ValueError):
    """A kustomization this renderer cannot render exactly."""


def build(root: Traversable, directory: str) -> list[JSON]:
    """The objects of the kustomization in ``directory`` (a ``/``-separated path under
    ``root``; its references may climb to siblings, as ``../base`` does)."""
    where = posixpath.join(directory, FILE)
    spec = yaml.safe_load(_locate(root, where).read_text(encoding="utf-8")) or {}
    unsupported = sorted(set(spec) - _FIELDS)
    if unsupported:
        raise KustomizationError(f"{where}: unsupported fields {', '.join(unsupported)}")
    objects: list[JSON] = []
    for entry in [*spec.get("bases", []), *spec.get("resources", [])]:
        path = posixpath.normpath(posixpath.join(directory, entry))
        target = _locate(root, path)
        if target.is_dir():
            objects += build(root, path)
        else:
            objects += [d for d in yaml.safe_load_all(target.read_text(encoding="utf-8")) if d]
    if "namespace" in spec:
        for obj in objects:
            if obj["kind"] not in CLUSTER_SCOPED:
                obj["metadata"]["namespace"] = spec["namespace"]
    for patch in spec.get("patchesJson6902", []):
        operations = yaml.safe_load(_locate(root, posixpath.join(directory, patch["path"])).read_text(encoding="utf-8"))
        index = _target(objects, patch["target"], where=where)
        objects[index] = jsonpatch.apply_patch(objects[index], operations)
    return objects


def _target(objects: list[JSON], target: JSON, *, where: str) -> int:
    group, version = target.get("group", ""), target["version"]
    api_version = f"{group}/{version}" if group else version
    found = [
        i
        for i, obj in enumerate(objects)
        if obj["apiVersion"] == api_version
        and obj["kind"] == target["kind"]
        and obj["metadata"]["name"] == target["name"]
        and obj["metadata"].get("namespace") == target.get("namespace", obj["metadata"].get("namespace"))
    ]
    if len(found) != 1:
        raise KustomizationError(f"{where}: patch target {target} matches {len(found)} objects, not 1")
    return found[0]


def _locate(root: Traversable, path: str) -> Traversable:
    if path.startswith("../") or path == "..":
        raise KustomizationError(f"{path}: outside the shipped files")
    found = root
    for part in path.split("/"):
        found = found / part
    return found
