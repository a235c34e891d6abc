"""The reconciler on fake caches and a recording client (the e2e suite runs it for real)."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest

from tests.unit.uniteddeployment.test_adaptive import KEYS, Cluster, FakeClient, store_of
from united.kube.errors import (
    AlreadyExists,
    Conflict,
    Fenced,
    Forbidden,
    NotFound,
    error_from_status,
    namespace_terminating,
)
from united.uniteddeployment.reconciler import RetryableError
from united.uniteddeployment.resources import resource_of

DEPLOYMENTS = resource_of("deploymentTemplate")
STATEFULSETS = resource_of("statefulSetTemplate")
TERMINATING = {
    "kind": "Status",
    "status": "Failure",
    "reason": "Forbidden",
    "message": 'controllerrevisions.apps "web-1" is forbidden: unable to create new content in namespace ns '
    "because it is being terminated",
    "details": {
        "causes": [
            {
                "reason": "NamespaceTerminating",
                "message": "namespace ns is being terminated",
                "field": "metadata.namespace",
            }
        ]
    },
    "code": 403,
}


class RefusingClient(FakeClient):
    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__()
        self.body = body

    async def create(self, resource: Any, body: Any, *, namespace: str) -> Any:
        self.calls.append(("create", resource.plural, "", body))
        raise error_from_status(403, self.body)


async def test_a_namespace_being_deleted_ends_the_pass_without_more_writes() -> None:
    c = Cluster({}, replicas=2, a=(1, 1), b=(1, 1))
    c.client = RefusingClient(TERMINATING)
    result = await c.reconcile(0.0)
    assert result.requeue_after is None
    assert [(v, w) for v, w, _, _ in c.client.calls] == [("create", "controllerrevisions")]
    assert c.recorder.events == []


async def test_another_forbidden_create_still_fails_the_pass() -> None:
    c = Cluster({}, replicas=2, a=(1, 1), b=(1, 1))
    c.client = RefusingClient({**TERMINATING, "details": {}})
    with pytest.raises(Forbidden, match="forbidden"):
        await c.reconcile(0.0)


class FencingClient(FakeClient):
    """Lets ``allowed`` writes through, then refuses every one as the leader-election fence
    does once the Lease has run out."""

    def __init__(self, allowed: int) -> None:
        super().__init__()
        self.allowed = allowed

    def _gate(self) -> None:
        if len(self.calls) >= self.allowed:
            raise Fenced("not the leader")

    async def create(self, resource: Any, body: Any, *, namespace: str) -> Any:
        self._gate()
        return await super().create(resource, body, namespace=namespace)

    async def patch(self, resource: Any, name: str, body: Any, **kw: Any) -> dict[str, Any]:
        self._gate()
        return await super().patch(resource, name, body, **kw)


async def test_a_fenced_write_stops_the_pass_with_no_warning_and_no_status_write() -> None:
    c = Cluster({}, replicas=4, a=(1, 1), b=(1, 1))  # a revision to create, then two scale patches
    c.client = FencingClient(allowed=1)
    with pytest.raises(Fenced):
        await c.reconcile(0.0)
    assert [(v, w) for v, w, _, _ in c.client.calls] == [("create", "controllerrevisions")]
    assert c.recorder.events == []


def test_namespace_terminating_reads_the_status_cause() -> None:
    assert namespace_terminating(error_from_status(403, TERMINATING))
    assert not namespace_terminating(error_from_status(403, {**TERMINATING, "details": {}}))
    assert not namespace_terminating(error_from_status(409, TERMINATING))


def child(name: str, rv: int, replicas: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv)}, "spec": {"replicas": replicas}}


def reconciler() -> Any:
    from united.kube import Resource
    from united.uniteddeployment.reconciler import Caches, Reconciler

    caches = Caches(uniteddeployments=store_of(), revisions=store_of(), pods=store_of())
    ud = Resource("apps.united.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")
    return Reconciler(client=FakeClient(), caches=caches, recorder=None, ud_resource=ud)  # type: ignore[arg-type]


class TestExpectations:
    """Our own writes stand in for a cache that has not shown them yet, and only until it has."""

    def test_a_created_child_is_seen_until_the_cache_has_it(self) -> None:
        r = reconciler().expectations
        r.remember("ns/web", DEPLOYMENTS, "web-a", child("web-a", 10), rv=10)
        assert [c["metadata"]["name"] for c in r.fresh("ns/web", DEPLOYMENTS, [])] == ["web-a"]
        assert r.fresh("ns/other", DEPLOYMENTS, []) == []
        assert r.fresh("ns/web", STATEFULSETS, []) == []
        assert r.fresh("ns/web", DEPLOYMENTS, [child("web-a", 10)]) == [child("web-a", 10)]
        assert len(r) == 0

    def test_a_patched_child_wins_over_an_older_cached_copy(self) -> None:
        r = reconciler().expectations
        r.remember("ns/web", DEPLOYMENTS, "web-a", child("web-a", 12, replicas=3), rv=12)
        assert r.fresh("ns/web", DEPLOYMENTS, [child("web-a", 11)]) == [child("web-a", 12, replicas=3)]
        newer = child("web-a", 13, replicas=5)
        assert r.fresh("ns/web", DEPLOYMENTS, [newer]) == [newer]

    def test_a_deleted_child_is_hidden_until_the_cache_drops_it(self) -> None:
        r = reconciler().expectations
        r.remember("ns/web", DEPLOYMENTS, "web-b", None, rv=7)
        assert r.fresh("ns/web", DEPLOYMENTS, [child("web-b", 7), child("web-a", 3)]) == [child("web-a", 3)]
        assert r.fresh("ns/web", DEPLOYMENTS, [child("web-a", 3)]) == [child("web-a", 3)]
        assert len(r) == 0

    def test_a_deleted_child_stays_hidden_when_a_version_older_than_the_delete_arrives(self) -> None:
        """Its status was written between our read and our delete (uid precondition): the cache's
        newer version is of the object we deleted; showing it would send a second DELETE."""
        r = reconciler().expectations
        deleted = {**child("web-b", 7), "metadata": {**child("web-b", 7)["metadata"], "uid": "u1"}}
        r.remember("ns/web", DEPLOYMENTS, "web-b", None, rv=7, uid="u1")
        status_update = {**deleted, "metadata": {**deleted["metadata"], "resourceVersion": "8"}}
        assert r.fresh("ns/web", DEPLOYMENTS, [status_update, child("web-a", 3)]) == [child("web-a", 3)]
        recreated = {**status_update, "metadata": {**status_update["metadata"], "uid": "u2", "resourceVersion": "9"}}
        assert r.fresh("ns/web", DEPLOYMENTS, [recreated]) == [recreated]
        assert len(r) == 0

    def test_expectations_expire(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from united.runtime import expectations as module

        r = reconciler().expectations
        r.remember("ns/web", DEPLOYMENTS, "web-a", child("web-a", 10), rv=10)
        start = module.time.monotonic()
        monkeypatch.setattr(module.time, "monotonic", lambda: start + module.TTL + 1)
        assert r.fresh("ns/web", DEPLOYMENTS, []) == []

    async def test_a_deleted_ud_forgets_its_expectations(self) -> None:
        r = reconciler()
        r.expectations.remember("ns/web", DEPLOYMENTS, "web-a", child("web-a", 10), rv=10)
        await r.reconcile("ns/web")
        assert len(r.expectations) == 0


class KeywordClient(FakeClient):
    """Also records the keyword arguments of deletes (their preconditions)."""

    def __init__(self) -> None:
        super().__init__()
        self.deletes: list[tuple[str, dict[str, Any]]] = []

    async def delete(self, resource: Any, name: str, **kw: Any) -> None:
        self.deletes.append((name, kw))


async def test_every_child_write_names_the_object_it_read() -> None:
    """Writes go by name; the uid (and for adoption/release the resourceVersion) makes the API
    server refuse one whose name now belongs to another object."""
    c = Cluster({}, replicas=3, a=(1, 1), b=(1, 1))
    for i, child in enumerate(c.children):
        child["metadata"].update(uid=f"uid-{i}", resourceVersion=str(10 + i))
    removed = copy.deepcopy(c.children[1])
    removed["metadata"].update(name="web-gone", uid="uid-gone")
    removed["metadata"]["labels"][KEYS.subset_name] = "gone"
    c.children.append(removed)
    c.client = KeywordClient()
    await c.reconcile(0.0)
    patches = c.client.writes("patch", "deployments")
    assert patches, "one subset is scaled"
    assert all(body["metadata"]["uid"] == {"web-a": "uid-0", "web-b": "uid-1"}[name] for name, body in patches)
    assert c.client.deletes == [
        ("web-gone", {"namespace": "ns", "propagation_policy": "Background", "preconditions": {"uid": "uid-gone"}})
    ]


class NamingClient(FakeClient):
    """Answers a create like the API server: a generated name and a resourceVersion."""

    async def create(self, resource: Any, body: Any, *, namespace: str) -> Any:
        made = copy.deepcopy(await super().create(resource, body, namespace=namespace))
        prefix = made["metadata"].get("generateName", "")
        made["metadata"].update(name=f"{prefix}{len(self.calls)}", resourceVersion=str(100 + len(self.calls)))
        return made


async def test_no_second_child_while_a_create_is_unobserved_by_a_cache_lagging_minutes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """API Priority and Fairness can hold the child cache back far longer than 15 s: every pass
    meanwhile must still see the children it created."""
    from united.kube import Resource
    from united.uniteddeployment import reconciler as module
    from united.uniteddeployment.reconciler import Caches, Reconciler

    c = Cluster({}, replicas=2, a=(1, 1), b=(1, 1))
    caches = Caches(
        uniteddeployments=store_of([c.obj]),
        revisions=store_of(),
        pods=store_of(),
        children={"deploymentTemplate": store_of()},  # never shows what was created
    )
    client = NamingClient()
    ud = Resource("apps.united.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")
    r = Reconciler(client=client, caches=caches, recorder=c.recorder, ud_resource=ud)  # type: ignore[arg-type]
    start = module.time.monotonic()
    for lag in (0.0, 20.0, 60.0, 240.0):
        monkeypatch.setattr(module.time, "monotonic", lambda lag=lag: start + lag)
        await r.reconcile("ns/web")
        assert len(client.writes("create", "deployments")) == 2, f"after {lag} s"


async def status_write_started(r: Any, name: str) -> asyncio.Task[bool]:
    """A status write of ``ns/<name>`` begun, and the loop run until it sent or waits."""
    obj = {"metadata": {"name": name, "namespace": "ns", "resourceVersion": "41"}, "status": {}}
    writing = asyncio.create_task(r._write_status(f"ns/{name}", obj, {}, {"replicas": 2}))
    for _ in range(20):
        await asyncio.sleep(0)
    return writing


class TestStatusWrites:
    """A status is written only over the version it was computed from."""

    async def test_the_status_patch_carries_the_resource_version_it_was_computed_from(self) -> None:
        c = Cluster({}, replicas=2, a=(1, 1), b=(1, 1))
        c.obj["spec"]["replicas"] = -1  # invalid: only a status is written
        c.obj["metadata"]["resourceVersion"] = "41"
        await c.reconcile(0.0)
        [(_, body)] = c.client.writes("patch", "uniteddeployments/status")
        assert body["metadata"] == {"resourceVersion": "41"}

    async def test_while_the_cache_lags_our_own_write_its_version_is_the_precondition(self) -> None:
        r = reconciler()
        obj = {"metadata": {"name": "web", "namespace": "ns", "resourceVersion": "41"}, "status": {}}
        r._written.record("ns/web", 99, {"replicas": 1})
        assert r._previous_status("ns/web", obj) == {"replicas": 1}
        assert await r._write_status("ns/web", obj, {"replicas": 1}, {"replicas": 2})
        [(_, body)] = r.client.writes("patch", "uniteddeployments/status")
        assert body == {"metadata": {"resourceVersion": "99"}, "status": {"replicas": 2}}

    async def test_it_goes_after_the_child_writes_other_passes_have_in_flight(self) -> None:
        r = reconciler()
        r.ordering.patience = 3600.0
        answered = asyncio.Event()

        async def another_pass_child_write() -> None:
            with r.ordering.acting():
                await answered.wait()

        other = asyncio.create_task(another_pass_child_write())
        await asyncio.sleep(0)
        writing = await status_write_started(r, "web")
        assert r.client.writes("patch", "uniteddeployments/status") == []
        answered.set()
        assert await writing
        assert len(r.client.writes("patch", "uniteddeployments/status")) == 1
        await other

    async def test_a_pass_s_child_writes_hold_another_pass_s_status(self) -> None:
        answered = asyncio.Event()

        class Slow(FakeClient):
            async def patch(self, resource: Any, name: str, body: Any, **kw: Any) -> dict[str, Any]:
                if resource.plural == "deployments":
                    await answered.wait()
                return await super().patch(resource, name, body, **kw)

        c = Cluster({}, replicas=4, a=(1, 1), b=(1, 1))
        c.client = Slow()
        r = c.reconciler(0.0)
        r.ordering.patience = 3600.0
        scaling = asyncio.create_task(r.reconcile("ns/web"))
        for _ in range(20):
            await asyncio.sleep(0)
        writing = await status_write_started(r, "api")
        assert c.client.writes("patch", "uniteddeployments/status") == []
        answered.set()
        await asyncio.gather(scaling, writing)
        assert [n for n, _ in c.client.writes("patch", "uniteddeployments/status")] == ["api"]

    async def test_a_conflict_is_raised_and_not_remembered(self) -> None:
        class Refusing(FakeClient):
            async def patch(self, resource: Any, name: str, body: Any, **kw: Any) -> dict[str, Any]:
                raise Conflict("the object has been modified", status=409)

        r = reconciler()
        r.client = Refusing()
        obj = {"metadata": {"name": "web", "namespace": "ns", "resourceVersion": "41"}, "status": {}}
        with pytest.raises(Conflict):
            await r._write_status("ns/web", obj, {}, {"replicas": 2})
        assert "ns/web" not in r._written


async def test_a_relabelled_child_gets_its_label_back_and_no_sibling_is_deleted() -> None:
    """The relabelled child keeps its subset (its selector says which), its
    label is restored, its immutable selector is not patched, and its healthy sibling stays."""
    c = Cluster({}, replicas=2, a=(1, 1), b=(1, 1))
    c.children[0]["metadata"]["labels"][KEYS.subset_name] = "b"
    c.children[0]["metadata"]["creationTimestamp"] = "2025-01-01T00:00:00Z"
    c.children[1]["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    c.client = KeywordClient()
    await c.reconcile(0.0)
    assert c.client.deletes == []
    assert c.client.writes("create", "deployments") == []
    [(name, body)] = c.client.writes("patch", "deployments")
    assert name == "web-a"
    assert body == {"metadata": {"labels": {KEYS.subset_name: "a"}}}


async def test_a_child_that_lost_its_subset_label_gets_it_back_and_no_second_is_created() -> None:
    """With its subset label removed, a child leaves the label-filtered child
    cache (a DELETED event); the pass that would create finds it with one LIST of our
    selector's unlabelled workloads and writes the label back instead."""
    c = Cluster({}, replicas=2, a=(1, 1), b=(1, 1))
    c.obj["status"] = {"subsetStatuses": [{"name": "a", "replicas": 1}, {"name": "b", "replicas": 1}]}
    stray = c.children.pop(0)
    del stray["metadata"]["labels"][KEYS.subset_name]
    c.client = FakeClient(listed=[stray])
    await c.reconcile(0.0)
    assert c.client.selectors == [f"app=web,!{KEYS.subset_name}"]
    assert c.client.writes("create", "deployments") == []
    assert c.client.writes("delete", "deployments") == []
    assert c.client.writes("patch", "deployments") == [("web-a", {"metadata": {"labels": {KEYS.subset_name: "a"}}})]


