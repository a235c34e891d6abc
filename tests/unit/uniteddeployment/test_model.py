"""Parsing raw manifests into the model: every field, and wrong types as field errors, never exceptions."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from united.api.field import ManifestError
from united.uniteddeployment import revision
from united.uniteddeployment.admission import admit
from united.uniteddeployment.allocation import AllocationError, allocate
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import (
    ADVANCED_STATEFUL_SET,
    CLONE_SET,
    DEPLOYMENT,
    STATEFUL_SET,
    Adaptive,
    ScheduleStrategy,
    Selector,
    Spec,
    Subset,
    Template,
    UnitedDeployment,
    parse,
)
from united.uniteddeployment.render import render

Doc = dict[str, Any]
SAMPLES = sorted((Path(__file__).parents[3] / "manifests" / "samples").glob("*.yaml"))


def pod() -> Doc:
    return {
        "metadata": {"labels": {"app": "web"}, "annotations": {"a": "1"}},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]},
    }


def full() -> Doc:
    """A manifest that sets every field the model reads (elastic + Adaptive, so no subset replicas)."""
    return {
        "apiVersion": "apps.united.io/v1alpha1",
        "kind": "UnitedDeployment",
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "uid": "1234-abcd",
            "generation": 7,
            "labels": {"team": "shop"},
            "annotations": {"note": "x"},
            "resourceVersion": "42",
        },
        "spec": {
            "replicas": 6,
            "revisionHistoryLimit": 3,
            "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}],
            },
            "template": {
                "deploymentTemplate": {
                    "metadata": {"labels": {"app": "web"}, "annotations": {"owner": "me"}},
                    "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": pod()},
                }
            },
            "topology": {
                "subsets": [
                    {
                        "name": "a",
                        "nodeSelectorTerm": {
                            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
                            "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}],
                        },
                        "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}],
                        "minReplicas": 1,
                        "maxReplicas": "50%",
                        "patch": {"metadata": {"labels": {"extra": "yes"}}},
                    },
                    {"name": "b"},
                ],
                "scheduleStrategy": {
                    "type": "Adaptive",
                    "adaptive": {
                        "rescheduleCriticalSeconds": 10,
                        "unschedulableDuration": 60,
                        "reserveUnschedulablePods": True,
                    },
                },
            },
            "updateStrategy": {"type": "Manual", "manualUpdate": {"partitions": {"a": 1}}},
        },
        "status": {"replicas": 3},
    }


def errors_of(doc: Any) -> list[str]:
    try:
        admit(doc)
    except ManifestError as e:
        return [str(x) for x in e.errors]
    return []


def parse_errors(doc: Any) -> list[str]:
    try:
        parse(doc)
    except ManifestError as e:
        return [str(x) for x in e.errors]
    return []


# Parsing every field


def test_full_manifest_is_valid() -> None:
    assert errors_of(full()) == []


def test_parse_metadata() -> None:
    ud = parse(full())
    assert (ud.api_version, ud.name, ud.namespace, ud.uid, ud.generation) == (
        "apps.united.io/v1alpha1",
        "web",
        "shop",
        "1234-abcd",
        7,
    )
    assert ud.labels == {"team": "shop"}
    assert ud.annotations == {"note": "x"}
    assert ud.group == "apps.united.io"
    assert ud.raw["status"] == {"replicas": 3}
    assert ud.raw["metadata"]["resourceVersion"] == "42"


def test_parse_spec_scalars_selector_and_strategies() -> None:
    spec = parse(full()).spec
    assert spec.replicas == 6
    assert spec.revision_history_limit == 3
    assert spec.selector == Selector(
        match_labels={"app": "web"},
        match_expressions=({"key": "tier", "operator": "NotIn", "values": ["db"]},),
    )
    assert spec.schedule == ScheduleStrategy(
        type="Adaptive",
        adaptive=Adaptive(reschedule_critical_seconds=10, unschedulable_duration=60, reserve_unschedulable_pods=True),
    )
    assert spec.schedule.is_adaptive and spec.schedule.reserves
    assert spec.update.type == "Manual"
    assert spec.update.partitions == {"a": 1}


def test_parse_template_is_kept_raw() -> None:
    doc = full()
    spec = parse(doc).spec
    assert spec.templates == (
        Template(
            variant=DEPLOYMENT,
            metadata={"labels": {"app": "web"}, "annotations": {"owner": "me"}},
            spec=doc["spec"]["template"]["deploymentTemplate"]["spec"],
        ),
    )
    assert spec.template is spec.templates[0]
    assert spec.template.pod_template == pod()


def test_parse_subsets() -> None:
    a, b = parse(full()).spec.subsets
    assert a == Subset(
        name="a",
        node_selector_term={
            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
            "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}],
        },
        tolerations=({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"},),
        min_replicas=1,
        max_replicas="50%",
        patch={"metadata": {"labels": {"extra": "yes"}}},
    )
    assert b == Subset(name="b")
    assert a.elastic and not b.elastic


def test_parse_fixed_and_percent_subset_replicas() -> None:
    doc = full()
    doc["spec"]["topology"] = {"subsets": [{"name": "a", "replicas": 2}, {"name": "b", "replicas": "50%"}]}
    assert [s.replicas for s in parse(doc).spec.subsets] == [2, "50%"]


def test_absent_fields_are_none_not_defaults() -> None:
    doc = full()
    doc["spec"] = {"selector": {"matchLabels": {"app": "web"}}}
    spec = parse(doc).spec
    assert spec == Spec(selector=Selector(match_labels={"app": "web"}))
    assert spec.template is None
    assert spec.update.partitions is None


@pytest.mark.parametrize(
    "api_version", ["apps.united.io/v1alpha1", "apps.kruise.io/v1alpha1", "apps.kruise.io/v1beta1"]
)
def test_every_api_version_parses(api_version: str) -> None:
    doc = full()
    doc["apiVersion"] = api_version
    ud = admit(doc)
    assert ud.group == api_version.split("/")[0]


def test_template_precedence_is_the_references() -> None:
    spec = {"selector": {"matchLabels": {"app": "web"}}, "template": pod()}
    doc = full()
    doc["spec"]["template"] = {
        v: {"metadata": {"labels": {"app": "web"}}, "spec": copy.deepcopy(spec)}
        for v in (DEPLOYMENT, CLONE_SET, ADVANCED_STATEFUL_SET, STATEFUL_SET)
    }
    parsed = parse(doc).spec
    assert [t.variant for t in parsed.templates] == [STATEFUL_SET, ADVANCED_STATEFUL_SET, CLONE_SET, DEPLOYMENT]
    assert parsed.template is not None and parsed.template.variant == STATEFUL_SET
    del doc["spec"]["template"][STATEFUL_SET]
    parsed = parse(doc).spec
    assert parsed.template is not None and parsed.template.variant == ADVANCED_STATEFUL_SET


def test_spec_subset_lookup() -> None:
    spec = parse(full()).spec
    assert spec.subset("b") == Subset(name="b")
    assert spec.subset("zz") is None


def test_pod_template_of_a_template_without_one_is_empty() -> None:
    assert Template(variant=DEPLOYMENT, metadata={}, spec={}).pod_template == {}
    assert Template(variant=DEPLOYMENT, metadata={}, spec={"template": "x"}).pod_template == {}


def test_reservation_only_counts_with_adaptive() -> None:
    reserve = Adaptive(reserve_unschedulable_pods=True)
    assert ScheduleStrategy(type="Adaptive", adaptive=reserve).reserves
    assert not ScheduleStrategy(type="Fixed", adaptive=reserve).reserves
    assert not ScheduleStrategy(type="Adaptive").reserves


def test_selector_to_dict_and_empty() -> None:
    assert Selector().empty and Selector().to_dict() == {}
    s = Selector(match_labels={"a": "b"}, match_expressions=({"key": "k", "operator": "Exists"},))
    assert not s.empty
    assert s.to_dict() == {"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "k", "operator": "Exists"}]}


def test_unschedulable_last_seconds_is_the_v18_alias() -> None:
    doc = full()
    adaptive = doc["spec"]["topology"]["scheduleStrategy"]["adaptive"]
    del adaptive["unschedulableDuration"]
    adaptive["unschedulableLastSeconds"] = 90
    schedule = parse(doc).spec.schedule
    assert schedule.adaptive is not None and schedule.adaptive.unschedulable_duration == 90
    adaptive["unschedulableDuration"] = 120
    schedule = parse(doc).spec.schedule
    assert schedule.adaptive is not None and schedule.adaptive.unschedulable_duration == 120


def test_integral_floats_are_integers() -> None:
    doc = full()
    doc["spec"]["replicas"] = 6.0
    ud = parse(doc)
    assert ud.spec.replicas == 6 and isinstance(ud.spec.replicas, int)


def test_model_is_immutable_and_raw_is_not_compared() -> None:
    a, b = parse(full()), full()
    b["status"] = {"replicas": 99}
    assert a == parse(b)
    with pytest.raises(AttributeError):
        a.name = "other"  # type: ignore[misc]


# Wrong types: one field error each, at the exact path

WRONG_TYPES: list[tuple[str, Callable[[Doc], None], str]] = [
    ("apiVersion number", lambda d: d.update(apiVersion=1), "apiVersion: Invalid value: 1: must be a string"),
    ("apiVersion missing", lambda d: d.pop("apiVersion"), "apiVersion: Required value"),
    ("apiVersion empty", lambda d: d.update(apiVersion=""), "apiVersion: Required value"),
    (
        "apiVersion unknown",
        lambda d: d.update(apiVersion="apps/v1"),
        'apiVersion: Unsupported value: "apps/v1": supported values: '
        '"apps.united.io/v1alpha1", "apps.kruise.io/v1alpha1", "apps.kruise.io/v1beta1"',
    ),
    ("kind missing", lambda d: d.pop("kind"), "kind: Required value"),
    ("kind empty", lambda d: d.update(kind=""), "kind: Required value"),
    (
        "kind other",
        lambda d: d.update(kind="Deployment"),
        'kind: Unsupported value: "Deployment": supported values: "UnitedDeployment"',
    ),
    ("kind list", lambda d: d.update(kind=[]), "kind: Invalid value: array: must be a string"),
    ("metadata list", lambda d: d.update(metadata=[]), "metadata: Invalid value: array: must be an object"),
    ("name number", lambda d: d["metadata"].update(name=5), "metadata.name: Invalid value: 5: must be a string"),
    (
        "namespace bool",
        lambda d: d["metadata"].update(namespace=True),
        "metadata.namespace: Invalid value: true: must be a string",
    ),
    ("uid object", lambda d: d["metadata"].update(uid={}), "metadata.uid: Invalid value: object: must be a string"),
    (
        "labels list",
        lambda d: d["metadata"].update(labels=["a"]),
        "metadata.labels: Invalid value: array: must be an object",
    ),
    (
        "label value number",
        lambda d: d["metadata"]["labels"].update(team=1),
        "metadata.labels[team]: Invalid value: 1: must be a string",
    ),
    (
        "label value null",
        lambda d: d["metadata"]["labels"].update(team=None),
        "metadata.labels[team]: Invalid value: null: must be a string",
    ),
    (
        "annotation value bool",
        lambda d: d["metadata"]["annotations"].update(note=False),
        "metadata.annotations[note]: Invalid value: false: must be a string",
    ),
    ("spec missing", lambda d: d.pop("spec"), "spec: Required value"),
    ("spec string", lambda d: d.update(spec="x"), 'spec: Invalid value: "x": must be an object'),
    (
        "replicas bool",
        lambda d: d["spec"].update(replicas=True),
        "spec.replicas: Invalid value: true: must be an integer",
    ),
    (
        "replicas float",
        lambda d: d["spec"].update(replicas=1.5),
        "spec.replicas: Invalid value: 1.5: must be an integer",
    ),
    (
        "replicas below int32",
        lambda d: d["spec"].update(replicas=-(2**31) - 1),
        "spec.replicas: Invalid value: -2147483649: must be a 32-bit integer (at most 2147483647)",
    ),
    (
        "history string",
        lambda d: d["spec"].update(revisionHistoryLimit="3"),
        'spec.revisionHistoryLimit: Invalid value: "3": must be an integer',
    ),
    (
        "selector list",
        lambda d: d["spec"].update(selector=[]),
        "spec.selector: Invalid value: array: must be an object",
    ),
    (
        "selector unknown field",
        lambda d: d["spec"]["selector"].update(matchLabel={}),
        "spec.selector.matchLabel: Unknown field: the API server would drop it",
    ),
    (
        "matchLabels value number",
        lambda d: d["spec"]["selector"]["matchLabels"].update(app=1),
        "spec.selector.matchLabels[app]: Invalid value: 1: must be a string",
    ),
    (
        "matchExpressions object",
        lambda d: d["spec"]["selector"].update(matchExpressions={}),
        "spec.selector.matchExpressions: Invalid value: object: must be an array",
    ),
    (
        "matchExpression null",
        lambda d: d["spec"]["selector"].update(matchExpressions=[None]),
        "spec.selector.matchExpressions[0]: Invalid value: null: must be an object",
    ),
    (
        "expression key number",
        lambda d: d["spec"]["selector"]["matchExpressions"][0].update(key=1),
        "spec.selector.matchExpressions[0].key: Invalid value: 1: must be a string",
    ),
    (
        "expression operator list",
        lambda d: d["spec"]["selector"]["matchExpressions"][0].update(operator=[]),
        "spec.selector.matchExpressions[0].operator: Invalid value: array: must be a string",
    ),
    (
        "expression values string",
        lambda d: d["spec"]["selector"]["matchExpressions"][0].update(values="db"),
        'spec.selector.matchExpressions[0].values: Invalid value: "db": must be an array',
    ),
    (
        "expression value number",
        lambda d: d["spec"]["selector"]["matchExpressions"][0].update(values=[1]),
        "spec.selector.matchExpressions[0].values[0]: Invalid value: 1: must be a string",
    ),
    (
        "expression value null",
        lambda d: d["spec"]["selector"]["matchExpressions"][0].update(values=[None]),
        "spec.selector.matchExpressions[0].values[0]: Invalid value: null: must be a string",
    ),
    (
        "template list",
        lambda d: d["spec"].update(template=[]),
        "spec.template: Invalid value: array: must be an object",
    ),
    (
        "variant string",
        lambda d: d["spec"]["template"].update(deploymentTemplate="x"),
        'spec.template.deploymentTemplate: Invalid value: "x": must be an object',
    ),
    (
        "variant unknown field",
        lambda d: d["spec"]["template"]["deploymentTemplate"].update(status={}),
        "spec.template.deploymentTemplate.status: Unknown field: the API server would drop it",
    ),
    (
        "variant metadata list",
        lambda d: d["spec"]["template"]["deploymentTemplate"].update(metadata=[]),
        "spec.template.deploymentTemplate.metadata: Invalid value: array: must be an object",
    ),
    (
        "variant labels value number",
        lambda d: d["spec"]["template"]["deploymentTemplate"]["metadata"]["labels"].update(app=1),
        "spec.template.deploymentTemplate.metadata.labels[app]: Invalid value: 1: must be a string",
    ),
    (
        "variant annotation null",
        lambda d: d["spec"]["template"]["deploymentTemplate"]["metadata"]["annotations"].update(owner=None),
        "spec.template.deploymentTemplate.metadata.annotations[owner]: Invalid value: null: must be a string",
    ),
    (
        "variant spec string",
        lambda d: d["spec"]["template"]["deploymentTemplate"].update(spec="x"),
        'spec.template.deploymentTemplate.spec: Invalid value: "x": must be an object',
    ),
    (
        "pod template list",
        lambda d: d["spec"]["template"]["deploymentTemplate"]["spec"].update(template=[]),
        "spec.template.deploymentTemplate.spec.template: Invalid value: array: must be an object",
    ),
    (
        "pod metadata string",
        lambda d: d["spec"]["template"]["deploymentTemplate"]["spec"]["template"].update(metadata="x"),
        'spec.template.deploymentTemplate.spec.template.metadata: Invalid value: "x": must be an object',
    ),
    (
        "pod label value number",
        lambda d: d["spec"]["template"]["deploymentTemplate"]["spec"]["template"]["metadata"]["labels"].update(app=1),
        "spec.template.deploymentTemplate.spec.template.metadata.labels[app]: Invalid value: 1: must be a string",
    ),
    (
        "pod annotation null",
        lambda d: d["spec"]["template"]["deploymentTemplate"]["spec"]["template"]["metadata"]["annotations"].update(
            a=None
        ),
        "spec.template.deploymentTemplate.spec.template.metadata.annotations[a]: Invalid value: null: must be a string",
    ),
    (
        "pod spec list",
        lambda d: d["spec"]["template"]["deploymentTemplate"]["spec"]["template"].update(spec=[]),
        "spec.template.deploymentTemplate.spec.template.spec: Invalid value: array: must be an object",
    ),
    (
        "topology list",
        lambda d: d["spec"].update(topology=[]),
        "spec.topology: Invalid value: array: must be an object",
    ),
    (
        "subset null",
        lambda d: d["spec"]["topology"]["subsets"].append(None),
        "spec.topology.subsets[2]: Invalid value: null: must be an object",
    ),
    (
        "subset string",
        lambda d: d["spec"]["topology"]["subsets"].append("c"),
        'spec.topology.subsets[2]: Invalid value: "c": must be an object',
    ),
    (
        "subset unknown field",
        lambda d: d["spec"]["topology"]["subsets"][1].update(replica=1),
        "spec.topology.subsets[1].replica: Unknown field: the API server would drop it",
    ),
    (
        "nodeSelectorTerm list",
        lambda d: d["spec"]["topology"]["subsets"][0].update(nodeSelectorTerm=[]),
        "spec.topology.subsets[0].nodeSelectorTerm: Invalid value: array: must be an object",
    ),
    (
        "nodeSelectorTerm unknown",
        lambda d: d["spec"]["topology"]["subsets"][0]["nodeSelectorTerm"].update(matchLabels={}),
        "spec.topology.subsets[0].nodeSelectorTerm.matchLabels: Unknown field: the API server would drop it",
    ),
    (
        "node expression null",
        lambda d: d["spec"]["topology"]["subsets"][0]["nodeSelectorTerm"].update(matchExpressions=[None]),
        "spec.topology.subsets[0].nodeSelectorTerm.matchExpressions[0]: Invalid value: null: must be an object",
    ),
    (
        "node expression key number",
        lambda d: d["spec"]["topology"]["subsets"][0]["nodeSelectorTerm"]["matchExpressions"][0].update(key=5),
        "spec.topology.subsets[0].nodeSelectorTerm.matchExpressions[0].key: Invalid value: 5: must be a string",
    ),
    (
        "node expression values number",
        lambda d: d["spec"]["topology"]["subsets"][0]["nodeSelectorTerm"]["matchExpressions"][0].update(values=[1]),
        "spec.topology.subsets[0].nodeSelectorTerm.matchExpressions[0].values[0]: Invalid value: 1: must be a string",
    ),
    (
        "node field operator number",
        lambda d: d["spec"]["topology"]["subsets"][0]["nodeSelectorTerm"]["matchFields"][0].update(operator=1),
        "spec.topology.subsets[0].nodeSelectorTerm.matchFields[0].operator: Invalid value: 1: must be a string",
    ),
    (
        "tolerations object",
        lambda d: d["spec"]["topology"]["subsets"][0].update(tolerations={}),
        "spec.topology.subsets[0].tolerations: Invalid value: object: must be an array",
    ),
    (
        "toleration null",
        lambda d: d["spec"]["topology"]["subsets"][0].update(tolerations=[None]),
        "spec.topology.subsets[0].tolerations[0]: Invalid value: null: must be an object",
    ),
    (
        "toleration key number",
        lambda d: d["spec"]["topology"]["subsets"][0]["tolerations"][0].update(key=5),
        "spec.topology.subsets[0].tolerations[0].key: Invalid value: 5: must be a string",
    ),
    (
        "toleration value bool",
        lambda d: d["spec"]["topology"]["subsets"][0]["tolerations"][0].update(value=True),
        "spec.topology.subsets[0].tolerations[0].value: Invalid value: true: must be a string",
    ),
    (
        "toleration effect list",
        lambda d: d["spec"]["topology"]["subsets"][0]["tolerations"][0].update(effect=[]),
        "spec.topology.subsets[0].tolerations[0].effect: Invalid value: array: must be a string",
    ),
    (
        "tolerationSeconds string",
        lambda d: d["spec"]["topology"]["subsets"][0]["tolerations"][0].update(tolerationSeconds="5"),
        'spec.topology.subsets[0].tolerations[0].tolerationSeconds: Invalid value: "5": must be an integer',
    ),
    (
        "minReplicas object",
        lambda d: d["spec"]["topology"]["subsets"][0].update(minReplicas={}),
        "spec.topology.subsets[0].minReplicas: Invalid value: object: must be an integer or "
        'a percentage string such as "20%"',
    ),
    (
        "maxReplicas list",
        lambda d: d["spec"]["topology"]["subsets"][0].update(maxReplicas=[]),
        "spec.topology.subsets[0].maxReplicas: Invalid value: array: must be an integer or "
        'a percentage string such as "20%"',
    ),
    (
        "maxReplicas bool",
        lambda d: d["spec"]["topology"]["subsets"][0].update(maxReplicas=True),
        "spec.topology.subsets[0].maxReplicas: Invalid value: true: must be an integer",
    ),
    (
        "patch string",
        lambda d: d["spec"]["topology"]["subsets"][0].update(patch="{}"),
        'spec.topology.subsets[0].patch: Invalid value: "{}": must be an object',
    ),
    (
        "scheduleStrategy list",
        lambda d: d["spec"]["topology"].update(scheduleStrategy=[]),
        "spec.topology.scheduleStrategy: Invalid value: array: must be an object",
    ),
    (
        "schedule type number",
        lambda d: d["spec"]["topology"]["scheduleStrategy"].update(type=1),
        "spec.topology.scheduleStrategy.type: Invalid value: 1: must be a string",
    ),
    (
        "adaptive string",
        lambda d: d["spec"]["topology"]["scheduleStrategy"].update(adaptive="on"),
        'spec.topology.scheduleStrategy.adaptive: Invalid value: "on": must be an object',
    ),
    (
        "adaptive unknown",
        lambda d: d["spec"]["topology"]["scheduleStrategy"]["adaptive"].update(x=1),
        "spec.topology.scheduleStrategy.adaptive.x: Unknown field: the API server would drop it",
    ),
    (
        "reserve string",
        lambda d: d["spec"]["topology"]["scheduleStrategy"]["adaptive"].update(reserveUnschedulablePods="true"),
        'spec.topology.scheduleStrategy.adaptive.reserveUnschedulablePods: Invalid value: "true": must be a boolean',
    ),
    (
        "critical seconds string",
        lambda d: d["spec"]["topology"]["scheduleStrategy"]["adaptive"].update(rescheduleCriticalSeconds="30s"),
        'spec.topology.scheduleStrategy.adaptive.rescheduleCriticalSeconds: Invalid value: "30s": must be an integer',
    ),
    (
        "legacy duration string",
        lambda d: d["spec"]["topology"]["scheduleStrategy"]["adaptive"].update(unschedulableLastSeconds="1"),
        'spec.topology.scheduleStrategy.adaptive.unschedulableLastSeconds: Invalid value: "1": must be an integer',
    ),
    (
        "updateStrategy list",
        lambda d: d["spec"].update(updateStrategy=[]),
        "spec.updateStrategy: Invalid value: array: must be an object",
    ),
    (
        "update type number",
        lambda d: d["spec"]["updateStrategy"].update(type=1),
        "spec.updateStrategy.type: Invalid value: 1: must be a string",
    ),
    (
        "manualUpdate list",
        lambda d: d["spec"]["updateStrategy"].update(manualUpdate=[]),
        "spec.updateStrategy.manualUpdate: Invalid value: array: must be an object",
    ),
    (
        "manualUpdate unknown",
        lambda d: d["spec"]["updateStrategy"]["manualUpdate"].update(partition={}),
        "spec.updateStrategy.manualUpdate.partition: Unknown field: the API server would drop it",
    ),
    (
        "partitions list",
        lambda d: d["spec"]["updateStrategy"]["manualUpdate"].update(partitions=[]),
        "spec.updateStrategy.manualUpdate.partitions: Invalid value: array: must be an object",
    ),
    (
        "partition string",
        lambda d: d["spec"]["updateStrategy"]["manualUpdate"]["partitions"].update(a="1"),
        'spec.updateStrategy.manualUpdate.partitions[a]: Invalid value: "1": must be an integer',
    ),
]


@pytest.mark.parametrize(("name", "mutate", "expected"), WRONG_TYPES, ids=[c[0] for c in WRONG_TYPES])
def test_wrong_type_is_a_field_error(name: str, mutate: Callable[[Doc], None], expected: str) -> None:
    doc = full()
    mutate(doc)
    assert parse_errors(doc) == [expected]


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ([], "<root>: Invalid value: array: must be an object"),
        ("text", '<root>: Invalid value: "text": must be an object'),
        (None, "<root>: Invalid value: null: a UnitedDeployment manifest must be an object"),
        ({1: "a"}, "<root>: Invalid value: object: must be an object"),
    ],
)
def test_non_object_manifest(doc: Any, expected: str) -> None:
    assert parse_errors(doc) == [expected]


def test_parse_collects_every_error() -> None:
    doc = full()
    doc["apiVersion"] = 1
    doc["spec"]["replicas"] = "x"
    doc["spec"]["topology"]["subsets"][0]["name"] = 3
    assert parse_errors(doc) == [
        "apiVersion: Invalid value: 1: must be a string",
        'spec.replicas: Invalid value: "x": must be an integer',
        "spec.topology.subsets[0].name: Invalid value: 3: must be a string",
    ]


POD_SPEC = ("spec", "template", "deploymentTemplate", "spec", "template", "spec")

REQUIRED = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"

# Shapes inside the (otherwise opaque) pod template that validation and placement read.
POD_SHAPES: list[tuple[str, Callable[[Doc], None], str]] = [
    ("affinity string", lambda p: p.update(affinity="x"), 'affinity: Invalid value: "x": must be an object'),
    (
        "nodeAffinity list",
        lambda p: p.update(affinity={"nodeAffinity": []}),
        "affinity.nodeAffinity: Invalid value: array: must be an object",
    ),
    (
        "required string",
        lambda p: p.update(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": "x"}}),
        'affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: Invalid value: "x": must be an object',
    ),
    (
        "terms object",
        lambda p: p.update(
            affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": {}}}}
        ),
        f"{REQUIRED}.nodeSelectorTerms: Invalid value: object: must be an array",
    ),
    (
        "term null",
        lambda p: p.update(
            affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [None]}}}
        ),
        f"{REQUIRED}.nodeSelectorTerms[0]: Invalid value: null: must be an object",
    ),
    (
        "term expressions string",
        lambda p: p.update(
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": "x"}]}
                }
            }
        ),
        f'{REQUIRED}.nodeSelectorTerms[0].matchExpressions: Invalid value: "x": must be an array',
    ),
    ("tolerations string", lambda p: p.update(tolerations="x"), 'tolerations: Invalid value: "x": must be an array'),
    ("toleration number", lambda p: p.update(tolerations=[1]), "tolerations[0]: Invalid value: 1: must be an object"),
    (
        "ports bool",
        lambda p: p["containers"][0].update(ports=True),
        "containers[0].ports: Invalid value: true: must be an array",
    ),
    (
        "port name list",
        lambda p: p["containers"][0].update(ports=[{"containerPort": 80, "name": ["x"]}]),
        "containers[0].ports[0].name: Invalid value: array: must be a string",
    ),
    (
        "env string",
        lambda p: p["containers"][0].update(env="A=1"),
        'containers[0].env: Invalid value: "A=1": must be an array',
    ),
    (
        "volumeMounts object",
        lambda p: p["containers"][0].update(volumeMounts={}),
        "containers[0].volumeMounts: Invalid value: object: must be an array",
    ),
    (
        "mount name list",
        lambda p: p["containers"][0].update(volumeMounts=[{"name": ["x"], "mountPath": "/x"}]),
        "containers[0].volumeMounts[0].name: Invalid value: array: must be a string",
    ),
    (
        "volume name number",
        lambda p: p.update(volumes=[{"name": 5, "emptyDir": {}}]),
        "volumes[0].name: Invalid value: 5: must be a string",
    ),
    (
        "volumes object",
        lambda p: p.update(volumes={}),
        "volumes: Invalid value: object: must be an array",
    ),
    (
        "initContainers object",
        lambda p: p.update(initContainers={}),
        "initContainers: Invalid value: object: must be an array",
    ),
]


@pytest.mark.parametrize(("name", "mutate", "expected"), POD_SHAPES, ids=[c[0] for c in POD_SHAPES])
def test_pod_template_shapes_are_field_errors(name: str, mutate: Callable[[Doc], None], expected: str) -> None:
    doc = full()
    mutate(_at(doc, POD_SPEC))
    assert "spec.template.deploymentTemplate.spec.template.spec." + expected in errors_of(doc)


@pytest.mark.parametrize(
    ("variant", "field", "value", "expected"),
    [
        (STATEFUL_SET, "updateStrategy", "x", 'spec.updateStrategy: Invalid value: "x": must be an object'),
        (CLONE_SET, "updateStrategy", [], "spec.updateStrategy: Invalid value: array: must be an object"),
        (
            ADVANCED_STATEFUL_SET,
            "updateStrategy",
            {"rollingUpdate": 1},
            "spec.updateStrategy.rollingUpdate: Invalid value: 1: must be an object",
        ),
        (
            STATEFUL_SET,
            "volumeClaimTemplates",
            {},
            "spec.volumeClaimTemplates: Invalid value: object: must be an array",
        ),
    ],
)
def test_workload_spec_shapes_are_field_errors(variant: str, field: str, value: Any, expected: str) -> None:
    doc = full()
    tpl = doc["spec"]["template"].pop(DEPLOYMENT)
    tpl["spec"]["serviceName"] = "web"
    tpl["spec"][field] = value
    doc["spec"]["template"][variant] = tpl
    doc["spec"]["topology"]["scheduleStrategy"]["adaptive"]["reserveUnschedulablePods"] = False
    assert errors_of(doc) == [f"spec.template.{variant}.{expected}"]


@pytest.mark.parametrize(
    "nulled",
    [
        ("spec", "template", "deploymentTemplate", "metadata", "annotations"),
        (*POD_SPEC, "tolerations"),
        (*POD_SPEC, "affinity"),
        (*POD_SPEC, "containers", 0, "env"),
    ],
    ids=lambda p: ".".join(map(str, p[-2:])),
)
def test_null_is_absent_and_renders(nulled: tuple[Any, ...]) -> None:
    """``null`` where the API allows a field to be absent must admit and render (it crashed render once)."""
    doc = full()
    _at(doc, nulled[:-1])[nulled[-1]] = None
    _admit_and_render(doc)


# Property: no input makes admit() (or rendering what it admits) raise anything but field errors

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**33), max_value=2**33),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=4),
    st.sampled_from(["In", "Exists", "Gt", "NoExecute", "Manual", "Adaptive", "50%", "-1%", "a", "metadata.name"]),
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["name", "key", "a", "$patch"]), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _admit_and_render(doc: Any) -> None:
    try:
        ud = admit(doc)
        plan = allocate(ud.spec)
    except (ManifestError, AllocationError):
        return
    _render_all(ud, plan.subsets)


def _render_all(ud: UnitedDeployment, allocations: Any) -> None:
    assert ud.spec.template is not None
    name = revision.name(ud.name, ud.spec.template)
    for s, a in zip(ud.spec.subsets, allocations, strict=True):
        child = render(ud, subset=s, replicas=a.replicas, partition=a.partition, revision=name, keys=Keys(ud.group))
        json.dumps(child.object)


_BASES = [full(), *(yaml.safe_load(p.read_text()) for p in SAMPLES)]
_BASE_PATHS = [(i, p) for i, base in enumerate(_BASES) for p in _paths(base)[1:]]


@settings(
    max_examples=600, derandomize=True, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(where=st.sampled_from(_BASE_PATHS), value=_JSON, insert=st.booleans())
def test_any_value_anywhere_gives_field_errors_not_exceptions(
    where: tuple[int, tuple[Any, ...]], value: Any, insert: bool
) -> None:
    i, path = where
    doc = copy.deepcopy(_BASES[i])
    parent = _at(doc, path[:-1])
    if insert and isinstance(parent, dict):
        parent[f"{path[-1]}x"] = value
    else:
        parent[path[-1]] = value
    _admit_and_render(doc)


def test_every_sample_is_in_the_property_bases() -> None:
    assert len(SAMPLES) >= 9
    assert all(errors_of(base) == [] for base in _BASES)
