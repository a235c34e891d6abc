"""Minimal test CRDs for OpenKruise's CloneSet and Advanced StatefulSet.

OpenKruise itself is not installed locally; these CRDs give the API server the same
groups, versions, kinds and subresources (status, and scale with a label selector
for HPA), with specs kept as free-form objects, so the controller's CloneSet and
Advanced StatefulSet paths can run against :mod:`united.devcluster.workloads`.
Both served versions share one schema (``conversion: None`` just rewrites
``apiVersion``): CloneSet ``v1alpha1`` (storage) and ``v1beta1``; Advanced
StatefulSet ``v1beta1`` (storage) and ``v1alpha1``.
"""

from __future__ import annotations

from collections.abc import Sequence

from united.api.groups import KRUISE_GROUP
from united.kube.client import JSON

GROUP = KRUISE_GROUP

_STATUS_FIELDS = {
    "observedGeneration": {"type": "integer", "format": "int64"},
    "replicas": {"type": "integer", "format": "int32"},
    "readyReplicas": {"type": "integer", "format": "int32"},
    "availableReplicas": {"type": "integer", "format": "int32"},
    "updatedReplicas": {"type": "integer", "format": "int32"},
    "updatedReadyReplicas": {"type": "integer", "format": "int32"},
    "currentReplicas": {"type": "integer", "format": "int32"},
    "expectedUpdatedReplicas": {"type": "integer", "format": "int32"},
    "updateRevision": {"type": "string"},
    "currentRevision": {"type": "string"},
    "labelSelector": {"type": "string"},
}


def _schema() -> JSON:
    return {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {
                        "replicas": {"type": "integer", "format": "int32", "default": 1},
                        "selector": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        },
                        "template": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        },
                    },
                },
                "status": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": _STATUS_FIELDS,
                },
            },
        }
    }


def _crd(kind: str, plural: str, short: Sequence[str], versions: Sequence[str]) -> JSON:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{GROUP}",
            "labels": {"app.kubernetes.io/part-of": "united-devcluster"},
        },
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": list(short),
            },
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": i == 0,
                    "schema": _schema(),
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                            "labelSelectorPath": ".status.labelSelector",
                        },
                    },
                    "additionalPrinterColumns": [
                        {"name": "Desired", "type": "integer", "jsonPath": ".spec.replicas"},
                        {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"},
                        {"name": "Updated", "type": "integer", "jsonPath": ".status.updatedReplicas"},
                    ],
                }
                for i, version in enumerate(versions)
            ],
        },
    }


def clone_set_crd() -> JSON:
    """``clonesets.apps.kruise.io``: v1alpha1 (storage) and v1beta1."""
    return _crd("CloneSet", "clonesets", ["clone"], ["v1alpha1", "v1beta1"])


def advanced_stateful_set_crd() -> JSON:
    """``statefulsets.apps.kruise.io`` (Advanced StatefulSet): v1beta1 (storage) and v1alpha1."""
    return _crd("StatefulSet", "statefulsets", ["asts"], ["v1beta1", "v1alpha1"])


def kruise_crds() -> list[JSON]:
    return [clone_set_crd(), advanced_stateful_set_crd()]
