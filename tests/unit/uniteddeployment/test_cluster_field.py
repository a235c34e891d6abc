"""``spec.topology.subsets[].cluster``: the model, the exact validation messages, our group only."""

from __future__ import annotations

import copy

import pytest

from tests.unit.uniteddeployment.test_validation import Doc, base, errors_of, subsets
from united.api.field import ManifestError
from united.uniteddeployment.model import parse
from united.uniteddeployment.validation import validate_update


def with_clusters(*clusters: object, api_version: str = "apps.united.io/v1alpha1") -> Doc:
    doc = base()
    doc["apiVersion"] = api_version
    for subset, cluster in zip(subsets(doc), clusters, strict=True):
        if cluster is not ...:
            subset["cluster"] = cluster
    return doc


def test_the_model_reads_the_cluster() -> None:
    ud = parse(with_clusters(..., "member-1"))
    assert [s.cluster for s in ud.spec.subsets] == [None, "member-1"]


def test_empty_means_the_host() -> None:
    assert [s.cluster for s in parse(with_clusters("", ...)).spec.subsets] == [None, None]
    assert errors_of(with_clusters("", ...)) == []


def test_a_valid_cluster_name() -> None:
    assert errors_of(with_clusters("member-1", "eu.west-2")) == []


def test_an_invalid_name() -> None:
    assert errors_of(with_clusters(..., "Member_1")) == [
        'spec.topology.subsets[1].cluster: Invalid value: "Member_1": a lowercase RFC 1123 subdomain must consist '
        "of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
    ]
    assert errors_of(with_clusters("a" * 254, ...)) == [
        f'spec.topology.subsets[0].cluster: Invalid value: "{"a" * 254}": must be no more than 253 characters'
    ]


def test_not_a_string() -> None:
    with pytest.raises(ManifestError) as caught:
        parse(with_clusters(7, ...))
    assert [str(e) for e in caught.value.errors] == [
        "spec.topology.subsets[0].cluster: Invalid value: 7: must be a string"
    ]


@pytest.mark.parametrize("api_version", ["apps.kruise.io/v1alpha1", "apps.kruise.io/v1beta1"])
def test_the_kruise_group_has_no_multi_cluster_subsets(api_version: str) -> None:
    assert errors_of(with_clusters(..., "member-1", api_version=api_version)) == [
        "spec.topology.subsets[1].cluster: Forbidden: multi-cluster subsets need the apps.united.io group"
    ]
    assert errors_of(with_clusters(..., "", api_version=api_version)) == []


def test_moving_a_subset_is_an_allowed_update() -> None:
    old = with_clusters(..., "member-1")
    new = copy.deepcopy(old)
    subsets(new)[1]["cluster"] = "member-2"
    assert [str(e) for e in validate_update(parse(old), parse(new))] == []
    del subsets(new)[1]["cluster"]
    assert [str(e) for e in validate_update(parse(old), parse(new))] == []
