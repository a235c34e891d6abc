"""The reconciler with subsets in member clusters, on fake members (real stores, recording
clients): where children go, what they carry, what an unusable member gets (no request), and
that a converged pass writes nothing anywhere. The e2e suite runs it against real planes."""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, field
from typing import Any

from tests.unit.uniteddeployment.test_adaptive import KEYS, FakeClient, FakeRecorder, store_of
from united.kube import Resource
from united.kube.errors import error_from_status
from united.multicluster.health import REACHABLE, UNREACHABLE, Health
from united.multicluster.identity import RemoteKeys
from united.runtime.informer import Store
from united.uniteddeployment.read import SETTLE_SECONDS
from united.uniteddeployment.reconciler import Caches, Reconciler

HOST_ID = "host-uid"
REMOTE = RemoteKeys(KEYS, HOST_ID)
UD_RESOURCE = Resource("apps.united.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")
SINCE = 1_700_000_000.0


@dataclass
class Spec:
    """What the reconciler reads of a ``ClusterSpec`` (its ``allows`` as the real one's)."""

    namespaces: tuple[str, ...] = ()
    all_namespaces: bool = True
    create_namespaces: bool = True

    def allows(self, namespace: str) -> bool:
        return self.all_namespaces or namespace in self.namespaces


@dataclass
class FakeMember:
    """What the reconciler reads of a ``Member``: its stores, health and client."""

    name: str
    client: NamingClient = field(default_factory=lambda: NamingClient())
    children: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    reachable: bool = True
    is_synced: bool = True
    spec: Spec = field(default_factory=Spec)
    ensured: list[str] = field(default_factory=list)
    suspected: int = 0

    @property
    def health(self) -> Health:
        if self.reachable:
            return Health(REACHABLE, "the API server answered (Kubernetes v1.20.2)", SINCE, "v1.20.2")
        return Health(UNREACHABLE, "get /version: connection refused", SINCE, "v1.20.2")

    def ensure(self, variant: str) -> None:
        self.ensured.append(variant)

    def synced(self, variant: str) -> bool:
        return self.is_synced

    def usable(self, variant: str) -> bool:
        return self.reachable and self.is_synced

    def stores(self, variant: str) -> tuple[Any, Any]:
        owned = Store(owner=REMOTE.owner_of)  # a member informer's store indexes owner labels
        for c in self.children:
            owned.upsert(c)
        pods = store_of(self.pods, label=KEYS.subset_name)
        return owned, pods

    def suspect(self) -> None:
        self.suspected += 1


class FakeMembers:
    def __init__(self, *members: FakeMember) -> None:
        self.by_name = {m.name: m for m in members}
        self.remote = REMOTE

    def get(self, name: str) -> FakeMember | None:
        return self.by_name.get(name)


class NamingClient(FakeClient):
    """Answers a create like the API server (a generated name, a uid, a resourceVersion) and
    keeps the answers (:attr:`made`)."""

    def __init__(self) -> None:
        super().__init__()
        self.made: list[dict[str, Any]] = []
        self.namespaces: dict[str, dict[str, Any]] = {"ns": {"metadata": {"name": "ns"}}}
        """What a GET of a namespace answers (the host's)."""

    async def get(self, resource: Any, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        assert resource.plural == "namespaces", resource
        self.calls.append(("get", resource.plural, name, None))
        return copy.deepcopy(self.namespaces[name])

    async def create(self, resource: Any, body: Any, *, namespace: str | None = None) -> Any:
        made = copy.deepcopy(await super().create(resource, body, namespace=namespace or ""))
        meta = made["metadata"]
        if "generateName" in meta:
            meta["name"] = f"{meta['generateName']}{len(self.calls)}"
        meta.update(uid=f"uid-{meta['name']}", resourceVersion=str(100 + len(self.calls)), generation=1)
        self.made.append(made)
        return made


def ud(*subsets: dict[str, Any], replicas: int = 4, status: dict[str, Any] | None = None) -> dict[str, Any]:
    pod = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "m", "image": "x"}]}}
    obj: dict[str, Any] = {
        "apiVersion": "apps.united.io/v1alpha1",
        "kind": "UnitedDeployment",
        "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "generation": 1, "resourceVersion": "1"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "deploymentTemplate": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": pod},
                }
            },
            "topology": {"subsets": list(subsets)},
        },
    }
    if status is not None:
        obj["status"] = status
    return obj


