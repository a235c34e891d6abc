"""Injection into an admitted pod (in OpenKruise's order) and reading the annotation back."""

from __future__ import annotations

import json
from typing import Any

import pytest

from united.placement.patch import PatchError
from united.workloadspread.injection import Matched, annotation, inject, matched
from united.workloadspread.model import MATCHED_ANNOTATION, WorkloadSpread, parse

ZONE_A = {"key": "zone", "operator": "In", "values": ["a"]}
HOST = {"key": "metadata.name", "operator": "NotIn", "values": ["bad"]}


def spread(**subset: Any) -> WorkloadSpread:
    return parse(
        {
            "apiVersion": "apps.kruise.io/v1beta1",
            "kind": "WorkloadSpread",
            "metadata": {"name": "ws", "namespace": "ns"},
            "spec": {
                "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "subsets": [{"name": "a", **subset}],
            },
        }
    )


def pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "main", "image": "nginx"}], **spec}}


def test_affinity_is_always_created_and_the_annotation_written() -> None:
    out = inject(pod(), spread(), "a", uid=None)
    assert out["spec"]["affinity"] == {"nodeAffinity": {}}
    assert out["metadata"]["labels"] == {}
    assert json.loads(out["metadata"]["annotations"][MATCHED_ANNOTATION]) == {"name": "ws", "subset": "a"}


def test_the_uid_given_to_a_nameless_pod_is_in_the_annotation() -> None:
    out = inject({"metadata": {"generateName": "web-"}, "spec": {}}, spread(), "a", uid="u-1")
    assert out["metadata"]["annotations"][MATCHED_ANNOTATION] == '{"name":"ws","subset":"a","uid":"u-1"}'


def test_required_term_becomes_the_only_term_of_a_pod_without_one() -> None:
    out = inject(pod(), spread(requiredNodeSelector={"matchExpressions": [ZONE_A]}), "a", uid=None)
    required = out["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required == {"nodeSelectorTerms": [{"matchExpressions": [ZONE_A]}]}


def test_required_term_is_anded_into_every_existing_term_expressions_and_fields() -> None:
    gpu = {"key": "gpu", "operator": "Exists"}
    ssd = {"key": "disk", "operator": "In", "values": ["ssd"]}
    terms = [{"matchExpressions": [gpu]}, {"matchExpressions": [ssd], "matchFields": [HOST]}]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    field = {"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}
    ws = spread(requiredNodeSelector={"matchExpressions": [ZONE_A], "matchFields": [field]})
    out = inject(pod(affinity=affinity), ws, "a", uid=None)
    got = out["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert got["nodeSelectorTerms"] == [
        {"matchExpressions": [gpu, ZONE_A], "matchFields": [field]},
        {"matchExpressions": [ssd, ZONE_A], "matchFields": [HOST, field]},
    ]
    assert terms[0] == {"matchExpressions": [gpu]}, "the input pod is not changed"


def test_tolerations_and_preferred_terms_are_appended() -> None:
    mine = {"key": "a", "operator": "Exists"}
    spot = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}
    old_pref = {"weight": 1, "preference": {"matchExpressions": [ZONE_A]}}
    new_pref = {"weight": 50, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}
    affinity = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [old_pref]}}
    ws = spread(tolerations=[spot], preferredNodeSelector=[new_pref])
    out = inject(pod(tolerations=[mine], affinity=affinity), ws, "a", uid=None)
    assert out["spec"]["tolerations"] == [mine, spot]
    assert out["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] == [
        old_pref,
        new_pref,
    ]


def test_kruise_v1alpha1_spellings_inject_the_same() -> None:
    doc = {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "WorkloadSpread",
        "metadata": {"name": "ws"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "subsets": [{"name": "a", "requiredNodeSelectorTerm": {"matchExpressions": [ZONE_A]}}],
        },
    }
    out = inject(pod(), parse(doc), "a", uid=None)
    assert (
        out["spec"]["affinity"]
        == inject(pod(), spread(requiredNodeSelector={"matchExpressions": [ZONE_A]}), "a", uid=None)["spec"]["affinity"]
    )


