"""``admit``: the one path from a raw object to a valid WorkloadSpread."""

from __future__ import annotations

import pytest

from tests.unit.workloadspread.test_validation import base
from united.api.field import ManifestError
from united.api.limits import MAX_SPEC_BYTES
from united.workloadspread.admission import admit
from united.workloadspread.model import KRUISE_ALPHA, WorkloadSpread


def test_admit_returns_the_model() -> None:
    ws = admit(base(KRUISE_ALPHA))
    assert isinstance(ws, WorkloadSpread)
    assert (ws.name, ws.namespace, ws.api_version) == ("web-spread", "default", KRUISE_ALPHA)
    assert [s.name for s in ws.spec.subsets] == ["zone-a", "zone-b", "spot"]
    assert ws.spec.subsets[0].required_node_selector is not None


def test_type_errors_are_reported_before_the_rules() -> None:
    doc = base()
    doc["spec"]["subsets"][0]["name"] = 3
    doc["spec"]["subsets"][1]["name"] = "zone-a"
    with pytest.raises(ManifestError) as e:
        admit(doc)
    assert [str(x) for x in e.value.errors] == ["spec.subsets[0].name: Invalid value: 3: must be a string"]


def test_every_rule_error_is_raised_at_once() -> None:
    doc = base()
    del doc["spec"]["targetRef"]
    doc["spec"]["subsets"][2]["name"] = "zone-b"
    with pytest.raises(ManifestError) as e:
        admit(doc)
    assert [str(x) for x in e.value.errors] == [
        "spec.targetRef: Required value: no targetRef defined in WorkloadSpread",
        'spec.subsets[2].name: Invalid value: "zone-b": duplicated subset name zone-b',
    ]


def test_a_huge_spec_is_refused_unparsed() -> None:
    doc = base()
    doc["spec"]["subsets"] = [{"name": 5, "patch": "x" * MAX_SPEC_BYTES}]
    with pytest.raises(ManifestError) as e:
        admit(doc)
    assert [str(x) for x in e.value.errors] == [f"spec: Too long: must have at most {MAX_SPEC_BYTES} bytes"]


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ([], "<root>: Invalid value: array: must be an object"),
        (
            {"kind": "WorkloadSpread", "apiVersion": "apps.united.io/v1alpha1", "metadata": {"name": "x"}},
            "spec: Required value",
        ),
    ],
)
def test_not_a_workload_spread(obj: object, expected: str) -> None:
    with pytest.raises(ManifestError) as e:
        admit(obj)
    assert str(e.value.errors[0]) == expected
