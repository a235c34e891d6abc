"""The simulated Kruise controllers' decisions, without a cluster."""

from typing import Any

import pytest

from united.devcluster.workloads import (
    REVISION_LABEL,
    deletion_cost,
    namespace_terminating,
    ordinal_partition,
    partition_count,
    plan_clone_set,
    plan_stateful_set,
    selector_matches,
    selector_string,
    template_revision,
    workload_status,
)
from united.kube.errors import error_from_status

OLD, NEW = "web-old", "web-new"


def pod(
    name: str,
    revision: str,
    *,
    node: str | None = "n1",
    ready: bool = True,
    deleting: bool = False,
    created: str = "2024-01-01T00:00:00Z",
    cost: str | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "creationTimestamp": created,
        "labels": {REVISION_LABEL: revision},
    }
    if cost is not None:
        meta["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": cost}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-02T00:00:00Z"
    return {
        "metadata": meta,
        "spec": {"nodeName": node} if node else {},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def test_selector_string_is_canonical() -> None:
    selector = {
        "matchLabels": {"b": "2", "a": "1"},
        "matchExpressions": [
            {"key": "z", "operator": "In", "values": ["y", "x"]},
            {"key": "q", "operator": "NotIn", "values": ["v"]},
            {"key": "e", "operator": "Exists"},
            {"key": "d", "operator": "DoesNotExist"},
        ],
    }
    assert selector_string(selector) == "a=1,b=2,z in (x,y),q notin (v),e,!d"


def test_selector_matching() -> None:
    selector = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fe"]}],
    }
    assert selector_matches(selector, {"app": "web", "tier": "fe", "x": "y"})
    assert not selector_matches(selector, {"app": "web", "tier": "be"})
    assert not selector_matches({}, {"app": "web"})


def test_template_revision_depends_on_content_not_key_order() -> None:
    a = template_revision("web", {"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}})
    b = template_revision("web", {"spec": {"x": 1}, "metadata": {"labels": {"a": "1"}}})
    c = template_revision("web", {"spec": {"x": 2}, "metadata": {"labels": {"a": "1"}}})
    assert a == b != c
    assert a.startswith("web-") and len(a) == len("web-") + 10


@pytest.mark.parametrize(
    ("strategy", "replicas", "expected"),
    [
        ({}, 5, 0),
        ({"partition": 2}, 5, 2),
        ({"rollingUpdate": {"partition": 3}}, 5, 3),
        ({"partition": "50%"}, 5, 3),
        ({"partition": 9}, 5, 5),
        ({"partition": -1}, 5, 0),
    ],
)
def test_clone_set_partition_count(strategy: dict[str, Any], replicas: int, expected: int) -> None:
    assert partition_count({"spec": {"updateStrategy": strategy}}, replicas) == expected


def test_stateful_set_partition_is_an_ordinal() -> None:
    assert ordinal_partition({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 2}}}}) == 2
    assert ordinal_partition({"spec": {}}) == 0


def test_clone_set_scales_up_at_the_update_revision() -> None:
    plan = plan_clone_set([pod("a", NEW)], replicas=3, partition=0, update_revision=NEW, current_revision=NEW)
    assert plan.create == ((NEW, None), (NEW, None)) and plan.delete == ()


def test_terminating_pods_do_not_count() -> None:
    pods = [pod("a", NEW), pod("b", NEW, deleting=True)]
    plan = plan_clone_set(pods, replicas=2, partition=0, update_revision=NEW, current_revision=NEW)
    assert plan.create == ((NEW, None),)


def test_clone_set_scale_down_prefers_unscheduled_then_unready_then_newest() -> None:
    pods = [
        pod("old-ready", NEW, created="2024-01-01T00:00:00Z"),
        pod("new-ready", NEW, created="2024-01-03T00:00:00Z"),
        pod("unready", NEW, ready=False),
        pod("pending", NEW, node=None, ready=False),
    ]
    plan = plan_clone_set(pods, replicas=1, partition=0, update_revision=NEW, current_revision=NEW)
    assert plan.delete == ("pending", "unready", "new-ready")


@pytest.mark.parametrize(
    ("value", "cost"),
    [
        ("300", 300),
        ("-100", -100),
        ("+7", 7),
        ("0", 0),
        ("2147483647", 2**31 - 1),
        ("-2147483648", -(2**31)),
        ("2147483648", 0),
        ("1.5", 0),
        (" 5", 0),
        ("5_0", 0),
        ("", 0),
        ("abc", 0),
        (None, 0),
    ],
)
def test_deletion_cost_is_an_int32_or_zero(value: str | None, cost: int) -> None:
    assert deletion_cost(pod("p", NEW, cost=value)) == cost


def test_clone_set_scale_in_removes_the_lowest_deletion_cost_first() -> None:
    """WorkloadSpread's costs: -200 (over subset-1's max) before -100 (over subset-0's),
    then 100, 200, 300; pods without the annotation count as 0."""
    pods = [
        pod("a-300", NEW, cost="300", created="2024-01-05T00:00:00Z"),
        pod("b-200", NEW, cost="200", created="2024-01-04T00:00:00Z"),
        pod("c-100", NEW, cost="100"),
        pod("d-minus-100", NEW, cost="-100"),
        pod("e-minus-200", NEW, cost="-200", created="2023-01-01T00:00:00Z"),
        pod("f-none", NEW, created="2024-01-09T00:00:00Z"),
    ]
    plan = plan_clone_set(pods, replicas=2, partition=0, update_revision=NEW, current_revision=NEW)
    assert plan.delete == ("e-minus-200", "d-minus-100", "f-none", "c-100")


