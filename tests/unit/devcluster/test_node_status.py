"""What the simulated kubelet writes, without a cluster."""

from united.devcluster.nodes import (
    NodeSpec,
    NodeState,
    Taint,
    node_object,
    node_status,
    pod_status,
    status_differs,
    wanted_taints,
    zone_nodes,
)

NOW = "2024-05-01T10:00:00Z"
LATER = "2024-05-01T10:05:00Z"


def test_zone_nodes_are_labelled_per_zone() -> None:
    nodes = zone_nodes(("a", "b"), per_zone=2, pool="general")
    assert [n.name for n in nodes] == ["sim-a-0", "sim-a-1", "sim-b-0", "sim-b-1"]
    labels = nodes[2].all_labels()
    assert labels["topology.kubernetes.io/zone"] == "b"
    assert labels["node.united.dev/pool"] == "general"
    assert labels["kubernetes.io/hostname"] == "sim-b-0"


def test_node_object_carries_taints_and_cordon() -> None:
    state = NodeState(NodeSpec("n", taints=(Taint("gpu", "yes", "NoExecute"),)), cordoned=True)
    node = node_object(state)
    assert node["spec"] == {"taints": [{"key": "gpu", "value": "yes", "effect": "NoExecute"}], "unschedulable": True}


def test_full_node_has_no_allocatable_pods_but_keeps_capacity() -> None:
    state = NodeState(NodeSpec("n", pods=20), full=True)
    status = node_status(state, now=NOW)
    assert status["capacity"]["pods"] == "20"
    assert status["allocatable"]["pods"] == "0"
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True" and ready["lastHeartbeatTime"] == NOW


def test_the_kubelet_reports_the_version_it_is_given() -> None:
    status = node_status(NodeState(NodeSpec("n")), now=NOW, kubelet_version="v1.37.2")
    assert status["nodeInfo"]["kubeletVersion"] == status["nodeInfo"]["kubeProxyVersion"] == "v1.37.2"


def test_condition_taints_are_cleared_and_foreign_taints_kept() -> None:
    current = [
        {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
        {"key": "test/extra", "effect": "NoSchedule"},
    ]
    spec = NodeSpec("n", taints=(Taint("pool", "spot"),))
    assert wanted_taints(current, spec) == [
        {"key": "pool", "value": "spot", "effect": "NoSchedule"},
        {"key": "test/extra", "effect": "NoSchedule"},
    ]


def _pod() -> dict[str, object]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
        "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "img"}]},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]},
    }


def test_ready_pod_status_is_complete() -> None:
    status = pod_status(_pod(), ready=True, pod_ip="127.244.0.1", now=NOW)
    assert status["phase"] == "Running"
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "Initialized": "True",
        "Ready": "True",
        "ContainersReady": "True",
        "PodScheduled": "True",
    }
    (container,) = status["containerStatuses"]
    assert container["ready"] is True and container["state"] == {"running": {"startedAt": NOW}}
    assert status["podIP"] == "127.244.0.1" and status["startTime"] == NOW


def test_status_is_rewritten_only_when_it_changes() -> None:
    pod = _pod()
    ready = pod_status(pod, ready=True, pod_ip="127.244.0.1", now=NOW)
    assert status_differs(pod, ready)
    pod["status"] = ready
    assert not status_differs(pod, pod_status(pod, ready=True, pod_ip="127.244.0.1", now=LATER))
    unready = pod_status(pod, ready=False, pod_ip="127.244.0.1", now=LATER)
    assert status_differs(pod, unready)


def test_transition_times_and_start_times_are_kept() -> None:
    pod = _pod()
    pod["status"] = pod_status(pod, ready=True, pod_ip="127.244.0.1", now=NOW)
    unready = pod_status(pod, ready=False, pod_ip="127.244.0.1", now=LATER)
    times = {c["type"]: c["lastTransitionTime"] for c in unready["conditions"]}
    assert times["Ready"] == LATER and times["Initialized"] == NOW
    assert unready["startTime"] == NOW
    assert unready["containerStatuses"][0]["state"]["running"]["startedAt"] == NOW
    ready_cond = next(c for c in unready["conditions"] if c["type"] == "Ready")
    assert ready_cond["reason"] == "ContainersNotReady"