class World:
    """A host and members around one UnitedDeployment; children written by a pass land in the
    stores (with Ready pods) for the next, as the informers would show them."""

    def __init__(self, obj: dict[str, Any], *members: FakeMember) -> None:
        self.obj = obj
        self.now = SINCE + 1
        self.members = FakeMembers(*members)
        self.client = NamingClient()
        self.children: list[dict[str, Any]] = []
        self.recorder = FakeRecorder()
        self.revisions: list[dict[str, Any]] = []
        self.reconciler = Reconciler(
            client=self.client,  # type: ignore[arg-type]
            caches=Caches(
                uniteddeployments=store_of([obj]),
                revisions=store_of(),
                pods=store_of(label=KEYS.subset_name),
                children={"deploymentTemplate": store_of()},
                members=self.members,  # type: ignore[arg-type]
            ),
            recorder=self.recorder,
            ud_resource=UD_RESOURCE,
            seconds=lambda: self.now,
        )
        self.reconciler.started -= SETTLE_SECONDS  # started a while ago (see test_a_restart_waits_...)

    async def reconcile(self) -> Any:
        caches = self.reconciler.caches
        caches.children["deploymentTemplate"] = store_of(self.children)
        caches.revisions = store_of(self.revisions)
        return await self.reconciler.reconcile("ns/web")

    def settle(self) -> None:
        """Move what the clients created into the stores, as converged children."""
        for _, body in self.client.writes("patch", "uniteddeployments"):
            self.obj["metadata"]["finalizers"] = body["metadata"]["finalizers"]
        self.reconciler.caches.uniteddeployments = store_of([self.obj])
        clients = [(self.client, self.children)] + [(m.client, m.children) for m in self.members.by_name.values()]
        for client, target in clients:
            for made in client.made:
                if made.get("kind") == "Deployment":
                    n = made["spec"]["replicas"]
                    made["status"] = {"replicas": n, "readyReplicas": n, "observedGeneration": 1}
                    target.append(made)
                elif made.get("kind") == "ControllerRevision":
                    self.revisions.append(made)
            client.made.clear()
            client.calls.clear()


def creates(client: FakeClient, what: str = "deployments") -> list[dict[str, Any]]:
    return [b for v, w, _, b in client.calls if (v, w) == ("create", what)]


def status_of(world: World) -> dict[str, Any]:
    patches = world.client.writes("patch", "uniteddeployments/status")
    assert patches, world.client.calls
    status: dict[str, Any] = patches[-1][1]["status"]
    return status


async def test_remote_subsets_are_created_in_their_cluster_with_owner_labels() -> None:
    m1, m2 = FakeMember("member-1"), FakeMember("member-2")
    world = World(
        ud({"name": "h"}, {"name": "a", "cluster": "member-1"}, {"name": "b", "cluster": "member-2"}, replicas=6),
        m1,
        m2,
    )
    await world.reconcile()
    [host_child] = creates(world.client)
    assert host_child["metadata"]["ownerReferences"][0]["uid"] == "u1"
    for member, subset in ((m1, "a"), (m2, "b")):
        [child] = creates(member.client)
        meta = child["metadata"]
        assert "ownerReferences" not in meta
        assert meta["labels"][KEYS.subset_name] == subset
        assert meta["labels"][KEYS.owner_uid] == "u1" and meta["labels"][KEYS.owner_name] == "web"
        assert meta["labels"][KEYS.owner_cluster] == HOST_ID
        assert meta["annotations"][KEYS.cluster] == member.name
        assert child["spec"]["template"]["metadata"]["labels"][KEYS.owner_cluster] == HOST_ID
        assert child["spec"]["replicas"] == 2
        assert member.ensured == ["deploymentTemplate"]
    assert KEYS.owner_cluster not in host_child["spec"]["template"]["metadata"]["labels"]
    world.settle()
    await world.reconcile()
    status = status_of(world)
    assert (status["replicas"], status["readyReplicas"]) == (6, 6)
    assert [s.get("cluster") for s in status["subsetStatuses"]] == [None, "member-1", "member-2"]


