"""v1alpha1 <-> v1beta1 conversion of apps.kruise.io WorkloadSpreads, and ConversionReview answers."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from united.workloadspread.conversion import MAX_STASH_BYTES, STASH_ANNOTATION, ConversionError, convert, review
from united.workloadspread.model import KRUISE_ALPHA, KRUISE_BETA, parse

Doc = dict[str, Any]
TERM = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
PREFERRED = [{"weight": 5, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}]


def alpha() -> Doc:
    return {
        "apiVersion": KRUISE_ALPHA,
        "kind": "WorkloadSpread",
        "metadata": {"name": "ws", "namespace": "default", "uid": "u1", "resourceVersion": "7"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "targetFilter": {"selector": {"matchLabels": {"role": "worker"}}, "replicasPathList": ["spec.replicas"]},
            "subsets": [
                {
                    "name": "a",
                    "requiredNodeSelectorTerm": TERM,
                    "preferredNodeSelectorTerms": PREFERRED,
                    "tolerations": [{"key": "k", "operator": "Exists"}],
                    "maxReplicas": "50%",
                    "patch": {"metadata": {"labels": {"x": "y"}}},
                },
                {"name": "b"},
            ],
            "scheduleStrategy": {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30}},
        },
        "status": {
            "observedGeneration": 3,
            "conditions": [{"type": "Ready", "status": "True", "reason": "", "observedGeneration": 3}],
            "subsetStatuses": [
                {
                    "name": "a",
                    "replicas": 1,
                    "missingReplicas": 0,
                    "creatingPods": {"p1": "2026-01-01T00:00:00Z"},
                    "conditions": [
                        {"type": "Schedulable", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}
                    ],
                    "reason": "Full",
                    "message": "1 of 1",
                }
            ],
            "versionedSubsetStatuses": {
                "abc": [
                    {
                        "name": "a",
                        "replicas": 1,
                        "missingReplicas": 0,
                        "conditions": [{"type": "Schedulable", "status": "True", "reason": "Recovered"}],
                    }
                ]
            },
        },
    }


def test_alpha_to_beta_renames_the_subset_fields_and_fills_condition_reasons() -> None:
    source = alpha()
    beta = convert(source, KRUISE_BETA)
    assert source == alpha(), "the input is not modified"
    assert beta["apiVersion"] == KRUISE_BETA
    a = beta["spec"]["subsets"][0]
    assert a["requiredNodeSelector"] == TERM and a["preferredNodeSelector"] == PREFERRED
    assert "requiredNodeSelectorTerm" not in a and "preferredNodeSelectorTerms" not in a
    assert beta["status"]["subsetStatuses"][0]["conditions"] == [
        {"type": "Schedulable", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "Unknown"}
    ]
    assert beta["status"]["versionedSubsetStatuses"]["abc"][0]["conditions"][0]["reason"] == "Recovered"
    assert beta["status"]["conditions"] == alpha()["status"]["conditions"], "our top-level conditions are untouched"
    assert json.loads(beta["metadata"]["annotations"][STASH_ANNOTATION]) == {
        "conditions": [[["subsetStatuses", 0, 0], alpha()["status"]["subsetStatuses"][0]["conditions"][0]]],
        "annotations": None,
    }, "the condition given a reason is kept for the way back, in annotations made for it"
    rest = copy.deepcopy(beta)
    del rest["metadata"]["annotations"]
    expected = alpha()
    for doc in (rest, expected):
        doc.pop("apiVersion")
        for s in doc["spec"]["subsets"]:
            for key in (
                "requiredNodeSelectorTerm",
                "preferredNodeSelectorTerms",
                "requiredNodeSelector",
                "preferredNodeSelector",
            ):
                s.pop(key, None)
        doc["status"]["subsetStatuses"][0]["conditions"][0].pop("reason", None)
    assert rest == expected, "everything else is copied as it is"


def test_beta_to_alpha_renames_back_and_drops_condition_generations() -> None:
    beta = convert(alpha(), KRUISE_BETA)
    del beta["metadata"]["annotations"]
    beta["status"]["subsetStatuses"][0]["conditions"][0]["observedGeneration"] = 3
    back = convert(beta, KRUISE_ALPHA)
    assert back["spec"]["subsets"][0]["requiredNodeSelectorTerm"] == TERM
    assert back["spec"]["subsets"][0]["preferredNodeSelectorTerms"] == PREFERRED
    assert "observedGeneration" not in back["status"]["subsetStatuses"][0]["conditions"][0]
    assert back["status"]["conditions"][0]["observedGeneration"] == 3
    assert convert(back, KRUISE_BETA) == beta, "the generation (and the reason Unknown) come back"


def test_a_condition_changed_in_the_other_version_keeps_the_change() -> None:
    """The kept copy is restored only where the condition is still what it was converted to:
    an alpha client that rewrote a condition does not get the old generation back."""
    beta = convert(alpha(), KRUISE_BETA)
    del beta["metadata"]["annotations"]
    beta["status"]["subsetStatuses"][0]["conditions"][0].update(observedGeneration=3, reason="Full")
    back = convert(beta, KRUISE_ALPHA)
    back["status"]["subsetStatuses"][0]["conditions"][0].update(status="True", reason="Recovered")
    again = convert(back, KRUISE_BETA)
    assert again["status"]["subsetStatuses"][0]["conditions"][0] == {
        "type": "Schedulable",
        "status": "True",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "reason": "Recovered",
    }
    assert "annotations" not in again["metadata"]


@pytest.mark.parametrize(
    "stash",
    ["not json", "[" * 5000, '{"conditions": 5}', '{"conditions": [[["subsetStatuses", 0, 0], 7]]}', "[]", "3"],
)
def test_a_malformed_stash_is_dropped(stash: str) -> None:
    doc = alpha()
    doc["metadata"]["annotations"] = {STASH_ANNOTATION: stash, "keep": "me"}
    beta = convert(doc, KRUISE_BETA)
    assert beta["metadata"]["annotations"]["keep"] == "me"
    assert json.loads(beta["metadata"]["annotations"][STASH_ANNOTATION])["conditions"][0][0] == ["subsetStatuses", 0, 0]


def test_a_stash_too_large_is_not_written() -> None:
    doc = alpha()
    doc["status"]["subsetStatuses"][0]["conditions"][0]["message"] = "m" * MAX_STASH_BYTES
    beta = convert(doc, KRUISE_BETA)
    assert "annotations" not in beta["metadata"]
    assert beta["status"]["subsetStatuses"][0]["conditions"][0]["reason"] == "Unknown"


def test_the_model_reads_both_versions_alike() -> None:
    a = alpha()
    assert parse(a).spec == parse(convert(a, KRUISE_BETA)).spec


def test_same_version_is_a_copy() -> None:
    a = alpha()
    out = convert(a, KRUISE_ALPHA)
    assert out == a and out is not a


@pytest.mark.parametrize(
    ("obj", "to", "message"),
    [
        (
            {**alpha(), "apiVersion": "apps.united.io/v1alpha1"},
            KRUISE_BETA,
            "apiVersion: 'apps.united.io/v1alpha1' is not one of",
        ),
        (alpha(), "apps.kruise.io/v2", "desiredAPIVersion: 'apps.kruise.io/v2' is not one of"),
        ({**alpha(), "kind": "CloneSet"}, KRUISE_BETA, "kind: 'CloneSet' is not WorkloadSpread"),
        ([], KRUISE_BETA, "object: must be an object"),
    ],
)
def test_unconvertible(obj: Any, to: str, message: str) -> None:
    with pytest.raises(ConversionError, match=message):
        convert(obj, to)


def test_malformed_parts_are_carried_not_fatal() -> None:
    doc = alpha()
    doc["spec"]["subsets"] = [7, {"name": "a", "requiredNodeSelectorTerm": None}]
    doc["status"] = {"subsetStatuses": "x", "versionedSubsetStatuses": {"v": [None, {"conditions": [1]}]}}
    beta = convert(doc, KRUISE_BETA)
    assert beta["spec"]["subsets"] == [7, {"name": "a", "requiredNodeSelector": None}]
    assert beta["status"] == doc["status"]


# Round trips

names = st.text("abcdef", min_size=1, max_size=4)
scalars = st.one_of(st.integers(-5, 5), names, st.booleans(), st.none())
json_values = st.recursive(
    scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(names, c, max_size=3), max_leaves=8
)


def subsets(required_key: str, preferred_key: str) -> st.SearchStrategy[list[Doc]]:
    subset = st.fixed_dictionaries(
        {"name": names},
        optional={
            required_key: st.just(TERM),
            preferred_key: st.just(PREFERRED),
            "maxReplicas": st.one_of(st.integers(0, 9), st.just("20%")),
            "patch": st.dictionaries(names, json_values, max_size=2),
            "tolerations": st.just([{"operator": "Exists"}]),
        },
    )
    return st.lists(subset, max_size=4)


def conditions(*, beta: bool) -> st.SearchStrategy[list[Doc]]:
    """Conditions as each version's schema allows them: v1beta1's may carry an
    ``observedGeneration``; either may lack a ``reason`` (v1beta1 requires one, but a
    converter must not make that worse) or have an empty one."""
    optional: dict[str, st.SearchStrategy[Any]] = {
        "reason": st.one_of(names, st.just("")),
        "message": names,
        "lastTransitionTime": st.just("2026-01-01T00:00:00Z"),
    }
    if beta:
        optional["observedGeneration"] = st.integers(0, 9)
    condition = st.fixed_dictionaries({"type": names, "status": st.sampled_from(["True", "False"])}, optional=optional)
    return st.lists(condition, max_size=3)


def documents(version: str) -> st.SearchStrategy[Doc]:
    beta = version == KRUISE_BETA
    keys = (
        ("requiredNodeSelector", "preferredNodeSelector")
        if beta
        else ("requiredNodeSelectorTerm", "preferredNodeSelectorTerms")
    )
    status = st.fixed_dictionaries(
        {},
        optional={
            "observedGeneration": st.integers(0, 9),
            "subsetStatuses": st.lists(
                st.fixed_dictionaries({"name": names, "conditions": conditions(beta=beta)}), max_size=2
            ),
            "versionedSubsetStatuses": st.dictionaries(
                names,
                st.lists(st.fixed_dictionaries({"name": names, "conditions": conditions(beta=beta)}), max_size=2),
                max_size=2,
            ),
            "extra": json_values,
        },
    )
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just(version),
            "kind": st.just("WorkloadSpread"),
            "metadata": st.fixed_dictionaries(
                {"name": names}, optional={"annotations": st.dictionaries(names, names, max_size=2)}
            ),
            "spec": st.fixed_dictionaries({"subsets": subsets(*keys)}, optional={"unknown": json_values}),
        },
        optional={"status": status},
    )


@given(documents(KRUISE_BETA))
def test_beta_round_trip_is_lossless(doc: Doc) -> None:
    assert convert(convert(doc, KRUISE_ALPHA), KRUISE_BETA) == doc


@given(documents(KRUISE_ALPHA))
def test_alpha_round_trip_is_lossless(doc: Doc) -> None:
    assert convert(convert(doc, KRUISE_BETA), KRUISE_ALPHA) == doc


@given(st.sampled_from([KRUISE_ALPHA, KRUISE_BETA]).flatmap(documents))
def test_a_converted_object_round_trips_too(doc: Doc) -> None:
    """What a client read in the other version, written back and read again, is what it read."""
    other = KRUISE_BETA if doc["apiVersion"] == KRUISE_ALPHA else KRUISE_ALPHA
    converted = convert(doc, other)
    assert convert(convert(converted, doc["apiVersion"]), other) == converted


@given(documents(KRUISE_BETA))
def test_beta_to_alpha_leaves_no_beta_names_nor_generations(doc: Doc) -> None:
    out = convert(doc, KRUISE_ALPHA)
    assert not any("requiredNodeSelector" in s or "preferredNodeSelector" in s for s in out["spec"]["subsets"])
    assert not any("observedGeneration" in c for c in _all_conditions(out))


@given(documents(KRUISE_ALPHA))
def test_alpha_to_beta_gives_every_condition_a_reason(doc: Doc) -> None:
    assert all(c["reason"] for c in _all_conditions(convert(doc, KRUISE_BETA)))


def _all_conditions(doc: Doc) -> list[Doc]:
    status = doc.get("status", {})
    lists = [status.get("subsetStatuses", []), *status.get("versionedSubsetStatuses", {}).values()]
    return [c for subsets in lists for s in subsets for c in s["conditions"]]


# ConversionReview


def request(objects: list[Any], desired: str = KRUISE_BETA, api_version: str = "apiextensions.k8s.io/v1") -> Doc:
    return {
        "apiVersion": api_version,
        "kind": "ConversionReview",
        "request": {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "desiredAPIVersion": desired, "objects": objects},
    }


def test_review_converts_every_object_and_echoes_the_uid() -> None:
    second = alpha()
    second["metadata"]["name"] = "ws2"
    answer = review(request([alpha(), second]))
    assert answer == {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "response": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "result": {"status": "Success"},
            "convertedObjects": [convert(alpha(), KRUISE_BETA), convert(second, KRUISE_BETA)],
        },
    }


def test_review_answers_in_the_request_api_version() -> None:
    assert (
        review(request([], api_version="apiextensions.k8s.io/v1beta1"))["apiVersion"] == "apiextensions.k8s.io/v1beta1"
    )
    assert review(request([], api_version="x/v9"))["apiVersion"] == "apiextensions.k8s.io/v1"


def test_review_reports_the_object_that_failed() -> None:
    bad = alpha()
    bad["kind"] = "Pod"
    answer = review(request([alpha(), bad]))
    assert answer["response"] == {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
        "result": {
            "status": "Failure",
            "message": "request.objects[1] (default/ws): kind: 'Pod' is not WorkloadSpread",
        },
    }


def test_review_reports_a_bad_desired_version() -> None:
    answer = review(request([alpha()], desired="apps.kruise.io/v3"))
    assert answer["response"]["result"] == {
        "status": "Failure",
        "message": "request.objects[0] (default/ws): desiredAPIVersion: 'apps.kruise.io/v3' is not one of "
        "apps.kruise.io/v1alpha1, apps.kruise.io/v1beta1",
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (None, "request: a ConversionReview must carry a request object"),
        ({"request": 5}, "request: a ConversionReview must carry a request object"),
        ({"request": {"uid": "u"}}, "request.objects: must be an array"),
        ({"request": {"uid": "u", "objects": [3]}}, "request.objects[0]: object: must be an object"),
    ],
)
def test_review_of_a_malformed_request_fails_without_raising(body: Any, message: str) -> None:
    answer = review(body)
    assert answer["kind"] == "ConversionReview"
    assert answer["response"]["result"] == {"status": "Failure", "message": message}
    assert "convertedObjects" not in answer["response"]
