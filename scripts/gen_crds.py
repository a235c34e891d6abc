#!/usr/bin/env python3
"""Generate the UnitedDeployment and WorkloadSpread CustomResourceDefinitions from one Python source.

Two UnitedDeployment CRDs are written, sharing one OpenAPI v3 schema (built by :func:`ud_schema`):

* ``crds/apps.united.io_uniteddeployments.yaml`` -- group ``apps.united.io``, version ``v1alpha1``;
* ``crds/compat/apps.kruise.io_uniteddeployments.yaml`` -- group ``apps.kruise.io``, versions
  ``v1alpha1`` (storage) and ``v1beta1``, conversion ``None``, for clusters without OpenKruise.
  ``v1beta1`` is listed but not served, as in OpenKruise's releases: on current API servers a
  second served version costs every UnitedDeployment write, read or not (``bench/crdcost.py``);
  ``united install --kruise-v1beta1`` serves it.

The ``spec`` schema is compatible with OpenKruise's UnitedDeployment (``apps.kruise.io``
v1alpha1 and v1beta1 share one spec). The ``status`` schema is the union of Kruise's v1alpha1
and v1beta1 status plus the fields the ``united`` controller writes; structural pruning silently
drops any status field that is not declared here, so the status writer must stay within it.

Kubernetes 1.20 is the oldest supported API server: types, enums, minimums, patterns and
defaults work everywhere; cross-field rules live in the controller. A few of them are also
``x-kubernetes-validations`` (CEL, :data:`CEL_RULES`), so that servers with CRD validation rules
(on by default since 1.25, GA in 1.29) refuse a bad spec at once with its field path; the
installer strips them for older servers (``united.api.crdrules``), which would otherwise keep
the object without them. Each rule repeats one of the validation module's, with its message.

Usage::

    python scripts/gen_crds.py           # (re)write the files
    python scripts/gen_crds.py --check   # exit 1 if a committed file is out of date

The WorkloadSpread CRDs (:func:`ws_schema`) follow: ``crds/apps.united.io_workloadspreads.yaml``
(v1alpha1 with the v1beta1 field names) and ``crds/compat/apps.kruise.io_workloadspreads.yaml``
(v1alpha1 and v1beta1, which name two subset fields differently: conversion ``Webhook``).

``tests/unit/test_crds.py`` asserts that the committed files equal :func:`render_all`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from united import __version__

Schema = dict[str, Any]

REPO_ROOT = Path(__file__).resolve().parent.parent

UNITED_GROUP = "apps.united.io"
VERSION_ANNOTATION = f"{UNITED_GROUP}/version"
"""The ``united`` release a CRD belongs to (``united.__version__``, the one version source)."""
KRUISE_GROUP = "apps.kruise.io"
UNITED_CRD_PATH = Path("crds") / f"{UNITED_GROUP}_uniteddeployments.yaml"
KRUISE_CRD_PATH = Path("crds") / "compat" / f"{KRUISE_GROUP}_uniteddeployments.yaml"

MAX_SUBSETS = 200
"""``united.api.limits.MAX_SUBSETS`` (this script imports nothing from the package;
tests/unit/test_crds.py checks that the two agree)."""
MAX_REVISION_HISTORY = 100
"""``united.api.limits.MAX_REVISION_HISTORY``, checked the same way."""
DNS1123_LABEL_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS1123_SUBDOMAIN_PATTERN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
DNS1123_SUBDOMAIN_MAX = 253
ATOMIC_MAP: dict[str, Any] = {"x-kubernetes-map-type": "atomic"}

CEL_RULES: dict[str, list[dict[str, str]]] = {
    "ws.subsets": [
        {
            "rule": "self.all(s, self.exists_one(t, t.name == s.name))",
            "message": "duplicated subset name",
        }
    ],
    "ws.targetRef": [
        {
            "rule": "self.kind in ['CloneSet', 'Deployment', 'ReplicaSet', 'Job', 'StatefulSet']",
            "message": "TargetReference's GroupKind is not permitted.",
            "fieldPath": ".kind",
        },
        {
            "rule": "self.kind == oldSelf.kind && self.name == oldSelf.name",
            "message": "change TargetReference is not permitted for WorkloadSpread",
        },
    ],
    "ws.subset": [
        {
            "rule": "!has(self.maxReplicas) || type(self.maxReplicas) != int || self.maxReplicas >= 0",
            "message": "maxReplicas is not valid for subset",
            "fieldPath": ".maxReplicas",
        },
        {
            "rule": "!has(self.minReplicas) || type(self.minReplicas) != int || self.minReplicas >= 0",
            "message": "minReplicas is not valid for subset",
            "fieldPath": ".minReplicas",
        },
    ],
    "ud.subset": [
        {
            "rule": "!has(self.weight) || !has(self.replicas)",
            "message": "may not be set with replicas: a weight shares what fixed subsets leave",
            "fieldPath": ".weight",
        }
    ],
    "ud.template": [
        {
            "rule": "[has(self.statefulSetTemplate), has(self.advancedStatefulSetTemplate),"
            " has(self.cloneSetTemplate), has(self.deploymentTemplate)].filter(x, x).size() == 1",
            "message": "should provide exactly one of statefulSetTemplate, advancedStatefulSetTemplate,"
            " cloneSetTemplate, deploymentTemplate",
        }
    ],
}
"""The CEL rules by the schema node that carries them (``tests/unit/test_crd_rules.py`` evaluates
each against good and bad specs). Costs stay within the API server's estimate budget: the one
quadratic rule runs over at most :data:`MAX_SUBSETS` names of at most :data:`WS_SUBSET_NAME_MAX`
characters. (``minReplicas <= maxReplicas`` on each of 200 int-or-string subsets was estimated
at 6.3 times the budget by 1.37: it stays the controller's.)"""
WS_SUBSET_NAME_MAX = 63
"""The longest WorkloadSpread subset name (bounds the uniqueness rule's cost; the validation
module enforces it too)."""


def validations(node: str) -> dict[str, Any]:
    """The ``x-kubernetes-validations`` of ``node`` (a key of :data:`CEL_RULES`)."""
    return {"x-kubernetes-validations": [dict(rule) for rule in CEL_RULES[node]]}


# --------------------------------------------------------------------------------------------------
# Schema building blocks
# --------------------------------------------------------------------------------------------------


def _with(node: Schema, description: str | None, extra: dict[str, Any]) -> Schema:
    if description:
        node["description"] = description
    node.update(extra)
    return node


def string(description: str | None = None, **extra: Any) -> Schema:
    return _with({"type": "string"}, description, extra)


def boolean(description: str | None = None, **extra: Any) -> Schema:
    return _with({"type": "boolean"}, description, extra)


def int32(description: str | None = None, **extra: Any) -> Schema:
    return _with({"type": "integer", "format": "int32"}, description, extra)


def int64(description: str | None = None, **extra: Any) -> Schema:
    return _with({"type": "integer", "format": "int64"}, description, extra)


def date_time(description: str | None = None) -> Schema:
    return string(description, format="date-time")


def int_or_string(description: str) -> Schema:
    # One of the two anyOf patterns the API server allows next to x-kubernetes-int-or-string.
    return {
        "description": description,
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }


def array(items: Schema, description: str | None = None, **extra: Any) -> Schema:
    return _with({"type": "array", "items": items}, description, extra)


def obj(
    properties: dict[str, Schema],
    description: str | None = None,
    *,
    required: list[str] | None = None,
    extensions: dict[str, Any] | None = None,
) -> Schema:
    node: Schema = {"type": "object", "properties": properties}
    if required:
        node["required"] = required
    return _with(node, description, extensions or {})


def map_of(values: Schema, description: str | None = None) -> Schema:
    return _with({"type": "object", "additionalProperties": values}, description, {})


def schemaless(description: str | None = None) -> Schema:
    return _with({"type": "object", "x-kubernetes-preserve-unknown-fields": True}, description, {})


def list_map(items: Schema, keys: list[str], description: str, **extra: Any) -> Schema:
    return array(
        items,
        description,
        **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": keys},
        **extra,
    )


# --------------------------------------------------------------------------------------------------
# Kubernetes types used by the spec (shapes of k8s.io/api core/v1 and meta/v1)
# --------------------------------------------------------------------------------------------------


def label_selector(description: str) -> Schema:
    requirement = obj(
        {
            "key": string("The label key the selector applies to."),
            "operator": string("One of In, NotIn, Exists, DoesNotExist."),
            "values": array(
                string(),
                "Values for In/NotIn (non-empty); must be empty for Exists/DoesNotExist.",
                **{"x-kubernetes-list-type": "atomic"},
            ),
        },
        "A label selector requirement: a key, an operator and values.",
        required=["key", "operator"],
    )
    return obj(
        {
            "matchExpressions": array(
                requirement,
                "Label selector requirements, ANDed.",
                **{"x-kubernetes-list-type": "atomic"},
            ),
            "matchLabels": map_of(string(), "Map of {key: value} pairs, each equivalent to an In requirement."),
        },
        description,
        extensions=ATOMIC_MAP,
    )


def node_selector_term(description: str) -> Schema:
    def requirements(description: str) -> Schema:
        requirement = obj(
            {
                "key": string("The label (or field) key the selector applies to."),
                "operator": string("One of In, NotIn, Exists, DoesNotExist, Gt, Lt."),
                "values": array(
                    string(),
                    "Values; non-empty for In/NotIn, empty for Exists/DoesNotExist, a single integer for Gt/Lt.",
                    **{"x-kubernetes-list-type": "atomic"},
                ),
            },
            "A node selector requirement: a key, an operator and values.",
            required=["key", "operator"],
        )
        return array(requirement, description, **{"x-kubernetes-list-type": "atomic"})

    return obj(
        {
            "matchExpressions": requirements("Node selector requirements on node labels."),
            "matchFields": requirements(
                "Node selector requirements on node fields. Accepted for compatibility; "
                "like OpenKruise, only matchExpressions are applied to the pods."
            ),
        },
        description,
        extensions=ATOMIC_MAP,
    )


def toleration() -> Schema:
    return obj(
        {
            "effect": string("Taint effect to match (NoSchedule, PreferNoSchedule, NoExecute); empty matches all."),
            "key": string("Taint key; empty with operator Exists matches all taints."),
            "operator": string("Exists or Equal (default Equal)."),
            "tolerationSeconds": int64("For NoExecute taints: how long the pod stays bound after the taint appears."),
            "value": string("Taint value to match; empty when the operator is Exists."),
        },
        "A toleration appended to the pods of this subset (typed like core/v1 Toleration).",
    )


def condition(description: str, with_generation: bool) -> Schema:
    properties: dict[str, Schema] = {
        "type": string("Type of the condition."),
        "status": string("Status of the condition: True, False or Unknown."),
    }
    if with_generation:
        properties["observedGeneration"] = int64(
            "metadata.generation of the UnitedDeployment when the condition was set."
        )
    properties.update(
        {
            "lastTransitionTime": date_time("Last time the status (or reason) changed."),
            "reason": string("Machine-readable reason for the last transition (CamelCase)."),
            "message": string("Human-readable details about the last transition."),
        }
    )
    # `type` is the list-map key, so it must be required; everything else is optional.
    return obj(properties, description, required=["type"])


# --------------------------------------------------------------------------------------------------
# UnitedDeployment
# --------------------------------------------------------------------------------------------------


def workload_template(description: str, spec: Schema) -> Schema:
    return obj(
        {
            "metadata": schemaless("Labels and annotations copied to every child workload (ObjectMeta, schemaless)."),
            "spec": spec,
        },
        description,
        required=["spec"],
    )


def kruise_workload_spec(kind: str) -> Schema:
    # Kruise types these two specs fully and requires selector and template; we keep the pod
    # template schemaless (the API server validates the child workload when it is created) but keep
    # the required fields so that manifests rejected by Kruise's CRD are rejected here too.
    node = schemaless(
        f"The {kind} spec (schemaless apart from selector and template). Leave replicas unset: "
        "the UnitedDeployment allocates replicas per subset."
    )
    node["properties"] = {
        "selector": label_selector(
            "Label selector of the workload; replaced by the UnitedDeployment's selector plus the subset label."
        ),
        "template": schemaless("The pod template (core/v1 PodTemplateSpec, schemaless)."),
    }
    node["required"] = ["selector", "template"]
    return node


def template_schema() -> Schema:
    return obj(
        {
            "statefulSetTemplate": workload_template(
                "Template for apps/v1 StatefulSet subsets.",
                schemaless(
                    "apps/v1 StatefulSetSpec (schemaless). Leave replicas and "
                    "updateStrategy.rollingUpdate.partition unset."
                ),
            ),
            "advancedStatefulSetTemplate": workload_template(
                "Template for OpenKruise Advanced StatefulSet (apps.kruise.io) subsets.",
                kruise_workload_spec("Advanced StatefulSet"),
            ),
            "cloneSetTemplate": workload_template(
                "Template for OpenKruise CloneSet (apps.kruise.io) subsets.",
                kruise_workload_spec("CloneSet"),
            ),
            "deploymentTemplate": workload_template(
                "Template for apps/v1 Deployment subsets.",
                schemaless("apps/v1 DeploymentSpec (schemaless). Leave replicas unset."),
            ),
        },
        "The workload created for every subset. Exactly one variant must be set.",
        extensions=validations("ud.template"),
    )


def subset_schema(*, cluster: bool) -> Schema:
    """One subset; ``cluster``: with our group's ``cluster`` field (OpenKruise has none)."""
    extensions: dict[str, Schema] = {}
    if cluster:
        extensions["cluster"] = string(
            "united: the Cluster (clusters.apps.united.io) whose API server holds this subset's "
            "child workload; absent or empty: the cluster of the UnitedDeployment. Changing it moves "
            "the subset.",
            pattern=f"^({DNS1123_SUBDOMAIN_PATTERN[1:-1]})?$",
            maxLength=DNS1123_SUBDOMAIN_MAX,
        )
    return obj(
        {
            "name": string(
                "Subset name, a DNS-1123 label unique within the UnitedDeployment. Child workloads "
                "are named '<unitedDeployment>-<subset>-<random>' and labelled with it.",
                pattern=DNS1123_LABEL_PATTERN,
                maxLength=63,
            ),
            "nodeSelectorTerm": node_selector_term(
                "Node selector of the subset: its matchExpressions are ANDed into every required "
                "node-affinity term of the pods. Must not change for an existing subset."
            ),
            "tolerations": array(
                toleration(),
                "Tolerations appended to the pods of the subset. Must not change for an existing subset.",
            ),
            "replicas": int_or_string(
                "Pods in this subset: an integer >= 0 or a percentage 'N%' (N in 0..100, rounded "
                "half up) of spec.replicas. Unset: the remainder is shared evenly. Mutually "
                "exclusive with minReplicas/maxReplicas; forbidden with the Adaptive strategy."
            ),
            "minReplicas": int_or_string(
                "Elastic mode: lower bound (integer or 'N%'), satisfied in subset order. Defaults to 0."
            ),
            "maxReplicas": int_or_string(
                "Elastic mode: upper bound (integer or 'N%'); unset means unbounded. At least one "
                "subset must be unbounded."
            ),
            "patch": schemaless(
                "A strategic merge patch applied to this subset's pod template (PodTemplateSpec: "
                "metadata and spec; containers merge by name)."
            ),
            "weight": int32(
                "united: for a subset without replicas, its share of what fixed subsets leave, in "
                "proportion to the weights (Sainte-Laguë, ties to the earlier subset). Unset counts "
                "as 1 when any subset has a weight.",
                minimum=0,
            ),
            **extensions,
        },
        "One subset: a group of nodes and the share of the pods they run.",
        required=["name"],
        extensions=validations("ud.subset"),
    )


def schedule_strategy_schema() -> Schema:
    return obj(
        {
            "type": string(
                "Fixed (default; pods stay in their subset) or Adaptive (pods that stay "
                "unschedulable move to later subsets).",
                enum=["Adaptive", "Fixed", ""],
            ),
            "adaptive": obj(
                {
                    "rescheduleCriticalSeconds": int32(
                        "Seconds a pod may stay unschedulable before its subset is treated as "
                        "unschedulable (or the pod as reserved).",
                        minimum=0,
                        default=30,
                    ),
                    "unschedulableDuration": int32(
                        "Seconds a subset stays marked unschedulable; in reservation mode, how "
                        "long a reserved pod must stay Ready to count as recovered. Defaults to "
                        "300, applied by the controller (no schema default, so that the legacy "
                        "unschedulableLastSeconds can be honoured when this is unset).",
                        minimum=0,
                    ),
                    "unschedulableLastSeconds": int32(
                        "Deprecated: the OpenKruise v1.8 name of unschedulableDuration, honoured "
                        "when unschedulableDuration is unset; use unschedulableDuration.",
                        minimum=0,
                    ),
                    "reserveUnschedulablePods": boolean(
                        "Reservation mode: keep unschedulable pods and run temporary substitutes "
                        "in later subsets until they recover. Deployment and CloneSet only."
                    ),
                },
                "Parameters of the Adaptive strategy.",
            ),
        },
        "How pods are placed across subsets when a subset cannot schedule them.",
    )


def spec_schema(*, ours: bool = True) -> Schema:
    """``ours``: with our group's extensions (the Progressive strategy, multi-cluster subsets)."""
    return obj(
        {
            "replicas": int32("Total desired pods over all subsets. Defaults to 1.", minimum=0, default=1),
            "selector": label_selector(
                "Label selector over the pods and child workloads; must match the template's labels. Use matchLabels."
            ),
            "template": template_schema(),
            "topology": obj(
                {
                    "subsets": list_map(
                        subset_schema(cluster=ours),
                        ["name"],
                        "Ordered subsets; the order matters for elastic and adaptive allocation.",
                        maxItems=MAX_SUBSETS,
                    ),
                    "scheduleStrategy": schedule_strategy_schema(),
                    "rounding": string(
                        "united: HalfUp (default; each percentage rounded on its own, as OpenKruise) "
                        "or Monotone (percentages and the rest apportioned together by Sainte-Laguë: "
                        "raising replicas never lowers a subset, the sum is exact).",
                        enum=["HalfUp", "Monotone", ""],
                    ),
                },
                "How the pods are spread over subsets.",
            ),
            "updateStrategy": obj(
                {
                    **update_types(progressive=ours),
                    "manualUpdate": obj(
                        {
                            "partitions": map_of(
                                int32(minimum=0),
                                "Subset name -> number of pods kept at the old revision. "
                                "Keys must be subset names; missing keys mean 0.",
                            ),
                        },
                        "Parameters of the Manual update strategy.",
                    ),
                },
                "How a template change is rolled out to the subsets.",
            ),
            "revisionHistoryLimit": int32(
                f"Number of old revisions kept. Defaults to 10, at most {MAX_REVISION_HISTORY}.",
                minimum=0,
                maximum=MAX_REVISION_HISTORY,
                default=10,
            ),
        },
        "Desired state of the UnitedDeployment (field-compatible with OpenKruise).",
        required=["selector"],
    )


def update_types(*, progressive: bool) -> Schema:
    """``updateStrategy.type`` and, in our group only, ``progressive`` (OpenKruise has no such
    strategy: the compat CRD refuses it rather than roll everything at once)."""
    if not progressive:
        return {"type": string("Manual (the default; '' means Manual).", enum=["Manual", ""])}
    wave = obj(
        {
            "subsets": array(string(), "Subsets updated together in this wave.", minItems=1),
            "pause": obj(
                {
                    "duration": int_or_string(
                        "How long to wait after the wave: a duration (60s, 5m, 1h30m) or seconds."
                    ),
                },
                "Wait after this wave: {} until resumed (annotation rollout.apps.united.io/resume: "
                "<revision>/<wave>), or for duration.",
            ),
        },
        "One wave of a progressive rollout.",
        required=["subsets"],
    )
    return {
        "type": string(
            "Manual (the default; '' means Manual) or Progressive (waves under one budget).",
            enum=["Manual", "Progressive", ""],
        ),
        "progressive": obj(
            {
                "paused": boolean("Hold the rollout where it is."),
                "waves": array(wave, "Waves in order; subsets named in none form a last wave."),
                "maxUnavailable": int_or_string(
                    "Pods that may be unavailable across all subsets during the rollout: a number or a "
                    "percentage of spec.replicas (rounded down, at least 1). Defaults to 25%."
                ),
                "progressDeadlineSeconds": int32(
                    "Seconds without progress before the rollout is Stalled. Defaults to 600.", minimum=1
                ),
            },
            "Parameters of the Progressive update strategy.",
        ),
    }


def rollout_status_schema() -> Schema:
    return obj(
        {
            "revision": string("The revision being rolled out (status.updatedRevision)."),
            "wave": int32("0-based index of the current wave; equals waves when Completed."),
            "waves": int32("Number of waves, the implicit last one included."),
            "phase": string("Progressing, Paused, Completed or Stalled."),
            "reason": string("Why: WavePaused, OperatorPaused, RolloutStuck."),
            "message": string("Human-readable progress of the current wave."),
            "since": date_time("When the current phase or wave started."),
            "lastProgressTime": date_time("When the rollout last progressed (for the deadline)."),
        },
        "Progress of a Progressive rollout; absent for other strategies.",
    )


def subset_status_schema() -> Schema:
    return obj(
        {
            "name": string("Subset name."),
            "desired": int32("Replicas allocated to the subset by the controller."),
            "replicas": int32("Target replicas of the subset (OpenKruise v1beta1 meaning: the allocation)."),
            "readyReplicas": int32("Ready pods reported by the subset's workload."),
            "updatedReplicas": int32("Active pods of the subset at the updated revision."),
            "updatedReadyReplicas": int32("Ready pods of the subset at the updated revision."),
            "reservedPods": int32("Reserved (unschedulable, kept) pods in reservation mode."),
            "partition": int32("Effective partition requested for the subset."),
            "partitionApplied": boolean("Whether the workload honours the partition (false for Deployment subsets)."),
            "reason": string("Machine-readable reason for the subset's state."),
            "message": string("Human-readable details about the subset's state."),
            "rollout": string("Progressive rollout: Pending, Updating or Updated."),
            "cluster": string("united: the Cluster holding the subset's child; absent for the UnitedDeployment's own."),
            "conditions": list_map(
                condition("A subset condition (Schedulable, ClusterReady).", with_generation=False),
                ["type"],
                "Conditions of the subset.",
            ),
        },
        "Observed state of one subset.",
        required=["name"],
    )


def status_schema() -> Schema:
    return obj(
        {
            "observedGeneration": int64("metadata.generation observed by the last status write."),
            "replicas": int32("Pods of all child workloads, excluding reserved pods."),
            "readyReplicas": int32("Ready pods of all child workloads."),
            "updatedReplicas": int32("Active pods at the updated revision."),
            "updatedReadyReplicas": int32("Ready pods at the updated revision."),
            "reservedPods": int32("Reserved pods (reservation mode)."),
            "collisionCount": int32("Revision-name hash collision count."),
            "currentRevision": string("Revision considered fully rolled out."),
            "updatedRevision": string("Latest revision of the template."),
            "labelSelector": string("Canonical label selector string of the pods, for the scale subresource (HPA)."),
            "updateStatus": obj(
                {
                    "updatedRevision": string("Latest revision (v1alpha1 legacy field)."),
                    "currentPartitions": map_of(int32(), "Subset name -> effective partition (v1alpha1 legacy map)."),
                },
                "Update progress (OpenKruise v1alpha1 legacy shape).",
            ),
            "subsetReplicas": map_of(int32(), "Subset name -> target replicas (OpenKruise v1alpha1 legacy map)."),
            "subsetStatuses": list_map(subset_status_schema(), ["name"], "Observed state per subset."),
            "rollout": rollout_status_schema(),
            "conditions": list_map(
                condition("A UnitedDeployment condition.", with_generation=True),
                ["type"],
                "Latest observations of the UnitedDeployment's state.",
            ),
        },
        "Observed state of the UnitedDeployment, written by the controller.",
        extensions=ATOMIC_MAP,
    )


def ud_schema(*, ours: bool = True) -> Schema:
    """The openAPIV3Schema shared by every served version of both CRDs."""
    return obj(
        {
            "apiVersion": string("Versioned schema of this object."),
            "kind": string("REST resource kind: UnitedDeployment."),
            "metadata": {"type": "object"},
            "spec": spec_schema(ours=ours),
            "status": status_schema(),
        },
        "UnitedDeployment runs one workload template as several child workloads (subsets) spread "
        "over groups of nodes, allocating the total replicas between them.",
    )


def column(name: str, type_: str, path: str, description: str, **extra: Any) -> Schema:
    return {"name": name, "type": type_, "jsonPath": path, "description": description, **extra}


def printer_columns() -> list[Schema]:
    return [
        column("DESIRED", "integer", ".spec.replicas", "The desired number of pods."),
        column("CURRENT", "integer", ".status.replicas", "The current number of pods."),
        column("UPDATED", "integer", ".status.updatedReplicas", "Pods at the updated revision."),
        column("READY", "integer", ".status.readyReplicas", "Ready pods."),
        column("AGE", "date", ".metadata.creationTimestamp", "Time since creation."),
        column(
            "REVISION",
            "string",
            ".status.updatedRevision",
            "The updated revision.",
            priority=1,
        ),
    ]


def subresources() -> Schema:
    return {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.labelSelector",
        },
    }


