"""``topology.rounding`` and ``subsets[].weight``: parsing and validation, exact error lines."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.unit.uniteddeployment.test_validation import Doc, base, edit, errors_of, subsets
from united.uniteddeployment.model import parse


def rounding(value: object) -> Callable[[Doc], None]:
    return lambda d: d["spec"]["topology"].update(rounding=value)


def subset_fields(*fields: dict[str, object]) -> Callable[[Doc], None]:
    def apply(d: Doc) -> None:
        for s, extra in zip(subsets(d), fields, strict=True):
            s.update(extra)

    return apply


def both(*fns: Callable[[Doc], None]) -> Callable[[Doc], None]:
    def apply(d: Doc) -> None:
        for fn in fns:
            fn(d)

    return apply


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            rounding("Banker"),
            'spec.topology.rounding: Unsupported value: "Banker": supported values: "HalfUp", "Monotone"',
        ),
        (rounding(1), "spec.topology.rounding: Invalid value: 1: must be a string"),
        (
            subset_fields({"weight": "3"}, {}),
            'spec.topology.subsets[0].weight: Invalid value: "3": must be an integer',
        ),
        (
            subset_fields({"weight": -1}, {}),
            "spec.topology.subsets[0].weight: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            subset_fields({"weight": 2, "replicas": 1}, {}),
            "spec.topology.subsets[0].weight: Forbidden: may not be set with replicas: "
            "a weight shares what fixed subsets leave",
        ),
        (
            subset_fields({"weight": 0}, {"weight": 0}),
            'spec.topology.subsets: Invalid value: "array": every subset without replicas has weight 0, '
            "but 4 replicas are left for them: give one a positive weight",
        ),
        (
            both(rounding("Monotone"), subset_fields({"weight": 0, "minReplicas": 1}, {"weight": 0})),
            'spec.topology.subsets: Invalid value: "array": every subset without replicas has weight 0, '
            "but 3 replicas are left for them: give one a positive weight",
        ),
        (
            both(
                lambda d: d["spec"]["topology"].update(
                    scheduleStrategy={"type": "Adaptive", "adaptive": {"reserveUnschedulablePods": True}}
                ),
                subset_fields({"weight": 1}, {}),
            ),
            "spec.topology.subsets[0].weight: Forbidden: not supported with reserveUnschedulablePods, "
            "which fills subsets in order",
        ),
        (
            both(rounding("Monotone"), subset_fields({"replicas": "60%"}, {"replicas": "50%"})),
            'spec.topology.subsets: Invalid value: "array": subset percentages sum to 110%, more than 100%',
        ),
        (
            both(rounding("Monotone"), subset_fields({"replicas": 5}, {})),
            'spec.topology.subsets: Invalid value: "array": specified subsets\' replica (5) is greater than '
            "UnitedDeployment replica (4)",
        ),
        (
            both(rounding("Monotone"), subset_fields({"replicas": 1}, {"replicas": "0%"})),
            'spec.topology.subsets: Invalid value: "array": specified subsets\' replica (1) is less than '
            "UnitedDeployment replica (4) and no subset without replicas or with a positive percentage "
            "can take the rest",
        ),
    ],
)
def test_rule(mutate: Callable[[Doc], None], expected: str) -> None:
    assert errors_of(edit(mutate)) == [expected]


def test_weights_and_rounding_are_valid_and_parsed() -> None:
    doc = edit(both(rounding("Monotone"), subset_fields({"weight": 3}, {})))
    assert errors_of(doc) == []
    ud = parse(doc)
    assert ud.spec.rounding == "Monotone"
    assert ud.spec.monotone
    assert [s.weight for s in ud.spec.subsets] == [3, None]
    assert ud.spec.weighted
    assert not parse(base()).spec.weighted
    assert parse(base()).spec.rounding == ""


def test_monotone_accepts_percentages_half_up_cannot_add_up() -> None:
    halves = edit(lambda d: (subset_fields({"replicas": "50%"}, {"replicas": "50%"})(d), d["spec"].update(replicas=3)))
    assert errors_of(halves) == [
        'spec.topology.subsets: Invalid value: "array": sum of indicated subset replicas 4 should not be greater '
        "than UnitedDeployment replicas 3"
    ]
    halves["spec"]["topology"]["rounding"] = "Monotone"
    assert errors_of(halves) == []


def test_zero_weights_are_fine_when_nothing_is_left_for_them() -> None:
    assert errors_of(edit(subset_fields({"replicas": 4}, {"weight": 0}))) == []


def test_kruise_group_manifests_take_the_fields_too() -> None:
    """One schema serves both groups (the compat CRD declares the fields, marked ``united:``), as
    WorkloadSpread's ``minReplicas`` does."""
    doc = edit(both(rounding("Monotone"), subset_fields({"weight": 3}, {})))
    doc["apiVersion"] = "apps.kruise.io/v1beta1"
    assert errors_of(doc) == []