async def test_a_new_uniteddeployment_creates_its_children_without_listing() -> None:
    """No status has listed its subsets yet, so no child of it can have lost its label: a
    cold start of many UnitedDeployments makes no extra LIST."""
    c = Cluster({}, replicas=2, a=(1, 1), b=(1, 1))
    c.children.clear()
    await c.reconcile(0.0)
    assert c.client.selectors == []
    assert len(c.client.writes("create", "deployments")) == 2


@pytest.mark.parametrize("preferred", [None, "apps.united.io/v1beta1"])
async def test_children_and_revisions_name_their_owner_by_the_version_discovery_prefers(preferred: str | None) -> None:
    """The garbage collector maps owners by that version and reads back, twice, every
    dependent whose reference names another; unknown, the version read."""
    c = Cluster({}, replicas=2, a=(1, 1), b=(1, 1))
    c.children.clear()
    c.owner_api_version = preferred
    await c.reconcile(0.0)
    created = [*c.client.writes("create", "deployments"), *c.client.writes("create", "controllerrevisions")]
    assert len(created) == 3
    for _, body in created:
        refs = (json.loads(body) if isinstance(body, bytes) else body)["metadata"]["ownerReferences"]
        assert [r["apiVersion"] for r in refs] == [preferred or c.obj["apiVersion"]]


