"""The informer against the real API server: list, watch, label selection, owner
index, stripping; a store that equals a fresh LIST after churn across many watch
reconnects; bookmarks moving the resume point; and, through the fault-injecting
proxy (``tests.support.faultproxy``) in front of the same API server, a 410 on
connect and in the stream (re-list, synthesised deletes) and a stalled stream (the
inactivity timeout).

Why a proxy for the 410: Kubernetes 1.20's watch cache keeps at least five minutes
of events and grows its buffer rather than drop fresher ones, so no resourceVersion
expires within a test's lifetime (a watch from ``resourceVersion=1`` on this control
plane is answered, not refused). The proxy answers exactly as the API server does
when one expires; everything around it is real.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import AsyncIterator

import pytest

from tests.support.faultproxy import FaultProxy
from united.api.decode import Undecodable
from united.devcluster.cluster import LocalCluster
from united.kube.client import CONFIG_MAPS, CONTROLLER_REVISIONS, JSON, KubeClient, PatchType
from united.kube.errors import AlreadyExists, NotFound
from united.kube.wait import eventually
from united.runtime.informer import ADDED, DELETED, LAST_APPLIED_ANNOTATION, MODIFIED, Informer, object_key

pytestmark = pytest.mark.e2e

LABEL = "e2e.united.dev/informer"
SELECTOR = f"{LABEL}=yes"

Event = tuple[str, str, str | None, str | None]  # type, key, rv, old rv


def config_map(name: str, *, labelled: bool = True, owner: JSON | None = None, **data: str) -> JSON:
    meta: JSON = {"name": name}
    if labelled:
        meta["labels"] = {LABEL: "yes"}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


class Recorder:
    """A handler that records events and mirrors the objects they describe."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.mirror: dict[str, str] = {}  # key -> resourceVersion, from events only

    def __call__(self, kind: str, obj: JSON, old: JSON | None) -> None:
        key = object_key(obj)
        rv = obj["metadata"].get("resourceVersion")
        self.events.append((kind, key, rv, old["metadata"].get("resourceVersion") if old else None))
        if kind == DELETED:
            self.mirror.pop(key, None)
        else:
            self.mirror[key] = rv

    def of(self, key: str) -> list[str]:
        return [kind for kind, k, _, _ in self.events if k == key]


@contextlib.asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.has_synced.wait(), 30)
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def versions(objects: list[JSON]) -> dict[str, str]:
    return {object_key(o): o["metadata"]["resourceVersion"] for o in objects}


async def listed(kube: KubeClient, namespace: str) -> dict[str, str]:
    return versions((await kube.list(CONFIG_MAPS, namespace=namespace, label_selector=SELECTOR)).items)


