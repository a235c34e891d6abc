"""Placing a pod template into a subset: node affinity, tolerations, then the patch."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from united.placement.patch import PatchError
from united.placement.subset import node_affinity, patch_text, place, require, tolerate

Doc = dict[str, Any]
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
ZONE_A = {"key": "zone", "operator": "In", "values": ["a"]}
GPU = {"key": "gpu", "operator": "Exists"}


def pod(**spec: Any) -> Doc:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "main", "image": "nginx", "env": [{"name": "A", "value": "1"}]}], **spec},
    }


def terms_of(p: Doc) -> list[Doc]:
    result: list[Doc] = p["spec"]["affinity"]["nodeAffinity"][REQ]["nodeSelectorTerms"]
    return result


def with_terms(*terms: Doc) -> Doc:
    return pod(affinity={"nodeAffinity": {REQ: {"nodeSelectorTerms": [copy.deepcopy(t) for t in terms]}}})


def test_nothing_to_place_returns_an_equal_copy() -> None:
    original = pod()
    out = place(original, node_selector_term=None, tolerations=None, patch=None)
    assert out == original and out is not original
    assert out["spec"] is not original["spec"]


# Node affinity


def test_expressions_are_anded_into_every_term() -> None:
    out = place(
        with_terms(
            {"matchExpressions": [GPU]}, {"matchExpressions": [{"key": "os", "operator": "In", "values": ["l"]}]}
        ),
        node_selector_term={"matchExpressions": [ZONE_A, {"key": "rack", "operator": "Exists"}]},
        tolerations=None,
        patch=None,
    )
    assert terms_of(out) == [
        {"matchExpressions": [GPU, ZONE_A, {"key": "rack", "operator": "Exists"}]},
        {
            "matchExpressions": [
                {"key": "os", "operator": "In", "values": ["l"]},
                ZONE_A,
                {"key": "rack", "operator": "Exists"},
            ]
        },
    ]


def test_term_with_only_match_fields_gets_expressions() -> None:
    fields = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
    out = place(with_terms(fields), node_selector_term={"matchExpressions": [ZONE_A]}, tolerations=None, patch=None)
    assert terms_of(out) == [{**fields, "matchExpressions": [ZONE_A]}]


@pytest.mark.parametrize(
    "template",
    [
        pod(),
        pod(affinity={}),
        pod(affinity={"podAntiAffinity": {"x": 1}}),
        pod(affinity={"nodeAffinity": {}}),
        pod(affinity={"nodeAffinity": {REQ: {}}}),
        pod(affinity={"nodeAffinity": {REQ: {"nodeSelectorTerms": []}}}),
        pod(affinity=None),
        pod(affinity={"nodeAffinity": None}),
        pod(affinity={"nodeAffinity": {REQ: None}}),
        pod(affinity={"nodeAffinity": {REQ: {"nodeSelectorTerms": None}}}),
    ],
    ids=["no affinity", "empty", "other affinity", "empty node", "empty required", "no terms", *["null"] * 4],
)
def test_missing_or_empty_terms_get_one_term(template: Doc) -> None:
    out = place(template, node_selector_term={"matchExpressions": [ZONE_A]}, tolerations=None, patch=None)
    assert terms_of(out) == [{"matchExpressions": [ZONE_A]}]


def test_other_affinity_and_preferences_are_kept() -> None:
    preferred = [{"weight": 1, "preference": {"matchExpressions": [GPU]}}]
    template = pod(
        affinity={
            "podAntiAffinity": {"x": 1},
            "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred},
        }
    )
    out = place(template, node_selector_term={"matchExpressions": [ZONE_A]}, tolerations=None, patch=None)
    assert out["spec"]["affinity"]["podAntiAffinity"] == {"x": 1}
    assert out["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] == preferred


def test_term_with_null_expressions_gets_them() -> None:
    out = place(
        with_terms({"matchExpressions": None}),
        node_selector_term={"matchExpressions": [ZONE_A]},
        tolerations=None,
        patch=None,
    )
    assert terms_of(out) == [{"matchExpressions": [ZONE_A]}]


@pytest.mark.parametrize(
    "term",
    [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
        {"matchExpressions": []},
        {"matchExpressions": None},
        {},
    ],
)
def test_match_fields_and_empty_terms_are_ignored(term: Doc) -> None:
    template = pod()
    out = place(template, node_selector_term=term, tolerations=None, patch=None)
    assert out == template
    assert "affinity" not in out["spec"]


def test_each_term_gets_its_own_copy_of_the_expressions() -> None:
    out = place(with_terms({}, {}), node_selector_term={"matchExpressions": [ZONE_A]}, tolerations=None, patch=None)
    first, second = terms_of(out)
    first["matchExpressions"][0]["values"].append("b")
    assert second["matchExpressions"] == [ZONE_A]
    assert ZONE_A == {"key": "zone", "operator": "In", "values": ["a"]}


# Tolerations

T1 = {"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}
T2 = {"key": "spot", "operator": "Exists"}


def test_tolerations_are_appended_after_the_templates() -> None:
    out = place(pod(tolerations=[T1]), node_selector_term=None, tolerations=(T2,), patch=None)
    assert out["spec"]["tolerations"] == [T1, T2]


@pytest.mark.parametrize("template", [pod(), pod(tolerations=None), pod(tolerations=[])])
def test_tolerations_without_template_tolerations(template: Doc) -> None:
    out = place(template, node_selector_term=None, tolerations=(T2,), patch=None)
    assert out["spec"]["tolerations"] == [T2]


def test_no_subset_tolerations_leaves_the_templates() -> None:
    out = place(pod(tolerations=[T1]), node_selector_term=None, tolerations=None, patch=None)
    assert out["spec"]["tolerations"] == [T1]


def test_duplicate_tolerations_are_kept() -> None:
    out = place(pod(tolerations=[T1]), node_selector_term=None, tolerations=(T1,), patch=None)
    assert out["spec"]["tolerations"] == [T1, T1]


def test_pod_without_spec_gets_one_for_placement() -> None:
    out = place({"metadata": {}}, node_selector_term={"matchExpressions": [ZONE_A]}, tolerations=(T2,), patch=None)
    assert out["spec"] == {
        "affinity": {"nodeAffinity": {REQ: {"nodeSelectorTerms": [{"matchExpressions": [ZONE_A]}]}}},
        "tolerations": [T2],
    }


# The patch: a strategic merge patch, applied last


def test_patch_merges_containers_and_env_by_name() -> None:
    patch = {
        "metadata": {"labels": {"arch": "arm64"}},
        "spec": {
            "containers": [
                {"name": "main", "env": [{"name": "B", "value": "2"}], "resources": {"limits": {"cpu": "1"}}}
            ]
        },
    }
    out = place(pod(), node_selector_term=None, tolerations=None, patch=patch)
    assert out["metadata"]["labels"] == {"app": "web", "arch": "arm64"}
    (container,) = out["spec"]["containers"]
    assert container["image"] == "nginx"
    assert container["resources"] == {"limits": {"cpu": "1"}}
    assert container["env"] == [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]


def test_patch_is_applied_after_placement_and_replaces_tolerations() -> None:
    out = place(
        pod(tolerations=[T1]),
        node_selector_term={"matchExpressions": [ZONE_A]},
        tolerations=(T2,),
        patch={"spec": {"tolerations": [{"key": "only", "operator": "Exists"}]}},
    )
    assert out["spec"]["tolerations"] == [{"key": "only", "operator": "Exists"}]
    assert terms_of(out) == [{"matchExpressions": [ZONE_A]}]


def test_patch_replaces_node_selector_terms_wholesale() -> None:
    replacement = [{"matchExpressions": [GPU]}]
    out = place(
        with_terms({"matchExpressions": [{"key": "os", "operator": "Exists"}]}),
        node_selector_term={"matchExpressions": [ZONE_A]},
        tolerations=None,
        patch={"spec": {"affinity": {"nodeAffinity": {REQ: {"nodeSelectorTerms": replacement}}}}},
    )
    assert terms_of(out) == replacement


def test_patch_can_delete_what_placement_added() -> None:
    out = place(
        pod(),
        node_selector_term={"matchExpressions": [ZONE_A]},
        tolerations=(T2,),
        patch={"spec": {"affinity": None, "tolerations": None}},
    )
    assert "affinity" not in out["spec"] and "tolerations" not in out["spec"]


def test_empty_patch_changes_nothing() -> None:
    assert place(pod(), node_selector_term=None, tolerations=None, patch={}) == pod()


def test_bad_patch_raises_patch_error() -> None:
    with pytest.raises(PatchError):
        place(pod(), node_selector_term=None, tolerations=None, patch={"spec": {"containers": {"name": "x"}}})


# Inputs are never mutated


def test_inputs_are_not_mutated() -> None:
    template = with_terms({"matchExpressions": [GPU]})
    template["spec"]["tolerations"] = [T1]
    term = {"matchExpressions": [ZONE_A]}
    tolerations = (T2,)
    patch = {"spec": {"containers": [{"name": "main", "image": "other"}]}}
    before = copy.deepcopy((template, term, tolerations, patch))
    out = place(template, node_selector_term=term, tolerations=tolerations, patch=patch)
    assert (template, term, tolerations, patch) == before
    out["spec"]["tolerations"][1]["key"] = "changed"
    terms_of(out)[0]["matchExpressions"][1]["key"] = "changed"
    assert (template, term, tolerations, patch) == before


_EXPR = st.fixed_dictionaries({"key": st.sampled_from(["a", "b", "c"]), "operator": st.just("Exists")})


@settings(max_examples=100, derandomize=True, database=None)
@given(
    existing=st.lists(st.lists(_EXPR, max_size=2), max_size=3),
    added=st.lists(_EXPR, min_size=1, max_size=3),
    template_tolerations=st.lists(st.just(T1), max_size=2),
    subset_tolerations=st.lists(st.just(T2), max_size=2),
)
def test_placement_properties(
    existing: list[list[Doc]], added: list[Doc], template_tolerations: list[Doc], subset_tolerations: list[Doc]
) -> None:
    """Every resulting term is an original term plus the subset's expressions; tolerations concatenate."""
    template = with_terms(*({"matchExpressions": e} for e in existing))
    template["spec"]["tolerations"] = template_tolerations
    before = copy.deepcopy(template)
    out = place(
        template, node_selector_term={"matchExpressions": added}, tolerations=tuple(subset_tolerations), patch=None
    )
    expected_terms = [{"matchExpressions": [*e, *added]} for e in existing] or [{"matchExpressions": added}]
    assert terms_of(out) == expected_terms
    assert out["spec"]["tolerations"] == [*template_tolerations, *subset_tolerations]
    assert template == before