async def test_a_converged_pass_writes_nothing_in_host_or_members() -> None:
    m1 = FakeMember("member-1")
    world = World(ud({"name": "h"}, {"name": "a", "cluster": "member-1"}), m1)
    await world.reconcile()
    world.settle()
    await world.reconcile()  # the status catches up with the children
    world.client.calls.clear()
    await world.reconcile()
    assert world.client.calls == [] and m1.client.calls == []


async def test_scale_resplits_across_clusters() -> None:
    m1 = FakeMember("member-1")
    world = World(ud({"name": "h"}, {"name": "a", "cluster": "member-1"}, replicas=4), m1)
    await world.reconcile()
    world.settle()
    world.obj["spec"]["replicas"] = 6
    world.obj["metadata"]["generation"] = 2
    world.reconciler.caches.uniteddeployments = store_of([world.obj])
    await world.reconcile()
    [(_, body)] = m1.client.writes("patch", "deployments")
    assert body["spec"] == {"replicas": 3}
    assert body["metadata"] == {"uid": m1.children[0]["metadata"]["uid"]}
    [(_, host_body)] = world.client.writes("patch", "deployments")
    assert host_body["spec"] == {"replicas": 3}


PREVIOUS = {
    "subsetStatuses": [
        {"name": "h", "desired": 2, "replicas": 2, "readyReplicas": 2},
        {
            "name": "a",
            "cluster": "member-1",
            "desired": 2,
            "replicas": 2,
            "readyReplicas": 2,
            "updatedReplicas": 2,
            "updatedReadyReplicas": 2,
        },
    ]
}


