"""Status: counts, per-subset reasons, kstatus conditions, stable output."""

from __future__ import annotations

from united.api.conditions import Problem
from united.api.mergepatch import merge_patch
from united.uniteddeployment.allocation import Allocation, Plan
from united.uniteddeployment.status import ChildView, Facts, compute, hpa_selector, observe, stalled

RESERVED_LABEL = "apps.united.io/united-deployment-reserved-pod"

PLAN = Plan(
    allocator="specified",
    replicas=5,
    subsets=(
        Allocation("a", 2, 0, "fixed", "replicas fixed at 2 by the subset"),
        Allocation("b", 3, 1, "remainder", "takes the 3 replicas no subset fixes"),
    ),
)


def facts(**kw: object) -> Facts:
    base: dict[str, object] = {
        "generation": 4,
        "previous": {},
        "label_selector": "app=web",
        "now": "2026-11-22T00:00:00Z",
        "plan": PLAN,
        "updated_revision": "web-r2",
        "current_revision": "web-r1",
    }
    base.update(kw)
    return Facts(**base)  # type: ignore[arg-type]


def conditions(status: dict[str, object]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}  # type: ignore[attr-defined,index]


def test_converged_subsets_make_ready() -> None:
    views = {"a": ChildView("a1", 2, 2, 2, 2, 2), "b": ChildView("b1", 3, 3, 3, 2, 2)}
    status = compute(facts(children=views, partition_applied={"a": True, "b": True}))
    assert (status["replicas"], status["readyReplicas"], status["updatedReplicas"]) == (5, 5, 4)
    assert conditions(status)["Ready"] == ("True", "AllReplicasReady")
    assert list(conditions(status)) == ["Ready", "UnitedDeploymentUpdated"]  # Reconciling, Stalled: False
    assert status["subsetReplicas"] == {"a": 2, "b": 3}
    assert status["updateStatus"] == {"updatedRevision": "web-r2", "currentPartitions": {"a": 0, "b": 1}}
    assert status["labelSelector"] == "app=web" and status["observedGeneration"] == 4
    assert [s["reason"] for s in status["subsetStatuses"]] == ["fixed", "remainder"]


def test_a_partition_a_deployment_cannot_hold_is_reported_not_pretended() -> None:
    views = {"a": ChildView("a1", 2, 2, 2, 2, 2), "b": ChildView("b1", 3, 3, 3, 2, 2)}
    status = compute(facts(children=views, partition_applied={"a": False, "b": False}))
    b = status["subsetStatuses"][1]
    assert b["partitionApplied"] is False and "partition 1 not applied" in b["message"]
    assert conditions(status)["Ready"] == ("False", "Progressing")


def test_zero_counts_are_not_written_and_a_sparse_status_is_stable() -> None:
    """A count of 0 is absent (readers default it), a partitionApplied goes with a partition
    only; the status computed on top of itself is the same dict (no write), and a status written
    with every zero spelled out is rewritten once without them (the merge patch removes them)."""
    views = {"a": ChildView("a1", 2, 2, 2, 0, 0), "b": ChildView("b1", 3, 0, 0, 0, 0, reserved=0)}
    status = compute(facts(children=views, partition_applied={"a": True, "b": True}))
    a, b = status["subsetStatuses"]
    assert a == {"name": "a", "desired": 2, "replicas": 2, "readyReplicas": 2,
                 "reason": "fixed", "message": "replicas fixed at 2 by the subset"}  # fmt: skip
    assert {k: b[k] for k in ("partition", "partitionApplied")} == {"partition": 1, "partitionApplied": True}
    assert "replicas" not in b and "readyReplicas" not in b
    assert not {"reservedPods", "collisionCount", "updatedReadyReplicas"} & status.keys()
    assert (status["replicas"], status["readyReplicas"], status["updatedReplicas"]) == (2, 2, 0)
    again = compute(facts(children=views, partition_applied={"a": True, "b": True}, previous=status))
    assert again == status
    spelled = {**status, "reservedPods": 0, "subsetStatuses": [{**a, "reservedPods": 0, "partition": 0}, b]}
    rewritten = compute(facts(children=views, partition_applied={"a": True, "b": True}, previous=spelled))
    assert rewritten == status
    assert merge_patch(spelled, rewritten)["reservedPods"] is None