# patch_text


def test_patch_text_is_compact_sorted_json() -> None:
    patch = {"spec": {"containers": [{"name": "m", "image": "x"}]}, "metadata": {"labels": {"b": "1", "a": "2"}}}
    text = patch_text(patch)
    assert text == '{"metadata":{"labels":{"a":"2","b":"1"}},"spec":{"containers":[{"image":"x","name":"m"}]}}'
    assert json.loads(text) == patch


def test_patch_text_of_no_patch_is_empty() -> None:
    assert patch_text(None) == ""
    assert patch_text({}) == "{}"


def test_patch_text_escapes_like_the_api_server() -> None:
    """Go's encoding/json: <>& and U+2028/U+2029 escaped, other non-ASCII kept as UTF-8."""
    patch = {"a": "é<&>\u2028\u2029", "b": 'q"\\'}
    text = patch_text(patch)
    assert text == '{"a":"é\\u003c\\u0026\\u003e\\u2028\\u2029","b":"q\\"\\\\"}'
    assert json.loads(text) == patch


# The pieces the WorkloadSpread webhook places admitted pods with.

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def test_node_affinity_is_created_in_place_over_nulls() -> None:
    spec: dict[str, Any] = {"affinity": None}
    node = node_affinity(spec)
    node["x"] = 1
    assert spec == {"affinity": {"nodeAffinity": {"x": 1}}}
    assert node_affinity({"affinity": {"nodeAffinity": {"kept": True}}}) == {"kept": True}