def test_equal_costs_fall_back_to_the_active_pods_order() -> None:
    pods = [
        pod("old", NEW, cost="100", created="2024-01-01T00:00:00Z"),
        pod("newest", NEW, cost="100", created="2024-01-03T00:00:00Z"),
        pod("old-revision", OLD, cost="100", created="2024-01-01T00:00:00Z"),
        pod("unready-expensive", NEW, cost="900", ready=False),
        pod("pending-expensive", NEW, cost="900", node=None, ready=False),
    ]
    plan = plan_clone_set(pods, replicas=1, partition=0, update_revision=NEW, current_revision=NEW)
    # Unassigned and not-ready pods go first whatever their cost, as Kubernetes ranks them.
    assert plan.delete == ("pending-expensive", "unready-expensive", "old-revision", "newest")


def test_a_pending_pod_goes_before_a_running_one() -> None:
    running, pending = pod("running", NEW, ready=False), pod("pending", NEW, ready=False)
    running["status"]["phase"], pending["status"]["phase"] = "Running", "Pending"
    plan = plan_clone_set([running, pending], replicas=1, partition=0, update_revision=NEW, current_revision=NEW)
    assert plan.delete == ("pending",)


def test_clone_set_update_keeps_partition_pods_at_the_old_revision() -> None:
    pods = [pod(f"p{i}", OLD) for i in range(3)]
    plan = plan_clone_set(pods, replicas=3, partition=1, update_revision=NEW, current_revision=OLD)
    assert len(plan.delete) == 2 and plan.create == ()
    survivors = [p for p in pods if p["metadata"]["name"] not in plan.delete]
    plan = plan_clone_set(survivors, replicas=3, partition=1, update_revision=NEW, current_revision=OLD)
    assert plan.create == ((NEW, None), (NEW, None))


def test_clone_set_scale_up_refills_the_partition_at_the_old_revision() -> None:
    plan = plan_clone_set([pod("a", NEW)], replicas=3, partition=2, update_revision=NEW, current_revision=OLD)
    assert plan.create == ((OLD, None), (OLD, None))


def test_clone_set_without_a_known_old_revision_updates_everything() -> None:
    pods = [pod("a", OLD), pod("b", OLD)]
    plan = plan_clone_set(pods, replicas=2, partition=1, update_revision=NEW, current_revision=NEW)
    assert sorted(plan.delete) == ["a", "b"]


def test_stateful_set_creates_missing_ordinals_and_trims_high_ones() -> None:
    pods = [pod("db-0", NEW), pod("db-3", NEW), pod("db-x", NEW)]
    plan = plan_stateful_set(pods, name="db", replicas=3, partition=0, update_revision=NEW, current_revision=NEW)
    assert plan.create == ((NEW, 1), (NEW, 2))
    assert plan.delete == ("db-3",)


def test_stateful_set_partition_keeps_low_ordinals() -> None:
    pods = [pod(f"db-{i}", OLD) for i in range(3)]
    plan = plan_stateful_set(pods, name="db", replicas=3, partition=1, update_revision=NEW, current_revision=OLD)
    assert plan.delete == ("db-1", "db-2") and plan.create == ()
    plan = plan_stateful_set([pods[0]], name="db", replicas=3, partition=1, update_revision=NEW, current_revision=OLD)
    assert plan.create == ((NEW, 1), (NEW, 2))


def test_stateful_set_waits_for_a_terminating_pod_to_go() -> None:
    plan = plan_stateful_set(
        [pod("db-0", OLD, deleting=True)], name="db", replicas=1, partition=0, update_revision=NEW, current_revision=NEW
    )
    assert plan.create == () and plan.delete == ()


def test_status_counts_ready_and_updated_pods() -> None:
    workload = {
        "kind": "CloneSet",
        "metadata": {"generation": 4},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}},
    }
    pods = [pod("a", NEW), pod("b", NEW, ready=False), pod("c", OLD), pod("d", NEW, deleting=True)]
    status = workload_status(workload, pods, update_revision=NEW, current_revision=OLD, partition=1)
    assert status == {
        "observedGeneration": 4,
        "replicas": 3,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "updatedReplicas": 2,
        "updatedReadyReplicas": 1,
        "currentReplicas": 1,
        "updateRevision": NEW,
        "currentRevision": OLD,
        "labelSelector": "app=web",
        "expectedUpdatedReplicas": 2,
    }


def test_writes_into_a_terminating_namespace_are_not_retried() -> None:
    terminating = error_from_status(
        403,
        {
            "kind": "Status",
            "code": 403,
            "reason": "Forbidden",
            "message": 'pods "web-" is forbidden: unable to create new content in namespace ns '
            "because it is being terminated",
            "details": {
                "name": "web-",
                "kind": "pods",
                "causes": [{"reason": "NamespaceTerminating", "field": "metadata.namespace"}],
            },
        },
    )
    rbac = error_from_status(
        403,
        {"kind": "Status", "code": 403, "reason": "Forbidden", "message": 'pods is forbidden: User "x" cannot create'},
    )
    assert namespace_terminating(terminating)
    assert not namespace_terminating(rbac)
