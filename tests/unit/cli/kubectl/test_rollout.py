"""When ``rollout status`` is done, and what ``rollout pause``/``resume`` write."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from united.cli.kubectl.rollout import (
    RESTARTED_AT,
    RESUME_ANNOTATION,
    RolloutError,
    State,
    pause_patch,
    paused,
    restart_patch,
    resume_mark,
    resume_patch,
    verdict,
)

STATUSES = Path(__file__).resolve().parents[2] / "argocd" / "statuses"


def cond(kind: str, status: bool, reason: str = "R", message: str = "") -> dict[str, Any]:
    return {"type": kind, "status": "True" if status else "False", "reason": reason, "message": message}


def ud(
    *,
    generation: int = 2,
    observed: int = 2,
    replicas: int = 4,
    updated: int = 4,
    ready: int = 4,
    is_ready: bool = True,
    stalled: bool = False,
    **status: Any,
) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "generation": generation, "resourceVersion": "17"},
        "spec": {"replicas": replicas},
        "status": {
            "observedGeneration": observed,
            "replicas": replicas,
            "updatedReplicas": updated,
            "updatedReadyReplicas": min(updated, ready),
            "readyReplicas": ready,
            "conditions": [cond("Ready", is_ready), cond("Stalled", stalled, "Boom", "it broke")],
            **status,
        },
    }


def test_converged_is_done() -> None:
    found = verdict(ud())
    assert found.state is State.DONE
    assert found.message == 'uniteddeployment "web" successfully rolled out'


@pytest.mark.parametrize(
    ("obj", "says"),
    [
        (ud(observed=1), "spec update to be observed"),
        (ud(updated=2), "2 out of 4 new replicas have been updated"),
        (ud(ready=3), "3 of 4 updated replicas are ready"),
        (ud(is_ready=False), "R: "),
    ],
    ids=["generation-not-observed", "not-updated", "not-ready", "ready-false"],
)
def test_waits_until_observed_updated_ready(obj: dict[str, Any], says: str) -> None:
    found = verdict(obj)
    assert found.state is State.WAITING
    assert says in found.message


def test_stalled_condition_fails_with_its_reason() -> None:
    found = verdict(ud(stalled=True, is_ready=False))
    assert found.state is State.FAILED
    assert found.message == 'uniteddeployment "web" rollout stalled: Boom: it broke'


def test_stalled_of_an_old_generation_waits_for_the_new_one() -> None:
    assert verdict(ud(stalled=True, observed=1)).state is State.WAITING


def test_applied_partitions_count_as_updated_like_kubectl_partitioned_rollouts() -> None:
    subsets = [{"name": "a", "partition": 2, "partitionApplied": True}]
    assert verdict(ud(updated=2, subsetStatuses=subsets)).state is State.DONE
    unapplied = [{"name": "a", "partition": 2, "partitionApplied": False}]
    assert verdict(ud(updated=2, subsetStatuses=unapplied)).state is State.WAITING


@pytest.mark.parametrize(
    ("phase", "state"),
    [("Progressing", State.WAITING), ("Paused", State.WAITING), ("Completed", State.DONE), ("Stalled", State.FAILED)],
)
def test_progressive_rollout_phase_decides(phase: str, state: State) -> None:
    rollout = {"revision": "web-abc", "wave": 1, "waves": 3, "phase": phase, "reason": "WavePaused", "message": "m"}
    found = verdict(ud(rollout=rollout))
    assert found.state is state
    if phase == "Paused":
        assert found.message.endswith("Paused (WavePaused), wave 1 (of 3): m...")


def test_completed_rollout_still_waits_for_ready_pods() -> None:
    rollout = {"revision": "web-abc", "wave": 3, "waves": 3, "phase": "Completed"}
    assert verdict(ud(rollout=rollout, ready=3)).state is State.WAITING


def progressive(**strategy: Any) -> dict[str, Any]:
    obj = ud(rollout={"revision": "web-new", "wave": 1, "waves": 3, "phase": "Paused"}, updatedRevision="web-new")
    obj["spec"]["updateStrategy"] = {"type": "Progressive", "progressive": strategy}
    return obj


def test_pause_sets_the_spec_field_guarded_by_the_resource_version() -> None:
    assert pause_patch(progressive()) == {
        "metadata": {"resourceVersion": "17"},
        "spec": {"updateStrategy": {"progressive": {"paused": True}}},
    }


def test_pause_refuses_a_paused_or_non_progressive_rollout() -> None:
    with pytest.raises(RolloutError, match="already paused"):
        pause_patch(progressive(paused=True))
    with pytest.raises(
        RolloutError, match=r'^spec\.updateStrategy\.type: Invalid value: "Manual": rollout pause needs'
    ):
        pause_patch(ud())


def test_resume_unpauses_and_ends_the_current_wave_pause() -> None:
    assert resume_patch(progressive(paused=True)) == {
        "metadata": {"resourceVersion": "17", "annotations": {RESUME_ANNOTATION: "web-new/1"}},
        "spec": {"updateStrategy": {"progressive": {"paused": False}}},
    }


def test_resume_of_a_wave_pause_alone_writes_the_annotation() -> None:
    patch = resume_patch(progressive(paused=False))
    assert patch["metadata"]["annotations"] == {RESUME_ANNOTATION: "web-new/1"}


def test_resume_retries_a_stalled_wave() -> None:
    obj = progressive()
    obj["status"]["rollout"]["phase"] = "Stalled"
    assert resume_patch(obj)["metadata"]["annotations"] == {RESUME_ANNOTATION: "web-new/1"}


def test_resume_refuses_a_rollout_that_is_not_paused() -> None:
    obj = progressive()
    obj["status"]["rollout"]["phase"] = "Progressing"
    with pytest.raises(RolloutError, match="is not paused"):
        resume_patch(obj)


def test_resume_mark_before_a_rollout_status_uses_the_update_revision_and_wave_0() -> None:
    obj = copy.deepcopy(progressive())
    del obj["status"]["rollout"]
    assert resume_mark(obj) == "web-new/0"
    obj["status"]["updatedRevision"] = ""
    assert resume_mark(obj) is None


def test_paused_reads_the_spec_field() -> None:
    assert paused(progressive(paused=True))
    assert not paused(progressive())


@pytest.mark.parametrize(
    ("recorded", "state", "says"),
    [
        ("uniteddeployment-progressing", State.WAITING, "2 of 4 updated replicas are ready"),
        ("uniteddeployment-healthy", State.DONE, "successfully rolled out"),
        ("uniteddeployment-degraded", State.FAILED, "rollout stalled: InvalidSpec: "),
        ("uniteddeployment-suspended-wave", State.WAITING, "Paused (WavePaused), wave 0 (of 2)"),
        ("uniteddeployment-suspended", State.WAITING, "Paused (OperatorPaused)"),
        ("uniteddeployment-degraded-rolloutstuck", State.FAILED, "rollout stalled: RolloutStuck: wave 0 (a)"),
    ],
)
def test_statuses_recorded_from_the_controller(recorded: str, state: State, says: str) -> None:
    """The statuses the Argo CD check is tested on (tests/unit/argocd/statuses), from the real controller."""
    obj = yaml.safe_load((STATUSES / f"{recorded}.yaml").read_text())
    found = verdict(obj)
    assert found.state is state
    assert says in found.message, found.message


@pytest.mark.parametrize("variant", ["deploymentTemplate", "statefulSetTemplate", "cloneSetTemplate"])
def test_restart_annotates_the_pod_template_of_the_template_present(variant: str) -> None:
    obj = ud()
    obj["spec"]["template"] = {variant: {"metadata": {}, "spec": {"template": {"metadata": {"labels": {"a": "b"}}}}}}
    patch = restart_patch(obj, now="2026-11-28T15:00:00Z")
    assert patch == {
        "metadata": {"resourceVersion": "17"},
        "spec": {
            "template": {
                variant: {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: "2026-11-28T15:00:00Z"}}}}}
            }
        },
    }


def test_restart_without_a_template_is_refused_with_its_field() -> None:
    with pytest.raises(RolloutError, match=r"^spec\.template: Invalid value"):
        restart_patch(ud(), now="2026-11-28T15:00:00Z")
