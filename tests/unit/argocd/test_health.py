"""The Argo CD health checks (manifests/argocd) under Debian's lua5.1, on statuses recorded from
the controller on the local control plane (statuses/, each file says where it comes from) and on
the edge cases of the contract's mapping."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.argocd.harness import SCRIPTS, health

STATUSES = Path(__file__).parent / "statuses"
RECORDED = sorted(STATUSES.glob("*.yaml"))


def load(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((STATUSES / name).read_text())
    return doc


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_each_recorded_phase_maps_to_its_health(path: Path) -> None:
    """The file name says the expected health: ``<kind>-<health>[-<detail>].yaml``."""
    obj = yaml.safe_load(path.read_text())
    expected = path.stem.split("-")[1].capitalize()
    status, message = health(obj)
    assert status == expected, message
    assert message


def test_every_health_of_the_contract_is_recorded() -> None:
    united = {p.stem.split("-")[1] for p in RECORDED if p.stem.startswith("uniteddeployment-")}
    spread = {p.stem.split("-")[1] for p in RECORDED if p.stem.startswith("workloadspread-")}
    assert united == {"progressing", "healthy", "degraded", "suspended"}
    assert spread >= {"healthy", "degraded"}


def test_a_wave_pause_is_suspended_with_the_rollouts_message() -> None:
    assert health(load("uniteddeployment-suspended-wave.yaml")) == (
        "Suspended",
        "wave 0 (a): 1/1 subsets updated and ready, paused until resumed",
    )


def test_a_stalled_condition_of_an_older_generation_is_progressing_not_degraded() -> None:
    """The user fixed the spec; the controller has not looked yet."""
    obj = load("uniteddeployment-degraded.yaml")
    obj["metadata"]["generation"] += 1
    assert health(obj) == (
        "Progressing",
        f"Waiting for the controller to observe generation {obj['metadata']['generation']}",
    )


def test_a_new_generation_of_a_healthy_one_is_progressing_until_observed() -> None:
    for name in ("uniteddeployment-healthy.yaml", "workloadspread-healthy.yaml"):
        obj = load(name)
        obj["metadata"]["generation"] += 1
        assert health(obj)[0] == "Progressing", name


def test_no_status_yet_is_progressing() -> None:
    for name in ("uniteddeployment-healthy.yaml", "workloadspread-healthy.yaml"):
        obj = load(name)
        del obj["status"]
        assert health(obj) == ("Progressing", "Waiting for the controller to report status")


def test_a_progressing_rollout_is_progressing_even_when_ready() -> None:
    obj = load("uniteddeployment-healthy.yaml")
    obj["status"]["rollout"] = {"revision": "r", "wave": 1, "waves": 2, "phase": "Progressing", "message": "wave 1"}
    assert health(obj) == ("Progressing", "wave 1")
    obj["status"]["rollout"]["phase"] = "Completed"
    assert health(obj)[0] == "Healthy"


def test_not_ready_without_reconciling_is_progressing() -> None:
    obj = copy.deepcopy(load("uniteddeployment-healthy.yaml"))
    obj["status"]["conditions"] = [c for c in obj["status"]["conditions"] if c["type"] != "Ready"]
    assert health(obj) == ("Progressing", "Waiting for the UnitedDeployment to become Ready")


def test_the_kustomization_ships_each_script_for_both_groups() -> None:
    config = yaml.safe_load((SCRIPTS / "kustomization.yaml").read_text())
    files = config["configMapGenerator"][0]["files"]
    assert sorted(files) == sorted(
        f"resource.customizations.health.{group}_{kind}=health.lua"
        for group in ("apps.united.io", "apps.kruise.io")
        for kind in ("UnitedDeployment", "WorkloadSpread")
    )


def test_a_settled_workloadspread_is_healthy_without_a_ready_condition() -> None:
    """Its pods belong to its workload (whose own health Argo CD judges): no Stalled, no Reconciling is enough."""
    obj = load("workloadspread-healthy.yaml")
    obj["status"]["conditions"] = [c for c in obj["status"]["conditions"] if c["type"] != "Ready"]
    assert health(obj) == ("Healthy", "Ready")