def version(name: str, storage: bool, *, ours: bool = True, served: bool = True) -> Schema:
    return {
        "name": name,
        "served": served,
        "storage": storage,
        "schema": {"openAPIV3Schema": ud_schema(ours=ours)},
        "subresources": subresources(),
        "additionalPrinterColumns": printer_columns(),
    }


def crd(
    group: str,
    versions: list[Schema],
    conversion: Schema | None = None,
    *,
    kind: str = "UnitedDeployment",
    short_name: str = "ud",
    scope: str = "Namespaced",
    categories: list[str] | None = None,
) -> Schema:
    spec: Schema = {
        "group": group,
        "names": {
            "kind": kind,
            "listKind": f"{kind}List",
            "plural": f"{kind.lower()}s",
            "singular": kind.lower(),
            "shortNames": [short_name],
            **({"categories": categories} if categories else {}),
        },
        "scope": scope,
        "versions": versions,
    }
    if conversion is not None:
        spec["conversion"] = conversion
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{kind.lower()}s.{group}",
            "labels": {"app.kubernetes.io/part-of": "united"},
            "annotations": {VERSION_ANNOTATION: __version__},
        },
        "spec": spec,
    }


def united_crd() -> Schema:
    return crd(UNITED_GROUP, [version("v1alpha1", storage=True)])