def test_progress_and_missing_children() -> None:
    status = compute(facts(children={"a": ChildView("a1", 2, 2, 1, 0, 0)}))
    assert conditions(status)["Reconciling"][0] == "True"
    assert "subset a: 1 of 2 replicas ready" in status["conditions"][1]["message"]


def test_current_revision_advances_when_all_updated_pods_are_ready() -> None:
    views = {"a": ChildView("a1", 2, 2, 2, 2, 2), "b": ChildView("b1", 3, 3, 3, 3, 3)}
    status = compute(facts(children=views))
    assert status["currentRevision"] == "web-r2"
    assert conditions(status)["UnitedDeploymentUpdated"] == ("True", "UnitedDeploymentRevisionUpdated")


def test_transition_time_kept_while_status_unchanged() -> None:
    first = compute(facts())
    later = compute(facts(previous=first, now="2026-11-23T00:00:00Z"))
    assert later["conditions"] == first["conditions"]
    assert compute(facts(previous=first)) == first


def test_stalled_keeps_counts_and_explains() -> None:
    prev = compute(facts(children={"a": ChildView("a1", 2, 2, 2, 2, 2)}))
    status = stalled(prev, generation=5, problem=Problem("InvalidSpec", "spec.replicas: bad"), now="t")
    assert status["replicas"] == prev["replicas"] and status["observedGeneration"] == 5
    assert conditions(status)["Stalled"] == ("True", "InvalidSpec")
    assert conditions(status)["Ready"] == ("False", "InvalidSpec")


def test_failed_writes_show_as_reconciling() -> None:
    status = compute(facts(problem=Problem("WriteFailed", "create a: boom", stalled=False)))
    assert conditions(status)["Reconciling"] == ("True", "WriteFailed")
    assert "Stalled" not in conditions(status)


def test_observe_counts_active_pods_at_the_updated_revision() -> None:
    def pod(rev: str, ready: bool, **meta: object) -> dict[str, object]:
        return {
            "metadata": {"labels": {"rev": rev}, **meta},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
        }

    child = {
        "metadata": {"name": "c", "generation": 2},
        "spec": {"replicas": 4},
        "status": {"replicas": 4, "readyReplicas": 3, "observedGeneration": 2},
    }
    pods = [pod("r2", True), pod("r2", False), pod("r1", True), pod("r2", True, deletionTimestamp="x")]
    view = observe(child, pods, revision_label="rev", updated="r2")
    assert (view.spec_replicas, view.replicas, view.ready, view.updated, view.updated_ready, view.current) == (
        4,
        4,
        3,
        2,
        1,
        True,
    )


def test_hpa_selector_is_the_canonical_string() -> None:
    selector = {"matchLabels": {"zone": "x", "app": "web"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]}
    assert hpa_selector(selector) == "app=web,tier,zone=x"
    assert hpa_selector(None) == ""


def test_hpa_selector_excludes_reserved_pods_in_canonical_order() -> None:
    """apimachinery sorts requirements by key; OpenKruise appends the filter instead."""
    selector = {"matchLabels": {"zone": "x", "app": "web"}}
    assert hpa_selector(selector, reserved_label=RESERVED_LABEL) == f"app=web,{RESERVED_LABEL}=false,zone=x"
    assert hpa_selector({"matchLabels": {"app": "web"}}, reserved_label=RESERVED_LABEL) == (
        f"app=web,{RESERVED_LABEL}=false"
    )
    assert hpa_selector(None, reserved_label=RESERVED_LABEL) == f"{RESERVED_LABEL}=false"


def test_reserved_pods_are_not_replicas_and_are_explained() -> None:
    views = {"a": ChildView("a1", 2, 2, 0, 0, 0, reserved=2), "b": ChildView("b1", 3, 3, 3, 3, 3)}
    status = compute(facts(children=views))
    assert (status["replicas"], status["reservedPods"], status["readyReplicas"]) == (3, 2, 3)
    assert [s.get("reservedPods", 0) for s in status["subsetStatuses"]] == [2, 0]
    assert conditions(status)["Ready"] == ("False", "Progressing")
    assert "subset a: 0 of 2 replicas ready (2 reserved: unschedulable)" in status["conditions"][0]["message"]