async def test_lists_then_watches_changes_with_selection_stripping_and_owner_index(
    kube: KubeClient, namespace: str
) -> None:
    owner = await kube.create(CONFIG_MAPS, config_map("owner"), namespace=namespace)
    await kube.create(CONFIG_MAPS, config_map("a", owner=owner, v="1"), namespace=namespace)
    await kube.create(CONFIG_MAPS, config_map("b", owner=owner), namespace=namespace)
    await kube.create(CONFIG_MAPS, config_map("outsider", labelled=False), namespace=namespace)
    annotated = config_map("applied")
    annotated["metadata"]["annotations"] = {LAST_APPLIED_ANNOTATION: '{"big": "json"}', "keep": "me"}
    applied = await kube.apply(CONFIG_MAPS, annotated, field_manager="e2e", namespace=namespace)
    assert applied["metadata"].get("managedFields"), "premise: the server tracks managed fields"

    recorder = Recorder()
    informer = Informer(kube, CONFIG_MAPS, namespace=namespace, label_selector=SELECTOR, handlers=[recorder])
    ns = namespace
    async with running(informer):
        assert sorted(informer.store.keys()) == [f"{ns}/a", f"{ns}/applied", f"{ns}/b", f"{ns}/owner"]
        assert sorted((kind, key) for kind, key, _, _ in recorder.events) == [
            (ADDED, f"{ns}/a"),
            (ADDED, f"{ns}/applied"),
            (ADDED, f"{ns}/b"),
            (ADDED, f"{ns}/owner"),
        ]
        stored = informer.store.get(f"{ns}/applied")
        assert stored is not None
        assert "managedFields" not in stored["metadata"]
        assert stored["metadata"]["annotations"] == {"keep": "me"}
        assert [object_key(o) for o in informer.store.by_owner(owner["metadata"]["uid"])] == [f"{ns}/a", f"{ns}/b"]

        a = await kube.patch(CONFIG_MAPS, "a", {"data": {"v": "2"}}, patch_type=PatchType.MERGE, namespace=ns)
        await kube.delete(CONFIG_MAPS, "b", namespace=ns)
        d = await kube.create(CONFIG_MAPS, config_map("d"), namespace=ns)
        # An object that starts matching the selector arrives as ADDED.
        await kube.patch(
            CONFIG_MAPS, "outsider", {"metadata": {"labels": {LABEL: "yes"}}}, patch_type=PatchType.MERGE, namespace=ns
        )

        async def changes_seen() -> None:
            assert recorder.of(f"{ns}/a") == [ADDED, MODIFIED]
            assert recorder.of(f"{ns}/b") == [ADDED, DELETED]
            assert recorder.of(f"{ns}/d") == [ADDED]
            assert recorder.of(f"{ns}/outsider") == [ADDED]

        await eventually(changes_seen, within=10, what="watch events")
        modified = next(e for e in recorder.events if e[:2] == (MODIFIED, f"{ns}/a"))
        assert modified[2] == a["metadata"]["resourceVersion"]
        assert modified[3] is not None and modified[3] != modified[2], "MODIFIED carries the old object"
        deleted = next(e for e in recorder.events if e[:2] == (DELETED, f"{ns}/b"))
        assert deleted[3] is not None, "DELETED carries the stored object"
        assert informer.store.get(f"{ns}/b") is None
        d_stored = informer.store.get(f"{ns}/d")
        assert d_stored is not None and d_stored["metadata"]["uid"] == d["metadata"]["uid"]
        assert [object_key(o) for o in informer.store.by_owner(owner["metadata"]["uid"])] == [f"{ns}/a"]
        assert versions(informer.store.list()) == await listed(kube, ns)
        assert (informer.lists, informer.relists, informer.gone, informer.errors) == (1, 0, 0, 0)


async def test_store_equals_a_fresh_list_after_churn_across_watch_reconnects(kube: KubeClient, namespace: str) -> None:
    names = [f"c{i}" for i in range(12)]
    for name in names[:6]:
        await kube.create(CONFIG_MAPS, config_map(name, n="0"), namespace=namespace)
    recorder = Recorder()
    # timeoutSeconds of 1-2 s: the server ends the watch over and over during the churn.
    informer = Informer(
        kube, CONFIG_MAPS, namespace=namespace, label_selector=SELECTOR, watch_timeout=1, handlers=[recorder]
    )
    rng = random.Random(20240229)
    async with running(informer):
        loop = asyncio.get_running_loop()
        started = loop.time()
        operations = 0
        while loop.time() - started < 6 or operations < 90:
            name = rng.choice(names)
            action = rng.random()
            try:
                if action < 0.4:
                    await kube.create(CONFIG_MAPS, config_map(name, n="0"), namespace=namespace)
                elif action < 0.8:
                    await kube.patch(
                        CONFIG_MAPS,
                        name,
                        {"data": {"n": str(operations)}},
                        patch_type=PatchType.MERGE,
                        namespace=namespace,
                    )
                else:
                    await kube.delete(CONFIG_MAPS, name, namespace=namespace)
            except (AlreadyExists, NotFound):
                pass  # creating what exists or touching what is gone is part of the game
            operations += 1

        async def converged() -> None:
            truth = await listed(kube, namespace)
            assert versions(informer.store.list()) == truth
            assert recorder.mirror == truth, "the events alone must rebuild the same state"

        await eventually(converged, within=15, what="store equals a fresh LIST")
        assert informer.watches >= 3, "the server-side timeout should have ended several watches"
        assert (informer.lists, informer.relists, informer.gone, informer.errors) == (1, 0, 0, 0), (
            "normal watch ends resume from the last RV; nothing may force a re-list"
        )
        assert informer.handler_errors == 0


