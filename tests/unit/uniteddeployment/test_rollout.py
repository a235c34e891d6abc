"""The Progressive rollout core: waves, the budget, pauses, the deadline, from plain data."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

from united.api.timestamp import parse_time
from united.uniteddeployment import rollout
from united.uniteddeployment.model import Progressive, Wave, duration_seconds
from united.uniteddeployment.rollout import Counts, SubsetFacts, decide

NEW = "web-new"
OLD = "web-old"
T0 = 1_800_000_000.0
SUBSETS = ["canary", "a", "b"]


def sts(
    replicas: int = 4, *, released: int = 0, updated_available: int = 0, available: int | None = None
) -> SubsetFacts:
    """A StatefulSet/CloneSet child at the new revision with ``released`` pods below its partition."""
    return SubsetFacts(
        replicas,
        True,
        revision=NEW,
        child_replicas=replicas,
        partition=replicas - released,
        counts=Counts(
            available=replicas if available is None else available,
            updated=updated_available,
            updated_ready=updated_available,
            updated_available=updated_available,
            stale=replicas - updated_available,
        ),
    )


def deploy(
    replicas: int = 4, *, revision: str = OLD, max_unavailable: int = 1, updated_available: int = 0
) -> SubsetFacts:
    return SubsetFacts(
        replicas,
        False,
        revision=revision,
        child_replicas=replicas,
        max_unavailable=max_unavailable,
        counts=Counts(
            available=replicas,
            updated=updated_available,
            updated_ready=updated_available,
            updated_available=updated_available,
            stale=replicas - updated_available,
            revisions={NEW: updated_available, OLD: replicas - updated_available},
        ),
    )


def strategy(*waves: Wave, **kw: Any) -> Progressive:
    return Progressive(waves=waves or (Wave(("canary",)), Wave(("a",))), **kw)


def run(
    progressive: Progressive,
    facts: Mapping[str, SubsetFacts],
    *,
    previous: Mapping[str, Any] | None = None,
    now: float = T0,
    annotations: Mapping[str, str] | None = None,
    replicas: int = 12,
    progress: tuple[int, int] = (0, 0),
    previous_progress: tuple[int, int] = (0, 0),
) -> rollout.Decision:
    return decide(
        progressive,
        replicas=replicas,
        revision=NEW,
        facts=facts,
        subsets=SUBSETS,
        previous=previous or {},
        progress=progress,
        previous_progress=previous_progress,
        annotations=annotations or {},
        now=now,
    )


def test_subsets_named_in_no_wave_form_the_last_wave() -> None:
    assert rollout.waves(strategy(Wave(("a",))), SUBSETS) == [("a",), ("canary", "b")]
    assert rollout.waves(strategy(Wave(("canary",)), Wave(("a", "b"))), SUBSETS) == [("canary",), ("a", "b")]
    assert rollout.waves(Progressive(), SUBSETS) == [("canary", "a", "b")]


@pytest.mark.parametrize(
    ("value", "replicas", "expected"),
    [(None, 8, 2), ("10%", 30, 3), ("10%", 5, 1), (3, 10, 3), (0, 10, 1), ("100%", 7, 7), ("10%", 0, 0)],
)
def test_budget_rounds_down_with_at_least_one(value: Any, replicas: int, expected: int) -> None:
    assert rollout.budget(Progressive(max_unavailable=value), replicas) == expected


@pytest.mark.parametrize(("value", "seconds"), [("60s", 60), ("5m", 300), ("1h30m", 5400), (45, 45), ("0s", 0)])
def test_durations(value: Any, seconds: int) -> None:
    assert duration_seconds(value) == seconds


@pytest.mark.parametrize("value", ["6x", "1.5h", "", "-1s", -3, "10", "596524h", "9" * 400 + "s"])
def test_bad_durations(value: Any) -> None:
    with pytest.raises(ValueError, match="must be"):
        duration_seconds(value)


def test_first_wave_gets_the_budget_later_waves_are_held_whole() -> None:
    facts = {"canary": sts(), "a": sts(), "b": sts()}
    d = run(strategy(max_unavailable=2), facts)
    assert {n: t.partition for n, t in d.targets.items()} == {"canary": 2, "a": 4, "b": 4}
    assert {n: t.state for n, t in d.targets.items()} == {"canary": "Updating", "a": "Pending", "b": "Pending"}
    assert d.status["wave"] == 0 and d.status["waves"] == 3 and d.status["phase"] == "Progressing"


def test_released_pods_not_yet_available_use_up_the_budget() -> None:
    facts = {"canary": sts(released=2), "a": sts(), "b": sts()}
    assert run(strategy(max_unavailable=2), facts).targets["canary"].partition == 2
    facts["canary"] = sts(released=2, updated_available=1)
    assert run(strategy(max_unavailable=2), facts).targets["canary"].partition == 1
    facts["canary"] = sts(released=2, updated_available=2)
    assert run(strategy(max_unavailable=2), facts).targets["canary"].partition == 0


def test_pods_unavailable_elsewhere_count_against_the_budget() -> None:
    facts = {"canary": sts(), "a": sts(available=3), "b": sts(available=3)}
    assert run(strategy(max_unavailable=2), facts).targets["canary"].partition == 4
    facts["b"] = sts()
    assert run(strategy(max_unavailable=2), facts).targets["canary"].partition == 3


def test_a_done_wave_without_pause_starts_the_next_one_in_the_same_pass() -> None:
    facts = {"canary": sts(released=4, updated_available=4), "a": sts(), "b": sts()}
    d = run(strategy(max_unavailable=2), facts)
    assert d.status["wave"] == 1
    assert {n: t.partition for n, t in d.targets.items()} == {"canary": 0, "a": 2, "b": 4}
    assert ("Normal", "WaveStarted", "wave 1 (a) started") in d.events


def test_deployments_are_held_at_their_revision_until_their_wave() -> None:
    facts = {"canary": deploy(), "a": deploy(), "b": deploy()}
    d = run(strategy(max_unavailable=2), facts)
    assert d.targets["canary"] == rollout.Target(NEW, 0, 2, "Updating")
    assert d.targets["a"] == rollout.Target(OLD, 0, None, "Pending")
    assert d.targets["b"] == rollout.Target(OLD, 0, None, "Pending")


def test_a_swapped_deployment_keeps_its_share_and_the_next_one_waits_for_budget() -> None:
    progressive = strategy(Wave(("canary", "a")), max_unavailable=2)
    facts = {"canary": deploy(revision=NEW, max_unavailable=2), "a": deploy(), "b": deploy()}
    d = run(progressive, facts)
    assert d.targets["canary"].max_unavailable == 2
    assert d.targets["a"] == rollout.Target(OLD, 0, None, "Pending")
    facts["canary"] = deploy(revision=NEW, max_unavailable=2, updated_available=3)
    d = run(progressive, facts)
    assert d.targets["a"] == rollout.Target(NEW, 0, 1, "Updating")


def test_a_deployment_is_not_swapped_without_budget() -> None:
    facts = {"canary": deploy(), "a": deploy(), "b": sts(available=2)}
    d = run(strategy(max_unavailable=2), facts)
    assert d.targets["canary"] == rollout.Target(OLD, 0, None, "Pending")


def test_a_deployment_whose_status_counts_gone_pods_is_not_swapped_yet() -> None:
    """An undo right after a rollout: the old ReplicaSet's status still counts a pod it just
    deleted; swapped now, the Deployment would scale every running pod down at once (seen in e2e:
    a subset of 3 at 0 ready under a budget of 2)."""
    # deploy(): 4 pods at OLD, all available; (pods, pods at OLD, available) as the status says.
    for reported in ((5, 4, 5), (5, 4, 4), (4, 4, 5), (3, 3, 3), (4, 3, 3)):
        stale = dataclasses.replace(deploy(), reported=reported)
        d = run(strategy(max_unavailable=2), {"canary": stale, "a": deploy(), "b": deploy()})
        assert d.targets["canary"] == rollout.Target(OLD, 0, None, "Pending"), reported
    caught_up = dataclasses.replace(deploy(), reported=(4, 4, 3))
    d = run(strategy(max_unavailable=2), {"canary": caught_up, "a": deploy(), "b": deploy()})
    assert d.targets["canary"] == rollout.Target(NEW, 0, 2, "Updating")


def test_a_swapped_deployment_is_not_held_back_by_its_status() -> None:
    rolling = dataclasses.replace(deploy(revision=NEW, max_unavailable=2), reported=(9, 9, 9))
    d = run(strategy(max_unavailable=2), {"canary": rolling, "a": deploy(), "b": deploy()})
    assert d.targets["canary"] == rollout.Target(NEW, 0, 2, "Updating")


def test_a_finished_deployment_gets_its_own_strategy_back() -> None:
    facts = {"canary": deploy(revision=NEW, max_unavailable=2, updated_available=4), "a": deploy(), "b": deploy()}
    d = run(strategy(max_unavailable=2), facts)
    assert d.targets["canary"] == rollout.Target(NEW, 0, None, "Updated")
    assert d.targets["a"].revision == NEW


def test_a_finished_deployment_not_yet_observed_keeps_its_own_strategy() -> None:
    finished = deploy(revision=NEW, max_unavailable=0, updated_available=4)
    unsettled = dataclasses.replace(finished, settled=False)
    d = run(strategy(max_unavailable=2), {"canary": unsettled, "a": deploy(), "b": deploy()})
    assert d.targets["canary"] == rollout.Target(NEW, 0, None, "Updated")
    assert d.status["wave"] == 0


def test_an_indefinite_pause_holds_until_the_annotation_names_the_wave() -> None:
    progressive = strategy(Wave(("canary",), pause=True), Wave(("a",)), max_unavailable=2)
    facts = {"canary": sts(released=4, updated_available=4), "a": sts(), "b": sts()}
    d = run(progressive, facts)
    assert (d.status["phase"], d.status["reason"], d.status["wave"]) == ("Paused", "WavePaused", 0)
    assert d.targets["a"].partition == 4
    assert d.requeue_after is None
    again = run(progressive, facts, previous=d.status, now=T0 + 3600)
    assert again.status == d.status
    stale = run(progressive, facts, previous=d.status, annotations={rollout.RESUME_ANNOTATION: "web-older/0"})
    assert stale.status["phase"] == "Paused"
    resumed = run(progressive, facts, previous=d.status, annotations={rollout.RESUME_ANNOTATION: f"{NEW}/0"})
    assert (resumed.status["phase"], resumed.status["wave"]) == ("Progressing", 1)
    assert resumed.targets["a"].partition == 2


def test_a_timed_pause_ends_on_time_and_requeues_for_it() -> None:
    progressive = strategy(Wave(("canary",), pause=True, duration="1m"), Wave(("a",)), max_unavailable=2)
    facts = {"canary": sts(released=4, updated_available=4), "a": sts(), "b": sts()}
    d = run(progressive, facts)
    assert d.status["reason"] == "WavePaused"
    assert d.requeue_after == pytest.approx(60.05)
    later = run(progressive, facts, previous=d.status, now=T0 + 45)
    assert later.status == d.status and later.requeue_after == pytest.approx(15.05)
    over = run(progressive, facts, previous=d.status, now=T0 + 60)
    assert (over.status["phase"], over.status["wave"]) == ("Progressing", 1)


def test_no_progress_within_the_deadline_stalls_and_stops_releasing() -> None:
    progressive = strategy(max_unavailable=2, progress_deadline_seconds=100)
    facts = {"canary": sts(released=2), "a": sts(), "b": sts()}
    d = run(progressive, facts)
    assert d.requeue_after == pytest.approx(100.05)
    facts["canary"] = sts(released=2, updated_available=2)
    stuck = run(progressive, {**facts, "canary": sts(released=2)}, previous=d.status, now=T0 + 100)
    assert (stuck.status["phase"], stuck.status["reason"]) == ("Stalled", "RolloutStuck")
    assert [e[:2] for e in stuck.events] == [("Warning", "RolloutStuck")]
    held = run(progressive, facts, previous=stuck.status, now=T0 + 200)
    assert held.status["phase"] == "Stalled" and held.events == ()
    assert held.targets["canary"].partition == 2
    resumed = run(
        progressive, facts, previous=stuck.status, now=T0 + 200, annotations={rollout.RESUME_ANNOTATION: f"{NEW}/0"}
    )
    assert resumed.status["phase"] == "Progressing"
    assert resumed.targets["canary"].partition == 0


def test_progress_restarts_the_deadline() -> None:
    progressive = strategy(max_unavailable=2, progress_deadline_seconds=100)
    facts = {"canary": sts(released=2, updated_available=1), "a": sts(), "b": sts()}
    d = run(progressive, facts)
    later = run(progressive, facts, previous=d.status, now=T0 + 90, progress=(1, 1), previous_progress=(0, 0))
    assert later.status["lastProgressTime"] == rollout.rfc3339(T0 + 90)
    assert run(progressive, facts, previous=later.status, now=T0 + 150).status["phase"] == "Progressing"
    readier = run(progressive, facts, previous=later.status, now=T0 + 150, progress=(0, 2), previous_progress=(1, 1))
    assert readier.status["lastProgressTime"] == rollout.rfc3339(T0 + 150)


def test_operator_pause_holds_everything_where_it_is() -> None:
    progressive = strategy(max_unavailable=2, paused=True, progress_deadline_seconds=10)
    facts = {"canary": sts(released=1, updated_available=1), "a": sts(), "b": deploy()}
    d = run(progressive, facts, now=T0 + 1000)
    assert (d.status["phase"], d.status["reason"]) == ("Paused", "OperatorPaused")
    assert d.targets["canary"].partition == 3
    assert d.targets["b"].revision == OLD


def test_a_new_template_mid_rollout_starts_again_from_wave_zero() -> None:
    previous = {"revision": "web-mid", "wave": 2, "waves": 3, "phase": "Progressing", "since": "2027-01-01T00:00:00Z"}
    facts = {"canary": sts(), "a": sts(), "b": sts()}
    d = run(strategy(max_unavailable=2), facts, previous=previous)
    assert (d.status["revision"], d.status["wave"]) == (NEW, 0)
    assert d.status["since"] == rollout.rfc3339(T0)
    assert {n: t.partition for n, t in d.targets.items()} == {"canary": 2, "a": 4, "b": 4}
    assert d.events[0][1] == "RolloutStarted"


def test_everything_updated_is_completed_whatever_the_pauses() -> None:
    progressive = strategy(Wave(("canary",), pause=True), max_unavailable=2)
    done = sts(released=4, updated_available=4)
    d = run(progressive, {"canary": done, "a": done, "b": done})
    assert (d.status["phase"], d.status["wave"], d.status["waves"]) == ("Completed", 2, 2)
    assert d.status["message"] == "all 2 waves updated"
    assert {t.state for t in d.targets.values()} == {"Updated"}


def test_a_pass_with_nothing_new_decides_the_same_status() -> None:
    facts = {"canary": sts(released=2), "a": sts(), "b": deploy()}
    d = run(strategy(max_unavailable=2), facts)
    assert run(strategy(max_unavailable=2), facts, previous=d.status, now=T0 + 5).status == d.status


def pod(revision: str, *, ready_at: str | None, deleting: bool = False) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True" if ready_at else "False", "lastTransitionTime": ready_at}]
    meta: dict[str, Any] = {"labels": {"rev": revision}}
    if deleting:
        meta["deletionTimestamp"] = "2027-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": "Running", "conditions": conditions}}


def test_counts_honour_min_ready_seconds() -> None:
    now = parse_time("2027-01-01T00:01:00Z")
    assert now is not None
    pods = [
        pod(NEW, ready_at="2027-01-01T00:00:00Z"),
        pod(NEW, ready_at="2027-01-01T00:00:55Z"),
        pod(NEW, ready_at=None),
        pod(OLD, ready_at="2027-01-01T00:00:00Z"),
        pod(OLD, ready_at="2027-01-01T00:00:00Z", deleting=True),
    ]
    c = rollout.counts(pods, revision_label="rev", updated=NEW, min_ready_seconds=10, now=now)
    assert c == Counts(
        available=2,
        updated=3,
        updated_ready=2,
        updated_available=1,
        stale=1,
        available_at=now + 5,
        revisions={NEW: 3, OLD: 1},
    )


def test_deployment_max_unavailable_is_read_as_a_count() -> None:
    child = {"spec": {"replicas": 10, "strategy": {"rollingUpdate": {"maxUnavailable": "25%"}}}}
    assert rollout.rolling_max_unavailable(child) == 2
    assert rollout.rolling_max_unavailable({"spec": {"replicas": 8}}) == 2
    assert rollout.rolling_max_unavailable({"spec": {"strategy": {"rollingUpdate": {"maxUnavailable": 3}}}}) == 3


def overtaken(*, max_surge: int = 1, at_own: int = 2, available: int = 3) -> SubsetFacts:
    """A Deployment that was rolling to MID (2 of 4 pods there) when NEW arrived."""
    return SubsetFacts(
        4,
        False,
        revision="mid",
        child_replicas=4,
        max_unavailable=2,
        max_surge=max_surge,
        counts=Counts(available=available, stale=4, revisions={"mid": at_own, OLD: 4 - at_own}),
    )


def test_a_deployment_overtaken_mid_roll_finishes_it_by_surge_only_outside_its_wave() -> None:
    d = run(strategy(max_unavailable=2), {"canary": deploy(), "a": overtaken(), "b": deploy()})
    assert d.targets["a"] == rollout.Target("mid", 0, 0, "Pending")
    # Its missing pod counts against the budget: the canary gets what is left.
    assert d.targets["canary"] == rollout.Target(NEW, 0, 1, "Updating")


def test_without_surge_the_overtaken_deployment_keeps_one_pod_of_the_budget() -> None:
    d = run(strategy(max_unavailable=2), {"canary": deploy(), "a": overtaken(max_surge=0, available=4), "b": deploy()})
    assert d.targets["a"] == rollout.Target("mid", 0, 1, "Pending")
    assert d.targets["canary"] == rollout.Target(NEW, 0, 1, "Updating")


def test_a_deployment_done_with_its_own_revision_gets_its_strategy_back() -> None:
    d = run(strategy(max_unavailable=2), {"canary": deploy(), "a": overtaken(at_own=4, available=4), "b": deploy()})
    assert d.targets["a"] == rollout.Target("mid", 0, None, "Pending")


def test_max_surge_is_read_as_a_count_rounding_up() -> None:
    child = {"spec": {"replicas": 3, "strategy": {"rollingUpdate": {"maxSurge": "25%"}}}}
    assert rollout.rolling_max_surge(child) == 1
    assert rollout.rolling_max_surge({"spec": {"replicas": 8}}) == 2
    assert rollout.rolling_max_surge({"spec": {"replicas": 8, "strategy": {"rollingUpdate": {"maxSurge": 0}}}}) == 0


def test_the_resume_annotation_ends_the_current_waves_pause_only() -> None:
    """``<revision>/999`` resumes nothing, and ``<revision>/0`` ends wave 0's pause but not
    the pause of wave 1 it leads to."""
    progressive = strategy(Wave(("canary",), pause=True), Wave(("a",), pause=True), Wave(("b",)), max_unavailable=2)
    facts = {"canary": sts(released=4, updated_available=4), "a": sts(), "b": sts()}
    d = run(progressive, facts)
    assert (d.status["phase"], d.status["wave"]) == ("Paused", 0)
    for later in (f"{NEW}/1", f"{NEW}/999", f"{NEW}/" + "9" * 5000, f"{NEW}/00", f"{NEW}/-0"):
        held = run(progressive, facts, previous=d.status, annotations={rollout.RESUME_ANNOTATION: later})
        assert (held.status["phase"], held.status["wave"]) == ("Paused", 0), later
    mark = {rollout.RESUME_ANNOTATION: f"{NEW}/0"}
    resumed = run(progressive, facts, previous=d.status, annotations=mark)
    assert (resumed.status["phase"], resumed.status["wave"]) == ("Progressing", 1)
    facts["a"] = sts(released=4, updated_available=4)
    second = run(progressive, facts, previous=resumed.status, annotations=mark)
    assert (second.status["phase"], second.status["reason"], second.status["wave"]) == ("Paused", "WavePaused", 1)
    assert second.targets["b"].partition == 4