def kruise_compat_crd() -> Schema:
    return crd(
        KRUISE_GROUP,
        [
            version("v1alpha1", storage=True, ours=False),
            version("v1beta1", storage=False, ours=False, served=False),
        ],
        conversion={"strategy": "None"},
    )


# --------------------------------------------------------------------------------------------------
# WorkloadSpread
# --------------------------------------------------------------------------------------------------

WS_UNITED_CRD_PATH = Path("crds") / f"{UNITED_GROUP}_workloadspreads.yaml"
WS_KRUISE_CRD_PATH = Path("crds") / "compat" / f"{KRUISE_GROUP}_workloadspreads.yaml"
WEBHOOK_SERVICE = {"namespace": "united-system", "name": "united-webhook", "path": "/convert", "port": 443}
"""Where the API server sends the compat WorkloadSpread CRD's ConversionReviews: the
controller's webhook Service in its namespace (``manifests/base``); ``united run`` writes the
``caBundle`` (or, with ``--webhook-url``, the URL) when it starts."""


def ws_subset_schema(alpha: bool) -> Schema:
    """One subset; ``alpha`` spells the node selector fields as Kruise's v1alpha1 does."""
    required_name, preferred_name = (
        ("requiredNodeSelectorTerm", "preferredNodeSelectorTerms")
        if alpha
        else ("requiredNodeSelector", "preferredNodeSelector")
    )
    preferred = obj(
        {
            "weight": int32("Weight of the term, 1-100."),
            "preference": node_selector_term("The node selector term."),
        },
        "A preferred scheduling term (core/v1 PreferredSchedulingTerm).",
        required=["weight", "preference"],
    )
    return obj(
        {
            "name": string("Subset name, unique within the WorkloadSpread.", maxLength=WS_SUBSET_NAME_MAX),
            required_name: node_selector_term("ANDed into every required node-affinity term of the subset's pods."),
            preferred_name: array(preferred, "Appended to the pods' preferred node affinity."),
            "tolerations": array(toleration(), "Tolerations appended to the subset's pods."),
            "maxReplicas": int_or_string(
                "At most this many pods of the workload in the subset: an integer >= 0 or 'N%' "
                "of the workload's replicas (rounded up). Unset: no limit. Integers only for a "
                "StatefulSet."
            ),
            "minReplicas": int_or_string(
                "united: at least this many pods go to the subset first (same type as maxReplicas, at most it)."
            ),
            "patch": schemaless(
                "A strategic merge patch applied to the subset's pods (metadata and spec); it may "
                "not change their name, namespace or owner."
            ),
        },
        "One subset: a group of nodes and how many of the workload's pods it takes.",
        required=["name"],
        extensions=validations("ws.subset"),
    )