async def test_an_admitted_spec_is_renamed_when_the_preferred_version_changes() -> None:
    r = reconciler()
    obj = Cluster({}, replicas=2, a=(1, 1), b=(1, 1)).obj
    assert (await r._admit("ns/web", obj)).api_version == "apps.united.io/v1alpha1"
    r.caches.owner_api_version = "apps.united.io/v1beta1"
    assert (await r._admit("ns/web", obj)).api_version == "apps.united.io/v1beta1"


async def test_a_pass_with_a_child_for_every_subset_lists_nothing() -> None:
    c = Cluster({}, replicas=2, a=(1, 1), b=(1, 1))
    await c.reconcile(0.0)
    assert c.client.selectors == []


class LiveClient(NamingClient):
    """Answers GETs of the UnitedDeployment with ``live`` (None: not found)."""

    def __init__(self, live: dict[str, Any] | None) -> None:
        super().__init__()
        self.live = live
        self.gets = 0

    async def get(self, resource: Any, name: str, *, namespace: str) -> Any:
        self.gets += 1
        if self.live is None:
            raise NotFound("gone", status=404)
        return self.live


def passes(c: Cluster, client: Any, *, revisions: list[dict[str, Any]]) -> Any:
    from united.kube import Resource
    from united.uniteddeployment.reconciler import Caches, Reconciler

    caches = Caches(
        uniteddeployments=store_of([c.obj]),
        revisions=store_of(revisions),
        pods=store_of(),
        children={"deploymentTemplate": store_of(c.children)},
    )
    ud = Resource("apps.united.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")
    return Reconciler(client=client, caches=caches, recorder=c.recorder, ud_resource=ud)  # type: ignore[arg-type]


