"""What one UnitedDeployment may ask: the limits, their messages, and that nothing beyond
them is merged (united.api.limits, enforced by united.uniteddeployment.validation)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.uniteddeployment.test_validation import base, errors_of, subsets
from united.api.limits import (
    MAX_PATCH_BYTES,
    MAX_PLACEMENT_BYTES,
    MAX_SPEC_BYTES,
    MAX_SUBSETS,
    MAX_TEMPLATE_BYTES,
    size,
)
from united.uniteddeployment.admission import admission
from united.uniteddeployment.model import parse
from united.uniteddeployment.validation import checks

Doc = dict[str, Any]


def sized(limit: int, **extra: Any) -> Doc:
    """An annotations patch of exactly ``limit`` bytes, plus ``extra`` keys."""
    patch: Doc = {"metadata": {"annotations": {"x": ""}}, **extra}
    patch["metadata"]["annotations"]["x"] = "a" * (limit - size(patch))
    assert size(patch) == limit
    return patch


def with_subsets(n: int, **fields: Any) -> Doc:
    doc = base()
    doc["spec"]["topology"]["subsets"] = [{"name": f"s{i}", **fields} for i in range(n)]
    return doc


def test_at_most_max_subsets() -> None:
    assert errors_of(with_subsets(MAX_SUBSETS)) == []
    assert errors_of(with_subsets(1001)) == ["spec.topology.subsets: Too many: 1001: must have at most 200 items"]


def test_too_many_subsets_are_not_looked_at_one_by_one() -> None:
    """Their patches would be merged and their names checked: that is the cost bounded."""
    assert errors_of(with_subsets(MAX_SUBSETS + 1, patch={"spec": {"containers": {}}})) == [
        "spec.topology.subsets: Too many: 201: must have at most 200 items"
    ]


def test_a_patch_of_max_bytes_is_merged_and_one_more_byte_is_too_long() -> None:
    doc = base()
    subsets(doc)[0]["patch"] = sized(MAX_PATCH_BYTES)
    assert errors_of(doc) == []
    subsets(doc)[0]["patch"] = sized(MAX_PATCH_BYTES + 1, spec={"containers": {}})
    assert errors_of(doc) == ["spec.topology.subsets[0].patch: Too long: must have at most 65536 bytes"]


@pytest.mark.parametrize("field", ["nodeSelectorTerm", "tolerations"])
def test_placement_is_bounded(field: str) -> None:
    expression = {"key": "zone", "operator": "In", "values": ["z" * 1000] * 20}
    value: Any = {"matchExpressions": [expression]} if field == "nodeSelectorTerm" else [expression]
    assert size(value) > MAX_PLACEMENT_BYTES
    doc = base()
    subsets(doc)[1][field] = value
    assert errors_of(doc) == [f"spec.topology.subsets[1].{field}: Too long: must have at most 16384 bytes"]


def test_a_template_too_long_gets_no_patch_merged() -> None:
    doc = base()
    template = doc["spec"]["template"]["deploymentTemplate"]
    template["metadata"]["annotations"] = {"big": "b" * MAX_TEMPLATE_BYTES}
    subsets(doc)[0]["patch"] = {"spec": {"containers": {}}}
    assert errors_of(doc) == ["spec.template.deploymentTemplate: Too long: must have at most 131072 bytes"]
    template["metadata"]["annotations"] = {"big": "b" * (MAX_TEMPLATE_BYTES - size(template) - 10)}
    assert size(template) <= MAX_TEMPLATE_BYTES
    assert errors_of(doc) == [
        'spec.topology.subsets[0].patch.spec.containers: Invalid value: "object": expected a list, got an object'
    ]


def test_a_spec_too_long_is_not_parsed() -> None:
    doc = with_subsets(3, patch=sized(MAX_PATCH_BYTES))
    doc["spec"]["topology"]["subsets"] += [{"name": f"t{i}", "patch": sized(MAX_PATCH_BYTES)} for i in range(6)]
    assert size(doc["spec"]) > MAX_SPEC_BYTES
    doc["spec"]["replicas"] = "not parsed"
    assert errors_of(doc) == ["spec: Too long: must have at most 524288 bytes"]


def test_size_counts_utf8_bytes_of_compact_json() -> None:
    assert size({"a": [1, "é"]}) == len('{"a":[1,"é"]}'.encode())


def test_checks_take_one_step_per_subset_and_validate_is_all_of_them() -> None:
    doc = with_subsets(3)
    subsets(doc)[2]["name"] = "s0"
    steps = list(checks(parse(doc)))
    assert len(steps) == 1 + 3 + 1
    assert [str(e) for e in steps[3]] == ['spec.topology.subsets[2].name: Duplicate value: "s0"']


def test_admission_pauses_once_per_step() -> None:
    steps = admission(with_subsets(5))
    pauses = 0
    with pytest.raises(StopIteration) as done:
        while True:
            next(steps)
            pauses += 1
    assert pauses == 1 + 5 + 1
    assert [s.name for s in done.value.value.spec.subsets] == [f"s{i}" for i in range(5)]