def ws_spec_schema(alpha: bool) -> Schema:
    return obj(
        {
            "targetRef": obj(
                {
                    "apiVersion": string("API version of the workload (only the group matters)."),
                    "kind": string("Deployment, ReplicaSet, StatefulSet, Job or CloneSet (immutable)."),
                    "name": string("Name of the workload, in the WorkloadSpread's namespace."),
                },
                "The workload whose pods are spread; group, kind and name are immutable.",
                required=["apiVersion", "kind", "name"],
                extensions=validations("ws.targetRef"),
            ),
            "targetFilter": obj(
                {
                    "selector": label_selector("Only pods matching it are managed."),
                    "replicasPathList": array(
                        string(),
                        "Dot paths of integers in the workload whose sum replaces its replicas for percentages.",
                    ),
                },
                "Manage only part of the workload's pods.",
            ),
            "subsets": array(
                ws_subset_schema(alpha),
                "Ordered subsets: filled in order on scale-out, emptied in reverse on scale-in.",
                maxItems=MAX_SUBSETS,
                **validations("ws.subsets"),
            ),
            "scheduleStrategy": obj(
                {
                    "type": string(
                        "Fixed (default) or Adaptive (pods that stay unschedulable move on).",
                        enum=["Adaptive", "Fixed", ""],
                    ),
                    "adaptive": obj(
                        {
                            "disableSimulationSchedule": boolean("Accepted; has no effect."),
                            "rescheduleCriticalSeconds": int32(
                                "Seconds a pod may stay unschedulable before it is deleted to "
                                "be recreated in a later subset (0: never)."
                            ),
                        },
                        "Parameters of the Adaptive strategy.",
                    ),
                },
                "How pods are placed when a subset cannot schedule them.",
            ),
        },
        "Desired state of the WorkloadSpread (field-compatible with OpenKruise).",
        required=["targetRef", "subsets"],
    )


