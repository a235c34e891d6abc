"""What ``united demo --sample`` applies from a sample and the per-subset table it prints, for a
UnitedDeployment and for a WorkloadSpread (from the status the controller writes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from united.devcluster.demo import render_table, split_sample, workload_resource
from united.devcluster.nodes import subset_nodes
from united.kube.client import CLONE_SETS, DEPLOYMENTS

SAMPLES = Path(__file__).resolve().parents[3] / "manifests" / "samples"


def _sample(name: str) -> list[Any]:
    return list(yaml.safe_load_all((SAMPLES / name).read_text()))


def _spread(status: dict[str, Any] | None = None) -> dict[str, Any]:
    _, spread = split_sample(_sample("workloadspread/zones-max.yaml"))
    return {**spread, "status": status} if status is not None else spread


def test_a_workloadspread_sample_gives_the_spread_and_its_target() -> None:
    target, spread = split_sample(_sample("workloadspread/cloneset.yaml"))
    assert target is not None
    assert (target["kind"], spread["kind"]) == ("CloneSet", "WorkloadSpread")
    assert workload_resource(target) == CLONE_SETS
    target, _ = split_sample(_sample("workloadspread/zones-max.yaml"))
    assert target is not None and workload_resource(target) == DEPLOYMENTS


def test_a_unitteddeployment_sample_has_no_separate_target() -> None:
    target, ud = split_sample([None, "text", *_sample("zones-percent.yaml")])
    assert target is None and ud["kind"] == "UnitedDeployment"


@pytest.mark.parametrize(
    ("docs", "message"),
    [
        ([{"kind": "Deployment", "metadata": {"name": "web"}}], "no UnitedDeployment or WorkloadSpread in it"),
        (
            [
                {"kind": "WorkloadSpread", "spec": {"targetRef": {"kind": "Deployment", "name": "web"}}},
                {"kind": "Deployment", "metadata": {"name": "api"}},
            ],
            "no Deployment 'web' in it, the target of its WorkloadSpread",
        ),
    ],
)
def test_what_is_missing_is_said(docs: list[Any], message: str) -> None:
    with pytest.raises(LookupError, match=message):
        split_sample(docs)


def test_a_target_the_demo_cannot_create_is_refused() -> None:
    with pytest.raises(LookupError, match="cannot create a TFJob"):
        workload_resource({"apiVersion": "kubeflow.org/v1", "kind": "TFJob"})


def test_the_spread_table_before_the_controller_wrote_a_status() -> None:
    assert render_table(_spread()).splitlines() == [
        "",
        "web-zones (Deployment web): 0 pod(s) in subsets, 0 in none, Ready=? (waiting for the controller: )",
        "SUBSET  REPLICAS  MAX  REASON  MESSAGE",
        "zone-a  0         4",
        "zone-b  0         4",
        "zone-c  0         4",
    ]


def test_the_spread_table_shows_each_subset_with_its_maximum_and_why() -> None:
    status = {
        "unplacedReplicas": 1,
        "conditions": [{"type": "Ready", "status": "False", "reason": "UnplacedPods", "message": "1 pod(s) ..."}],
        "subsetStatuses": [
            {"name": "zone-a", "replicas": 4, "missingReplicas": 0, "reason": "Full", "message": "4 of 4"},
            {"name": "zone-c", "replicas": 2, "missingReplicas": 2, "reason": "Filling", "message": "2 of 4"},
            {"name": "gone", "replicas": 9, "missingReplicas": 0},
        ],
    }
    spread = _spread(status)
    spread["spec"]["subsets"][2]["maxReplicas"] = None
    spread["spec"]["subsets"][1]["maxReplicas"] = "30%"
    assert render_table(spread).splitlines() == [
        "",
        "web-zones (Deployment web): 15 pod(s) in subsets, 1 in none, Ready=False (UnplacedPods: 1 pod(s) ...)",
        "SUBSET  REPLICAS  MAX  REASON   MESSAGE",
        "zone-a  4         4    Full     4 of 4",
        "zone-b  0         30%",
        "zone-c  2         -    Filling  2 of 4",
    ]


def test_the_uniteddeployment_table_is_unchanged() -> None:
    ud = {
        "kind": "UnitedDeployment",
        "metadata": {"name": "api"},
        "spec": {"replicas": 3},
        "status": {
            "readyReplicas": 3,
            "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "all set"}],
            "subsetStatuses": [
                {
                    "name": "a",
                    "desired": 3,
                    "replicas": 3,
                    "readyReplicas": 3,
                    "updatedReplicas": 3,
                    "reason": "percent",
                }
            ],
        },
    }
    assert render_table(ud).splitlines() == [
        "",
        "api: 3/3 ready, Ready=True (Ready: all set)",
        "SUBSET  DESIRED  REPLICAS  READY  UPDATED  REASON",
        "a       3        3         3      3        percent",
    ]


def test_the_demo_makes_nodes_for_a_spreads_subsets() -> None:
    _, spread = split_sample(_sample("workloadspread/arch-resources.yaml"))
    nodes = subset_nodes(spread, prefix="fit", per_subset=2)
    assert [(n.name, n.arch) for n in nodes] == [
        ("fit-0-0", "amd64"),
        ("fit-0-1", "amd64"),
        ("fit-1-0", "arm64"),
        ("fit-1-1", "arm64"),
    ]
    _, spread = split_sample(_sample("workloadspread/spot-overflow.yaml"))
    assert [n.labels for n in subset_nodes(spread, prefix="fit")] == [
        {"karpenter.sh/capacity-type": "on-demand"},
        {"karpenter.sh/capacity-type": "spot"},
    ]
