"""Ownership on the local control plane: what the controller may write is decided by what it
read, in the UnitedDeployment's own namespace, and every write names the object it read.

Forged objects carry an ownerReference whose apiVersion the garbage collector cannot resolve:
with a resolvable one it deletes them as dangling within a second, before the pass that
would read them — the controller itself compares uids only, as Kubernetes' own do.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.e2e.controller.helpers import (
    DEPLOYMENTS,
    EVENTS,
    UD,
    children,
    get_ud,
    patch_ud,
    subset_of,
    ud,
    wait_ready,
    wait_shape,
    zone,
)
from tests.support.controller import Controller
from united.devcluster.simulation import Simulation
from united.kube.client import CONFIG_MAPS, CONTROLLER_REVISIONS, JSON, NAMESPACES, KubeClient, PatchType
from united.kube.errors import ApiError, Conflict, NotFound
from united.kube.wait import eventually

pytestmark = pytest.mark.e2e
SUBSET = "apps.united.io/subset-name"


@pytest.fixture
async def elsewhere(kube: KubeClient, namespace: str) -> AsyncIterator[str]:
    """A second namespace: another tenant's."""
    name = f"{namespace[:52]}-b"
    await kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    with contextlib.suppress(NotFound):
        await kube.delete(NAMESPACES, name)


def deployment(name: str, labels: dict[str, str], owners: list[JSON]) -> JSON:
    pod = {"metadata": {"labels": {"x": name}}, "spec": {"containers": [{"name": "m", "image": "i"}]}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels, "ownerReferences": owners},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"x": name}}, "template": pod},
    }


async def warnings(kube: KubeClient, namespace: str) -> list[JSON]:
    return [e for e in (await kube.list(EVENTS, namespace=namespace)).items if e.get("type") == "Warning"]


def forged_owner(uid: str) -> JSON:
    return {
        "apiVersion": "forged.invalid/v1",
        "kind": "UnitedDeployment",
        "name": "web",
        "uid": uid,
        "controller": True,
    }


async def test_objects_elsewhere_naming_our_uid_cause_no_write_in_our_namespace(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str, elsewhere: str
) -> None:
    doc = ud("web", [zone("a", "zone-a")], replicas=1, revisionHistoryLimit=2)
    await kube.create(UD, doc, namespace=namespace)
    first = (await wait_ready(kube, namespace, doc))["status"]["updatedRevision"]
    containers = [{"name": "main", "image": "registry.invalid/united/app:2"}]
    pod_spec = {"template": {"spec": {"containers": containers}}}
    await patch_ud(kube, namespace, doc, {"spec": {"template": {"deploymentTemplate": {"spec": pod_spec}}}})

    async def rolled() -> None:
        obj = await wait_ready(kube, namespace, doc)
        assert obj["status"]["currentRevision"] != first, "not rolled out yet"

    await eventually(rolled, within=90, what="second revision rolled out")
    revisions = {r["metadata"]["name"] for r in (await kube.list(CONTROLLER_REVISIONS, namespace=namespace)).items}
    assert first in revisions and len(revisions) == 2
    uid = (await get_ud(kube, namespace, doc))["metadata"]["uid"]

    # Unrelated objects of tenant a, named like the forged ones of tenant b.
    keeper = await kube.create(
        CONFIG_MAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keeper"}}, namespace=namespace
    )
    keeper_ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "keeper", "uid": keeper["metadata"]["uid"]}
    for name in ("victim-delete", "victim-release"):
        await kube.create(DEPLOYMENTS, deployment(name, {"app": "other"}, [keeper_ref]), namespace=namespace)
    # Tenant b: a "child" of an unknown subset (deleted as a removed subset), one that stopped
    # matching the selector (released), and a newer revision (the oldest real one trimmed).
    owner = forged_owner(uid)
    await kube.create(
        DEPLOYMENTS, deployment("victim-delete", {"app": "web", SUBSET: "zzz"}, [owner]), namespace=elsewhere
    )
    await kube.create(DEPLOYMENTS, deployment("victim-release", {SUBSET: "a"}, [owner]), namespace=elsewhere)
    forged_revision = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": "web-forged", "labels": {"app": "web"}, "ownerReferences": [owner]},
        "data": {},
        "revision": 100,
    }
    await kube.create(CONTROLLER_REVISIONS, forged_revision, namespace=elsewhere)
    await asyncio.sleep(1)  # the controller's informers see them

    for replicas in (2, 3):  # passes of tenant a's UnitedDeployment after the forged objects are cached
        await patch_ud(kube, namespace, doc, {"spec": {"replicas": replicas}})
        await wait_shape(kube, namespace, doc, {"a": replicas})
    await wait_ready(kube, namespace, doc)

    for name in ("victim-delete", "victim-release"):
        mine: Any = await kube.get(DEPLOYMENTS, name, namespace=namespace)
        assert not mine["metadata"].get("deletionTimestamp"), f"{namespace}/{name} deleted"
        assert mine["metadata"].get("ownerReferences") == [keeper_ref], f"{namespace}/{name} released"
        theirs: Any = await kube.get(DEPLOYMENTS, name, namespace=elsewhere)
        assert theirs["metadata"]["ownerReferences"] == [owner]
    revisions = {r["metadata"]["name"] for r in (await kube.list(CONTROLLER_REVISIONS, namespace=namespace)).items}
    assert first in revisions, "a real revision was trimmed for a forged one"
    assert (await kube.get(CONTROLLER_REVISIONS, "web-forged", namespace=elsewhere))["metadata"]["ownerReferences"] == [
        owner
    ]


