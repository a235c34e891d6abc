"""Validation of ``updateStrategy.type: Progressive``: exact ``field: message`` errors."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.uniteddeployment.test_validation import Doc, base, errors_of
from united.uniteddeployment.admission import admit

STRATEGY = "spec.updateStrategy"


def progressive(variant: str = "deploymentTemplate", **fields: Any) -> Doc:
    doc = base(variant)
    doc["spec"]["updateStrategy"] = {"type": "Progressive", "progressive": fields}
    return doc


def test_a_full_progressive_strategy_is_valid_and_parsed() -> None:
    doc = progressive(
        waves=[{"subsets": ["a"], "pause": {}}, {"subsets": ["b"], "pause": {"duration": "1m30s"}}],
        maxUnavailable="10%",
        progressDeadlineSeconds=120,
        paused=True,
    )
    assert errors_of(doc) == []
    p = admit(doc).spec.update.progressive
    assert p is not None
    assert [(w.subsets, w.pause, w.pause_seconds) for w in p.waves] == [(("a",), True, None), (("b",), True, 90)]
    assert (p.max_unavailable, p.progress_deadline_seconds, p.paused) == ("10%", 120, True)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"waves": [{"subsets": ["zz"]}]},
            f'{STRATEGY}.progressive.waves[0].subsets[0]: Invalid value: "zz": not a subset of spec.topology.subsets',
        ),
        (
            {"waves": [{"subsets": ["a"]}, {"subsets": ["b", "a"]}]},
            f'{STRATEGY}.progressive.waves[1].subsets[1]: Duplicate value: "a"',
        ),
        (
            {"waves": [{"subsets": []}]},
            f"{STRATEGY}.progressive.waves[0].subsets: Required value: a wave names at least one subset",
        ),
        (
            {"waves": [{"subsets": ["a"], "pause": {"duration": "6x"}}]},
            f'{STRATEGY}.progressive.waves[0].pause.duration: Invalid value: "6x": must be a duration such as 60s, '
            "5m or 1h30m, or an integer number of seconds",
        ),
        (
            {"maxUnavailable": "ten"},
            f'{STRATEGY}.progressive.maxUnavailable: Invalid value: "ten": must be an integer >= 0 or a percentage '
            "from 0% to 100%",
        ),
        (
            {"maxUnavailable": "120%"},
            f'{STRATEGY}.progressive.maxUnavailable: Invalid value: "120%": must be an integer >= 0 or a percentage '
            "from 0% to 100%",
        ),
        (
            {"progressDeadlineSeconds": 0},
            f"{STRATEGY}.progressive.progressDeadlineSeconds: Invalid value: 0: must be greater than 0",
        ),
    ],
)
def test_rules(fields: dict[str, Any], expected: str) -> None:
    assert expected in errors_of(progressive(**fields))


def test_manual_partitions_do_not_combine_with_progressive() -> None:
    doc = progressive()
    doc["spec"]["updateStrategy"]["manualUpdate"] = {"partitions": {"a": 1}}
    assert f"{STRATEGY}.manualUpdate: Forbidden: may not be combined with type Progressive" in errors_of(doc)


def test_progressive_fields_need_the_progressive_type() -> None:
    doc = progressive()
    doc["spec"]["updateStrategy"]["type"] = "Manual"
    assert errors_of(doc) == [f"{STRATEGY}.progressive: Forbidden: may only be set with type Progressive"]


def test_only_our_group_offers_progressive() -> None:
    doc = progressive()
    doc["apiVersion"] = "apps.kruise.io/v1beta1"
    assert errors_of(doc) == [f'{STRATEGY}.type: Unsupported value: "Progressive": supported values: "Manual"']


@pytest.mark.parametrize(
    ("variant", "field", "kind"),
    [("deploymentTemplate", "strategy", "Recreate"), ("statefulSetTemplate", "updateStrategy", "OnDelete")],
)
def test_children_that_cannot_be_held_back_are_refused(variant: str, field: str, kind: str) -> None:
    doc = progressive(variant)
    doc["spec"]["template"][variant]["spec"][field] = {"type": kind}
    assert (
        f'spec.template.{variant}.spec.{field}.type: Invalid value: "{kind}": a Progressive update needs RollingUpdate'
    ) in errors_of(doc)


def test_reservation_does_not_combine_with_progressive() -> None:
    doc = progressive()
    doc["spec"]["topology"]["scheduleStrategy"] = {"type": "Adaptive", "adaptive": {"reserveUnschedulablePods": True}}
    assert (
        "spec.topology.scheduleStrategy.adaptive.reserveUnschedulablePods: Forbidden: may not be combined with a "
        "Progressive update: both set the children's maxUnavailable"
    ) in errors_of(doc)


def test_every_progressive_error_is_reported_at_once() -> None:
    doc = progressive(
        waves=[{"subsets": ["a", "zz"], "pause": {"duration": "6x"}}, {"subsets": ["a"], "pause": {"duration": -3}}],
        maxUnavailable="120%",
    )
    assert errors_of(doc) == [
        f'{STRATEGY}.progressive.waves[0].pause.duration: Invalid value: "6x": must be a duration such as 60s, 5m or '
        "1h30m, or an integer number of seconds",
        f'{STRATEGY}.progressive.waves[0].subsets[1]: Invalid value: "zz": not a subset of spec.topology.subsets',
        f"{STRATEGY}.progressive.waves[1].pause.duration: Invalid value: -3: must be greater than or equal to 0",
        f'{STRATEGY}.progressive.waves[1].subsets[0]: Duplicate value: "a"',
        f'{STRATEGY}.progressive.maxUnavailable: Invalid value: "120%": must be an integer >= 0 or a percentage from '
        "0% to 100%",
    ]