def test_the_patch_comes_last_and_may_override_tolerations() -> None:
    spot = {"key": "spot", "operator": "Exists"}
    only = {"key": "only", "operator": "Exists"}
    ws = spread(tolerations=[spot], patch={"spec": {"tolerations": [only]}, "metadata": {"labels": {"pool": "a"}}})
    out = inject(pod(tolerations=[{"key": "mine", "operator": "Exists"}]), ws, "a", uid=None)
    assert out["spec"]["tolerations"] == [only]  # an atomic list: the patch replaces it
    assert out["metadata"]["labels"] == {"pool": "a"}


def test_patch_merges_containers_by_name_on_the_whole_pod() -> None:
    ws = spread(patch={"spec": {"containers": [{"name": "main", "resources": {"limits": {"cpu": "2"}}}]}})
    out = inject(pod(), ws, "a", uid=None)
    assert out["spec"]["containers"] == [{"name": "main", "image": "nginx", "resources": {"limits": {"cpu": "2"}}}]


def test_priority_is_cleared_when_the_patch_changes_the_class() -> None:
    ws = spread(patch={"spec": {"priorityClassName": "high"}})
    out = inject(pod(priorityClassName="low", priority=10), ws, "a", uid=None)
    assert out["spec"]["priorityClassName"] == "high"
    assert "priority" not in out["spec"]
    assert out["spec"]["affinity"] == {"nodeAffinity": {}}


def test_priority_is_kept_when_the_class_is_unchanged() -> None:
    ws = spread(patch={"spec": {"priorityClassName": "low"}})
    assert inject(pod(priorityClassName="low", priority=10), ws, "a", uid=None)["spec"]["priority"] == 10
    ws = spread(patch={"metadata": {"labels": {"x": "y"}}})
    assert inject(pod(priority=10), ws, "a", uid=None)["spec"]["priority"] == 10


def test_a_bad_patch_raises() -> None:
    ws = spread(patch={"spec": {"containers": {"name": "main"}}})
    with pytest.raises(PatchError):
        inject(pod(), ws, "a", uid=None)


def test_unknown_subset_leaves_the_pod_alone() -> None:
    assert inject(pod(), spread(), "gone", uid=None) == pod()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"name":"ws","subset":"a"}', Matched("ws", "a")),
        ('{"name":"ws","subset":"a","uid":"u"}', Matched("ws", "a", "u")),
        ('{"Name":"ws","Subset":"a"}', Matched("ws", "a")),  # keys are case-insensitive
        ('{"NAME":"ws","sUbSeT":"a","extra":1}', Matched("ws", "a")),
        ('{"name":"x","Name":"ws","subset":"a"}', Matched("ws", "a")),  # the last spelling wins, as in Go
        ('{"name":null,"subset":"a"}', Matched("", "a")),
        ("", None),
        ("not json", None),
        ('["ws"]', None),
        ('{"name":1,"subset":"a"}', None),
    ],
)
def test_annotation_parsing(text: str, expected: Matched | None) -> None:
    assert matched({"metadata": {"annotations": {MATCHED_ANNOTATION: text}}}) == expected


def test_annotation_round_trips() -> None:
    for m in (Matched("ws", "a"), Matched("ws", "b", "u-2")):
        assert matched({"metadata": {"annotations": {MATCHED_ANNOTATION: annotation(m)}}}) == m
    assert matched({"metadata": {}}) is None


def test_an_annotation_is_decoded_once_however_many_passes_read_it() -> None:
    text = annotation(Matched("ws", "s1", "u-1"))
    first = matched({"metadata": {"annotations": {MATCHED_ANNOTATION: text}}})
    again = matched({"metadata": {"annotations": {MATCHED_ANNOTATION: "".join(list(text))}}})  # an equal new string
    assert first == Matched("ws", "s1", "u-1") and again is first
    # not a string (never from the API server): not an annotation of ours
    assert matched({"metadata": {"annotations": {MATCHED_ANNOTATION: b'{"name":"ws","subset":"s2"}'}}}) is None
