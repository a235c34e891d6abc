"""The informer's pure parts (keys, stripping, the store and its owner index, the
re-list diff) and its control loop against a scripted client: which resourceVersion
each watch starts from, 410 handling, and handler isolation. The real API server's
side (bookmarks, server timeouts, inactivity, a real 410) is in tests/e2e/runtime."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Any, Self, cast

import pytest

from united.api.decode import Undecodable
from united.kube.client import CONFIG_MAPS, JSON, KubeClient, ObjectList, WatchEvent
from united.kube.errors import Forbidden, Gone, TooManyRequests, TransientError
from united.runtime.informer import (
    ADDED,
    DELETED,
    LAST_APPLIED_ANNOTATION,
    MODIFIED,
    RESUME_ATTEMPTS,
    Informer,
    Store,
    compact,
    controller_uid,
    object_key,
    strip,
)


def obj(
    name: str,
    rv: str = "1",
    *,
    namespace: str | None = "ns",
    uid: str | None = None,
    owner: str | None = None,
    controller: bool = True,
    **extra: Any,
) -> JSON:
    meta: JSON = {"name": name, "resourceVersion": rv, "uid": uid or f"uid-{name}"}
    if namespace is not None:
        meta["namespace"] = namespace
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "X", "name": "o", "uid": "other", "controller": False},
            {"apiVersion": "v1", "kind": "X", "name": "o", "uid": owner, "controller": controller},
        ]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, **extra}


# -- keys and stripping -----------------------------------------------------------------


def test_object_key_is_namespace_slash_name_or_name_when_cluster_scoped() -> None:
    assert object_key(obj("a")) == "ns/a"
    assert object_key(obj("node-1", namespace=None)) == "node-1"


def test_controller_uid_is_the_controller_reference_only() -> None:
    assert controller_uid(obj("a", owner="parent")) == "parent"
    assert controller_uid(obj("a", owner="parent", controller=False)) is None
    assert controller_uid(obj("a")) is None


def test_strip_drops_managed_fields_and_last_applied_but_keeps_other_annotations() -> None:
    item = obj("a")
    item["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    item["metadata"]["annotations"] = {LAST_APPLIED_ANNOTATION: "{...}", "keep": "me"}
    assert strip(item) is item
    assert "managedFields" not in item["metadata"]
    assert item["metadata"]["annotations"] == {"keep": "me"}

    only_last_applied = obj("b")
    only_last_applied["metadata"]["annotations"] = {LAST_APPLIED_ANNOTATION: "{...}"}
    assert "annotations" not in strip(only_last_applied)["metadata"]

    untouched = obj("c", data={"k": "v"})
    assert strip(copy.deepcopy(untouched)) == untouched
    assert strip({"kind": "Weird"}) == {"kind": "Weird"}


def test_compact_shares_equal_maps_and_lists_between_objects_but_not_what_is_unique() -> None:
    spec = {"template": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}, "paused": False}
    status = {"conditions": [{"type": "Ready", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    a = compact(obj("a", spec=copy.deepcopy(spec), status=copy.deepcopy(status)))
    b = compact(obj("b", spec=copy.deepcopy(spec), status=copy.deepcopy(status)))
    assert a == obj("a", spec=spec, status=status)
    assert a["spec"] is b["spec"] and a["spec"]["template"]["containers"] is b["spec"]["template"]["containers"]
    assert a["status"] is not b["status"], "a timestamp is one write's: its map is not shared"
    assert a["metadata"] is not b["metadata"], "nor is a map holding a uid"
    same = {"metadata": {"labels": {"x": "y"}}}
    assert compact(copy.deepcopy(same)) is not compact(copy.deepcopy(same)), "an object itself is never shared"
    values = [compact({"spec": {"v": v}})["spec"] for v in (1, True, 1.0, "1", None)]
    assert [type(v["v"]) for v in values] == [int, bool, float, str, type(None)], "equal is not the same JSON"
    first, second = compact({"spec": {"a": 1, "b": 2}})["spec"], compact({"spec": {"b": 2, "a": 1}})["spec"]
    assert list(first) == ["a", "b"] and list(second) == ["b", "a"]
    assert compact({"spec": {"l": []}})["spec"]["l"] is not compact({"spec": {"l": {}}})["spec"]["l"]


def test_the_pool_of_shared_maps_is_bounded() -> None:
    from united.runtime import informer

    for i in range(informer._TREE_LIMIT + 1000):
        compact({"metadata": {"labels": {"hash": f"h-{i}"}}})
    assert len(informer._trees) <= informer._TREE_LIMIT + 3


# -- the store --------------------------------------------------------------------------


def test_store_get_list_and_the_owner_index_follow_upserts_and_removals() -> None:
    store = Store()
    assert store.upsert(obj("a", owner="p1")) is None
    store.upsert(obj("b", owner="p1"))
    store.upsert(obj("c", owner="p2"))
    store.upsert(obj("d"))
    assert len(store) == 4
    assert "ns/a" in store
    assert sorted(store.keys()) == ["ns/a", "ns/b", "ns/c", "ns/d"]
    assert [object_key(o) for o in store.by_owner("p1")] == ["ns/a", "ns/b"]
    assert store.by_owner("other") == [], "a non-controller reference must not be indexed"

    old = store.upsert(obj("a", "2", owner="p2"))  # adopted by another owner
    assert old is not None and old["metadata"]["resourceVersion"] == "1"
    assert [object_key(o) for o in store.by_owner("p1")] == ["ns/b"]
    assert [object_key(o) for o in store.by_owner("p2")] == ["ns/a", "ns/c"]

    store.upsert(obj("b", "2"))  # orphaned
    assert store.by_owner("p1") == []

    removed = store.remove("ns/c")
    assert removed is not None and object_key(removed) == "ns/c"
    assert store.remove("ns/c") is None
    assert [object_key(o) for o in store.by_owner("p2")] == ["ns/a"]
    assert store.get("ns/c") is None
    assert store.get("ns/a") == obj("a", "2", owner="p2")
    assert sorted(object_key(o) for o in store.list()) == ["ns/a", "ns/b", "ns/d"]


def test_the_owner_index_answers_per_namespace() -> None:
    """An ownerReference is namespace-local; a uid written into an object elsewhere must not
    make it a child."""
    store = Store()
    store.upsert(obj("a", owner="p"))
    store.upsert(obj("a", namespace="elsewhere", owner="p"))
    store.upsert(obj("b", namespace="elsewhere", owner="p"))
    assert [object_key(o) for o in store.by_owner("p", "ns")] == ["ns/a"]
    assert [object_key(o) for o in store.by_owner("p", "elsewhere")] == ["elsewhere/a", "elsewhere/b"]
    assert store.by_owner("p", "third") == []
    assert [object_key(o) for o in store.by_owner("p")] == ["elsewhere/a", "elsewhere/b", "ns/a"]
    store.remove("elsewhere/a")
    store.upsert(obj("b", "2", namespace="elsewhere"))
    assert store.by_owner("p", "elsewhere") == []
    assert [object_key(o) for o in store.by_owner("p")] == ["ns/a"]


def test_a_store_says_whether_a_namespace_holds_anything_until_its_last_object_goes() -> None:
    store = Store()
    assert not store.holds("ns")
    store.upsert(obj("a"))
    store.upsert(obj("b"))
    assert store.holds("ns") and not store.holds("elsewhere")
    store.remove("ns/a")
    assert store.holds("ns")
    store.remove("ns/b")
    assert not store.holds("ns")


def test_a_store_given_an_owner_function_indexes_by_it_instead_of_owner_references() -> None:
    """A member cluster's store: the owner is a label (no ownerReference can cross clusters),
    and an ownerReference there means nothing to us."""

    def by_label(item: JSON) -> str | None:
        return ((item["metadata"].get("labels") or {}).get("owner-uid")) or None

    labelled = obj("a")
    labelled["metadata"]["labels"] = {"owner-uid": "u1"}
    for store in (Store(owner=by_label), Store()):
        store.upsert(labelled)
        store.upsert(obj("b", owner="u1"))
    assert [object_key(o) for o in store.by_owner("u1", "ns")] == ["ns/b"], "default: ownerReferences"
    store = Store(owner=by_label)
    store.upsert(labelled)
    store.upsert(obj("b", owner="u1"))
    assert [object_key(o) for o in store.by_owner("u1", "ns")] == ["ns/a"]
    assert [object_key(o) for o in store.orphans("ns")] == ["ns/b"]


def test_the_label_index_follows_label_changes_namespaces_and_removals() -> None:
    def pod(name: str, namespace: str, subset: str | None) -> dict[str, Any]:
        labels = {"app": "web"} if subset is None else {"app": "web", "subset": subset}
        return {"metadata": {"name": name, "namespace": namespace, "labels": labels}}

    store = Store(label="subset")
    for p in (pod("a1", "ns", "a"), pod("a2", "ns", "a"), pod("b1", "ns", "b"), pod("a3", "other", "a")):
        store.upsert(p)
    store.upsert(pod("x", "ns", None))
    names = lambda ns, v: [o["metadata"]["name"] for o in store.labelled(ns, v)]  # noqa: E731
    assert (names("ns", "a"), names("ns", "b"), names("other", "a")) == (["a1", "a2"], ["b1"], ["a3"])
    store.upsert(pod("a2", "ns", "b"))  # relabelled
    assert (names("ns", "a"), names("ns", "b")) == (["a1"], ["b1", "a2"])
    store.remove("ns/a1")
    assert names("ns", "a") == [] and store._labelled.keys() == {"ns/b", "other/a"}
    assert Store().labelled("ns", "b") == [], "no label, no index"


def test_replace_reports_deletes_adds_and_only_real_modifications() -> None:
    store = Store()
    for item in (obj("same", "1"), obj("changed", "1"), obj("gone", "1", owner="p"), obj("recreated", "1")):
        store.upsert(item)
    changes = store.replace(
        [
            obj("same", "1"),
            obj("changed", "5"),
            obj("new", "6", owner="p"),
            obj("recreated", "7", uid="uid-recreated-2"),
        ]
    )
    summary = [(c.type, object_key(c.object), c.old["metadata"]["resourceVersion"] if c.old else None) for c in changes]
    assert summary == [
        (DELETED, "ns/gone", "1"),
        (MODIFIED, "ns/changed", "1"),
        (ADDED, "ns/new", None),
        (DELETED, "ns/recreated", "1"),
        (ADDED, "ns/recreated", None),
    ]
    assert sorted(store.keys()) == ["ns/changed", "ns/new", "ns/recreated", "ns/same"]
    assert [object_key(o) for o in store.by_owner("p")] == ["ns/new"]
    before = {object_key(o): o for o in store.list()}
    emptied = store.replace([])
    assert [(c.type, object_key(c.object)) for c in emptied] == [(DELETED, key) for key in before]
    assert all(c.object is before[object_key(c.object)] is c.old for c in emptied)
    assert len(store) == 0


def test_replace_compares_whole_objects_when_there_is_no_resource_version() -> None:
    store = Store()
    store.upsert({"metadata": {"name": "a"}, "data": 1})
    assert store.replace([{"metadata": {"name": "a"}, "data": 1}]) == []
    changes = store.replace([{"metadata": {"name": "a"}, "data": 2}])
    assert [c.type for c in changes] == [MODIFIED]


# -- the control loop, against a scripted client ----------------------------------------

Script = list[WatchEvent | Exception]


class ScriptedStream:
    def __init__(self, events: Script, resource_version: str, fail_on_connect: Exception | None) -> None:
        self._events = list(events)
        self.resource_version = resource_version
        self._fail_on_connect = fail_on_connect

    async def __aenter__(self) -> Self:
        if self._fail_on_connect is not None:
            raise self._fail_on_connect
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[WatchEvent]:
        for item in self._events:
            await asyncio.sleep(0)
            if isinstance(item, Exception):
                raise item
            rv = item.object.get("metadata", {}).get("resourceVersion")
            if rv:
                self.resource_version = rv
            yield item


class BlockingStream(ScriptedStream):
    """A watch on which nothing ever happens."""

    async def _iterate(self) -> AsyncIterator[WatchEvent]:
        await asyncio.Event().wait()
        yield WatchEvent("BOOKMARK", {})  # pragma: no cover - never reached


class ScriptedClient:
    """Answers LISTs and WATCHes from scripts; once the watch script runs out, the
    next watch blocks (so the informer idles) and ``idle`` is set."""

    def __init__(self, lists: list[ObjectList | Exception], watches: list[Script | Exception]) -> None:
        self.lists = list(lists)
        self.watches = list(watches)
        self.watched_from: list[str | None] = []
        self.idle = asyncio.Event()
        self.listed = 0

    async def list(self, resource: Any, **options: Any) -> ObjectList:
        self.listed += 1
        answer = self.lists.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return copy.deepcopy(answer)

    def watch(self, resource: Any, *, resource_version: str | None = None, **options: Any) -> ScriptedStream:
        self.watched_from.append(resource_version)
        if not self.watches:
            self.idle.set()
            return BlockingStream([], resource_version or "", None)
        script = self.watches.pop(0)
        if isinstance(script, Exception):
            return ScriptedStream([], resource_version or "", script)
        return ScriptedStream(copy.deepcopy(script), resource_version or "", None)


Recorded = list[tuple[str, str, str | None, str | None]]


def recorder(into: Recorded) -> Callable[[str, JSON, JSON | None], None]:
    def handler(kind: str, item: JSON, old: JSON | None) -> None:
        into.append(
            (
                kind,
                object_key(item),
                item["metadata"].get("resourceVersion"),
                old["metadata"].get("resourceVersion") if old else None,
            )
        )

    return handler


async def run_until_idle(informer: Informer, client: ScriptedClient) -> None:
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(client.idle.wait(), 5)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


def make_informer(client: ScriptedClient, **options: Any) -> Informer:
    # Scripted watches end at once, which the informer paces with its backoff.
    options.setdefault("backoff_initial", 0.001)
    options.setdefault("backoff_max", 0.002)
    return Informer(cast(KubeClient, client), CONFIG_MAPS, namespace="ns", **options)


async def test_watch_starts_from_the_list_rv_then_resumes_from_the_last_event_or_bookmark() -> None:
    client = ScriptedClient(
        lists=[ObjectList([obj("a", "5"), obj("b", "7")], "10")],
        watches=[
            [
                WatchEvent("ADDED", obj("c", "11")),
                WatchEvent("MODIFIED", obj("a", "12")),
                WatchEvent("BOOKMARK", {"kind": "ConfigMap", "metadata": {"resourceVersion": "15"}}),
            ],
            [WatchEvent("DELETED", obj("b", "16")), WatchEvent("ADDED", obj("a", "17"))],
        ],
    )
    events: Recorded = []
    informer = make_informer(client, handlers=[recorder(events)])
    await run_until_idle(informer, client)

    assert client.watched_from == ["10", "15", "17"], "watch from the LIST's RV, then from the last RV seen"
    assert events == [
        (ADDED, "ns/a", "5", None),
        (ADDED, "ns/b", "7", None),
        (ADDED, "ns/c", "11", None),
        (MODIFIED, "ns/a", "12", "5"),
        (DELETED, "ns/b", "16", "7"),
        (MODIFIED, "ns/a", "17", "12"),  # an ADDED for a key already stored is a modification
    ]
    assert informer.has_synced.is_set()
    assert sorted(informer.store.keys()) == ["ns/a", "ns/c"]
    assert (informer.lists, informer.relists, informer.watches, informer.gone) == (1, 0, 3, 0)


async def test_gone_in_stream_relists_and_synthesises_deletes_for_what_vanished() -> None:
    client = ScriptedClient(
        lists=[
            ObjectList([obj("a", "5"), obj("b", "6"), obj("c", "7")], "10"),
            ObjectList([obj("a", "5"), obj("c", "30"), obj("d", "31")], "40"),
        ],
        watches=[[WatchEvent("MODIFIED", obj("a", "5")), Gone("410: too old resource version")]],
    )
    events: Recorded = []
    informer = make_informer(client, handlers=[recorder(events)])
    await run_until_idle(informer, client)

    assert events[3:] == [
        (MODIFIED, "ns/a", "5", "5"),
        (DELETED, "ns/b", "6", "6"),  # synthesised: b vanished while the watch was broken
        (MODIFIED, "ns/c", "30", "7"),
        (ADDED, "ns/d", "31", None),
    ]
    assert client.watched_from == ["10", "40"], "after a 410 the next watch starts from the new LIST"
    assert (informer.gone, informer.lists, informer.relists, informer.errors) == (1, 2, 1, 0)
    assert informer.resource_version == "40"


async def test_gone_on_connect_relists_without_backing_off() -> None:
    client = ScriptedClient(
        lists=[ObjectList([obj("a", "5")], "10"), ObjectList([], "20")],
        watches=[Gone("410 on connect")],
    )
    events: Recorded = []
    informer = make_informer(client, handlers=[recorder(events)], backoff_initial=3600)
    await run_until_idle(informer, client)  # would time out if it slept an hour
    assert events == [(ADDED, "ns/a", "5", None), (DELETED, "ns/a", "5", "5")]
    assert client.watched_from == ["10", "20"]


async def test_a_broken_watch_resumes_from_the_last_resource_version_without_listing() -> None:
    client = ScriptedClient(
        lists=[ObjectList([obj("a", "5")], "10")],
        watches=[
            [WatchEvent("MODIFIED", obj("a", "11")), TransientError("stream broke")],
            TransientError("503 on connect"),
            TooManyRequests("429", retry_after=1),
            Forbidden("403 while the API server's RBAC warms up"),
            [WatchEvent("ADDED", obj("b", "12"))],
        ],
    )
    events: Recorded = []
    informer = make_informer(client, handlers=[recorder(events)])
    await run_until_idle(informer, client)
    assert client.watched_from == ["10", "11", "11", "11", "11", "12"]
    assert (informer.lists, informer.relists, informer.errors) == (1, 0, 4)
    assert events == [(ADDED, "ns/a", "5", None), (MODIFIED, "ns/a", "11", "5"), (ADDED, "ns/b", "12", None)]


async def test_a_resume_point_refused_again_and_again_is_given_up_for_a_list() -> None:
    client = ScriptedClient(
        lists=[ObjectList([obj("a", "5")], "10"), ObjectList([obj("a", "8")], "20")],
        watches=[TransientError("504: too large resource version")] * RESUME_ATTEMPTS,
    )
    informer = make_informer(client)
    await run_until_idle(informer, client)
    assert client.watched_from == ["10"] * RESUME_ATTEMPTS + ["20"]
    assert (informer.lists, informer.relists) == (2, 1)


async def test_failed_lists_and_bugs_back_off_and_relist() -> None:
    broken = obj("a", "11")
    broken["metadata"]["ownerReferences"] = 5  # storing it fails: the store may be half-updated
    client = ScriptedClient(
        lists=[
            TransientError("503"),
            ObjectList([obj("a", "5")], "10"),
            ObjectList([obj("a", "8")], "20"),
        ],
        watches=[[WatchEvent("MODIFIED", broken)]],
    )
    events: Recorded = []
    informer = make_informer(client, handlers=[recorder(events)])
    await run_until_idle(informer, client)
    assert informer.errors == 2
    assert (informer.lists, informer.relists) == (2, 1)
    assert client.watched_from == ["10", "20"]
    assert events == [(ADDED, "ns/a", "5", None), (MODIFIED, "ns/a", "8", "11")], "the re-list repairs the store"
    assert client.lists == []


async def test_a_failing_handler_neither_stops_the_informer_nor_other_handlers() -> None:
    client = ScriptedClient(
        lists=[ObjectList([obj("a", "5")], "10")],
        watches=[[WatchEvent("ADDED", obj("b", "11")), WatchEvent("DELETED", obj("a", "12"))]],
    )
    events: Recorded = []
    awaited: list[str] = []

    def broken(kind: str, item: JSON, old: JSON | None) -> None:
        raise RuntimeError("handler bug")

    async def slow(kind: str, item: JSON, old: JSON | None) -> None:
        await asyncio.sleep(0)
        awaited.append(kind)

    informer = make_informer(client, handlers=[broken, recorder(events)])
    informer.add_handler(slow)
    await run_until_idle(informer, client)
    assert [e[0] for e in events] == [ADDED, ADDED, DELETED]
    assert awaited == [ADDED, ADDED, DELETED], "coroutine handlers are awaited"
    assert informer.handler_errors == 3
    assert informer.errors == 0


async def test_run_resumes_from_a_known_resource_version_without_listing() -> None:
    client = ScriptedClient(lists=[], watches=[[WatchEvent("ADDED", obj("a", "51"))]])
    informer = make_informer(client)
    informer.resource_version = "50"
    await run_until_idle(informer, client)
    assert client.watched_from == ["50", "51"]
    assert informer.lists == 0


async def test_restart_swaps_the_client_and_resumes_the_watch_from_where_it_was() -> None:
    old = ScriptedClient(lists=[ObjectList([obj("a", "5")], "10")], watches=[[WatchEvent("ADDED", obj("b", "11"))]])
    new = ScriptedClient(lists=[], watches=[[WatchEvent("MODIFIED", obj("a", "12"))]])
    events: Recorded = []
    informer = make_informer(old, handlers=[recorder(events)])
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(old.idle.wait(), 5)
        informer.restart(cast(KubeClient, new))
        await asyncio.wait_for(new.idle.wait(), 5)
        assert informer.client is cast(KubeClient, new)
        assert new.watched_from == ["11", "12"] and new.listed == 0, "no re-list: the watch resumes"
        assert events == [(ADDED, "ns/a", "5", None), (ADDED, "ns/b", "11", None), (MODIFIED, "ns/a", "12", "5")]
        assert not task.done(), "restart is not the end of run()"
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert informer._attempt is not None and informer._attempt.cancelled(), "cancelling run() stops the attempt"


async def test_restart_before_the_first_list_lists_with_the_new_client() -> None:
    refused = ScriptedClient(lists=[Forbidden("401 old token")] * 50, watches=[])
    new = ScriptedClient(lists=[ObjectList([obj("a", "5")], "10")], watches=[])
    informer = make_informer(refused, backoff_initial=3600, backoff_max=3600)
    task = asyncio.create_task(informer.run())
    try:
        for _ in range(20):
            await asyncio.sleep(0)
        assert refused.listed == 1 and informer.errors == 1
        informer.restart(cast(KubeClient, new))
        await asyncio.wait_for(informer.has_synced.wait(), 5)
        assert (refused.listed, new.watched_from) == (1, ["10"]), "no hour-long backoff after the swap"
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_watches_that_end_at_once_are_paced_not_busy_looped() -> None:
    client = ScriptedClient(lists=[ObjectList([], "10")], watches=[[], []])
    informer = make_informer(client, backoff_initial=3600, backoff_max=3600)
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.has_synced.wait(), 1)
        for _ in range(100):
            await asyncio.sleep(0)
        assert client.watched_from == ["10"], "an instantly ended watch must be followed by a backoff"
        assert informer.resource_version == "10", "pacing keeps the resume point"
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_undecodable_objects_are_reported_and_kept_out_of_the_cache() -> None:
    def unreadable(name: str, rv: str) -> Undecodable:
        return Undecodable(obj(name, rv), f"spec: too deep ({name})")

    client = ScriptedClient(
        lists=[ObjectList([obj("a", "5")], "10", (unreadable("listed", "6"),))],
        watches=[
            [
                WatchEvent("MODIFIED", obj("a", "11")),
                WatchEvent("MODIFIED", obj("a", "12"), unreadable("a", "12")),  # a cached object turns unreadable
                WatchEvent("ADDED", obj("late", "13"), unreadable("late", "13")),
                WatchEvent("DELETED", obj("listed", "14"), unreadable("listed", "14")),
                WatchEvent("MODIFIED", obj("late", "15")),  # readable again
            ]
        ],
    )
    events: Recorded = []
    reported: list[Undecodable] = []
    informer = make_informer(client, handlers=[recorder(events)], on_undecodable=[reported.append])
    await run_until_idle(informer, client)
    assert informer.has_synced.is_set()
    assert [(object_key(p.object), p.reason) for p in reported] == [
        ("ns/listed", "spec: too deep (listed)"),
        ("ns/a", "spec: too deep (a)"),
        ("ns/late", "spec: too deep (late)"),
    ]
    assert events == [
        (ADDED, "ns/a", "5", None),
        (MODIFIED, "ns/a", "11", "5"),
        (DELETED, "ns/a", "11", "11"),  # the cache holds what can be read
        (ADDED, "ns/late", "15", None),
    ]
    assert informer.store.keys() == ["ns/late"]
    assert list(informer.undecodable) == ["ns/a"], "deleted or readable again: no longer reported"
    assert (informer.skipped, informer.errors, informer.lists) == (3, 0, 1)


def test_options_are_validated() -> None:
    client = cast(KubeClient, object())
    with pytest.raises(ValueError):
        Informer(client, CONFIG_MAPS, watch_timeout=0.5)
    with pytest.raises(ValueError):
        Informer(client, CONFIG_MAPS, inactivity_timeout=0)


# -- following an unselected informer ---------------------------------------------------


class PushStream:
    """A watch fed by the test, one event at a time."""

    def __init__(self, queue: asyncio.Queue[tuple[WatchEvent, asyncio.Future[None]]], resource_version: str) -> None:
        self.queue = queue
        self.resource_version = resource_version

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[WatchEvent]:
        while True:
            event, applied = await self.queue.get()
            self.resource_version = event.object["metadata"]["resourceVersion"]
            yield event
            applied.set_result(None)  # the informer asks for the next one: this one is applied


class PushClient:
    """One LIST, then a watch fed through :meth:`push`, which returns once the event is applied."""

    def __init__(self, listed: ObjectList) -> None:
        self.listed = listed
        self.queue: asyncio.Queue[tuple[WatchEvent, asyncio.Future[None]]] = asyncio.Queue()

    async def list(self, resource: Any, **options: Any) -> ObjectList:
        return copy.deepcopy(self.listed)

    def watch(self, resource: Any, *, resource_version: str | None = None, **options: Any) -> PushStream:
        return PushStream(self.queue, resource_version or "")

    async def push(self, kind: str, item: JSON) -> None:
        applied = asyncio.get_running_loop().create_future()
        self.queue.put_nowait((WatchEvent(kind, item), applied))
        await asyncio.wait_for(applied, 5)


def labelled(name: str, rv: str, **labels: str) -> JSON:
    item = obj(name, rv)
    item["metadata"]["labels"] = labels
    return item


async def until(condition: Callable[[], bool]) -> None:
    for _ in range(5000):
        if condition():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("not within 5 s")


async def test_a_follower_switches_to_the_source_once_it_syncs_and_sees_what_a_selected_watch_would() -> None:
    own = ScriptedClient(
        lists=[ObjectList([labelled("a", "1", sel="x"), labelled("c", "1", sel="y")], "2")], watches=[]
    )
    follower_events: Recorded = []
    follower = make_informer(own, label_selector="sel", handlers=[recorder(follower_events)])
    source_client = PushClient(
        ObjectList([labelled("a", "5", sel="x"), labelled("b", "6"), labelled("c", "1", sel="y")], "10")
    )
    source = make_informer(cast(ScriptedClient, source_client))
    tasks = [asyncio.create_task(follower.run())]
    await until(follower.has_synced.is_set)  # on its own, before anyone watched every object
    assert follower.follow(source)
    await asyncio.sleep(0.01)
    assert follower_events == [(ADDED, "ns/a", "1", None), (ADDED, "ns/c", "1", None)]
    assert not follower.following and len(own.watched_from) == 1, "its watch goes on until the source syncs"

    tasks.append(asyncio.create_task(source.run()))
    await until(lambda: follower.following and follower.store.get("ns/a") is source.store.get("ns/a"))
    assert follower_events[2:] == [(MODIFIED, "ns/a", "5", "1")], "the switch dispatches what differs, no more"
    assert follower.store.get("ns/c") is source.store.get("ns/c"), "one copy of each object"
    assert "ns/b" not in follower.store

    await source_client.push(MODIFIED, labelled("b", "11", sel="z"))  # starts matching
    await source_client.push(MODIFIED, labelled("a", "12"))  # stops matching
    await source_client.push(MODIFIED, labelled("c", "13", sel="y"))
    await source_client.push(DELETED, labelled("c", "14", sel="y"))
    await source_client.push(ADDED, labelled("d", "15"))  # never matches
    assert follower_events[3:] == [
        (ADDED, "ns/b", "11", None),
        (DELETED, "ns/a", "12", "5"),
        (MODIFIED, "ns/c", "13", "1"),
        (DELETED, "ns/c", "14", "13"),
    ]
    assert sorted(follower.store.keys()) == ["ns/b"]
    assert follower.store.labelled("ns", "z") == [] and own.listed == 1, "its own watch stopped; nothing re-listed"
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert follower._relay not in source._handlers, "a stopped follower leaves the source's handlers"


async def test_a_follower_of_a_synced_source_never_lists_and_reports_every_match_as_added() -> None:
    source_client = PushClient(ObjectList([labelled("a", "5", sel="x"), labelled("b", "6", sel="x", gone="y")], "10"))
    source = make_informer(cast(ScriptedClient, source_client))
    task = asyncio.create_task(source.run())
    await until(source.has_synced.is_set)
    own = ScriptedClient(lists=[], watches=[])
    events: Recorded = []
    follower = make_informer(own, label_selector="sel=x,!gone", handlers=[recorder(events)])
    assert follower.follow(source)
    follower_task = asyncio.create_task(follower.run())
    await until(follower.has_synced.is_set)
    assert events == [(ADDED, "ns/a", "5", None)]
    assert own.listed == 0 and own.watched_from == []
    for t in (task, follower_task):
        t.cancel()
    await asyncio.gather(task, follower_task, return_exceptions=True)


async def test_a_follower_not_yet_synced_waits_for_the_source_unless_the_source_fails() -> None:
    class FailingFirst(PushClient):
        def __init__(self, listed: ObjectList) -> None:
            super().__init__(listed)
            self.refuse = True

        async def list(self, resource: Any, **options: Any) -> ObjectList:
            if self.refuse:
                raise Forbidden("403: no RBAC yet")
            return await super().list(resource, **options)

    source_client = FailingFirst(ObjectList([labelled("a", "5", sel="x")], "10"))
    source = make_informer(cast(ScriptedClient, source_client), backoff_initial=0.05, backoff_max=0.05)
    own = ScriptedClient(lists=[ObjectList([labelled("a", "4", sel="x")], "9")], watches=[])
    follower = make_informer(own, label_selector="sel")
    assert follower.follow(source)
    tasks = [asyncio.create_task(follower.run()), asyncio.create_task(source.run())]
    await until(follower.has_synced.is_set)
    assert own.listed == 1 and not follower.following, "the source failed: listed on its own"
    source_client.refuse = False
    await until(lambda: follower.following and follower.store.get("ns/a") is source.store.get("ns/a"))

    patient = make_informer(ScriptedClient(lists=[], watches=[]), label_selector="sel")
    assert patient.follow(source)
    tasks.append(asyncio.create_task(patient.run()))
    await until(patient.has_synced.is_set)
    assert patient.lists == 0
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_follower_listing_on_its_own_stops_to_wait_for_a_source_that_lists() -> None:
    class Slow(ScriptedClient):
        async def list(self, resource: Any, **options: Any) -> ObjectList:
            await asyncio.Event().wait()
            raise AssertionError("never answered")

    own = Slow(lists=[], watches=[])
    follower = make_informer(own, label_selector="sel")
    task = asyncio.create_task(follower.run())
    await until(lambda: own.listed == 0 and follower._attempt is not None)
    source_client = PushClient(ObjectList([labelled("a", "5", sel="x")], "10"))
    source = make_informer(cast(ScriptedClient, source_client))
    assert follower.follow(source)
    source_task = asyncio.create_task(source.run())
    await until(follower.has_synced.is_set)
    assert follower.following and follower.lists == 0
    for t in (task, source_task):
        t.cancel()
    await asyncio.gather(task, source_task, return_exceptions=True)


def test_follow_refuses_what_it_cannot_evaluate_locally_and_a_second_source() -> None:
    client = ScriptedClient(lists=[], watches=[])
    source, other = make_informer(client), make_informer(client)
    assert not make_informer(client, label_selector="n>3").follow(source), "Gt has no local matcher here"
    assert not make_informer(client, label_selector="a", field_selector="b=c").follow(source)
    assert not make_informer(client, label_selector="a").follow(make_informer(client, label_selector="b"))
    follower = make_informer(client, label_selector="a")
    assert follower.follow(source) and not follower.follow(other)


async def test_a_follower_waiting_for_its_source_stops_when_cancelled_as_the_source_syncs() -> None:
    source = make_informer(ScriptedClient(lists=[], watches=[]))
    follower = make_informer(ScriptedClient(lists=[], watches=[]), label_selector="sel")
    assert follower.follow(source)
    task = asyncio.create_task(follower.run())
    await asyncio.sleep(0.05)  # waiting for the source
    source.has_synced.set()
    task.cancel()
    done, _ = await asyncio.wait([task], timeout=5)
    assert done, "the follower went on after its cancel"