def ws_subset_status_schema(alpha: bool) -> Schema:
    return obj(
        {
            "name": string("Subset name."),
            "replicas": int32("Active pods of the workload in the subset."),
            "missingReplicas": int32("Free slots under maxReplicas; -1 without a maximum."),
            "creatingPods": map_of(date_time(), "Pods booked by the webhook and not yet seen: name (or uid) -> time."),
            "deletingPods": map_of(date_time(), "Pods whose deletion was admitted and still seen: name -> time."),
            "conditions": list_map(
                condition("A subset condition (Schedulable).", with_generation=not alpha),
                ["type"],
                "Conditions of the subset.",
            ),
            "reason": string("united: machine-readable reason for the subset's state."),
            "message": string("united: why the subset is full, empty or skipped."),
        },
        "Observed state of one subset.",
        required=["name"],
    )


def ws_status_schema(alpha: bool) -> Schema:
    subsets = array(ws_subset_status_schema(alpha), "Observed state per subset, in spec order.")
    return obj(
        {
            "observedGeneration": int64("metadata.generation observed by the last status write."),
            "subsetStatuses": subsets,
            "versionedSubsetStatuses": map_of(
                subsets, "Pod-template version -> the subsets' bookkeeping for its pods."
            ),
            "unplacedReplicas": int32(
                "united: active pods of the target in no subset (admitted while the webhook was down, or all full)."
            ),
            "conditions": list_map(
                condition("A WorkloadSpread condition.", with_generation=True),
                ["type"],
                "united: latest observations of the WorkloadSpread's state (kstatus).",
            ),
        },
        "Observed state of the WorkloadSpread, written by the webhook and the controller.",
        extensions=ATOMIC_MAP,
    )


