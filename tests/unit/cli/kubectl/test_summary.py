"""What ``kubectl united status`` prints."""

from __future__ import annotations

from typing import Any

from united.cli.kubectl.summary import conditions_text, lines, rows, spread, united

UD: dict[str, Any] = {
    "kind": "UnitedDeployment",
    "metadata": {"name": "web", "namespace": "shop", "generation": 3},
    "spec": {"replicas": 6, "updateStrategy": {"type": "Progressive"}},
    "status": {
        "observedGeneration": 3,
        "replicas": 6,
        "readyReplicas": 5,
        "updatedReplicas": 4,
        "currentRevision": "web-old",
        "updatedRevision": "web-new",
        "rollout": {
            "revision": "web-new",
            "wave": 1,
            "waves": 3,
            "phase": "Paused",
            "reason": "WavePaused",
            "message": "wave 1 (zone-a): pause 60s",
        },
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "Progressing", "message": "subset b: 1 of 2 ready"},
        ],
        "subsetStatuses": [
            {
                "name": "canary",
                "desired": 1,
                "replicas": 1,
                "readyReplicas": 1,
                "updatedReplicas": 1,
                "partition": 0,
                "partitionApplied": True,
                "rollout": "Updated",
                "reason": "fixed",
                "message": "1 fixed",
            },
            {
                "name": "b",
                "desired": 2,
                "replicas": 2,
                "readyReplicas": 1,
                "updatedReplicas": 0,
                "partition": 2,
                "partitionApplied": False,
                "rollout": "Pending",
                "reason": "percent",
                "message": "40%",
                "conditions": [{"type": "Schedulable", "status": "False", "reason": "Unschedulable"}],
            },
        ],
    },
}


def test_united_table_shows_allocation_progress_partition_rollout_and_conditions() -> None:
    table = rows(united(UD))
    assert table == [
        ("SUBSET", "DESIRED", "READY", "UPDATED", "PARTITION", "ROLLOUT", "REASON", "CONDITIONS", "MESSAGE"),
        ("canary", "1", "1/1", "1", "0", "Updated", "fixed", "-", "1 fixed"),
        ("b", "2", "1/2", "0", "2(not applied)", "Pending", "percent", "Schedulable=False", "40%"),
    ]


def test_united_header_says_where_the_rollout_is_and_what_blocks_it() -> None:
    assert lines(united(UD)) == [
        "UnitedDeployment shop/web: generation 3, observed 3",
        "Replicas: 6 desired, 6 current, 5 ready, 4 updated",
        "Revision: web-new (current web-old), strategy Progressive",
        "Rollout: Paused (WavePaused), wave 1 (of 3): wave 1 (zone-a): pause 60s",
        "Conditions: Ready=False",
        "  Ready: subset b: 1 of 2 ready",
    ]


def test_an_object_without_status_shows_dashes() -> None:
    bare = {"kind": "UnitedDeployment", "metadata": {"name": "new", "namespace": "ns", "generation": 1}, "spec": {}}
    shown = united(bare)
    assert lines(shown)[1:4] == [
        "Replicas: - desired, - current, - ready, - updated",
        "Revision: - (current -), strategy Manual",
        "Rollout: -",
    ]
    assert rows(shown) == [rows(united(UD))[0]]


def test_completed_rollout_reads_as_done() -> None:
    done = {**UD, "status": {**UD["status"], "rollout": {"wave": 3, "waves": 3, "phase": "Completed"}}}
    assert "Rollout: Completed, all 3 waves done" in lines(united(done))


def test_conditions_text_names_the_reason_of_true_ones() -> None:
    conditions = [{"type": "Stalled", "status": "True", "reason": "RolloutStuck"}, {"type": "Ready", "status": "False"}]
    assert conditions_text(conditions) == "Stalled=True(RolloutStuck),Ready=False"
    assert conditions_text(None) == "-"


def test_workloadspread_table_counts_bookings() -> None:
    ws = {
        "kind": "WorkloadSpread",
        "metadata": {"name": "spread", "namespace": "shop", "generation": 2},
        "spec": {"targetRef": {"kind": "Deployment", "name": "web"}},
        "status": {
            "observedGeneration": 2,
            "unplacedReplicas": 0,
            "conditions": [{"type": "Ready", "status": "True", "reason": "Placed", "message": "3 pod(s) placed"}],
            "subsetStatuses": [
                {
                    "name": "a",
                    "replicas": 2,
                    "missingReplicas": 1,
                    "creatingPods": {"p1": "t"},
                    "reason": "Available",
                    "message": "1 more",
                },
            ],
        },
    }
    shown = spread(ws)
    assert lines(shown) == [
        "WorkloadSpread shop/spread: generation 2, observed 2",
        "Target: Deployment/web, unplaced replicas: 0",
        "Conditions: Ready=True(Placed)",
    ]
    assert rows(shown)[1] == ("a", "2", "1", "1", "0", "Available", "-", "1 more")