async def test_an_unreachable_member_gets_no_request_and_keeps_its_last_known_counts() -> None:
    m1 = FakeMember("member-1", reachable=False, is_synced=False)
    world = World(ud({"name": "h"}, {"name": "a", "cluster": "member-1"}, status=PREVIOUS), m1)
    await world.reconcile()
    assert m1.client.calls == []
    assert creates(world.client), "the host subset still converges"
    status = status_of(world)
    entry = status["subsetStatuses"][1]
    assert (entry["cluster"], entry["replicas"], entry["readyReplicas"]) == ("member-1", 2, 2)
    [cond] = entry["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("ClusterReady", "False", "ClusterUnreachable")
    assert cond["message"].startswith("cluster member-1 unreachable since ")
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ClusterUnavailable")
    assert "Stalled" not in {c["type"] for c in status["conditions"]}  # False: absent


async def test_nothing_is_created_in_a_member_whose_stores_have_not_synced() -> None:
    m1 = FakeMember("member-1", is_synced=False)
    world = World(ud({"name": "h"}, {"name": "a", "cluster": "member-1"}), m1)
    await world.reconcile()
    assert m1.client.calls == []
    entry = status_of(world)["subsetStatuses"][1]
    assert entry["conditions"][0]["reason"] == "ClusterSyncing"


async def test_a_missing_cluster_stalls_but_the_host_subsets_converge() -> None:
    world = World(ud({"name": "h"}, {"name": "a", "cluster": "nowhere"}))
    await world.reconcile()
    assert creates(world.client)
    stalled = next(c for c in status_of(world)["conditions"] if c["type"] == "Stalled")
    assert (stalled["status"], stalled["reason"]) == ("True", "ClusterNotFound")


async def test_a_namespace_allowlist_is_honoured() -> None:
    m1 = FakeMember("member-1", spec=Spec(namespaces=("shop",), all_namespaces=False))
    world = World(ud({"name": "h"}, {"name": "a", "cluster": "member-1"}), m1)
    await world.reconcile()
    assert m1.client.calls == [] and m1.ensured == []
    assert status_of(world)["subsetStatuses"][1]["conditions"][0]["reason"] == "NamespaceNotAllowed"


async def test_a_subset_moved_to_the_host_deletes_its_remote_child() -> None:
    m1 = FakeMember("member-1")
    world = World(ud({"name": "h"}, {"name": "a", "cluster": "member-1"}), m1)
    await world.reconcile()
    world.settle()
    await world.reconcile()  # the status names member-1
    world.obj["spec"]["topology"]["subsets"][1].pop("cluster")
    world.obj["metadata"]["generation"] = 2
    world.reconciler.caches.uniteddeployments = store_of([world.obj])
    await world.reconcile()
    assert [n for n, _ in m1.client.writes("delete", "deployments")] == [m1.children[0]["metadata"]["name"]]
    [made] = creates(world.client)
    assert made["metadata"]["labels"][KEYS.subset_name] == "a"


async def test_a_removed_remote_subset_is_deleted_there() -> None:
    m1 = FakeMember("member-1")
    world = World(ud({"name": "h"}, {"name": "a", "cluster": "member-1"}), m1)
    await world.reconcile()
    world.settle()
    await world.reconcile()  # the status names member-1
    world.obj["spec"]["topology"]["subsets"].pop()
    world.obj["metadata"]["generation"] = 2
    world.reconciler.caches.uniteddeployments = store_of([world.obj])
    await world.reconcile()
    assert [n for n, _ in m1.client.writes("delete", "deployments")] == [m1.children[0]["metadata"]["name"]]


async def test_a_child_another_host_made_is_not_ours() -> None:
    m1 = FakeMember("member-1")
    world = World(ud({"name": "h"}, {"name": "a", "cluster": "member-1"}), m1)
    await world.reconcile()
    world.settle()
    m1.children[0]["metadata"]["labels"][KEYS.owner_cluster] = "another-host"
    world.reconciler.expectations.clear()  # our own create is no longer expected (the cache showed it)
    await world.reconcile()
    assert len(creates(m1.client)) == 1, "ours is missing: created; theirs is left alone"
    assert m1.client.writes("delete", "deployments") == []


class MissingNamespaceClient(NamingClient):
    def __init__(self) -> None:
        super().__init__()
        self.refused = False

    async def create(self, resource: Any, body: Any, *, namespace: str | None = None) -> Any:
        if resource.plural == "deployments" and not self.refused:
            self.refused = True
            self.calls.append(("create", resource.plural, "", body))
            raise error_from_status(
                404,
                {
                    "kind": "Status",
                    "reason": "NotFound",
                    "message": 'namespaces "ns" not found',
                    "details": {"name": "ns", "kind": "namespaces"},
                    "code": 404,
                },
            )
        return await super().create(resource, body, namespace=namespace)


async def test_a_missing_member_namespace_is_created_then_the_child() -> None:
    m1 = FakeMember("member-1", client=MissingNamespaceClient())
    world = World(ud({"name": "h"}, {"name": "a", "cluster": "member-1"}), m1)
    await world.reconcile()
    made = [(w, b) for v, w, _, b in m1.client.calls if v == "create"]
    assert [w for w, _ in made] == ["deployments", "namespaces", "deployments"]
    assert made[1][1]["metadata"] == {"name": "ns", "labels": {KEYS.created_by_cluster: HOST_ID}}


async def test_a_member_namespace_gets_the_host_namespaces_pod_security_labels() -> None:
    m1 = FakeMember("member-1", client=MissingNamespaceClient())
    world = World(ud({"name": "h"}, {"name": "a", "cluster": "member-1"}), m1)
    world.client.namespaces["ns"]["metadata"]["labels"] = {
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/enforce-version": "latest",
        "team": "shop",
    }
    await world.reconcile()
    made = [b for v, w, _, b in m1.client.calls if (v, w) == ("create", "namespaces")]
    assert made[0]["metadata"]["labels"] == {
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/enforce-version": "latest",
        KEYS.created_by_cluster: HOST_ID,
    }


async def test_a_cluster_without_create_namespaces_gets_no_namespace() -> None:
    m1 = FakeMember("member-1", client=MissingNamespaceClient(), spec=Spec(create_namespaces=False))
    world = World(ud({"name": "h"}, {"name": "a", "cluster": "member-1"}), m1)
    try:
        await world.reconcile()
    except Exception as e:  # the pass is retried: RetryableError
        assert "(Cluster member-1 does not set createNamespaces: true)" in str(e)
    else:
        raise AssertionError("the pass must fail")
    assert [w for v, w, _, _ in m1.client.calls if v == "create"] == ["deployments"]
    assert world.client.writes("get", "namespaces") == []


async def test_a_cluster_admitting_no_namespace_gets_nothing() -> None:
    m1 = FakeMember("member-1", spec=Spec(all_namespaces=False))
    world = World(ud({"name": "h"}, {"name": "a", "cluster": "member-1"}), m1)
    await world.reconcile()
    assert m1.client.calls == [] and m1.ensured == []
    assert status_of(world)["subsetStatuses"][1]["conditions"][0]["reason"] == "NamespaceNotAllowed"


async def test_with_namespace_creation_off_the_create_fails_and_says_why() -> None:
    m1 = FakeMember("member-1", client=MissingNamespaceClient())
    world = World(ud({"name": "h"}, {"name": "a", "cluster": "member-1"}), m1)
    world.reconciler.create_member_namespaces = False
    try:
        await world.reconcile()
    except Exception as e:  # the pass is retried: RetryableError
        off = "namespace ns does not exist there (the controller's namespace creation is off)"
        assert f"create a in cluster member-1: {off}" in str(e)
    else:
        raise AssertionError("the pass must fail")
    assert [w for v, w, _, _ in m1.client.calls if v == "create"] == ["deployments"]


async def test_a_host_only_ud_asks_no_member_anything() -> None:
    m1 = FakeMember("member-1")
    world = World(ud({"name": "h"}, {"name": "a"}), m1)
    await world.reconcile()
    world.settle()
    await world.reconcile()
    assert m1.client.calls == [] and m1.ensured == []
    assert all("cluster" not in s for s in status_of(world)["subsetStatuses"])


FINALIZER = KEYS.remote_children_finalizer


def finalizer_patches(world: World) -> list[Any]:
    return [b["metadata"]["finalizers"] for n, b in world.client.writes("patch", "uniteddeployments")]


async def test_the_finalizer_comes_with_a_remote_subset_only() -> None:
    world = World(ud({"name": "h"}, {"name": "a", "cluster": "member-1"}), FakeMember("member-1"))
    await world.reconcile()
    [(_, body)] = world.client.writes("patch", "uniteddeployments")
    assert body["metadata"] == {"finalizers": [FINALIZER], "resourceVersion": "1"}
    host_only = World(ud({"name": "h"}, {"name": "a"}), FakeMember("member-1"))
    await host_only.reconcile()
    assert finalizer_patches(host_only) == []


async def test_the_finalizer_goes_once_no_remote_subset_or_child_is_left() -> None:
    obj = ud({"name": "h"}, {"name": "a"})
    obj["metadata"]["finalizers"] = ["other", FINALIZER]
    world = World(obj, FakeMember("member-1"))
    await world.reconcile()
    assert finalizer_patches(world) == [["other"]]


def deleted(world: World) -> None:
    world.obj["metadata"]["deletionTimestamp"] = "2026-11-24T16:00:00Z"
    world.obj["metadata"]["finalizers"] = [FINALIZER]
    world.reconciler.caches.uniteddeployments = store_of([world.obj])


async def converged_world(member: FakeMember) -> World:
    world = World(ud({"name": "h"}, {"name": "a", "cluster": "member-1"}), member)
    await world.reconcile()
    world.settle()
    await world.reconcile()
    world.client.calls.clear()
    return world


async def test_deletion_deletes_the_remote_children_then_the_finalizer() -> None:
    m1 = FakeMember("member-1")
    world = await converged_world(m1)
    deleted(world)
    result = await world.reconcile()
    [(name, _)] = m1.client.writes("delete", "deployments")
    assert name == m1.children[0]["metadata"]["name"] and result.requeue_after == 2.0
    assert finalizer_patches(world) == []
    m1.children.clear()  # the member's cache saw it go
    await world.reconcile()
    assert finalizer_patches(world) == [None]


async def test_deletion_waits_for_an_unreachable_member_unless_abandoned() -> None:
    m1 = FakeMember("member-1")
    world = await converged_world(m1)
    m1.client.calls.clear()
    m1.reachable = False
    deleted(world)
    result = await world.reconcile()
    assert m1.client.calls == [] and result.requeue_after == 60.0
    assert finalizer_patches(world) == []
    status = status_of(world)
    reconciling = next(c for c in status["conditions"] if c["type"] == "Reconciling")
    assert (reconciling["status"], reconciling["reason"]) == ("True", "RemoteChildrenPending")
    assert reconciling["message"].startswith("waiting to delete the children in member-1 unreachable since ")
    assert [r for _, r, _ in world.recorder.events][-1:] == ["RemoteDeleteBlocked"]
    world.obj["metadata"]["annotations"] = {KEYS.abandon_remote_children: "member-1"}
    world.reconciler.caches.uniteddeployments = store_of([world.obj])
    await world.reconcile()
    assert finalizer_patches(world) == [None] and m1.client.calls == []


ADAPTIVE = {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 10, "unschedulableDuration": 20}}


