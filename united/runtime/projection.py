"""What an informer keeps of an object: for pods, the fields some controller reads, no more.

client-go's cache transforms, for the one kind where it pays: a pod as the API server sends
it is mostly what no controller here reads — container specs (images, env, probes, volume
mounts), volumes, the kubelet's container statuses (images, ids, states), addresses. The
UnitedDeployment reconciler (children's pods, Adaptive), the WorkloadSpread controller
(grouping, deletion costs, rescheduling, adoption) and the eviction webhook read only the
metadata (all of it: labels, annotations, owner references, uid, timestamps), where the
pod runs and may run (``nodeName``, ``nodeSelector``, ``affinity``, ``tolerations``), its
phase, its ``Ready`` and ``PodScheduled`` conditions (type, status, reason, since when) and
its containers' restart counts. ``tests/unit/runtime/test_projection.py``
runs those consumers on tracked pods and fails if one reads a field dropped here.

Handlers see the same events as before (an informer dispatches by resourceVersion, so a
change only to dropped fields is still a ``MODIFIED``); the objects they get are projected.
Children are kept whole: the diff against the rendered child reads their whole spec.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from united.kube.client import JSON, PODS, Resource

__all__ = ["POD_CONDITIONS", "POD_SPEC", "POD_STATUS", "project_pod", "projection"]

POD_SPEC = frozenset({"nodeName", "nodeSelector", "affinity", "tolerations"})
"""The pod spec fields kept: where the pod runs, and where it may (adoption checks them)."""
POD_STATUS = frozenset({"phase", "reason"})
"""The pod status fields kept whole; of ``conditions`` and ``containerStatuses``, what follows."""
POD_CONDITIONS = frozenset({"Ready", "PodScheduled"})
_CONDITION = ("type", "status", "reason", "lastTransitionTime")
_CONTAINER_STATUS = ("name", "restartCount")


def _only(mapping: Any, keys: frozenset[str]) -> dict[str, Any] | None:
    if not isinstance(mapping, dict):
        return None
    return {k: v for k, v in mapping.items() if k in keys}


def _fields(item: Any, keys: tuple[str, ...]) -> Any:
    return {k: item[k] for k in keys if k in item} if isinstance(item, dict) else item


def project_pod(pod: JSON) -> JSON:
    """``pod`` with only what the controllers read (see the module docstring); a new dict
    sharing the kept values with ``pod``."""
    out = {k: v for k, v in pod.items() if k not in ("spec", "status")}
    spec = _only(pod.get("spec"), POD_SPEC)
    if spec is not None:
        out["spec"] = spec
    status = _only(pod.get("status"), POD_STATUS)
    if status is not None:
        full = pod["status"]
        conditions = full.get("conditions")
        if isinstance(conditions, list):
            status["conditions"] = [
                _fields(c, _CONDITION) for c in conditions if not isinstance(c, dict) or c.get("type") in POD_CONDITIONS
            ]
        containers = full.get("containerStatuses")
        if isinstance(containers, list):
            status["containerStatuses"] = [_fields(c, _CONTAINER_STATUS) for c in containers]
        out["status"] = status
    return out


def projection(resource: Resource) -> Callable[[JSON], JSON] | None:
    """The projection an informer of ``resource`` applies to every object, if any."""
    if (resource.group, resource.plural) == (PODS.group, PODS.plural):
        return project_pod
    return None