async def test_the_api_server_refuses_a_patch_or_delete_naming_another_object(kube: KubeClient, namespace: str) -> None:
    """What the controller's writes rely on: a uid in a merge patch or in delete preconditions
    that is not the object's makes the API server refuse the write (the name was reused)."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "reused"}}
    made = await kube.create(CONFIG_MAPS, body, namespace=namespace)
    stale = {"metadata": {"uid": "00000000-0000-0000-0000-000000000000", "labels": {"x": "1"}}}
    with pytest.raises(ApiError) as refused:
        await kube.patch(CONFIG_MAPS, "reused", stale, patch_type=PatchType.MERGE, namespace=namespace)
    assert refused.value.status in (409, 422), refused.value
    old = {"metadata": {"resourceVersion": "1", "labels": {"x": "1"}}}
    with pytest.raises(Conflict):
        await kube.patch(CONFIG_MAPS, "reused", old, patch_type=PatchType.MERGE, namespace=namespace)
    with pytest.raises(Conflict):
        await kube.delete(CONFIG_MAPS, "reused", namespace=namespace, preconditions={"uid": "not-its-uid"})
    kept = await kube.get(CONFIG_MAPS, "reused", namespace=namespace)
    assert kept["metadata"]["uid"] == made["metadata"]["uid"] and "labels" not in kept["metadata"]


async def test_a_relabelled_child_keeps_its_subset_and_gets_its_label_back(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    """On the real API server: both children survive (same uids) and the
    edited label is restored; the controller never sends the selector patch it would refuse."""
    doc = ud("relabel", [zone("a", "zone-a"), zone("b", "zone-b")], replicas=2)
    await kube.create(UD, doc, namespace=namespace)
    await wait_ready(kube, namespace, doc)
    before = {subset_of(c): c for c in await children(kube, namespace, doc)}
    relabelled = before["a"]["metadata"]["name"]
    await kube.patch(
        DEPLOYMENTS,
        relabelled,
        {"metadata": {"labels": {SUBSET: "b"}}},
        patch_type=PatchType.MERGE,
        namespace=namespace,
    )

    async def restored() -> None:
        now = {c["metadata"]["name"]: c for c in await children(kube, namespace, doc)}
        assert {n: c["metadata"]["uid"] for n, c in now.items()} == {
            c["metadata"]["name"]: c["metadata"]["uid"] for c in before.values()
        }, "a child was deleted or created"
        assert subset_of(now[relabelled]) == "a", "label not restored"

    await eventually(restored, within=60, what="label restored, both children kept")
    await wait_ready(kube, namespace, doc)
    assert await warnings(kube, namespace) == [], "a write was refused"


async def test_a_child_whose_subset_label_was_removed_gets_it_back_and_no_second_child(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    """Removing the label (kubectl's merge patch to null) takes the child out
    of the label-filtered watch, which reports it DELETED; the controller must find it, write
    the label back (same uid) and never create a second Deployment for its subset."""
    doc = ud("unlabel", [zone("a", "zone-a"), zone("b", "zone-b")], replicas=2)
    await kube.create(UD, doc, namespace=namespace)
    await wait_ready(kube, namespace, doc)
    before = {subset_of(c): c["metadata"]["uid"] for c in await children(kube, namespace, doc)}
    stripped = next(c for c in await children(kube, namespace, doc) if subset_of(c) == "a")
    await kube.patch(
        DEPLOYMENTS,
        stripped["metadata"]["name"],
        {"metadata": {"labels": {SUBSET: None}}},
        patch_type=PatchType.MERGE,
        namespace=namespace,
    )

    async def one_per_subset() -> None:
        every = (await kube.list(DEPLOYMENTS, namespace=namespace)).items
        assert len(every) == 2, f"{len(every)} Deployments: a second child was created"
        now = {c["metadata"]["labels"].get(SUBSET): c["metadata"]["uid"] for c in every}
        assert now == before, "label not restored, or a child was replaced"

    await eventually(one_per_subset, within=60, what="label restored, no second child")
    await wait_ready(kube, namespace, doc)
    await one_per_subset()
    assert await warnings(kube, namespace) == [], "a write was refused"