def test_require_ands_expressions_and_fields_into_every_term() -> None:
    host = {"key": "metadata.name", "operator": "In", "values": ["n1"]}
    zone = {"key": "zone", "operator": "In", "values": ["a"]}
    gpu = {"key": "gpu", "operator": "Exists"}
    node: dict[str, Any] = {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [gpu]}, {"matchFields": [host]}]}}
    term = {"matchExpressions": [zone], "matchFields": [host]}
    require(node, term)
    assert node[REQUIRED]["nodeSelectorTerms"] == [
        {"matchExpressions": [gpu, zone], "matchFields": [host]},
        {"matchFields": [host, host], "matchExpressions": [zone]},
    ]
    node[REQUIRED]["nodeSelectorTerms"][0]["matchExpressions"][1]["values"].append("b")
    assert term["matchExpressions"][0]["values"] == ["a"], "each term gets its own copy"


def test_require_without_terms_makes_the_term_the_only_one() -> None:
    node: dict[str, Any] = {}
    require(node, {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]})
    assert node == {
        REQUIRED: {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}]
        }
    }


def test_tolerate_appends_copies() -> None:
    mine = {"key": "a", "operator": "Exists"}
    spec: dict[str, Any] = {"tolerations": [mine]}
    extra = ({"key": "b", "operator": "Exists"},)
    tolerate(spec, extra)
    assert spec["tolerations"] == [mine, {"key": "b", "operator": "Exists"}]
    assert spec["tolerations"][1] is not extra[0]
