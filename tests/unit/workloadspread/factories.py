"""Small builders of WorkloadSpreads, workloads and pods for the controller-core tests."""

from __future__ import annotations

import json
from typing import Any

from united.api.document import Json
from united.workloadspread.model import MATCHED_ANNOTATION, WorkloadSpread, parse

NS = "default"
WORKLOAD_UID = "uid-web"


def spread(
    *maxima: Any,
    kind: str = "Deployment",
    api_version: str = "apps/v1",
    status: Json | None = None,
    extra_spec: Json | None = None,
    subsets: list[Json] | None = None,
    annotations: dict[str, str] | None = None,
) -> WorkloadSpread:
    """A spread over subsets ``a``, ``b``, ``c``... with these ``maxReplicas`` (None: no maximum)."""
    if subsets is None:
        subsets = []
        for i, m in enumerate(maxima):
            entry: Json = {"name": "abcdefgh"[i]}
            if m is not None:
                entry["maxReplicas"] = m
            subsets.append(entry)
    doc: Json = {
        "apiVersion": "apps.united.io/v1alpha1",
        "kind": "WorkloadSpread",
        "metadata": {"name": "ws", "namespace": NS, "generation": 3, "annotations": annotations or {}},
        "spec": {
            "targetRef": {"apiVersion": api_version, "kind": kind, "name": "web"},
            "subsets": subsets,
            **(extra_spec or {}),
        },
    }
    if status is not None:
        doc["status"] = status
    return parse(doc)


def pod(
    name: str,
    subset: str | None = None,
    *,
    version: str = "v1",
    owner: str = "uid-rs-v1",
    phase: str = "Running",
    node: str | None = "node-1",
    ready: str | None = "2026-01-01T00:00:00Z",
    created: str = "2026-01-01T00:00:00Z",
    restarts: int = 0,
    ws: str = "ws",
    cost: str | None = None,
    deleting: bool = False,
    labels: dict[str, str] | None = None,
    uid: str | None = None,
    conditions: list[Json] | None = None,
) -> Json:
    annotations: dict[str, str] = {}
    if subset is not None:
        value: Json = {"name": ws, "subset": subset}
        if uid:
            value["uid"] = uid
        annotations[MATCHED_ANNOTATION] = json.dumps(value)
    if cost is not None:
        annotations["controller.kubernetes.io/pod-deletion-cost"] = cost
    meta: Json = {
        "name": name,
        "namespace": NS,
        "creationTimestamp": created,
        "labels": {"pod-template-hash": version, **(labels or {})},
        "annotations": annotations,
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"web-{version}", "uid": owner, "controller": True}
        ],
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: Json = {"containers": [{"name": "app", "image": "nginx"}]}
    if node:
        spec["nodeName"] = node
    conds = list(conditions or [])
    if ready is not None:
        conds.append({"type": "Ready", "status": "True", "lastTransitionTime": ready})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {
            "phase": phase,
            "conditions": conds,
            "containerStatuses": [{"name": "app", "restartCount": restarts}],
        },
    }


def deployment(replicas: int = 3, *, uid: str = WORKLOAD_UID, template_hash: str = "v1") -> Json:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NS, "uid": uid, "generation": 1},
        "spec": {
            "replicas": replicas,
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"image": template_hash}},
        },
    }


def replicaset(version: str = "v1", *, owner: str = WORKLOAD_UID, deleting: bool = False) -> Json:
    meta: Json = {
        "name": f"web-{version}",
        "namespace": NS,
        "uid": f"uid-rs-{version}",
        "labels": {"pod-template-hash": version},
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": owner, "controller": True}
        ],
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": meta,
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "web", "pod-template-hash": version}},
                "spec": {"image": version},
            }
        },
    }
