"""Which WorkloadSpread targets a pod: the owner chain through the cache, each link proven by
the owner's uid, filters, cheap misses."""

from __future__ import annotations

from typing import Any

from united.workloadspread.matching import Owner, match
from united.workloadspread.model import WorkloadSpread, parse


def spread_for(pod: dict[str, Any], spreads: list[WorkloadSpread], owner: Owner) -> WorkloadSpread | None:
    return match(pod, spreads, owner).spread


def bystander(pod: dict[str, Any], spreads: list[WorkloadSpread], owner: Owner) -> dict[str, Any] | None:
    return match(pod, spreads, owner).bystander


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


def owned(kind: str, name: str, *refs: dict[str, Any]) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name, "uid": f"uid-{name}", "ownerReferences": list(refs)}}


class Cache:
    """The owners the caller's informer cache holds, found by name and uid as the caches find
    them; records every lookup."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = {(o["kind"], o["metadata"]["name"]): o for o in objects}
        self.lookups: list[tuple[str, str]] = []

    def __call__(self, namespace: str, reference: dict[str, Any]) -> dict[str, Any] | None:
        self.lookups.append((namespace, reference["name"]))
        found = self.objects.get((reference["kind"], reference["name"]))
        return found if found is not None and found["metadata"]["uid"] == reference.get("uid") else None


RS = owned("ReplicaSet", "web-abc", ref("Deployment", "web"))
DEPLOY = owned("Deployment", "web")


def test_deployment_pod_matched_through_its_replicaset() -> None:
    ws = spread()
    assert spread_for(pod(ref("ReplicaSet", "web-abc")), [ws], Cache(RS, DEPLOY)) is ws


def test_a_direct_target_is_proven_by_one_lookup() -> None:
    cache = Cache(RS)
    ws = spread(kind="ReplicaSet", target="web-abc")
    assert spread_for(pod(ref("ReplicaSet", "web-abc")), [ws], cache) is ws
    assert cache.lookups == [("ns", "web-abc")]


def test_a_reference_without_the_owners_uid_proves_nothing() -> None:
    """A forged review names the target, or the target's ReplicaSet, without its uid or with
    another: neither the target itself nor anything above the unproven link matches."""
    direct = spread(kind="ReplicaSet", target="web-abc")
    through = spread()
    cache = Cache(RS, DEPLOY)
    for forged in ({**ref("ReplicaSet", "web-abc"), "uid": "guessed"}, {**ref("ReplicaSet", "web-abc"), "uid": None}):
        assert spread_for(pod(forged), [direct], cache) is None
        assert spread_for(pod(forged), [through], cache) is None
    assert spread_for(pod(ref("Deployment", "web") | {"uid": "other"}), [through], cache) is None


def test_version_of_the_api_is_ignored_group_is_not() -> None:
    clone = spread(kind="CloneSet", target="cs")
    cache = Cache(owned("CloneSet", "cs"))
    assert spread_for(pod(ref("CloneSet", "cs", "apps.kruise.io/v1beta1")), [clone], cache) is clone
    assert spread_for(pod(ref("CloneSet", "cs", "other.io/v1alpha1")), [clone], cache) is None


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
    cache = Cache(RS, DEPLOY)
    wanted = spread("c")
    spreads = [spread("a", target="api"), spread("b", target="db"), wanted]
    assert spread_for(pod(ref("ReplicaSet", "web-abc")), spreads, cache) is wanted
    assert cache.lookups == [("ns", "web-abc"), ("ns", "web")]  # each owner once


def test_owners_of_unknown_kinds_are_not_walked() -> None:
    cache = Cache(owned("GameServer", "g", ref("Deployment", "web")))
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
    assert spread_for(pod(owner), [chosen], Cache(RS, DEPLOY)) is None
    worker = pod(owner)
    worker["metadata"]["labels"]["role"] = "worker"
    assert spread_for(worker, [chosen], Cache(RS, DEPLOY)) is chosen


def test_target_filter_without_selector_selects_every_pod() -> None:
    """OpenKruise's webhook selects none here, while its controller counts all."""
    ws = spread(targetFilter={"replicasPathList": ["spec.replicas"]})
    assert spread_for(pod(ref("ReplicaSet", "web-abc")), [ws], Cache(RS, DEPLOY)) is ws


