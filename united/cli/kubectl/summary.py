"""What ``kubectl united status`` shows: a summary of an object's status, as text or JSON.

Why not ``kubectl get -o yaml``: the status is long (per-subset entries, conditions, rollout)
and the questions people ask of it are short — how many replicas each subset should have and
why, how far the update went, which wave the rollout is in, what blocks it. The summary is built
from the object alone, so it works for any object the API server returns, written by any
version of the controller (absent fields show as ``-``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from united.api.document import Json

NONE = "-"
_ABNORMAL = {"Ready": "False", "UnitedDeploymentUpdated": "False"}
"""The status of a condition type whose message is worth a line of its own (default True:
``Reconciling``, ``Stalled``)."""


def _text(value: Any) -> str:
    if value is None or value == "":
        return NONE
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def conditions_text(conditions: Any) -> str:
    """``Type=Status(Reason)`` for each condition, comma-separated; ``-`` for none."""
    parts = []
    for c in conditions or ():
        if isinstance(c, Mapping):
            reason = f"({c['reason']})" if c.get("reason") and c.get("status") == "True" else ""
            parts.append(f"{c.get('type')}={c.get('status')}{reason}")
    return ",".join(parts) or NONE


def _subsets(status: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [s for s in status.get("subsetStatuses") or () if isinstance(s, Mapping)]


def united(obj: Mapping[str, Any]) -> Json:
    """The summary of a UnitedDeployment (the ``-o json`` document)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    subsets = [
        {
            "name": s.get("name"),
            "desired": s.get("desired"),
            "replicas": s.get("replicas", 0),
            "ready": s.get("readyReplicas", 0),
            "updated": s.get("updatedReplicas", 0),
            "partition": s.get("partition", 0),
            "partitionApplied": s.get("partitionApplied"),
            "rollout": s.get("rollout"),
            "reason": s.get("reason"),
            "message": s.get("message"),
            "conditions": list(s.get("conditions") or []),
        }
        for s in _subsets(status)
    ]
    return {
        "kind": obj.get("kind", "UnitedDeployment"),
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "generation": meta.get("generation"),
        "observedGeneration": status.get("observedGeneration"),
        "replicas": spec.get("replicas"),
        "currentReplicas": status.get("replicas"),
        "readyReplicas": status.get("readyReplicas"),
        "updatedReplicas": status.get("updatedReplicas"),
        "currentRevision": status.get("currentRevision"),
        "updatedRevision": status.get("updatedRevision"),
        "updateStrategy": (spec.get("updateStrategy") or {}).get("type") or "Manual",
        "rollout": status.get("rollout"),
        "conditions": list(status.get("conditions") or []),
        "subsets": subsets,
    }


def spread(obj: Mapping[str, Any]) -> Json:
    """The summary of a WorkloadSpread (the ``-o json`` document)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    target = spec.get("targetRef") or {}
    subsets = [
        {
            "name": s.get("name"),
            "replicas": s.get("replicas", 0),
            "missingReplicas": s.get("missingReplicas"),
            "creatingPods": len(s.get("creatingPods") or {}),
            "deletingPods": len(s.get("deletingPods") or {}),
            "reason": s.get("reason"),
            "message": s.get("message"),
            "conditions": list(s.get("conditions") or []),
        }
        for s in _subsets(status)
    ]
    return {
        "kind": obj.get("kind", "WorkloadSpread"),
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "generation": meta.get("generation"),
        "observedGeneration": status.get("observedGeneration"),
        "target": f"{target.get('kind', '')}/{target.get('name', '')}" if target else None,
        "unplacedReplicas": status.get("unplacedReplicas"),
        "conditions": list(status.get("conditions") or []),
        "subsets": subsets,
    }


def _rollout_line(rollout: Any) -> str:
    if not isinstance(rollout, Mapping):
        return NONE
    wave = rollout.get("wave")
    waves = rollout.get("waves")
    position = f"wave {wave} (of {waves})" if isinstance(wave, int) and isinstance(waves, int) else NONE
    if isinstance(wave, int) and isinstance(waves, int) and wave >= waves:
        position = f"all {waves} waves done"
    reason = f" ({rollout['reason']})" if rollout.get("reason") else ""
    message = f": {rollout['message']}" if rollout.get("message") else ""
    return f"{_text(rollout.get('phase'))}{reason}, {position}{message}"


def lines(summary: Mapping[str, Any]) -> list[str]:
    """The header lines above the subset table."""
    out = [
        f"{summary['kind']} {_text(summary['namespace'])}/{_text(summary['name'])}: "
        f"generation {_text(summary['generation'])}, observed {_text(summary['observedGeneration'])}"
    ]
    if "target" in summary:
        out.append(f"Target: {_text(summary['target'])}, unplaced replicas: {_text(summary['unplacedReplicas'])}")
    else:
        out.append(
            f"Replicas: {_text(summary['replicas'])} desired, {_text(summary['currentReplicas'])} current, "
            f"{_text(summary['readyReplicas'])} ready, {_text(summary['updatedReplicas'])} updated"
        )
        out.append(
            f"Revision: {_text(summary['updatedRevision'])} (current {_text(summary['currentRevision'])}), "
            f"strategy {summary['updateStrategy']}"
        )
        out.append(f"Rollout: {_rollout_line(summary['rollout'])}")
    out.append(f"Conditions: {conditions_text(summary['conditions'])}")
    for c in summary["conditions"]:
        if isinstance(c, Mapping) and c.get("message") and c.get("status") == _ABNORMAL.get(str(c.get("type")), "True"):
            out.append(f"  {c.get('type')}: {c['message']}")
    return out


def _partition(s: Mapping[str, Any]) -> str:
    text = _text(s["partition"])
    return f"{text}(not applied)" if s["partitionApplied"] is False and s["partition"] else text


def rows(summary: Mapping[str, Any]) -> list[Sequence[str]]:
    """The subset table, header first; the last column is the free-text message."""
    subsets = summary["subsets"]
    if "target" in summary:
        table: list[Sequence[str]] = [
            ("SUBSET", "REPLICAS", "MISSING", "CREATING", "DELETING", "REASON", "CONDITIONS", "MESSAGE")
        ]
        table += [
            (
                _text(s["name"]),
                _text(s["replicas"]),
                _text(s["missingReplicas"]),
                _text(s["creatingPods"]),
                _text(s["deletingPods"]),
                _text(s["reason"]),
                conditions_text(s["conditions"]),
                _text(s["message"]),
            )
            for s in subsets
        ]
        return table
    table = [("SUBSET", "DESIRED", "READY", "UPDATED", "PARTITION", "ROLLOUT", "REASON", "CONDITIONS", "MESSAGE")]
    table += [
        (
            _text(s["name"]),
            _text(s["desired"]),
            f"{_text(s['ready'])}/{_text(s['replicas'])}",
            _text(s["updated"]),
            _partition(s),
            _text(s["rollout"]),
            _text(s["reason"]),
            conditions_text(s["conditions"]),
            _text(s["message"]),
        )
        for s in subsets
    ]
    return table
