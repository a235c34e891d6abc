"""Defaults, as OpenKruise's mutating webhook applies them, in memory and idempotent."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from united.uniteddeployment import defaults
from united.uniteddeployment.model import Adaptive, ScheduleStrategy, Spec, Subset, UpdateStrategy, parse

SAMPLES = sorted((Path(__file__).parents[3] / "manifests" / "samples").glob("*.yaml"))


def test_empty_spec_gets_every_default() -> None:
    spec = defaults.spec_defaults(Spec())
    assert spec.replicas == 1
    assert spec.revision_history_limit == 10
    assert spec.update == UpdateStrategy(type="Manual", partitions={})
    assert spec.schedule == ScheduleStrategy(
        type="",
        adaptive=Adaptive(reschedule_critical_seconds=30, unschedulable_duration=300, reserve_unschedulable_pods=False),
    )
    assert spec.subsets == ()


def test_set_values_are_kept() -> None:
    spec = Spec(
        replicas=0,
        revision_history_limit=0,
        update=UpdateStrategy(type="Manual", partitions={"a": 2}),
        schedule=ScheduleStrategy(
            type="Adaptive",
            adaptive=Adaptive(reschedule_critical_seconds=0, unschedulable_duration=0, reserve_unschedulable_pods=True),
        ),
    )
    assert defaults.spec_defaults(spec) == spec


def test_partial_adaptive_is_completed() -> None:
    spec = defaults.spec_defaults(
        Spec(schedule=ScheduleStrategy(type="Adaptive", adaptive=Adaptive(unschedulable_duration=60)))
    )
    assert spec.schedule.adaptive == Adaptive(reschedule_critical_seconds=30, unschedulable_duration=60)
    assert spec.schedule.type == "Adaptive"


def test_other_update_types_are_not_given_partitions() -> None:
    spec = defaults.spec_defaults(Spec(update=UpdateStrategy(type="Auto")))
    assert spec.update == UpdateStrategy(type="Auto", partitions=None)


def test_manual_with_partitions_keeps_them() -> None:
    update = UpdateStrategy(type="", partitions={"a": 1})
    assert defaults.spec_defaults(Spec(update=update)).update == UpdateStrategy(type="Manual", partitions={"a": 1})


def test_elastic_subsets_get_min_replicas_zero() -> None:
    subsets = (Subset(name="a", max_replicas=3), Subset(name="b"), Subset(name="c", min_replicas=2))
    spec = defaults.spec_defaults(Spec(subsets=subsets))
    assert [s.min_replicas for s in spec.subsets] == [0, 0, 2]
    assert [s.max_replicas for s in spec.subsets] == [3, None, None]


@pytest.mark.parametrize(
    "subsets",
    [
        (Subset(name="a"), Subset(name="b")),
        (Subset(name="a", replicas=1), Subset(name="b", max_replicas=3)),
    ],
    ids=["not elastic", "mixed with fixed replicas (invalid, left for validation)"],
)
def test_min_replicas_stays_unset(subsets: tuple[Subset, ...]) -> None:
    assert defaults.spec_defaults(Spec(subsets=subsets)).subsets == subsets


def test_apply_defaults_only_the_spec() -> None:
    ud = parse(
        {
            "apiVersion": "apps.united.io/v1alpha1",
            "kind": "UnitedDeployment",
            "metadata": {"name": "web", "labels": {"a": "b"}},
            "spec": {},
        }
    )
    out = defaults.apply(ud)
    assert out.spec == defaults.spec_defaults(ud.spec)
    assert dataclasses.replace(out, spec=ud.spec) == ud
    assert ud.spec.replicas is None  # the input is untouched


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_defaults_are_idempotent_and_never_written_back(path: Path) -> None:
    raw: dict[str, Any] = yaml.safe_load(path.read_text())
    before = json.dumps(raw, sort_keys=True)
    ud = parse(raw)
    once = defaults.apply(ud)
    assert defaults.apply(once) == once
    assert json.dumps(once.raw, sort_keys=True) == before
