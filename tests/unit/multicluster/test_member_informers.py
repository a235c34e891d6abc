"""A member's informers for the UnitedDeployment controller: started on demand per child kind,
label-selected to this host's objects, owned by labels; usable only when probed, synced and not
failing. (Against real members: tests/e2e/multicluster/test_multicluster.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, cast

from united.kube import KubeClient
from united.multicluster.credentials import SecretWatch
from united.multicluster.health import REACHABLE, UNREACHABLE, Health
from united.multicluster.identity import RemoteKeys
from united.multicluster.member import Member, Watching
from united.multicluster.model import ClusterSpec, SecretRef
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.resources import resource_of

SPEC = ClusterSpec(name="member-1", secret_ref=SecretRef(namespace="united-clusters", name="member-1"))
REMOTE = RemoteKeys(Keys(), "host-uid")
UP = Health(REACHABLE, "ok", 1.0, "v1.20.2")


class Host:
    fence: Any = None


def member(health: Health = UP) -> tuple[Member, list[str], list[Coroutine[Any, Any, Any]]]:
    changes: list[str] = []
    spawned: list[Coroutine[Any, Any, Any]] = []

    def spawn(coro: Coroutine[Any, Any, Any]) -> Any:
        spawned.append(coro)
        return asyncio.get_running_loop().create_future()

    m = Member(
        SPEC,
        host=cast(KubeClient, Host()),
        secrets=cast(SecretWatch, object()),
        health=health,
        changed=lambda m, flipped: changes.append(m.name),
        spawn=spawn,
    )
    return m, changes, spawned


def watching(seen: list[tuple[str, str]]) -> Watching:
    return Watching(
        REMOTE,
        (None,),
        lambda cluster, obj: seen.append((cluster, "child")),
        lambda cluster, obj: seen.append((cluster, "pod")),
        resource_of,
    )


async def test_informers_start_on_demand_with_our_selector_and_owner_labels() -> None:
    m, _, spawned = member()
    m.ensure("deploymentTemplate")
    assert m.children == {} and m.pods == [], "no watching, no client: nothing starts"
    m.watching = watching([])
    m.ensure("deploymentTemplate")
    assert m.children == {}, "no client yet"
    m.client = cast(KubeClient, object())
    m.ensure("deploymentTemplate")
    m.ensure("deploymentTemplate")
    [deployments] = m.children["deploymentTemplate"]
    [pods] = m.pods
    assert deployments.resource.plural == "deployments" and pods.resource.plural == "pods"
    assert deployments.label_selector == pods.label_selector == REMOTE.selector()
    assert deployments.backoff_max == 30
    assert m.informers == [pods, deployments]
    theirs = {"metadata": {"name": "c", "namespace": "ns", "labels": {**REMOTE.pod_labels(), "x": "y"}}}
    deployments.store.upsert(
        {
            "metadata": {
                "name": "c",
                "namespace": "ns",
                "labels": {Keys().owner_uid: "u1", Keys().owner_cluster: "host-uid"},
            }
        }
    )
    assert [o["metadata"]["name"] for o in deployments.store.by_owner("u1", "ns")] == ["c"]
    assert REMOTE.owner_of(theirs) is None
    for coro in spawned:
        coro.close()


async def test_usable_needs_a_probe_answer_synced_informers_and_no_failure() -> None:
    m, changes, spawned = member()
    m.watching = watching([])
    m.client = cast(KubeClient, object())
    m.ensure("deploymentTemplate")
    assert not m.usable("deploymentTemplate") and not m.synced("deploymentTemplate")
    for informer in m.informers:
        informer.has_synced.set()
    assert m.usable("deploymentTemplate") and m.synced("deploymentTemplate")
    assert not m.usable("statefulSetTemplate"), "a kind not watched here is not usable"
    m.pods[0].last_error = "cannot watch pods: connection refused"
    assert not m.usable("deploymentTemplate") and m.synced("deploymentTemplate")
    m.pods[0].last_error = ""
    m.health = Health(UNREACHABLE, "connection refused", 2.0)
    assert not m.usable("deploymentTemplate")
    for coro in spawned:
        coro.close()
    assert changes == []


async def test_member_events_reach_the_watcher_with_the_cluster_name() -> None:
    seen: list[tuple[str, str]] = []
    m, _, spawned = member()
    m.watching = watching(seen)
    m.client = cast(KubeClient, object())
    m.ensure("deploymentTemplate")
    obj = {"metadata": {"name": "x", "namespace": "ns"}}
    for informer in (*m.children["deploymentTemplate"], *m.pods):
        for handler in informer._handlers:
            handler("ADDED", obj, None)
    assert seen == [("member-1", "child"), ("member-1", "pod")]
    for coro in spawned:
        coro.close()


async def test_a_new_client_is_announced_so_every_replica_starts_its_informers() -> None:
    from tests.unit.multicluster.test_member import kubeconfig

    m, changes, _ = member()
    assert await m.connect(kubeconfig("t0ken")) is None
    assert changes == ["member-1"] and m.client is not None
    await m.close()
