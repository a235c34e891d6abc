"""The pod projection keeps every field the controllers read: each consumer of cached pods
(UnitedDeployment status, rollout and Adaptive; WorkloadSpread sync with costs, rescheduling and
adoption, eviction booking, matching) runs on tracked full pods, and every field it read must be
in the projected pod with the same value; the same consumers give the same results on projected
pods."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from tests.unit.workloadspread.factories import NS, deployment, pod, replicaset, spread
from united.api.document import Json
from united.kube.client import CONFIG_MAPS, DEPLOYMENTS, PODS
from united.runtime.projection import project_pod, projection
from united.uniteddeployment import adaptive, rollout
from united.uniteddeployment.status import observe
from united.workloadspread import matching
from united.workloadspread.booking import book_delete
from united.workloadspread.sync import sync

Path = tuple[str, ...]
NOW = datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)
ANY = "[]"
"""A list element in a path; ``[type=X]``: the element whose ``type`` is X (a condition)."""


def _step(item: Any) -> str:
    return f"[type={item['type']}]" if isinstance(item, dict) and "type" in item else ANY


class TrackedList(list[Any]):
    def __init__(self, items: list[Any], path: Path, reads: set[Path]) -> None:
        super().__init__(_track(v, (*path, _step(v)), reads) for v in items)
        self.path, self.reads = path, reads

    def __iter__(self) -> Iterator[Any]:
        self.reads.add((*self.path, ANY))  # what follows is read element by element
        return super().__iter__()


class TrackedDict(dict[str, Any]):
    """A dict that records the path of every key read under it (``*``: the whole subtree)."""

    def __init__(self, items: dict[str, Any], path: Path, reads: set[Path]) -> None:
        super().__init__({k: _track(v, (*path, k), reads) for k, v in items.items()})
        self.path, self.reads = path, reads

    def _read(self, key: str) -> None:
        # Reading a list element's discriminator while scanning says which element it is, not
        # that it is needed: the reads of its other fields say that.
        if key != "type" or not self.path or not self.path[-1].startswith("[type="):
            self.reads.add((*self.path, key))

    def __getitem__(self, key: str) -> Any:
        self._read(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self._read(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self._read(str(key))
        return super().__contains__(key)

    def _all(self) -> None:
        self.reads.add((*self.path, "*"))

    def __iter__(self) -> Iterator[str]:
        self._all()
        return super().__iter__()

    def items(self) -> Any:
        self._all()
        return super().items()

    def values(self) -> Any:
        self._all()
        return super().values()

    def keys(self) -> Any:
        self._all()
        return super().keys()


def _track(value: Any, path: Path, reads: set[Path]) -> Any:
    if isinstance(value, dict):
        return TrackedDict(value, path, reads)
    if isinstance(value, list):
        return TrackedList(value, path, reads)
    return value


def _at(value: Any, path: Path) -> list[Any]:
    """Every value at ``path`` (several through ``[]``); ``*`` stands for the value itself."""
    if not path or path[0] == "*":
        return [value]
    head, rest = path[0], path[1:]
    if isinstance(value, list):
        if head == ANY:
            return [v for item in value for v in _at(item, rest)] or [None]
        kind = head[len("[type=") : -1]
        return [v for item in value if isinstance(item, dict) and item.get("type") == kind for v in _at(item, rest)]
    if isinstance(value, dict):
        return _at(value.get(head), rest)
    return [None]


def _shape(values: list[Any], whole: bool) -> list[Any]:
    """Scalars as they are; a map or list only by its kind, since what is read inside it is
    recorded apart — unless the whole of it was read (``*``)."""
    return values if whole else [type(v) if isinstance(v, (dict, list)) else v for v in values]


def full_pod(name: str, subset: str | None, **options: Any) -> Json:
    """A factory pod with everything the API server and the kubelet add besides."""
    p = pod(name, subset, **options)
    p["metadata"] |= {"uid": f"uid-{name}", "resourceVersion": "7", "generation": 1}
    p["spec"] |= {
        "containers": [{"name": "app", "image": "nginx", "env": [{"name": "A", "value": "1"}], "resources": {}}],
        "volumes": [{"name": "token", "projected": {"sources": []}}],
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}],
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}},
        "nodeSelector": {"disk": "ssd"},
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "priority": 0,
    }
    status = p["status"]
    status["conditions"] = [
        {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
        *[c | {"lastProbeTime": None, "message": "0/3 nodes are available"} for c in status["conditions"]],
        {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
    ]
    status["containerStatuses"][0] |= {"image": "nginx", "imageID": "sha", "ready": True, "state": {"running": {}}}
    status |= {"hostIP": "10.0.0.1", "podIP": "10.1.0.1", "startTime": "2026-01-01T00:00:00Z", "qosClass": "Burstable"}
    return p


UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": "x"}
ADAPTIVE = {"scheduleStrategy": {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30}}}
ZONES: list[Json] = [
    {
        "name": "a",
        "requiredNodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
        "maxReplicas": 1,
    },
    {"name": "b", "tolerations": [{"key": "t", "operator": "Exists"}]},
]
NODES: dict[str, Json] = {
    "na": {
        "metadata": {"name": "na", "labels": {"zone": "a"}},
        "spec": {"taints": [{"key": "t", "effect": "NoSchedule"}]},
    },
    "nb": {"metadata": {"name": "nb", "labels": {"zone": "b"}}, "spec": {}},
}


def pods() -> list[Json]:
    """Pods in every state a consumer distinguishes."""
    stuck = UNSCHEDULABLE | {"lastTransitionTime": "2026-03-01T09:59:00Z"}
    return [
        full_pod("ready", "a", node="na", restarts=2),
        full_pod("young", "a", node="na", ready="2026-03-01T09:59:59Z", created="2026-03-01T09:00:00Z"),
        full_pod("other", "b", version="v2", owner="uid-rs-v2", cost="100"),
        full_pod("stuck", "a", phase="Pending", node=None, ready=None, conditions=[stuck]),
        full_pod("failed", "b", phase="Failed", ready=None),
        full_pod("going", "b", deleting=True),
        full_pod("unplaced-a", None, node="na"),
        full_pod("unplaced-b", None, node="nb", ready=None),
        full_pod("nowhere", None, node=None, phase="Pending", ready=None, conditions=[UNSCHEDULABLE]),
    ]


def consumers() -> list[Callable[[list[Json]], Any]]:
    """Everything that reads cached pods, as functions of the pods."""
    revision = "pod-template-hash"
    now = NOW.timestamp()
    replicasets = [replicaset("v1"), replicaset("v2")]

    def owner(namespace: str, ref: Json) -> Json | None:
        return {"ReplicaSet": replicasets[0], "Deployment": deployment(3)}.get(str(ref.get("kind")))

    def ws_sync(ws_spec: Json) -> Callable[[list[Json]], Any]:
        ws = spread(subsets=ZONES, extra_spec=ws_spec)
        return lambda ps: sync(ws, pods=ps, workload=deployment(6), replicasets=replicasets, nodes=NODES, now=NOW)

    return [
        lambda ps: observe(deployment(3), ps, revision_label=revision, updated="v1"),
        lambda ps: rollout.counts(ps, revision_label=revision, updated="v1", min_ready_seconds=10, now=now),
        lambda ps: [(adaptive.unschedulable_since(p), adaptive.ready_since(p)) for p in ps],
        ws_sync({}),
        ws_sync(ADAPTIVE),
        lambda ps: [book_delete(spread(2, 2), p, now=NOW) for p in ps],
        lambda ps: [matching.match(p, [spread(2, 2)], owner) for p in ps],
    ]


def test_every_pod_field_a_consumer_reads_is_kept_with_its_value() -> None:
    full = pods()
    for consume in consumers():
        reads: set[Path] = set()
        consume([_track(copy.deepcopy(p), (), reads) for p in full])
        assert reads, "the consumer read nothing: the tracking is broken"
        for p in full:
            projected = project_pod(copy.deepcopy(p))
            for path in sorted(reads):
                path = path[:-1] if path[-1] == ANY else path  # iterated: its elements' reads are apart
                whole = path[-1] == "*"
                kept, read = _shape(_at(projected, path), whole), _shape(_at(p, path), whole)
                assert kept == read, f"{'.'.join(path)} is read but not kept"


def test_consumers_decide_the_same_on_projected_pods() -> None:
    full = pods()
    projected = [project_pod(copy.deepcopy(p)) for p in full]
    for consume in consumers():
        assert consume(projected) == consume(copy.deepcopy(full))


def test_the_projection_drops_what_no_controller_reads_and_applies_to_pods_only() -> None:
    p = full_pod("ready", "a", node="na")
    projected = project_pod(p)
    assert set(projected["spec"]) == {"nodeName", "nodeSelector", "affinity", "tolerations"}
    assert set(projected["status"]) == {"phase", "conditions", "containerStatuses"}
    assert [c["type"] for c in projected["status"]["conditions"]] == ["Ready"]
    assert projected["status"]["containerStatuses"] == [{"name": "app", "restartCount": 0}]
    assert projected["metadata"] is p["metadata"] and projected["metadata"]["namespace"] == NS
    assert projection(PODS) is project_pod
    assert projection(DEPLOYMENTS) is None and projection(CONFIG_MAPS) is None, "children are kept whole"
