"""Pod-template versions: which revision of its workload a pod was created from.

The webhook books each pod against the status list of its own version, so a rolling update
fills the subsets afresh for the new revision while the old pods drain: the split is kept
across the update. OpenKruise versions only Deployment and ReplicaSet pods; every other
kind shares one ``versionIgnored`` list, so surge pods of a CloneSet update find the subsets
full of old pods (kruise#834). Here the pods of every kind are versioned by the label their
controller stamps: ``pod-template-hash`` (ReplicaSet), else the hash after the last ``-`` of
``controller-revision-hash`` (StatefulSet, CloneSet, Advanced StatefulSet, DaemonSet-like
custom kinds); pods with neither (Job, most custom kinds) stay ``versionIgnored``.

:func:`workload_version` tells which of those versions is the workload's latest, the one whose
pods scale-in keeps (deletion cost orders older versions first).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from united.workloadspread.model import VERSION_IGNORED

POD_TEMPLATE_HASH = "pod-template-hash"
CONTROLLER_REVISION_HASH = "controller-revision-hash"


def pod_version(pod: Mapping[str, Any]) -> str:
    """The version a pod belongs to (see the module docstring)."""
    labels = _meta(pod).get("labels") or {}
    template_hash = labels.get(POD_TEMPLATE_HASH)
    if template_hash:
        return str(template_hash)
    revision = labels.get(CONTROLLER_REVISION_HASH)
    if revision:
        return _suffix(str(revision))
    return VERSION_IGNORED


def workload_version(
    kind: str, workload: Mapping[str, Any], *, replicasets: Sequence[Mapping[str, Any]] = ()
) -> str | None:
    """The version of the pods the workload creates now, or ``None`` when it cannot be told yet.

    * Deployment: the ``pod-template-hash`` of the ReplicaSet it controls whose pod template is
      the Deployment's (compared without that label, as the Deployment controller does);
      ``None`` until that ReplicaSet exists.
    * ReplicaSet: its own ``pod-template-hash``; a standalone ReplicaSet without one makes
      ``versionIgnored`` pods, so that is its version (OpenKruise answers ``""`` there and
      orders every pod as old).
    * CloneSet, StatefulSet: the hash of ``status.updateRevision``; ``None`` while the controller
      has not observed the latest generation (the revision it reports is the previous one).
    * Job: ``versionIgnored`` (its pods carry no revision label).
    * Any other kind: ``None`` (no rule is known for it).
    """
    if kind == "Deployment":
        return _deployment_version(workload, replicasets)
    if kind == "ReplicaSet":
        return _template_hash(workload) or VERSION_IGNORED
    if kind in ("CloneSet", "StatefulSet"):
        status = workload.get("status") or {}
        generation = _meta(workload).get("generation") or 0
        revision = status.get("updateRevision")
        if not revision or generation > (status.get("observedGeneration") or 0):
            return None
        return _suffix(str(revision))
    if kind == "Job":
        return VERSION_IGNORED
    return None


def _deployment_version(deployment: Mapping[str, Any], replicasets: Sequence[Mapping[str, Any]]) -> str | None:
    uid = _meta(deployment).get("uid")
    template = _without_hash((deployment.get("spec") or {}).get("template") or {})
    for rs in replicasets:
        owned = any(ref.get("controller") and ref.get("uid") == uid for ref in _meta(rs).get("ownerReferences") or ())
        if owned and _without_hash((rs.get("spec") or {}).get("template") or {}) == template:
            return _template_hash(rs)
    return None


def _template_hash(rs: Mapping[str, Any]) -> str | None:
    labels = _meta(rs).get("labels") or {}
    template_labels = _meta((rs.get("spec") or {}).get("template") or {}).get("labels") or {}
    value = template_labels.get(POD_TEMPLATE_HASH) or labels.get(POD_TEMPLATE_HASH)
    return str(value) if value else None


def _without_hash(template: Mapping[str, Any]) -> dict[str, Any]:
    meta = dict(_meta(template))
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != POD_TEMPLATE_HASH}
    meta["labels"] = labels
    return {**template, "metadata": meta}


def _suffix(revision: str) -> str:
    return revision.rsplit("-", 1)[-1]


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}