def test_an_owner_cycle_ends() -> None:
    loop = owned("ReplicaSet", "r", ref("ReplicaSet", "r"))
    cache = Cache(loop)
    assert spread_for(pod(ref("ReplicaSet", "r")), [spread()], cache) is None
    assert len(cache.lookups) <= 8


def test_a_controller_whose_chain_ends_short_of_every_target_is_a_bystander() -> None:
    api_rs = owned("ReplicaSet", "api-1", ref("Deployment", "api"))
    cache = Cache(RS, DEPLOY, api_rs, owned("Deployment", "api"))
    assert bystander(pod(ref("ReplicaSet", "api-1")), [spread()], cache) == ref("ReplicaSet", "api-1")
    a_job_of_a_cron = owned("Job", "nightly-1", ref("CronJob", "nightly", "batch/v1"))
    job = ref("Job", "nightly-1", "batch/v1")
    assert bystander(pod(job), [spread()], Cache(a_job_of_a_cron)) == job, "CronJob ends the walk: no spread targets it"


def test_a_controller_is_no_bystander_when_its_chain_reaches_a_target_or_is_not_known_to_its_end() -> None:
    """Whatever the pod's labels: a spread whose filter leaves this pod out may select the next."""
    filtered = spread(targetFilter={"selector": {"matchLabels": {"app": "other"}}})
    assert spread_for(pod(ref("ReplicaSet", "web-abc")), [filtered], Cache(RS, DEPLOY)) is None
    assert bystander(pod(ref("ReplicaSet", "web-abc")), [filtered], Cache(RS, DEPLOY)) is None
    assert bystander(pod(ref("ReplicaSet", "web-abc")), [spread()], Cache(RS)) is None, "its Deployment not cached"
    assert bystander(pod(ref("ReplicaSet", "web-abc") | {"uid": "forged"}), [spread()], Cache(RS, DEPLOY)) is None
    assert bystander(pod(), [spread()], Cache()) is None, "no controller"
    assert bystander(pod(ref("ReplicaSet", "web-abc")), [], Cache(RS, DEPLOY)) is None, "no spread"
    gone = spread(metadata={"deletionTimestamp": "2024-01-01T00:00:00Z"}, target="api")
    assert bystander(pod(ref("ReplicaSet", "web-abc")), [gone], Cache(RS, DEPLOY)) is None, "no spread but one going"


def test_one_walk_tells_a_bystander_and_each_owner_is_looked_up_once() -> None:
    cache = Cache(owned("ReplicaSet", "api-1", ref("Deployment", "api")), owned("Deployment", "api"))
    found = match(pod(ref("ReplicaSet", "api-1")), [spread("a"), spread("b", target="db")], cache)
    assert found.spread is None and found.bystander == ref("ReplicaSet", "api-1")
    assert cache.lookups == [("ns", "api-1"), ("ns", "api")]


def test_a_targeted_pod_is_no_bystander_and_its_walk_stops_at_the_target() -> None:
    cache = Cache(RS, DEPLOY)
    ws = spread(kind="ReplicaSet", target="web-abc")
    found = match(pod(ref("ReplicaSet", "web-abc")), [ws], cache)
    assert found.spread is ws and found.bystander is None
    assert cache.lookups == [("ns", "web-abc")]


def test_a_finished_pod_of_a_bystander_is_placed_nowhere_and_still_tells_it() -> None:
    done = pod(ref("ReplicaSet", "web-abc"))
    done["status"] = {"phase": "Succeeded"}
    found = match(done, [spread(target="api")], Cache(RS, DEPLOY))
    assert found.spread is None and found.bystander == ref("ReplicaSet", "web-abc")