def ws_schema(alpha: bool) -> Schema:
    return obj(
        {
            "apiVersion": string("Versioned schema of this object."),
            "kind": string("REST resource kind: WorkloadSpread."),
            "metadata": {"type": "object"},
            "spec": ws_spec_schema(alpha),
            "status": ws_status_schema(alpha),
        },
        "WorkloadSpread spreads the pods of an existing workload over subsets of nodes, through "
        "a pod admission webhook, without changing the workload.",
    )


def ws_printer_columns() -> list[Schema]:
    return [
        {"name": "WorkloadName", "type": "string", "jsonPath": ".spec.targetRef.name",
         "description": "The name of the workload."},
        {"name": "WorkloadKind", "type": "string", "jsonPath": ".spec.targetRef.kind",
         "description": "The kind of the workload."},
        {"name": "Adaptive", "type": "boolean",
         "jsonPath": '.spec.scheduleStrategy.type[?(@ == "Adaptive")]',
         "description": "Whether the Adaptive strategy is used."},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
         "description": "Time since creation."},
    ]  # fmt: skip


def ws_version(name: str, storage: bool, *, alpha: bool = False) -> Schema:
    return {
        "name": name,
        "served": True,
        "storage": storage,
        "schema": {"openAPIV3Schema": ws_schema(alpha)},
        "subresources": {"status": {}},
        "additionalPrinterColumns": ws_printer_columns(),
    }