async def test_a_follower_sees_exactly_what_a_selected_watch_delivers(kube: KubeClient, namespace: str) -> None:
    """An informer served from an unselected one (``Informer.follow``) gets, object by object,
    the very events a server-side selected watch delivers — objects starting and stopping to
    match included — and holds the source's objects, not copies."""
    names = [f"c{i}" for i in range(10)]
    for i, name in enumerate(names[:6]):
        await kube.create(CONFIG_MAPS, config_map(name, labelled=i % 2 == 0, n="0"), namespace=namespace)
    source = Informer(kube, CONFIG_MAPS, namespace=namespace)
    selected, followed = Recorder(), Recorder()
    server_side = Informer(kube, CONFIG_MAPS, namespace=namespace, label_selector=SELECTOR, handlers=[selected])
    follower = Informer(kube, CONFIG_MAPS, namespace=namespace, label_selector=SELECTOR, handlers=[followed])
    assert follower.follow(source)
    rng = random.Random(20261125)
    async with running(source), running(server_side), running(follower):
        assert follower.following and follower.lists == 0, "served from the source: no LIST of its own"
        for operation in range(80):
            name, action = rng.choice(names), rng.random()
            label: dict[str, str | None] = {LABEL: "yes" if rng.random() < 0.5 else None}
            try:
                if action < 0.3:
                    await kube.create(CONFIG_MAPS, config_map(name, labelled=rng.random() < 0.5), namespace=namespace)
                elif action < 0.6:
                    relabel: JSON = {"metadata": {"labels": label}}
                    await kube.patch(CONFIG_MAPS, name, relabel, patch_type=PatchType.MERGE, namespace=namespace)
                elif action < 0.85:
                    change: JSON = {"data": {"n": str(operation)}}
                    await kube.patch(CONFIG_MAPS, name, change, patch_type=PatchType.MERGE, namespace=namespace)
                else:
                    await kube.delete(CONFIG_MAPS, name, namespace=namespace)
            except (AlreadyExists, NotFound):
                pass

        async def same() -> None:
            truth = await listed(kube, namespace)
            assert selected.mirror == truth and followed.mirror == truth
            for key in {key for _, key, _, _ in selected.events + followed.events}:
                assert [e for e in followed.events if e[1] == key] == [e for e in selected.events if e[1] == key], key

        await eventually(same, within=20, what="the follower's events equal the selected watch's")
        assert all(obj is source.store.get(object_key(obj)) for obj in follower.store.list())
        assert follower.lists == 0 and follower.watches == 0


async def test_bookmarks_move_the_resume_point_without_events(kube: KubeClient, namespace: str) -> None:
    recorder = Recorder()
    # A 1.20 API server sends a bookmark two seconds before a watch's deadline, if
    # the resource saw writes meanwhile; watch_timeout=4 gives deadlines of 4-8 s.
    informer = Informer(
        kube, CONFIG_MAPS, namespace=namespace, label_selector=SELECTOR, watch_timeout=4, handlers=[recorder]
    )
    async with running(informer):
        listed_rv = int(informer.resource_version)
        # Writes the selector filters out: no events reach us, but the resource's
        # resourceVersion moves on, and bookmarks must carry it to the informer.
        written = await kube.create(CONFIG_MAPS, config_map("outsider", labelled=False), namespace=namespace)
        written_rv = int(written["metadata"]["resourceVersion"])
        assert written_rv > listed_rv

        async def bookmarked() -> None:
            nonlocal written_rv
            if int(informer.resource_version) < written_rv:
                again = await kube.patch(
                    CONFIG_MAPS,
                    "outsider",
                    {"data": {"t": str(written_rv)}},
                    patch_type=PatchType.MERGE,
                    namespace=namespace,
                )
                written_rv = int(again["metadata"]["resourceVersion"])
            assert int(informer.resource_version) > listed_rv

        await eventually(bookmarked, within=30, interval=1.0, what="a bookmark with a newer resourceVersion")
        assert recorder.events == []
        assert (informer.lists, informer.errors) == (1, 0)


@pytest.fixture
async def proxy(cluster: LocalCluster) -> AsyncIterator[FaultProxy]:
    async with FaultProxy(cluster.server, token=cluster.admin.token, ca_cert=cluster.ca_cert) as fault_proxy:
        yield fault_proxy


@pytest.fixture
async def proxied(proxy: FaultProxy) -> AsyncIterator[KubeClient]:
    """A client whose requests go through the fault proxy."""
    async with proxy.kube_client() as client:
        yield client


WATCHES = r"/configmaps$"