def test_replicas_never_negative_while_the_child_status_lags() -> None:
    status = compute(facts(children={"a": ChildView("a1", 2, 1, 0, 0, 0, reserved=2)}))
    assert status["replicas"] == 0


def test_schedulable_conditions_go_to_their_subsets() -> None:
    cond = {
        "type": "Schedulable",
        "status": "False",
        "lastTransitionTime": "2026-11-22T00:00:00Z",
        "reason": "reschedule",
        "message": "pods pending",
    }
    status = compute(facts(schedulable={"b": cond}))
    a, b = status["subsetStatuses"]
    assert "conditions" not in a
    assert b["conditions"] == [cond]


ROLLOUT = {"revision": "web-r2", "wave": 0, "waves": 2, "phase": "Progressing", "message": "wave 0 (a): 0/1"}


def test_a_progressive_rollout_is_reported_with_each_subset_s_place() -> None:
    views = {"a": ChildView("a1", 2, 2, 2, 2, 2), "b": ChildView("b1", 3, 3, 3, 0, 0)}
    status = compute(facts(children=views, rollout=ROLLOUT, rollout_states={"a": "Updated", "b": "Pending"}))
    assert status["rollout"] == ROLLOUT
    assert [s["rollout"] for s in status["subsetStatuses"]] == ["Updated", "Pending"]
    plain = compute(facts(children=views))
    assert "rollout" not in plain and all("rollout" not in s for s in plain["subsetStatuses"])


def test_a_rollout_still_progressing_keeps_the_ud_reconciling_though_its_children_converged() -> None:
    views = {"a": ChildView("a1", 2, 2, 2, 2, 2), "b": ChildView("b1", 3, 3, 3, 2, 2)}
    applied = {"a": True, "b": True}
    status = compute(facts(children=views, partition_applied=applied, rollout=ROLLOUT))
    assert conditions(status)["Reconciling"] == ("True", "Progressing")
    assert conditions(status)["Ready"] == ("False", "Progressing")
    done = compute(facts(children=views, partition_applied=applied, rollout={**ROLLOUT, "phase": "Completed"}))
    assert conditions(done)["Ready"] == ("True", "AllReplicasReady")


def test_a_paused_rollout_is_not_reconciling_nor_stalled() -> None:
    views = {"a": ChildView("a1", 2, 2, 2, 2, 2), "b": ChildView("b1", 3, 3, 3, 0, 0)}
    paused = {**ROLLOUT, "phase": "Paused", "reason": "WavePaused", "message": "paused until resumed"}
    status = compute(facts(children=views, rollout=paused))
    assert conditions(status) == {
        "Ready": ("False", "WavePaused"),
        "UnitedDeploymentUpdated": ("False", "UnitedDeploymentRevisionUpdating"),
    }
    stuck = compute(
        facts(children=views, rollout={**ROLLOUT, "phase": "Stalled"}, problem=Problem("RolloutStuck", "x"))
    )
    assert conditions(stuck)["Stalled"] == ("True", "RolloutStuck")


def test_cluster_entries() -> None:
    """Remote subsets name their cluster; one whose cluster cannot be used carries ClusterReady
    (after Schedulable), and its last-known counts are summed like any others."""
    schedulable = {"type": "Schedulable", "status": "False", "reason": "ClusterUnreachable"}
    down = {"type": "ClusterReady", "status": "False", "reason": "ClusterUnreachable", "message": "m"}
    views = {"a": ChildView("a1", 2, 2, 2, 2, 2), "b": ChildView("", 3, 3, 3, 3, 3, current=False)}
    status = compute(
        facts(
            children=views,
            clusters={"b": "member-1"},
            schedulable={"b": schedulable},
            cluster_conditions={"b": down},
        )
    )
    a, b = status["subsetStatuses"]
    assert "cluster" not in a and "conditions" not in a
    assert b["cluster"] == "member-1"
    assert b["conditions"] == [schedulable, down]
    assert (status["replicas"], status["readyReplicas"]) == (5, 5)
    assert compute(facts(children=views, clusters={"b": "member-1"}))["subsetStatuses"][1].get("conditions") is None