def ws_united_crd() -> Schema:
    return crd(UNITED_GROUP, [ws_version("v1alpha1", storage=True)], kind="WorkloadSpread", short_name="ws")


def ws_kruise_compat_crd() -> Schema:
    return crd(
        KRUISE_GROUP,
        [ws_version("v1alpha1", storage=False, alpha=True), ws_version("v1beta1", storage=True)],
        conversion={
            "strategy": "Webhook",
            "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"service": dict(WEBHOOK_SERVICE)},
            },
        },
        kind="WorkloadSpread",
        short_name="ws",
    )


# --------------------------------------------------------------------------------------------------
# Cluster (multi-cluster subsets; our group only)
# --------------------------------------------------------------------------------------------------

CLUSTER_CRD_PATH = Path("crds") / f"{UNITED_GROUP}_clusters.yaml"
CLUSTER_KEY_PATTERN = "^[-._a-zA-Z0-9]+$"
"""``united.multicluster.model.KEY_PATTERN`` (checked by tests/unit/multicluster/test_crd.py)."""


def cluster_schema() -> Schema:
    secret_ref = obj(
        {
            "namespace": string(
                "Namespace of the Secret, in this (the host) cluster. The controller needs get, list "
                "and watch on secrets there (manifests/base/cluster-credentials.yaml grants it in "
                "united-clusters).",
                pattern=DNS1123_LABEL_PATTERN,
                maxLength=63,
            ),
            "name": string("Name of the Secret.", pattern=DNS1123_SUBDOMAIN_PATTERN, maxLength=DNS1123_SUBDOMAIN_MAX),
            "key": string(
                "Key of the Secret's data holding the kubeconfig. Defaults to kubeconfig.",
                pattern=CLUSTER_KEY_PATTERN,
                default="kubeconfig",
            ),
        },
        "The Secret holding a self-contained kubeconfig of the member (a token or "
        "client-certificate-data; no exec, auth-provider or file paths). Rotating it takes effect "
        "without a restart.",
        required=["namespace", "name"],
    )
    probe = obj(
        {
            "periodSeconds": int32(
                "Seconds between two probes (GET /version). Defaults to 10.", minimum=1, maximum=300, default=10
            ),
            "timeoutSeconds": int32(
                "Seconds a probe may take; less than periodSeconds. Defaults to 3.",
                minimum=1,
                maximum=60,
                default=3,
            ),
        },
        "How the controller checks that the member answers.",
    )
    probe["default"] = {}
    spec = obj(
        {
            "kubeconfigSecretRef": secret_ref,
            "probe": probe,
            "namespaces": array(
                string(pattern=DNS1123_LABEL_PATTERN, maxLength=63),
                "UnitedDeployment namespaces whose subsets may use this cluster. Neither this nor "
                "allNamespaces: the cluster admits no namespace.",
                maxItems=1000,
                **{"x-kubernetes-list-type": "set"},
            ),
            "allNamespaces": boolean(
                "Every host namespace may place subsets in this cluster (not together with "
                "namespaces). Fail closed: a host tenant who may create a UnitedDeployment would "
                "otherwise run its pod template in every member."
            ),
            "createNamespaces": boolean(
                "The controller may create a subset's namespace in the member when it is missing "
                "there (its member role also needs create on namespaces), with the host namespace's "
                "pod-security.kubernetes.io labels. Without it, create the namespace yourself."
            ),
            "allowProxy": boolean(
                "The member's kubeconfig may name a proxy-url, and the controller's proxy environment "
                "variables apply to this member. Without it, neither."
            ),
        },
        "How to reach the member cluster.",
        required=["kubeconfigSecretRef"],
    )
    status = obj(
        {
            "observedGeneration": int64("metadata.generation observed by the last status write."),
            "kubernetesVersion": string("The member's gitVersion, as its last answered probe said."),
            "lastProbeTime": date_time(
                "When the last probe finished (written when something changed, else once a minute)."
            ),
            "conditions": list_map(
                condition("A Cluster condition (Ready).", with_generation=True),
                ["type"],
                "Ready: True (Reachable), False (Unreachable, Unauthorized, Forbidden, "
                "CredentialsUnavailable) or Unknown (Probing).",
            ),
        },
        "Observed state of the member, written by the controller's leader.",
    )
    return obj(
        {
            "apiVersion": string("Versioned schema of this object."),
            "kind": string("REST resource kind: Cluster."),
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
        "Cluster names a member Kubernetes cluster that UnitedDeployment subsets may place their "
        "child workload in (spec.topology.subsets[].cluster).",
        required=["spec"],
    )


def cluster_printer_columns() -> list[Schema]:
    ready = '.status.conditions[?(@.type=="Ready")]'
    return [
        column("READY", "string", f"{ready}.status", "Whether the member answers."),
        column("REASON", "string", f"{ready}.reason", "Why (not) ready."),
        column("VERSION", "string", ".status.kubernetesVersion", "The member's Kubernetes version."),
        column("LAST-PROBE", "date", ".status.lastProbeTime", "When the member was last probed."),
        column("AGE", "date", ".metadata.creationTimestamp", "Time since creation."),
    ]


def cluster_crd() -> Schema:
    return crd(
        UNITED_GROUP,
        [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": cluster_schema()},
                "subresources": {"status": {}},
                "additionalPrinterColumns": cluster_printer_columns(),
            }
        ],
        kind="Cluster",
        short_name="ucl",
        scope="Cluster",
        categories=["united"],
    )


