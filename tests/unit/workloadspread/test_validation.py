"""Every WorkloadSpread validation rule (OpenKruise's and ours), each with a manifest
that breaks it and the exact error lines."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from united.api.field import ManifestError
from united.api.limits import MAX_PATCH_BYTES, MAX_PLACEMENT_BYTES, MAX_SUBSETS
from united.workloadspread.admission import admit
from united.workloadspread.model import KRUISE_ALPHA, KRUISE_BETA, parse
from united.workloadspread.validation import (
    MAX_RESCHEDULE_CRITICAL_SECONDS,
    TARGET_KINDS,
    conflicts,
    validate,
    validate_update,
)

Doc = dict[str, Any]


def base(api_version: str = "apps.united.io/v1alpha1") -> Doc:
    required, preferred = (
        ("requiredNodeSelectorTerm", "preferredNodeSelectorTerms")
        if api_version == KRUISE_ALPHA
        else ("requiredNodeSelector", "preferredNodeSelector")
    )
    return {
        "apiVersion": api_version,
        "kind": "WorkloadSpread",
        "metadata": {"name": "web-spread", "namespace": "default"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "subsets": [
                {
                    "name": "zone-a",
                    required: {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                    preferred: [
                        {"weight": 10, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}}
                    ],
                    "tolerations": [{"key": "zone", "operator": "Equal", "value": "a", "effect": "NoSchedule"}],
                    "maxReplicas": 3,
                    "patch": {"metadata": {"labels": {"subset": "zone-a"}}},
                },
                {"name": "zone-b", "maxReplicas": 2, "minReplicas": 1},
                {"name": "spot"},
            ],
        },
    }


def errors_of(doc: Doc) -> list[str]:
    try:
        admit(doc)
    except ManifestError as e:
        return [str(x) for x in e.errors]
    return []


def subsets(doc: Doc) -> list[Doc]:
    result: list[Doc] = doc["spec"]["subsets"]
    return result


def percent(*values: Any) -> Callable[[Doc], None]:
    def set_all(d: Doc) -> None:
        d["spec"]["subsets"] = [
            {"name": f"s{i}", **({} if v is None else {"maxReplicas": v})} for i, v in enumerate(values)
        ]

    return set_all


@pytest.mark.parametrize("api_version", ["apps.united.io/v1alpha1", KRUISE_ALPHA, KRUISE_BETA])
def test_base_manifests_are_valid(api_version: str) -> None:
    assert errors_of(base(api_version)) == []


@pytest.mark.parametrize(("kind", "api_version"), [(k, f"{g}/v1") for k, gs in TARGET_KINDS.items() for g in gs])
def test_every_built_in_target_is_accepted(kind: str, api_version: str) -> None:
    doc = base()
    doc["spec"]["targetRef"] = {"apiVersion": api_version, "kind": kind, "name": "w"}
    for s in subsets(doc):
        s.pop("minReplicas", None)
    assert errors_of(doc) == []


def test_percentages_with_an_unlimited_last_subset_are_valid() -> None:
    doc = base()
    percent("20%", "30%", None)(doc)
    assert errors_of(doc) == []
    percent("20%", "80%")(doc)
    assert errors_of(doc) == []


def test_adaptive_with_an_unlimited_last_subset_and_an_autoscaler_window_is_valid() -> None:
    doc = base()
    doc["spec"]["scheduleStrategy"] = {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 600}}
    assert errors_of(doc) == []


def test_a_job_may_patch_its_restart_policy() -> None:
    doc = base()
    doc["spec"]["targetRef"] = {"apiVersion": "batch/v1", "kind": "Job", "name": "train"}
    subsets(doc)[0]["patch"] = {"spec": {"restartPolicy": "Never", "activeDeadlineSeconds": 60}}
    assert errors_of(doc) == []


def test_a_patch_may_change_a_container_it_does_not_define() -> None:
    doc = base()
    subsets(doc)[0]["patch"] = {
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "resources": {"limits": {"cpu": "2"}},
                    "volumeMounts": [{"name": "data", "mountPath": "/d"}],
                }
            ]
        }
    }
    assert errors_of(doc) == []


def _rescheduling(seconds: int) -> Callable[[Doc], None]:
    def set_it(d: Doc) -> None:
        d["spec"]["scheduleStrategy"] = {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": seconds}}

    return set_it


CASES: list[tuple[str, Callable[[Doc], object], list[str]]] = [
    (
        "missing targetRef",
        lambda d: d["spec"].pop("targetRef"),
        ["spec.targetRef: Required value: no targetRef defined in WorkloadSpread"],
    ),
    (
        "empty targetRef name",
        lambda d: d["spec"]["targetRef"].update(name=""),
        ['spec.targetRef: Invalid value: "object": empty TargetReference is not valid for WorkloadSpread.'],
    ),
    (
        "unsupported kind",
        lambda d: d["spec"]["targetRef"].update(apiVersion="argoproj.io/v1alpha1", kind="Rollout"),
        ['spec.targetRef: Invalid value: "object": TargetReference\'s GroupKind is not permitted.'],
    ),
    (
        "Deployment from the wrong group",
        lambda d: d["spec"]["targetRef"].update(apiVersion="apps.kruise.io/v1alpha1"),
        ['spec.targetRef: Invalid value: "object": TargetReference is not valid for Deployment.'],
    ),
    (
        "CloneSet from apps",
        lambda d: d["spec"]["targetRef"].update(kind="CloneSet"),
        ['spec.targetRef: Invalid value: "object": TargetReference is not valid for CloneSet.'],
    ),
    (
        "Job from apps",
        lambda d: d["spec"]["targetRef"].update(kind="Job"),
        ['spec.targetRef: Invalid value: "object": TargetReference is not valid for Job.'],
    ),
    (
        "unparsable apiVersion",
        lambda d: d["spec"]["targetRef"].update(apiVersion="apps/v1/x"),
        ['spec.targetRef: Invalid value: "object": TargetReference is not valid for Deployment.'],
    ),
    (
        "ReplicaSet from the core group",
        lambda d: d["spec"]["targetRef"].update(apiVersion="v1", kind="ReplicaSet"),
        ['spec.targetRef: Invalid value: "object": TargetReference is not valid for ReplicaSet.'],
    ),
    (
        "no subsets",
        lambda d: d["spec"].update(subsets=[]),
        ["spec.subsets: Required value: subsets number must >= 1 in WorkloadSpread"],
    ),
    (
        "too many subsets",
        lambda d: d["spec"].update(subsets=[{"name": f"s{i}"} for i in range(MAX_SUBSETS + 1)]),
        [f"spec.subsets: Too many: {MAX_SUBSETS + 1}: must have at most {MAX_SUBSETS} items"],
    ),
    (
        "empty subset name",
        lambda d: subsets(d)[2].update(name=""),
        ['spec.subsets[2].name: Invalid value: ""'],
    ),
    (
        "duplicate subset name",
        lambda d: subsets(d)[2].update(name="zone-a"),
        ['spec.subsets[2].name: Invalid value: "zone-a": duplicated subset name zone-a'],
    ),
    (
        "Exists with values",
        lambda d: subsets(d)[0]["requiredNodeSelector"]["matchExpressions"][0].update(operator="Exists"),
        [
            "spec.subsets[0].requiredNodeSelector.matchExpressions[0].values: Forbidden: may not be specified "
            "when `operator` is 'Exists' or 'DoesNotExist'"
        ],
    ),
    (
        "bad node selector operator",
        lambda d: subsets(d)[0]["requiredNodeSelector"]["matchExpressions"][0].update(operator="Equals"),
        [
            'spec.subsets[0].requiredNodeSelector.matchExpressions[0].operator: Unsupported value: "Equals": '
            'supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"'
        ],
    ),
    (
        "preferred weight 0",
        lambda d: subsets(d)[0]["preferredNodeSelector"][0].update(weight=0),
        ["spec.subsets[0].preferredNodeSelector[0].weight: Invalid value: 0: must be in the range 1-100"],
    ),
    (
        "preferred weight missing, preference bad",
        lambda d: subsets(d)[0].update(
            preferredNodeSelector=[{"preference": {"matchExpressions": [{"key": "k", "operator": "In"}]}}]
        ),
        [
            "spec.subsets[0].preferredNodeSelector[0].weight: Invalid value: null: must be in the range 1-100",
            "spec.subsets[0].preferredNodeSelector[0].preference.matchExpressions[0].values: Required value: "
            "must be specified when `operator` is 'In' or 'NotIn'",
        ],
    ),
    (
        "preferred requirement not an object",
        lambda d: subsets(d)[0].update(preferredNodeSelector=[{"weight": 1, "preference": {"matchExpressions": [7]}}]),
        [
            "spec.subsets[0].preferredNodeSelector[0].preference.matchExpressions[0]: "
            "Invalid value: 7: must be an object"
        ],
    ),
    (
        "toleration Exists with a value",
        lambda d: subsets(d)[0]["tolerations"][0].update(operator="Exists"),
        [
            'spec.subsets[0].tolerations[0].operator: Invalid value: "Exists": '
            "value must be empty when `operator` is 'Exists'"
        ],
    ),
    (
        "toleration bad effect",
        lambda d: subsets(d)[0]["tolerations"][0].update(effect="NoRun"),
        [
            'spec.subsets[0].tolerations[0].effect: Unsupported value: "NoRun": supported values: '
            '"NoSchedule", "PreferNoSchedule", "NoExecute"'
        ],
    ),
    (
        "placement too long",
        lambda d: subsets(d)[1].update(tolerations=[{"key": "k" * MAX_PLACEMENT_BYTES, "operator": "Exists"}]),
        [f"spec.subsets[1].tolerations: Too long: must have at most {MAX_PLACEMENT_BYTES} bytes"],
    ),
    (
        "patch changes the pod's name",
        lambda d: subsets(d)[0].update(patch={"metadata": {"name": "mine"}}),
        ["spec.subsets[0].patch.metadata.name: Forbidden: may not change the pod's name"],
    ),
    (
        "patch changes the pod's namespace and generateName",
        lambda d: subsets(d)[0].update(patch={"metadata": {"namespace": "other", "generateName": "x-"}}),
        [
            "spec.subsets[0].patch.metadata.generateName: Forbidden: may not change the pod's generateName",
            "spec.subsets[0].patch.metadata.namespace: Forbidden: may not change the pod's namespace",
        ],
    ),
    (
        "patch replaces the pod's owners",
        lambda d: subsets(d)[0].update(
            patch={"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "x", "uid": "u"}]}}
        ),
        ["spec.subsets[0].patch.metadata.ownerReferences: Forbidden: may not change the pod's ownerReferences"],
    ),
    (
        "patch drops the pod's metadata with a directive",
        lambda d: subsets(d)[0].update(patch={"metadata": {"$patch": "replace", "labels": {"a": "b"}}}),
        [
            f"spec.subsets[0].patch.metadata.{f}: Forbidden: may not change the pod's {f}"
            for f in ("name", "generateName", "namespace", "ownerReferences")
        ],
    ),
    (
        "patch of the status",
        lambda d: subsets(d)[0].update(patch={"status": {"phase": "Running"}}),
        [
            "spec.subsets[0].patch.status: Forbidden: "
            "a subset patch applies to the pod: only metadata and spec may be patched"
        ],
    ),
    (
        "patch that does not merge",
        lambda d: subsets(d)[0].update(patch={"spec": {"containers": {"name": "x"}}}),
        [
            'spec.subsets[0].patch.spec.containers: Invalid value: "object": failed to merge patch: '
            "expected a list, got an object"
        ],
    ),
    (
        "patch gives an invalid pod",
        lambda d: subsets(d)[0].update(
            patch={"metadata": {"labels": {"bad key!": "x"}}, "spec": {"containers": [{"name": "main", "image": ""}]}}
        ),
        [
            'spec.subsets[0].patch.metadata.labels: Invalid value: "bad key!": name part must consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            "spec.subsets[0].patch.spec.containers[0].image: Required value",
        ],
    ),
    (
        "patch restart policy Never for a Deployment",
        lambda d: subsets(d)[0].update(patch={"spec": {"restartPolicy": "Never"}}),
        ['spec.subsets[0].patch.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'],
    ),
    (
        "patch too long",
        lambda d: subsets(d)[0].update(patch={"metadata": {"annotations": {"a": "x" * MAX_PATCH_BYTES}}}),
        [f"spec.subsets[0].patch: Too long: must have at most {MAX_PATCH_BYTES} bytes"],
    ),
    (
        "fractional percentage",
        percent("50.2%", None),
        ['spec.subsets[0].maxReplicas: Invalid value: "50.2%": maxReplicas is not valid for subset'],
    ),
    (
        "percentage without % (OpenKruise accepts it)",
        percent("50", None),
        [
            'spec.subsets[0].maxReplicas: Invalid value: "50": maxReplicas is not valid for subset: '
            'a percentage needs a "%" suffix ("50%")'
        ],
    ),
    (
        "negative percentage",
        percent("-1%", None),
        ['spec.subsets[0].maxReplicas: Invalid value: "-1%": maxReplicas is not valid for subset'],
    ),
    (
        "negative integer",
        percent(-1, None),
        ["spec.subsets[0].maxReplicas: Invalid value: -1: maxReplicas is not valid for subset"],
    ),
    (
        "double percent sign",
        percent("5%%", None),
        ['spec.subsets[0].maxReplicas: Invalid value: "5%%": maxReplicas is not valid for subset'],
    ),
    (
        "percentages over 100",
        percent("60%", "50%", None),
        [
            'spec.subsets[1].maxReplicas: Invalid value: "50%": '
            "the sum of all subset's maxReplicas exceeds 100% is no permitted"
        ],
    ),
    (
        "percentages under 100 with a limited last subset",
        percent("20%", "30%"),
        [
            'spec.subsets[0].maxReplicas: Invalid value: "50%": '
            "maxReplicas sum of all subsets must equal 100% when type is specified as percent"
        ],
    ),
    (
        "mixed types",
        percent(2, "50%", None),
        ['spec.subsets[1].maxReplicas: Invalid value: "50%": the maxReplicas type of all subsets must be the same'],
    ),
    (
        "StatefulSet with a percentage",
        lambda d: (
            d["spec"]["targetRef"].update(kind="StatefulSet"),
            percent("50%", None)(d),
        ),
        ['spec.subsets[0].maxReplicas: Invalid value: "50%": the maxReplicas type must be Int for StatefulSet'],
    ),
    (
        "minReplicas over maxReplicas",
        lambda d: subsets(d)[1].update(minReplicas=3),
        ["spec.subsets[1].minReplicas: Invalid value: 3: must be less than or equal to maxReplicas (2)"],
    ),
    (
        "minReplicas of another type",
        lambda d: subsets(d)[1].update(minReplicas="10%"),
        [
            'spec.subsets[1].minReplicas: Invalid value: "10%": '
            "the minReplicas type must be the same as the maxReplicas type of all subsets"
        ],
    ),
    (
        "minReplicas percentages over 100",
        lambda d: d["spec"].update(
            subsets=[{"name": "a", "minReplicas": "60%"}, {"name": "b", "minReplicas": "50%"}, {"name": "c"}]
        ),
        [
            'spec.subsets[1].minReplicas: Invalid value: "50%": '
            "the sum of all subset's minReplicas exceeds 100% is no permitted"
        ],
    ),
    (
        "minReplicas negative",
        lambda d: subsets(d)[1].update(minReplicas=-2),
        ["spec.subsets[1].minReplicas: Invalid value: -2: minReplicas is not valid for subset"],
    ),
    (
        "minReplicas percentage for a StatefulSet",
        lambda d: (
            d["spec"]["targetRef"].update(kind="StatefulSet"),
            d["spec"].update(subsets=[{"name": "a", "minReplicas": "50%"}, {"name": "b"}]),
        ),
        ['spec.subsets[0].minReplicas: Invalid value: "50%": the minReplicas type must be Int for StatefulSet'],
    ),
    (
        "bad scheduleStrategy type",
        lambda d: d["spec"].update(scheduleStrategy={"type": "Spread"}),
        ['spec.scheduleStrategy.type: Invalid value: "Spread": ScheduleStrategy\'s type is not valid'],
    ),
    (
        "adaptive block with Fixed",
        lambda d: d["spec"].update(scheduleStrategy={"type": "Fixed", "adaptive": {"rescheduleCriticalSeconds": 30}}),
        [
            'spec.scheduleStrategy.type: Invalid value: "Fixed": '
            "the scheduleStrategy's type must be adaptive when using adaptive scheduleStrategy"
        ],
    ),
    (
        "adaptive with a limited last subset",
        lambda d: (subsets(d)[2].update(maxReplicas=4), _rescheduling(30)(d)),
        [
            'spec.scheduleStrategy.adaptive: Invalid value: "object": '
            "the last subset's maxReplicas must be not specified when using adaptive scheduleStrategy"
        ],
    ),
    (
        "negative rescheduleCriticalSeconds",
        _rescheduling(-1),
        [
            "spec.scheduleStrategy.adaptive.rescheduleCriticalSeconds: Invalid value: -1: "
            f"rescheduleCriticalSeconds < 0 or rescheduleCriticalSeconds > {MAX_RESCHEDULE_CRITICAL_SECONDS} "
            "is not permitted"
        ],
    ),
    (
        "rescheduleCriticalSeconds over the bound",
        _rescheduling(MAX_RESCHEDULE_CRITICAL_SECONDS + 1),
        [
            f"spec.scheduleStrategy.adaptive.rescheduleCriticalSeconds: Invalid value: "
            f"{MAX_RESCHEDULE_CRITICAL_SECONDS + 1}: rescheduleCriticalSeconds < 0 or rescheduleCriticalSeconds > "
            f"{MAX_RESCHEDULE_CRITICAL_SECONDS} is not permitted"
        ],
    ),
    (
        "bad targetFilter selector",
        lambda d: d["spec"].update(
            targetFilter={"selector": {"matchExpressions": [{"key": "role", "operator": "Equals", "values": ["x"]}]}}
        ),
        [
            'spec.targetFilter.selector.matchExpressions[0].operator: Unsupported value: "Equals": '
            'supported values: "In", "NotIn", "Exists", "DoesNotExist"'
        ],
    ),
    (
        "missing name",
        lambda d: d["metadata"].pop("name"),
        ["metadata.name: Required value: name or generateName is required"],
    ),
    (
        "unknown field",
        lambda d: d["spec"].update(replicas=3),
        ["spec.replicas: Unknown field: the API server would drop it"],
    ),
    (
        "wrong types",
        lambda d: (subsets(d)[1].update(maxReplicas=[1]), d["spec"]["targetRef"].update(name=5)),
        [
            "spec.targetRef.name: Invalid value: 5: must be a string",
            "spec.subsets[1].maxReplicas: Invalid value: array: "
            'must be an integer or a percentage string such as "20%"',
        ],
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule(mutate: Callable[[Doc], object], expected: list[str]) -> None:
    doc = base()
    mutate(doc)
    assert errors_of(doc) == expected


def test_error_paths_use_v1beta1_names_for_a_v1alpha1_manifest() -> None:
    doc = base(KRUISE_ALPHA)
    subsets(doc)[0]["requiredNodeSelectorTerm"]["matchExpressions"][0]["operator"] = "Exists"
    subsets(doc)[0]["preferredNodeSelectorTerms"][0]["weight"] = 101
    assert errors_of(doc) == [
        "spec.subsets[0].requiredNodeSelector.matchExpressions[0].values: Forbidden: may not be specified "
        "when `operator` is 'Exists' or 'DoesNotExist'",
        "spec.subsets[0].preferredNodeSelector[0].weight: Invalid value: 101: must be in the range 1-100",
    ]


def test_rescheduling_has_no_295_over_n_cap() -> None:
    doc = base()
    doc["spec"]["subsets"] = [{"name": f"s{i}"} for i in range(6)]
    _rescheduling(MAX_RESCHEDULE_CRITICAL_SECONDS)(doc)
    assert errors_of(doc) == []


def test_every_subset_is_checked_after_a_bad_max_replicas() -> None:
    doc = base()
    percent("x%", -3, None)(doc)
    assert errors_of(doc) == [
        'spec.subsets[0].maxReplicas: Invalid value: "x%": maxReplicas is not valid for subset',
        "spec.subsets[1].maxReplicas: Invalid value: -3: the maxReplicas type of all subsets must be the same",
    ]


def test_spec_over_the_size_limit_is_refused_before_parsing() -> None:
    doc = base()
    doc["spec"]["subsets"] = [{"name": "x" * 1000, "patch": {"metadata": {"annotations": {"a": "y" * 60_000}}}}] * 10
    assert errors_of(doc) == ["spec: Too long: must have at most 524288 bytes"]


# R5: conflicts


def spread(
    name: str,
    *,
    api_version: str = "apps/v1",
    kind: str = "Deployment",
    target: str = "web",
    namespace: str = "default",
) -> Any:
    doc = base()
    doc["metadata"] = {"name": name, "namespace": namespace}
    doc["spec"]["targetRef"] = {"apiVersion": api_version, "kind": kind, "name": target}
    return parse(doc)


def test_two_spreads_on_one_workload_conflict_whatever_the_version() -> None:
    ws = spread("a")
    others = [spread("b", target="other"), spread("c", api_version="apps/v1beta2"), spread("d")]
    assert [str(e) for e in conflicts(ws, others)] == [
        'spec.targetRef: Invalid value: "object": ws.spec.targetRef is in conflict with other WorkloadSpread c'
    ]


@pytest.mark.parametrize(
    "other",
    [
        {"name": "a"},
        {"name": "b", "namespace": "other"},
        {"name": "b", "kind": "ReplicaSet"},
        {"name": "b", "api_version": "apps.kruise.io/v1alpha1"},
        {"name": "b", "target": "api"},
    ],
    ids=["itself", "other namespace", "other kind", "other group", "other name"],
)
def test_no_conflict(other: dict[str, str]) -> None:
    assert conflicts(spread("a"), [spread(**other)]) == []


def test_no_conflict_without_a_target() -> None:
    doc = base()
    del doc["spec"]["targetRef"]
    assert conflicts(parse(doc), [spread("b")]) == []
    assert conflicts(spread("a"), [parse({**doc, "metadata": {"name": "b", "namespace": "default"}})]) == []


# R6: updates


def test_target_version_may_change() -> None:
    old = spread("a")
    assert validate_update(old, spread("a", api_version="apps/v1beta2")) == []


@pytest.mark.parametrize(
    "change",
    [{"kind": "ReplicaSet"}, {"target": "api"}, {"kind": "CloneSet", "api_version": "apps.kruise.io/v1alpha1"}],
)
def test_target_change_is_refused(change: dict[str, str]) -> None:
    assert [str(e) for e in validate_update(spread("a"), spread("a", **change))] == [
        'spec.targetRef: Invalid value: "object": change TargetReference is not permitted for WorkloadSpread'
    ]


def test_update_applies_the_create_rules_and_metadata_immutability() -> None:
    new_doc = base()
    new_doc["metadata"]["namespace"] = "prod"
    subsets(new_doc)[1]["name"] = "zone-a"
    assert [str(e) for e in validate_update(parse(base()), parse(new_doc))] == [
        'spec.subsets[1].name: Invalid value: "zone-a": duplicated subset name zone-a',
        'metadata.namespace: Invalid value: "prod": field is immutable',
    ]


def test_validate_is_pure() -> None:
    doc = base()
    before = copy.deepcopy(doc)
    ws = parse(doc)
    assert validate(ws) == validate(ws) == []
    assert doc == before


def test_errors_come_subset_by_subset_as_upstream() -> None:
    doc = base()
    subsets(doc)[0]["maxReplicas"] = -1
    subsets(doc)[1].update(name="zone-a", minReplicas=5)
    assert errors_of(doc) == [
        "spec.subsets[0].maxReplicas: Invalid value: -1: maxReplicas is not valid for subset",
        'spec.subsets[1].name: Invalid value: "zone-a": duplicated subset name zone-a',
        "spec.subsets[1].minReplicas: Invalid value: 5: must be less than or equal to maxReplicas (2)",
    ]