def orphaned_revision(c: Cluster) -> dict[str, Any]:
    """The revision of ``c``'s template, as a previous owner deleted with orphan propagation left it."""
    from united.uniteddeployment import history
    from united.uniteddeployment.admission import admit
    from united.uniteddeployment.render import owner_reference

    ud = admit(c.obj)
    created = history.plan(ud, [], owner_reference=owner_reference(ud), current=None).create
    assert created is not None
    del created["metadata"]["ownerReferences"]
    created["metadata"].update(uid="rev-uid", resourceVersion="5")
    return created


class TestAdoption:
    """Orphaned revisions are adopted, only after the owner read afresh is
    neither being deleted nor replaced (client-go's RecheckDeletionTimestamp)."""

    async def test_an_orphaned_revision_is_adopted_and_used(self) -> None:
        c = Cluster({}, replicas=2, a=(1, 1), b=(1, 1))
        rev = orphaned_revision(c)
        client = LiveClient(c.obj)
        await passes(c, client, revisions=[rev]).reconcile("ns/web")
        assert client.gets == 1
        assert client.writes("create", "controllerrevisions") == []
        [(name, body)] = client.writes("patch", "controllerrevisions")
        assert name == rev["metadata"]["name"] == c.revision
        assert body["metadata"]["uid"] == "rev-uid" and body["metadata"]["resourceVersion"] == "5"
        assert [r["uid"] for r in body["metadata"]["ownerReferences"]] == ["u1"]

    async def test_nothing_is_adopted_for_an_owner_being_deleted_or_replaced(self) -> None:
        for live in (
            {**c_obj(), "metadata": {**c_obj()["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}},
            {**c_obj(), "metadata": {**c_obj()["metadata"], "uid": "u2"}},
            None,
        ):
            c = Cluster({}, replicas=2, a=(1, 1), b=(1, 1))
            del c.children[0]["metadata"]["ownerReferences"]  # an orphaned child, too
            client = LiveClient(live)
            await passes(c, client, revisions=[orphaned_revision(c)]).reconcile("ns/web")
            assert client.gets == 1 and client.calls == [], live

    async def test_a_revision_name_taken_meanwhile_ends_the_pass_before_any_child_write(self) -> None:
        class Taken(NamingClient):
            async def create(self, resource: Any, body: Any, *, namespace: str) -> Any:
                if resource.plural == "controllerrevisions":
                    raise AlreadyExists("exists", status=409)
                return await super().create(resource, body, namespace=namespace)

        c = Cluster({}, replicas=4, a=(1, 1), b=(1, 1))
        client = Taken()
        with pytest.raises(RetryableError, match="compare its data"):
            await passes(c, client, revisions=[]).reconcile("ns/web")
        assert client.calls == []


def c_obj() -> dict[str, Any]:
    return Cluster({}, replicas=2, a=(1, 1), b=(1, 1)).obj


async def test_an_undecodable_ud_gets_a_warning_event_and_a_stalled_status_once() -> None:
    from tests.unit.uniteddeployment.test_adaptive import FakeRecorder
    from united.api.decode import Undecodable
    from united.kube import Resource
    from united.uniteddeployment.reconciler import Caches, Reconciler

    reason = "spec: nested deeper than 100 levels, more than the controller reads"
    meta = {"name": "web", "namespace": "ns", "uid": "u1", "resourceVersion": "5", "generation": 2}
    stub = {"apiVersion": "apps.united.io/v1alpha1", "kind": "UnitedDeployment", "metadata": meta}
    skipped = {"ns/web": Undecodable(stub, reason)}
    client, recorder = FakeClient(), FakeRecorder()
    caches = Caches(uniteddeployments=store_of(), revisions=store_of(), pods=store_of(), undecodable=skipped)
    ud = Resource("apps.united.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")
    r = Reconciler(client=client, caches=caches, recorder=recorder, ud_resource=ud, clock=lambda: "T")  # type: ignore[arg-type]

    await r.reconcile("ns/web")
    assert recorder.events == [("Warning", "Undecodable", reason)]
    [(name, patch)] = client.writes("patch", "uniteddeployments/status")
    assert name == "web"
    stalled = {c["type"]: c for c in patch["status"]["conditions"]}["Stalled"]
    assert (stalled["status"], stalled["reason"], stalled["message"]) == ("True", "Undecodable", reason)
    assert patch["status"]["observedGeneration"] == 2

    # The stub of the next watch event carries the status written: nothing more to write.
    written = {**stub, "metadata": {**meta, "resourceVersion": "99"}, "status": patch["status"]}
    skipped["ns/web"] = Undecodable(written, reason)
    await r.reconcile("ns/web")
    assert len(client.writes("patch", "uniteddeployments/status")) == 1

    del skipped["ns/web"]  # deleted: forgotten, nothing written
    await r.reconcile("ns/web")
    assert len(client.calls) == 1


async def test_revisions_are_read_through_indexes_and_a_taken_name_is_probed_past() -> None:
    """A pass reads its own revisions, the namespace's orphans and single names, never every
    revision of the namespace (500 UDs x 10 revisions would be 5,000 per pass); a name held
    by another UD's revision is still found and probed past."""
    from united.kube import Resource
    from united.runtime.informer import Store
    from united.uniteddeployment import revision as revisions_mod
    from united.uniteddeployment.admission import admit
    from united.uniteddeployment.reconciler import Caches, Reconciler

    class Indexed(Store):
        def list(self, namespace: str | None = None) -> list[dict[str, Any]]:
            raise AssertionError(f"listed every revision of {namespace!r}")

    c = Cluster({}, replicas=2, a=(1, 1), b=(1, 1))
    ud = admit(c.obj)
    assert ud.spec.template is not None
    wanted = revisions_mod.name("web", ud.spec.template, 0)
    held = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": wanted,
            "namespace": "ns",
            "uid": "r1",
            "resourceVersion": "5",
            "ownerReferences": [
                {
                    "uid": "another-ud",
                    "controller": True,
                    "kind": "UnitedDeployment",
                    "name": "other",
                    "apiVersion": "apps.united.io/v1alpha1",
                }
            ],
        },
        "data": {},
        "revision": 1,
    }
    store = Indexed()
    store.upsert(held)
    caches = Caches(
        uniteddeployments=store_of([c.obj]),
        revisions=store,
        pods=store_of(c.pods, label=KEYS.subset_name),
        children={"deploymentTemplate": store_of(c.children)},
    )
    ud_resource = Resource("apps.united.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")
    r = Reconciler(client=c.client, caches=caches, recorder=c.recorder, ud_resource=ud_resource)  # type: ignore[arg-type]
    await r.reconcile("ns/web")
    [(_, _, _, body)] = [call for call in c.client.calls if call[:2] == ("create", "controllerrevisions")]
    created = json.loads(body) if isinstance(body, bytes) else body
    assert created["metadata"]["name"] == revisions_mod.name("web", ud.spec.template, 1)


def test_the_status_log_names_what_the_merge_patch_changes() -> None:
    from united.uniteddeployment.reconciler import changed_paths

    patch = {"replicas": 3, "conditions": [{"type": "Ready"}], "rollout": {"wave": 1, "since": None}, "x": {}}
    assert changed_paths(patch) == ["/replicas", "/conditions", "/rollout/wave", "/rollout/since", "/x"]
    assert changed_paths({}) == ["/"]


async def test_following_a_new_total_scales_every_child_and_records_no_event() -> None:
    c = Cluster({}, replicas=4, a=(1, 1), b=(1, 1))
    await c.reconcile(0.0)
    scaled = {n: b["spec"]["replicas"] for n, b in c.client.writes("patch", "deployments")}
    assert scaled == {"web-a": 2, "web-b": 2}
    assert [e[1] for e in c.recorder.events if e[1] == "ScaledSubset"] == []