# --------------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------------

_GENERATED = (
    "# Generated by scripts/gen_crds.py from one schema; do not edit by hand.\n"
    "# Regenerate with `python scripts/gen_crds.py` (tests/unit/test_crds.py checks it).\n"
)

UNITED_HEADER = (
    _GENERATED + "# UnitedDeployment, apps.united.io/v1alpha1.\n"
    "# Install or upgrade: kubectl apply --server-side -f crds/\n"
)

KRUISE_HEADER = (
    _GENERATED + "# Compatibility CRD: UnitedDeployment as apps.kruise.io/v1alpha1 and v1beta1\n"
    "# (v1alpha1 stored; one schema, conversion None) so that OpenKruise manifests work\n"
    "# unchanged on clusters WITHOUT OpenKruise. v1beta1 is not served, as in OpenKruise's\n"
    "# releases (each served version costs every write); to accept v1beta1\n"
    "# manifests: united install --api-group apps.kruise.io --kruise-v1beta1\n"
    "# Never install it next to OpenKruise: it would replace Kruise's own CRD.\n"
)


WS_UNITED_HEADER = (
    _GENERATED + "# WorkloadSpread, apps.united.io/v1alpha1.\n"
    "# Install or upgrade: kubectl apply --server-side -f crds/\n"
)

WS_KRUISE_HEADER = (
    _GENERATED + "# Compatibility CRD: WorkloadSpread as apps.kruise.io/v1alpha1 and v1beta1\n"
    "# (v1beta1 stored; the versions name two subset fields differently, so the controller's\n"
    "# webhook converts them) so that OpenKruise manifests work unchanged on clusters WITHOUT\n"
    "# OpenKruise. Never install it next to OpenKruise: it would replace Kruise's own CRD.\n"
)


CLUSTER_HEADER = (
    _GENERATED + "# Cluster, apps.united.io/v1alpha1 (cluster-scoped): a member cluster for multi-cluster subsets.\n"
    "# Install or upgrade: kubectl apply --server-side -f crds/\n"
)


class _Dumper(yaml.SafeDumper):
    """SafeDumper that indents block sequences under their key (kubectl style)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def to_yaml(document: Schema, header: str) -> str:
    body = yaml.dump(
        document,
        Dumper=_Dumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=100,
    )
    return f"{header}---\n{body}"


def render_all() -> dict[Path, str]:
    """Relative path -> file text of every generated CRD."""
    return {
        UNITED_CRD_PATH: to_yaml(united_crd(), UNITED_HEADER),
        KRUISE_CRD_PATH: to_yaml(kruise_compat_crd(), KRUISE_HEADER),
        WS_UNITED_CRD_PATH: to_yaml(ws_united_crd(), WS_UNITED_HEADER),
        WS_KRUISE_CRD_PATH: to_yaml(ws_kruise_compat_crd(), WS_KRUISE_HEADER),
        CLUSTER_CRD_PATH: to_yaml(cluster_crd(), CLUSTER_HEADER),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="fail if the committed files are out of date")
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="repository root")
    args = parser.parse_args(argv)
    root: Path = args.root
    stale: list[Path] = []
    for relative, text in render_all().items():
        path = root / relative
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(relative)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {relative}")
    if stale:
        for relative in stale:
            print(f"out of date: {relative} (run python scripts/gen_crds.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
