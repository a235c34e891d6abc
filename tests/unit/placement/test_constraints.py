"""Scheduling constraints a subset writes into pods, checked as Kubernetes core checks them."""

from __future__ import annotations

from typing import Any

import pytest

from united.api.field import Path
from united.placement.constraints import node_selector_term_errors, preferred_terms_errors, toleration_errors
from united.placement.podtemplate import RESTART_POLICIES, pod_template_errors

P = Path("p")


def lines(errors: list[Any]) -> list[str]:
    return [str(e) for e in errors]


@pytest.mark.parametrize(
    ("terms", "expected"),
    [
        ([{"weight": 1, "preference": {}}, {"weight": 100, "preference": {"matchFields": []}}], []),
        ([{"weight": 101, "preference": {}}], ["p[0].weight: Invalid value: 101: must be in the range 1-100"]),
        ([{"weight": True, "preference": {}}], ["p[0].weight: Invalid value: true: must be in the range 1-100"]),
        ([{"weight": 5, "preference": []}], ["p[0].preference: Invalid value: array: must be an object"]),
        (
            [
                {
                    "weight": 5,
                    "preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]},
                }
            ],
            [
                "p[0].preference.matchFields[0].values: Required value: "
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
            ],
        ),
    ],
)
def test_preferred_terms(terms: list[Any], expected: list[str]) -> None:
    assert lines(preferred_terms_errors(terms, P)) == expected


@pytest.mark.parametrize(
    ("term", "expected"),
    [
        ({"matchExpressions": "x"}, ['p.matchExpressions: Invalid value: "x": must be an array']),
        ({"matchExpressions": [None]}, ["p.matchExpressions[0]: Invalid value: null: must be an object"]),
        (
            {"matchExpressions": [{"key": 1.5, "operator": "In", "values": "a"}], "matchFields": [{"values": [2]}]},
            [
                "p.matchExpressions[0].key: Invalid value: 1.5: must be a string",
                'p.matchExpressions[0].values: Invalid value: "a": must be an array',
                "p.matchFields[0].values[0]: Invalid value: 2: must be a string",
            ],
        ),
        (
            {"matchExpressions": [{"key": "n", "operator": "Gt", "values": ["x"]}]},
            [
                "p.matchExpressions[0].values: Required value: "
                "must be specified single value when `operator` is 'Lt' or 'Gt'"
            ],
        ),
    ],
)
def test_node_selector_terms_from_schemaless_places(term: dict[str, Any], expected: list[str]) -> None:
    assert lines(node_selector_term_errors(term, P)) == expected


def test_toleration_seconds_need_no_execute() -> None:
    assert lines(toleration_errors({"key": "k", "operator": "Exists", "tolerationSeconds": 5}, P)) == [
        "p.effect: Invalid value: null: effect must be 'NoExecute' when `tolerationSeconds` is set"
    ]


def test_restart_policies_of_a_job_pod() -> None:
    pod = {
        "spec": {"restartPolicy": "OnFailure", "activeDeadlineSeconds": 9, "containers": [{"name": "c", "image": "i"}]}
    }
    assert pod_template_errors(pod, P, None, restart_policies=RESTART_POLICIES) == []
    assert lines(pod_template_errors(pod, P, None)) == [
        'p.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"',
        "p.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported",
    ]