async def adaptive_world(m1: FakeMember, m2: FakeMember) -> World:
    obj = ud({"name": "a", "cluster": "member-1", "maxReplicas": 2}, {"name": "b", "cluster": "member-2"})
    obj["spec"]["topology"]["scheduleStrategy"] = ADAPTIVE
    world = World(obj, m1, m2)
    await world.reconcile()
    world.settle()
    await world.reconcile()
    world.client.calls.clear()
    return world


async def test_an_unreachable_cluster_fails_over_after_the_critical_seconds() -> None:
    m1, m2 = FakeMember("member-1"), FakeMember("member-2")
    world = await adaptive_world(m1, m2)
    assert [c["spec"]["replicas"] for c in (*m1.children, *m2.children)] == [2, 2]
    m1.reachable = False
    world.now = SINCE + 5
    result = await world.reconcile()
    assert m2.client.writes("patch", "deployments") == [], "not before rescheduleCriticalSeconds"
    assert result.requeue_after is not None and abs(result.requeue_after - 5.05) < 1e-6
    world.now = SINCE + 10.1
    await world.reconcile()
    [(_, body)] = m2.client.writes("patch", "deployments")
    assert body["spec"] == {"replicas": 4}
    assert m1.client.calls == []
    entry = status_of(world)["subsetStatuses"][0]
    assert (entry["desired"], entry["reason"], entry["replicas"]) == (0, "cluster-failover", 2)
    assert [c["reason"] for c in entry["conditions"]] == ["ClusterUnreachable", "ClusterUnreachable"]