async def test_gone_on_connect_relists_and_synthesises_deletes_for_objects_removed_while_away(
    kube: KubeClient, proxied: KubeClient, proxy: FaultProxy, namespace: str
) -> None:
    ns = namespace
    for name in ("keep", "change", "remove-1", "remove-2"):
        await kube.create(CONFIG_MAPS, config_map(name), namespace=ns)
    recorder = Recorder()
    informer = Informer(proxied, CONFIG_MAPS, namespace=ns, label_selector=SELECTOR, handlers=[recorder])
    async with running(informer):
        assert len(informer.store) == 4
    stopped_at = informer.resource_version

    # While nobody watches: two deletions, a change, a creation.
    await kube.delete(CONFIG_MAPS, "remove-1", namespace=ns)
    await kube.delete(CONFIG_MAPS, "remove-2", namespace=ns)
    await kube.patch(CONFIG_MAPS, "change", {"data": {"x": "y"}}, patch_type=PatchType.MERGE, namespace=ns)
    await kube.create(CONFIG_MAPS, config_map("new"), namespace=ns)

    recorder.events.clear()
    proxy.add_rule(methods="GET", path=WATCHES, watch=True, respond=410, count=1)  # "too old resourceVersion"
    async with running(informer):

        async def relisted() -> None:
            assert (informer.gone, informer.relists) == (1, 1)
            assert sorted((kind, key) for kind, key, _, _ in recorder.events) == [
                (ADDED, f"{ns}/new"),
                (DELETED, f"{ns}/remove-1"),  # synthesised: no watch ever told
                (DELETED, f"{ns}/remove-2"),
                (MODIFIED, f"{ns}/change"),
            ]

        await eventually(relisted, within=15, what="re-list after a 410 on connect")
        refused = [e for e in proxy.log.requests(method="GET") if e.status == 410]
        assert [e.param("resourceVersion") for e in refused] == [stopped_at], (
            "the restarted informer resumes from where it stopped"
        )
        truth = await listed(kube, ns)
        assert versions(informer.store.list()) == truth
        assert recorder.mirror == truth, "the events alone must rebuild the same state"

        # And it watches on from the new LIST.
        await kube.delete(CONFIG_MAPS, "keep", namespace=ns)

        async def still_watching() -> None:
            assert recorder.of(f"{ns}/keep") == [DELETED]

        await eventually(still_watching, within=10, what="watch after the re-list")
        assert informer.errors == 0


async def test_gone_in_the_stream_after_missed_events_relists_with_synthesised_deletes(
    kube: KubeClient, proxied: KubeClient, proxy: FaultProxy, namespace: str
) -> None:
    ns = namespace
    for name in ("a", "b", "c"):
        await kube.create(CONFIG_MAPS, config_map(name), namespace=ns)
    recorder = Recorder()
    informer = Informer(proxied, CONFIG_MAPS, namespace=ns, label_selector=SELECTOR, handlers=[recorder])
    async with running(informer):
        await proxy.wait_for_watches(1, path=WATCHES)
        # The stream stalls: the events of these changes never reach the informer...
        assert proxy.stall_watches(path=WATCHES) == 1
        await kube.delete(CONFIG_MAPS, "a", namespace=ns)
        await kube.patch(CONFIG_MAPS, "b", {"data": {"x": "y"}}, patch_type=PatchType.MERGE, namespace=ns)
        await kube.create(CONFIG_MAPS, config_map("d"), namespace=ns)
        # ...and then the server says, in the stream, that the resume point expired.
        assert proxy.inject_watch_error(path=WATCHES, code=410) == 1

        async def relisted() -> None:
            assert (informer.gone, informer.relists) == (1, 1)
            assert recorder.of(f"{ns}/a") == [ADDED, DELETED]
            assert recorder.of(f"{ns}/b") == [ADDED, MODIFIED]
            assert recorder.of(f"{ns}/d") == [ADDED]

        await eventually(relisted, within=15, what="re-list after an in-stream 410")
        truth = await listed(kube, ns)
        assert versions(informer.store.list()) == truth
        assert recorder.mirror == truth
        assert informer.errors == 0


async def test_a_stalled_watch_is_reconnected_after_inactivity_and_misses_nothing(
    kube: KubeClient, proxied: KubeClient, proxy: FaultProxy, namespace: str
) -> None:
    ns = namespace
    await kube.create(CONFIG_MAPS, config_map("before"), namespace=ns)
    recorder = Recorder()
    informer = Informer(
        proxied,
        CONFIG_MAPS,
        namespace=ns,
        label_selector=SELECTOR,
        watch_timeout=300,
        inactivity_timeout=2.0,
        handlers=[recorder],
    )
    async with running(informer):
        await proxy.wait_for_watches(1, path=WATCHES)
        # A half-open connection: the stream stays up but delivers nothing, forever.
        assert proxy.stall_watches(path=WATCHES) == 1
        await kube.create(CONFIG_MAPS, config_map("during"), namespace=ns)
        await kube.delete(CONFIG_MAPS, "before", namespace=ns)

        async def recovered() -> None:
            assert informer.inactivity_timeouts >= 1
            assert recorder.of(f"{ns}/during") == [ADDED]
            assert recorder.of(f"{ns}/before") == [ADDED, DELETED]

        await eventually(recovered, within=15, what="events after the inactivity reconnect")
        assert versions(informer.store.list()) == await listed(kube, ns)
        # The new watch resumed from the last resourceVersion seen: no re-list needed.
        assert (informer.lists, informer.relists, informer.gone, informer.errors) == (1, 0, 0, 0)


