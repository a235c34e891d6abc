"""Every validation rule, each with a manifest that breaks it and the exact error line."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from united.api.field import ManifestError
from united.uniteddeployment.admission import admit
from united.uniteddeployment.model import parse
from united.uniteddeployment.validation import validate_update

Doc = dict[str, Any]


def base(variant: str = "deploymentTemplate") -> Doc:
    pod = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
    }
    spec: Doc = {"selector": {"matchLabels": {"app": "web"}}, "template": copy.deepcopy(pod)}
    if variant in ("statefulSetTemplate", "advancedStatefulSetTemplate"):
        spec["serviceName"] = "web"
    return {
        "apiVersion": "apps.united.io/v1alpha1",
        "kind": "UnitedDeployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 4,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {variant: {"metadata": {"labels": {"app": "web"}}, "spec": spec}},
            "topology": {"subsets": [{"name": "a"}, {"name": "b"}]},
        },
    }


def errors_of(doc: Doc) -> list[str]:
    try:
        admit(doc)
    except ManifestError as e:
        return [str(x) for x in e.errors]
    return []


def edit(fn: Callable[[Doc], None], variant: str = "deploymentTemplate") -> Doc:
    doc = base(variant)
    fn(doc)
    return doc


def subsets(doc: Doc) -> list[Doc]:
    result: list[Doc] = doc["spec"]["topology"]["subsets"]
    return result


def pod_spec(doc: Doc, variant: str = "deploymentTemplate") -> Doc:
    result: Doc = doc["spec"]["template"][variant]["spec"]["template"]["spec"]
    return result


@pytest.mark.parametrize(
    "variant", ["deploymentTemplate", "statefulSetTemplate", "advancedStatefulSetTemplate", "cloneSetTemplate"]
)
def test_base_manifests_are_valid(variant: str) -> None:
    assert errors_of(base(variant)) == []


CASES: list[tuple[str, Callable[[Doc], None], str]] = [
    (
        "negative replicas",
        lambda d: d["spec"].update(replicas=-1),
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
    ),
    (
        "huge replicas",
        lambda d: d["spec"].update(replicas=2**40),
        "spec.replicas: Invalid value: 1099511627776: must be a 32-bit integer (at most 2147483647)",
    ),
    (
        "replicas wrong type",
        lambda d: d["spec"].update(replicas="ten"),
        'spec.replicas: Invalid value: "ten": must be an integer',
    ),
    (
        "negative history",
        lambda d: d["spec"].update(revisionHistoryLimit=-2),
        "spec.revisionHistoryLimit: Invalid value: -2: must be greater than or equal to 0",
    ),
    (
        "history over the limit",
        lambda d: d["spec"].update(revisionHistoryLimit=101),
        "spec.revisionHistoryLimit: Invalid value: 101: must be less than or equal to 100",
    ),
    ("no selector", lambda d: d["spec"].pop("selector"), "spec.selector: Required value"),
    (
        "empty selector",
        lambda d: d["spec"].update(selector={}),
        "spec.selector: Invalid value: object: empty selector is invalid for statefulset",
    ),
    (
        "bad selector operator",
        lambda d: d["spec"]["selector"].update(matchExpressions=[{"key": "app", "operator": "Maybe"}]),
        'spec.selector.matchExpressions[0].operator: Unsupported value: "Maybe": supported values: "In", "NotIn", "Exists", "DoesNotExist"',
    ),
    (
        "selector In without values",
        lambda d: d["spec"]["selector"].update(matchExpressions=[{"key": "app", "operator": "In"}]),
        "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
    ),
    (
        "bad label value",
        lambda d: d["spec"]["selector"]["matchLabels"].update(app="-web"),
        'spec.selector.matchLabels[app]: Invalid value: "-web": a valid label must be an empty string or consist of alphanumeric characters, '
        "'-', '_' or '.', and must start and end with an alphanumeric character",
    ),
    (
        "no template",
        lambda d: d["spec"].update(template={}),
        "spec.template: Required value: should provide one of statefulSetTemplate, advancedStatefulSetTemplate, cloneSetTemplate, deploymentTemplate",
    ),
    (
        "two templates",
        lambda d: d["spec"]["template"].update(
            cloneSetTemplate=copy.deepcopy(d["spec"]["template"]["deploymentTemplate"])
        ),
        'spec.template: Invalid value: "object": should provide only one of statefulSetTemplate, advancedStatefulSetTemplate, cloneSetTemplate, deploymentTemplate',
    ),
    (
        "unknown template kind",
        lambda d: d["spec"]["template"].update(daemonSetTemplate={}),
        "spec.template.daemonSetTemplate: Unknown field: the API server would drop it",
    ),
    (
        "template labels do not match",
        lambda d: d["spec"]["template"]["deploymentTemplate"]["metadata"].update(labels={"app": "db"}),
        "spec.template.deploymentTemplate.metadata.labels: Invalid value: object: `selector` does not match template `labels`",
    ),
    (
        "pod labels do not match",
        lambda d: d["spec"]["template"]["deploymentTemplate"]["spec"]["template"]["metadata"].update(labels={}),
        "spec.template.deploymentTemplate.spec.template.metadata.labels: Invalid value: object: `selector` does not match template `labels`",
    ),
    (
        "replicas in template",
        lambda d: d["spec"]["template"]["deploymentTemplate"]["spec"].update(replicas=3),
        "spec.template.deploymentTemplate.spec.replicas: Invalid value: 3: replicas in deploymentTemplate will not be used",
    ),
    (
        "template spec missing",
        lambda d: d["spec"]["template"]["deploymentTemplate"].pop("spec"),
        "spec.template.deploymentTemplate.spec: Required value",
    ),
    (
        "no containers",
        lambda d: pod_spec(d).update(containers=[]),
        "spec.template.deploymentTemplate.spec.template.spec.containers: Required value",
    ),
    (
        "container without image",
        lambda d: pod_spec(d)["containers"][0].pop("image"),
        "spec.template.deploymentTemplate.spec.template.spec.containers[0].image: Required value",
    ),
    (
        "duplicate container",
        lambda d: pod_spec(d)["containers"].append({"name": "main", "image": "x"}),
        'spec.template.deploymentTemplate.spec.template.spec.containers[1].name: Duplicate value: "main"',
    ),
    (
        "bad port",
        lambda d: pod_spec(d)["containers"][0].update(ports=[{"containerPort": 70000}]),
        "spec.template.deploymentTemplate.spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
    ),
    (
        "mount of unknown volume",
        lambda d: pod_spec(d)["containers"][0].update(volumeMounts=[{"name": "data", "mountPath": "/d"}]),
        'spec.template.deploymentTemplate.spec.template.spec.containers[0].volumeMounts[0].name: Not found: "data"',
    ),
    (
        "restart policy",
        lambda d: pod_spec(d).update(restartPolicy="Never"),
        'spec.template.deploymentTemplate.spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
    ),
    ("subset without name", lambda d: subsets(d)[1].pop("name"), "spec.topology.subsets[1].name: Required value"),
    (
        "duplicate subset",
        lambda d: subsets(d)[1].update(name="a"),
        'spec.topology.subsets[1].name: Duplicate value: "a"',
    ),
    (
        "non-DNS subset name",
        lambda d: subsets(d)[0].update(name="Zone_A"),
        'spec.topology.subsets[0].name: Invalid value: "Zone_A": a lowercase RFC 1123 label must consist of lower case alphanumeric '
        "characters or '-', and must start and end with an alphanumeric character",
    ),
    (
        "subset name wrong type",
        lambda d: subsets(d)[0].update(name=7),
        "spec.topology.subsets[0].name: Invalid value: 7: must be a string",
    ),
    (
        "subsets not a list",
        lambda d: d["spec"]["topology"].update(subsets={"a": 1}),
        "spec.topology.subsets: Invalid value: object: must be an array",
    ),
    (
        "negative subset replicas",
        lambda d: subsets(d)[0].update(replicas=-1),
        "spec.topology.subsets[0].replicas: Invalid value: -1: subset replicas (-1) should not be less than 0",
    ),
    (
        "percent over 100",
        lambda d: subsets(d)[0].update(replicas="120%"),
        'spec.topology.subsets[0].replicas: Invalid value: "120%": subset replicas (120%) should be in range [0, 100]',
    ),
    (
        "numeric string",
        lambda d: subsets(d)[0].update(replicas="5"),
        "spec.topology.subsets[0].replicas: Invalid value: \"5\": subset replicas (5) only support integer value or percentage value with a suffix '%'",
    ),
    (
        "fractional percent",
        lambda d: subsets(d)[0].update(replicas="12.5%"),
        "spec.topology.subsets[0].replicas: Invalid value: \"12.5%\": subset replicas (12.5%) only support integer value or percentage value with a suffix '%'",
    ),
    (
        "percentages over total",
        lambda d: (subsets(d)[0].update(replicas="70%"), subsets(d)[1].update(replicas="70%")),
        'spec.topology.subsets: Invalid value: "array": sum of indicated subset replicas 6 should not be greater than UnitedDeployment replicas 4',
    ),
    (
        "all fixed but short",
        lambda d: (subsets(d)[0].update(replicas=1), subsets(d)[1].update(replicas=1)),
        'spec.topology.subsets: Invalid value: "array": if replicas of all subsets are provided, the sum of indicated subset replicas 2 should equal UnitedDeployment replicas 4',
    ),
    (
        "replicas and min/max mixed",
        lambda d: (subsets(d)[0].update(replicas=1), subsets(d)[1].update(maxReplicas=3)),
        'spec.topology.subsets: Invalid value: "array": subset.replicas and subset.minReplicas/subset.maxReplicas are mutually exclusive',
    ),
    (
        "min above max",
        lambda d: subsets(d)[0].update(minReplicas=3, maxReplicas=2),
        "spec.topology.subsets[0].minReplicas: Invalid value: 3: subset[0].minReplicas must be less than or equal to maxReplicas",
    ),
    (
        "every subset bounded",
        lambda d: (subsets(d)[0].update(maxReplicas=2), subsets(d)[1].update(maxReplicas=2)),
        'spec.topology.subsets: Invalid value: "array": at least one subset.maxReplicas must be empty',
    ),
    (
        "min sum above max sum",
        lambda d: subsets(d)[0].update(minReplicas=2_000_001),
        'spec.topology.subsets: Invalid value: "array": sum of indicated subset.minReplicas should not be greater than sum of indicated subset.maxReplicas',
    ),
    (
        "empty topology with replicas",
        lambda d: d["spec"]["topology"].update(subsets=[]),
        "spec.topology.subsets: Required value: at least one subset is needed to place 4 replicas",
    ),
    (
        "adaptive with replicas",
        lambda d: (
            d["spec"]["topology"].update(scheduleStrategy={"type": "Adaptive"}),
            subsets(d)[0].update(replicas=1),
        ),
        "spec.topology.subsets[0].replicas: Forbidden: specify replicas use minReplicas/maxReplicas to enable adaptive strategy",
    ),
    (
        "unknown schedule type",
        lambda d: d["spec"]["topology"].update(scheduleStrategy={"type": "Sometimes"}),
        'spec.topology.scheduleStrategy.type: Unsupported value: "Sometimes": supported values: "Adaptive", "Fixed"',
    ),
    (
        "negative critical seconds",
        lambda d: d["spec"]["topology"].update(
            scheduleStrategy={"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": -5}}
        ),
        "spec.topology.scheduleStrategy.adaptive.rescheduleCriticalSeconds: Invalid value: -5: must be greater than or equal to 0",
    ),
    (
        "bad node selector operator",
        lambda d: subsets(d)[0].update(
            nodeSelectorTerm={"matchExpressions": [{"key": "zone", "operator": "Near", "values": ["a"]}]}
        ),
        'spec.topology.subsets[0].nodeSelectorTerm.matchExpressions[0].operator: Unsupported value: "Near": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"',
    ),
    (
        "node selector In without values",
        lambda d: subsets(d)[0].update(nodeSelectorTerm={"matchExpressions": [{"key": "zone", "operator": "In"}]}),
        "spec.topology.subsets[0].nodeSelectorTerm.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
    ),
    (
        "bad toleration effect",
        lambda d: subsets(d)[0].update(tolerations=[{"key": "k", "operator": "Exists", "effect": "Sometimes"}]),
        'spec.topology.subsets[0].tolerations[0].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
    ),
    (
        "toleration value with Exists",
        lambda d: subsets(d)[0].update(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
        "spec.topology.subsets[0].tolerations[0].operator: Invalid value: \"Exists\": value must be empty when `operator` is 'Exists'",
    ),
    (
        "tolerationSeconds without NoExecute",
        lambda d: subsets(d)[0].update(
            tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]
        ),
        "spec.topology.subsets[0].tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
    ),
    (
        "update type",
        lambda d: d["spec"].update(updateStrategy={"type": "Auto"}),
        'spec.updateStrategy.type: Unsupported value: "Auto": supported values: "Manual", "Progressive"',
    ),
    (
        "partition of unknown subset",
        lambda d: d["spec"].update(updateStrategy={"manualUpdate": {"partitions": {"c": 1}}}),
        'spec.updateStrategy.manualUpdate.partitions: Invalid value: "c": subset c does not exist',
    ),
    (
        "negative partition",
        lambda d: d["spec"].update(updateStrategy={"manualUpdate": {"partitions": {"a": -1}}}),
        "spec.updateStrategy.manualUpdate.partitions[a]: Invalid value: -1: must be greater than or equal to 0",
    ),
    (
        "patch changes selector label",
        lambda d: subsets(d)[0].update(patch={"metadata": {"labels": {"app": "other"}}}),
        "spec.topology.subsets[0].patch.metadata.labels[app]: Forbidden: may not change a label the child's selector or revision tracking uses",
    ),
    (
        "patch changes subset label",
        lambda d: subsets(d)[0].update(patch={"metadata": {"labels": {"apps.united.io/subset-name": "b"}}}),
        "spec.topology.subsets[0].patch.metadata.labels[apps.united.io/subset-name]: Forbidden: may not change a label the child's selector or revision tracking uses",
    ),
    (
        "patch replaces metadata",
        lambda d: subsets(d)[0].update(patch={"metadata": {"$patch": "replace", "labels": {"x": "y"}}}),
        "spec.topology.subsets[0].patch.metadata.labels[app]: Forbidden: may not change a label the child's selector or revision tracking uses",
    ),
    (
        "patch sets owner references",
        lambda d: subsets(d)[0].update(
            patch={"metadata": {"ownerReferences": [{"uid": "1", "kind": "X", "name": "x", "apiVersion": "v1"}]}}
        ),
        "spec.topology.subsets[0].patch.metadata.ownerReferences: Forbidden: may not be set on the pod template of a child",
    ),
    (
        "patch sets namespace",
        lambda d: subsets(d)[0].update(patch={"metadata": {"namespace": "kube-system"}}),
        "spec.topology.subsets[0].patch.metadata.namespace: Forbidden: may not be set on the pod template of a child",
    ),
    (
        "patch sets name",
        lambda d: subsets(d)[0].update(patch={"metadata": {"name": "pod"}}),
        "spec.topology.subsets[0].patch.metadata.name: Forbidden: may not be set on the pod template of a child",
    ),
    (
        "patch outside the pod template",
        lambda d: subsets(d)[0].update(patch={"replicas": 3}),
        "spec.topology.subsets[0].patch.replicas: Forbidden: a subset patch applies to the pod template: only metadata and spec may be patched",
    ),
    (
        "patch breaks the pod",
        lambda d: subsets(d)[0].update(patch={"spec": {"containers": [{"name": "side"}]}}),
        "spec.topology.subsets[0].patch: Invalid value: patched pod template: template.spec.containers[0].image: Required value",
    ),
    (
        "patch not an object",
        lambda d: subsets(d)[0].update(patch=[1]),
        "spec.topology.subsets[0].patch: Invalid value: array: must be an object",
    ),
    (
        "ud name too long",
        lambda d: d["metadata"].update(name="w" * 53),
        f'metadata.name: Invalid value: "{"w" * 53}": must be no more than 52 characters: revision names (<name>-<hash>) are label values, limited to 63 characters',
    ),
    (
        "ud name not DNS",
        lambda d: d["metadata"].update(name="Web"),
        'metadata.name: Invalid value: "Web": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '
        "'-' or '.', and must start and end with an alphanumeric character",
    ),
    ("no name", lambda d: d["metadata"].pop("name"), "metadata.name: Required value: name or generateName is required"),
    (
        "unknown spec field",
        lambda d: d["spec"].update(topolgy={}),
        "spec.topolgy: Unknown field: the API server would drop it",
    ),
    (
        "wrong apiVersion",
        lambda d: d.update(apiVersion="apps/v1"),
        'apiVersion: Unsupported value: "apps/v1": supported values: "apps.united.io/v1alpha1", "apps.kruise.io/v1alpha1", "apps.kruise.io/v1beta1"',
    ),
    (
        "wrong kind",
        lambda d: d.update(kind="Deployment"),
        'kind: Unsupported value: "Deployment": supported values: "UnitedDeployment"',
    ),
    ("spec not an object", lambda d: d.update(spec=[]), "spec: Invalid value: array: must be an object"),
]


@pytest.mark.parametrize(("name", "mutate", "expected"), CASES, ids=[c[0] for c in CASES])
def test_rule(name: str, mutate: Callable[[Doc], None], expected: str) -> None:
    assert expected in errors_of(edit(mutate))


def test_statefulset_partition_in_template() -> None:
    def mutate(d: Doc) -> None:
        d["spec"]["template"]["statefulSetTemplate"]["spec"]["updateStrategy"] = {"rollingUpdate": {"partition": 2}}

    assert (
        "spec.template.statefulSetTemplate.spec.updateStrategy.rollingUpdate.partition: Invalid value: 2: "
        "partition in statefulSetTemplate will not be used"
    ) in errors_of(edit(mutate, "statefulSetTemplate"))


@pytest.mark.parametrize("variant", ["statefulSetTemplate", "advancedStatefulSetTemplate", "cloneSetTemplate"])
def test_a_patched_pod_template_may_mount_the_volume_claim_templates(variant: str) -> None:
    """The patched pod template is checked with the workload's claims, as the template itself is."""

    def mutate(d: Doc) -> None:
        spec = d["spec"]["template"][variant]["spec"]
        spec["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]
        spec["template"]["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        subsets(d)[0]["patch"] = {"metadata": {"annotations": {"zone": "a"}}}

    assert errors_of(edit(mutate, variant)) == []


def test_reservation_needs_a_stateless_template() -> None:
    def mutate(d: Doc) -> None:
        d["spec"]["topology"]["scheduleStrategy"] = {"type": "Adaptive", "adaptive": {"reserveUnschedulablePods": True}}

    expected = (
        'spec.topology.scheduleStrategy: Invalid value: "object": only stateless workloads (Deployment and CloneSet) '
        "are supported by reserved rescheduling"
    )
    assert expected in errors_of(edit(mutate, "statefulSetTemplate"))
    assert errors_of(edit(mutate, "cloneSetTemplate")) == []


@pytest.mark.parametrize("variant", ["statefulSetTemplate", "cloneSetTemplate", "advancedStatefulSetTemplate"])
def test_child_names_must_fit_pod_revision_labels(variant: str) -> None:
    def mutate(d: Doc) -> None:
        d["metadata"]["name"] = "w" * 30
        subsets(d)[0]["name"] = "z" * 16

    errors = errors_of(edit(mutate, variant))
    assert any(e.startswith(f'spec.topology.subsets[0].name: Invalid value: "{"z" * 16}": child names') for e in errors)
    assert errors_of(edit(mutate, "deploymentTemplate")) == []


def test_cloneset_labels_are_validated_unlike_the_reference() -> None:
    def mutate(d: Doc) -> None:
        d["spec"]["template"]["cloneSetTemplate"]["metadata"]["labels"] = {"app": "other"}

    assert any("`selector` does not match" in e for e in errors_of(edit(mutate, "cloneSetTemplate")))


def test_errors_are_all_reported_at_once() -> None:
    def mutate(d: Doc) -> None:
        d["spec"]["replicas"] = -1
        subsets(d)[1]["name"] = "a"
        d["spec"]["updateStrategy"] = {"type": "Auto"}

    assert len(errors_of(edit(mutate))) >= 3


def test_defaults_make_minimal_elastic_manifest_valid() -> None:
    doc = base()
    subsets(doc)[0]["maxReplicas"] = 2
    assert errors_of(doc) == []
    ud = admit(doc)
    assert [s.min_replicas for s in ud.spec.subsets] == [0, 0]
    assert ud.spec.update.type == "Manual"
    assert ud.spec.revision_history_limit == 10


def test_update_rules() -> None:
    old = admit(
        edit(lambda d: subsets(d)[0].update(tolerations=[{"key": "k", "operator": "Exists"}]), "statefulSetTemplate")
    )

    def changed(d: Doc) -> None:
        subsets(d)[0]["tolerations"] = [{"key": "other", "operator": "Exists"}]
        subsets(d)[0]["nodeSelectorTerm"] = {"matchExpressions": [{"key": "z", "operator": "Exists"}]}
        d["spec"]["template"]["statefulSetTemplate"]["spec"]["serviceName"] = "renamed"

    new = admit(edit(changed, "statefulSetTemplate"))
    errors = [str(e) for e in validate_update(old, new)]
    assert errors == [
        "spec.template.statefulSetTemplate.spec: Forbidden: updates to statefulsetTemplate spec for fields other than "
        "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy', 'minReadySeconds' and 'ordinals' are forbidden",
        "spec.topology.subsets[0].nodeSelectorTerm: Forbidden: may not be changed in an update",
        "spec.topology.subsets[0].tolerations: Forbidden: may not be changed in an update",
    ]
    scaled = admit(
        edit(
            lambda d: (
                d["spec"].update(replicas=9),
                subsets(d)[0].update(tolerations=[{"key": "k", "operator": "Exists"}]),
            ),
            "statefulSetTemplate",
        )
    )
    assert validate_update(old, scaled) == []


def test_kruise_manifests_parse_unchanged() -> None:
    for version in ("v1alpha1", "v1beta1"):
        doc = base("advancedStatefulSetTemplate")
        doc["apiVersion"] = f"apps.kruise.io/{version}"
        ud = admit(doc)
        assert ud.group == "apps.kruise.io"
        assert parse(doc).spec.template is not None