async def test_a_syncing_cluster_does_not_fail_over() -> None:
    m1, m2 = FakeMember("member-1"), FakeMember("member-2")
    world = await adaptive_world(m1, m2)
    m1.is_synced = False  # reachable, its informers (re)listing: last-known counts from the status
    world.now = SINCE + 100
    await world.reconcile()
    assert m2.client.writes("patch", "deployments") == [] and m1.client.calls == []


async def test_a_restart_waits_for_members_to_sync_and_writes_nothing_meanwhile() -> None:
    m1 = FakeMember("member-1")
    world = World(ud({"name": "h"}, {"name": "a", "cluster": "member-1"}), m1)
    await world.reconcile()
    world.settle()
    await world.reconcile()
    world.obj["status"] = status_of(world)  # what a new process reads
    world.reconciler.caches.uniteddeployments = store_of([world.obj])
    world.client.calls.clear()
    world.reconciler = Reconciler(  # a new process: its member caches are listing
        client=world.client,  # type: ignore[arg-type]
        caches=world.reconciler.caches,
        recorder=world.recorder,
        ud_resource=UD_RESOURCE,
    )
    m1.is_synced = False
    result = await world.reconcile()
    assert result.requeue_after == 1.0 and world.client.calls == [] and m1.client.calls == []
    m1.is_synced = True
    await world.reconcile()
    assert world.client.calls == [] and m1.client.calls == []


async def test_a_member_s_write_held_open_holds_no_status_on_the_host() -> None:
    held = asyncio.Event()

    class Holding(NamingClient):
        async def create(self, resource: Any, body: Any, *, namespace: str | None = None) -> Any:
            await held.wait()
            return await super().create(resource, body, namespace=namespace)

    member = FakeMember("member-1", client=Holding())
    world = World(ud({"name": "a", "cluster": "member-1"}, replicas=2), member)
    world.reconciler.ordering.patience = 3600.0  # a status that waited for the member would hang
    reconciling = asyncio.create_task(world.reconcile())
    for _ in range(50):
        await asyncio.sleep(0)
    assert not reconciling.done(), "the member's create is held open"
    other = {"metadata": {"name": "api", "namespace": "ns", "resourceVersion": "7"}, "status": {}}
    writing = asyncio.create_task(world.reconciler._write_status("ns/api", other, {}, {"replicas": 2}))
    for _ in range(50):
        await asyncio.sleep(0)
    assert writing.done() and writing.result()
    held.set()
    await reconciling