async def test_a_failing_handler_does_not_stop_the_informer(kube: KubeClient, namespace: str) -> None:
    def broken(kind: str, obj: JSON, old: JSON | None) -> None:
        raise RuntimeError("handler bug")

    recorder = Recorder()
    informer = Informer(kube, CONFIG_MAPS, namespace=namespace, label_selector=SELECTOR, handlers=[broken, recorder])
    async with running(informer):
        for name in ("x", "y"):
            await kube.create(CONFIG_MAPS, config_map(name), namespace=namespace)

        async def delivered() -> None:
            assert sorted(recorder.mirror) == [f"{namespace}/x", f"{namespace}/y"]

        await eventually(delivered, within=10, what="events despite a failing handler")
        assert informer.handler_errors == 2
        assert informer.errors == 0


# -- one unreadable object costs one object ------------------------------------------------------

DEEP = 1500
"""Levels of nesting: ``json.loads`` raises RecursionError on CPython 3.11 and 3.12 (3.13 decodes
it, and the controller's own recursive walks would then fail), and the API server stores it."""


def revision(name: str, data: object) -> JSON:
    """A ControllerRevision: its ``data`` is free-form JSON, like a UnitedDeployment's pod template,
    and its kind is cluster-wide in the controller's caches."""
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": name, "labels": {LABEL: "yes"}},
        "revision": 1,
        "data": data,
    }


def deep_revision(name: str) -> bytes:
    """Sent as text: the client cannot even encode this with ``json.dumps``."""
    data = '{"k":' * DEEP + '"x"' + "}" * DEEP
    head = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": name, "labels": {LABEL: "yes"}}}
    return (json.dumps(head)[:-1] + ', "revision": 1, "data": ' + data + "}").encode()


async def test_an_unreadable_object_is_reported_and_the_rest_is_served(kube: KubeClient, namespace: str) -> None:
    ns = namespace
    await kube.create(CONTROLLER_REVISIONS, revision("plain", {"k": "v"}), namespace=ns)
    deep = await kube.create(CONTROLLER_REVISIONS, deep_revision("deep"), namespace=ns)
    assert deep["metadata"]["uid"] and "data" not in deep, "premise: stored, and answered as its stub"
    page = await kube.get_path(f"/apis/apps/v1/namespaces/{ns}/controllerrevisions?labelSelector={SELECTOR}")
    assert page.count('{"k":') >= DEEP, "premise: the LIST page carries the whole depth"

    reported: list[Undecodable] = []
    recorder = Recorder()
    informer = Informer(
        kube,
        CONTROLLER_REVISIONS,
        namespace=ns,
        label_selector=SELECTOR,
        handlers=[recorder],
        on_undecodable=[reported.append],
    )
    async with running(informer):  # synced: the LIST was served despite the deep item
        assert informer.store.keys() == [f"{ns}/plain"]
        assert list(informer.undecodable) == [f"{ns}/deep"]
        [problem] = reported
        assert problem.object["metadata"]["uid"] == deep["metadata"]["uid"]
        assert problem.object["kind"] == "ControllerRevision"
        assert problem.reason.startswith("data: nested deeper than 100 levels")

        # The same through the watch: one deep object arrives, the next ordinary one is served.
        late = await kube.create(CONTROLLER_REVISIONS, deep_revision("late"), namespace=ns)
        # Its data an object: newer servers refuse any other JSON there.
        await kube.create(CONTROLLER_REVISIONS, revision("after", {"n": [1, 2]}), namespace=ns)

        async def served() -> None:
            assert sorted(informer.store.keys()) == [f"{ns}/after", f"{ns}/plain"]
            assert [p.object["metadata"]["uid"] for p in reported[1:]] == [late["metadata"]["uid"]]

        await eventually(served, within=30, what="the watch reports the deep object and serves the next")
        await kube.delete(CONTROLLER_REVISIONS, "deep", namespace=ns)

        async def forgotten() -> None:
            assert sorted(informer.undecodable) == [f"{ns}/late"]

        await eventually(forgotten, within=30, what="a deleted deep object is no longer reported")
        assert informer.errors == 0 and informer.relists == 0
        assert [kind for kind, key, _, _ in recorder.events] == [ADDED, ADDED]
