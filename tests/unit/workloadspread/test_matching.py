"""Which WorkloadSpread targets a pod: the owner chain through the cache, filters, cheap misses."""

from __future__ import annotations

from typing import Any

from united.workloadspread.matching import spread_for
from united.workloadspread.model import WorkloadSpread, parse


def spread(name: str = "ws", *, kind: str = "Deployment", target: str = "web", **extra: Any) -> WorkloadSpread:
    group = {"Deployment": "apps/v1", "ReplicaSet": "apps/v1", "CloneSet": "apps.kruise.io/v1alpha1"}[kind]
    meta = {"name": name, "namespace": "ns", **extra.pop("metadata", {})}
    spec = {"targetRef": {"apiVersion": group, "kind": kind, "name": target}, "subsets": [{"name": "a"}], **extra}
    return parse({"apiVersion": "apps.united.io/v1alpha1", "kind": "WorkloadSpread", "metadata": meta, "spec": spec})


def ref(kind: str, name: str, api_version: str = "apps/v1") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": f"uid-{name}", "controller": True}


def pod(owner: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    refs = [owner] if owner else []
    return {"metadata": {"namespace": "ns", "labels": {"app": "web"}, "ownerReferences": refs, **meta}}


class Cache:
    """The owners the caller's informer cache holds; records every lookup."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = {(o["kind"], o["metadata"]["name"]): o for o in objects}
        self.lookups: list[tuple[str, str]] = []

    def __call__(self, namespace: str, reference: dict[str, Any]) -> dict[str, Any] | None:
        self.lookups.append((namespace, reference["name"]))
        return self.objects.get((reference["kind"], reference["name"]))


RS = {"kind": "ReplicaSet", "metadata": {"name": "web-abc", "ownerReferences": [ref("Deployment", "web")]}}


def test_deployment_pod_matched_through_its_replicaset() -> None:
    ws = spread()
    assert spread_for(pod(ref("ReplicaSet", "web-abc")), [ws], Cache(RS)) is ws


def test_direct_target_needs_no_lookup() -> None:
    cache = Cache()
    ws = spread(kind="ReplicaSet", target="web-abc")
    assert spread_for(pod(ref("ReplicaSet", "web-abc")), [ws], cache) is ws
    assert cache.lookups == []


def test_version_of_the_api_is_ignored_group_is_not() -> None:
    clone = spread(kind="CloneSet", target="cs")
    assert spread_for(pod(ref("CloneSet", "cs", "apps.kruise.io/v1beta1")), [clone], Cache()) is clone
    assert spread_for(pod(ref("CloneSet", "cs", "other.io/v1alpha1")), [clone], Cache()) is None


def test_missing_owner_is_not_targeted_rather_than_refused() -> None:
    """Unlike OpenKruise, which rejects the pod creation, the pod is just not matched."""
    assert spread_for(pod(ref("ReplicaSet", "web-abc")), [spread()], Cache()) is None


def test_untargeted_namespace_answers_without_a_lookup() -> None:
    cache = Cache(RS)
    other = pod(ref("ReplicaSet", "web-abc"))
    other["metadata"]["namespace"] = "elsewhere"
    assert spread_for(other, [spread()], cache) is None
    assert spread_for(pod(ref("ReplicaSet", "web-abc")), [], cache) is None
    assert cache.lookups == []


def test_one_walk_serves_every_spread() -> None:
    cache = Cache(RS)
    wanted = spread("c")
    spreads = [spread("a", target="api"), spread("b", target="db"), wanted]
    assert spread_for(pod(ref("ReplicaSet", "web-abc")), spreads, cache) is wanted
    assert cache.lookups == [("ns", "web-abc"), ("ns", "web")]  # each owner once; the Deployment is not cached


def test_owners_of_unknown_kinds_are_not_walked() -> None:
    cache = Cache({"kind": "GameServer", "metadata": {"name": "g", "ownerReferences": [ref("Deployment", "web")]}})
    assert spread_for(pod(ref("GameServer", "g", "game.io/v1")), [spread()], cache) is None
    assert cache.lookups == []


def test_skipped_pods_and_spreads() -> None:
    owner = ref("ReplicaSet", "web-abc")
    cache = Cache(RS)
    assert spread_for(pod(), [spread()], cache) is None  # no controller
    not_controller = {**owner, "controller": False}
    assert spread_for(pod(not_controller), [spread()], cache) is None
    assert spread_for(pod(owner, deletionTimestamp="2026-01-01T00:00:00Z"), [spread()], cache) is None
    finished = pod(owner)
    finished["status"] = {"phase": "Succeeded"}
    assert spread_for(finished, [spread()], cache) is None
    deleting = spread(metadata={"deletionTimestamp": "2026-01-01T00:00:00Z"})
    assert spread_for(pod(owner), [deleting], cache) is None


def test_target_filter_selects_pods() -> None:
    owner = ref("ReplicaSet", "web-abc")
    chosen = spread(targetFilter={"selector": {"matchLabels": {"role": "worker"}}})
    assert spread_for(pod(owner), [chosen], Cache(RS)) is None
    worker = pod(owner)
    worker["metadata"]["labels"]["role"] = "worker"
    assert spread_for(worker, [chosen], Cache(RS)) is chosen


def test_target_filter_without_selector_selects_every_pod() -> None:
    """OpenKruise's webhook selects none here, while its controller counts all."""
    ws = spread(targetFilter={"replicasPathList": ["spec.replicas"]})
    assert spread_for(pod(ref("ReplicaSet", "web-abc")), [ws], Cache(RS)) is ws


def test_an_owner_cycle_ends() -> None:
    loop = {"kind": "ReplicaSet", "metadata": {"name": "r", "ownerReferences": [ref("ReplicaSet", "r")]}}
    cache = Cache(loop)
    assert spread_for(pod(ref("ReplicaSet", "r")), [spread()], cache) is None
    assert len(cache.lookups) <= 8
