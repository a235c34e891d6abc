"""Remote children at the end of their life: deleting the UnitedDeployment deletes them in every
member before the finalizer lets it go; removing a subset deletes its child in its member."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.controller.helpers import EVENTS, UD, condition, patch_ud, pods_of
from tests.e2e.multicluster.remote import FINALIZER, G, converged, joined, remote_children, spread
from united.devcluster.planes import Plane
from united.kube.client import KubeClient
from united.kube.errors import NotFound
from united.kube.wait import eventually
from united.multicluster.resource import CLUSTERS

__all__ = ["joined"]
pytestmark = pytest.mark.e2e


async def test_delete_removes_remote_children(
    joined: dict[str, Plane], kube: KubeClient, member_kube: dict[str, KubeClient], namespace: str
) -> None:
    doc = spread("doomed", 6)
    await kube.create(UD, doc, namespace=namespace)
    obj = await converged(kube, member_kube, namespace, doc, 2)
    assert FINALIZER in obj["metadata"]["finalizers"]
    await kube.delete(UD, "doomed", namespace=namespace)

    async def gone() -> None:
        for cluster, member in member_kube.items():
            assert await remote_children(member, namespace) == [], f"children left in {cluster}"
        try:
            await kube.get(UD, "doomed", namespace=namespace)
        except NotFound:
            return
        raise AssertionError("the UnitedDeployment is still there")

    await eventually(gone, within=60, what="remote children deleted, then the UnitedDeployment")


async def test_subset_removed(
    joined: dict[str, Plane], kube: KubeClient, member_kube: dict[str, KubeClient], namespace: str
) -> None:
    doc = spread("shrunk", 6)
    await kube.create(UD, doc, namespace=namespace)
    await converged(kube, member_kube, namespace, doc, 2)
    kept = [s for s in doc["spec"]["topology"]["subsets"] if s["name"] != "m2"]
    await patch_ud(kube, namespace, doc, {"spec": {"topology": {"subsets": kept}}})

    async def removed() -> None:
        assert await remote_children(member_kube["member-2"], namespace) == [], "member-2 still has the child"
        there = await remote_children(member_kube["member-1"], namespace)
        assert [c["spec"]["replicas"] for c in there] == [3], there

    await eventually(removed, within=60, what="m2's child deleted in member-2, m1 scaled to 3")


async def test_subset_moved(
    joined: dict[str, Plane], kube: KubeClient, member_kube: dict[str, KubeClient], namespace: str
) -> None:
    doc = spread("moving", 6)
    await kube.create(UD, doc, namespace=namespace)
    await converged(kube, member_kube, namespace, doc, 2)
    subsets = doc["spec"]["topology"]["subsets"]
    subsets[1]["cluster"] = "member-2"  # m1 moves next to m2
    await patch_ud(kube, namespace, doc, {"spec": {"topology": {"subsets": subsets}}})

    async def moved() -> None:
        assert await remote_children(member_kube["member-1"], namespace) == [], "member-1 still has m1's child"
        there = await remote_children(member_kube["member-2"], namespace)
        by_subset = sorted(
            (c["metadata"]["labels"]["apps.united.io/subset-name"], c["spec"]["replicas"]) for c in there
        )
        assert by_subset == [("m1", 2), ("m2", 2)], by_subset

    await eventually(moved, within=60, what="m1's child deleted in member-1 and created in member-2")


async def test_patch_reaches_remote_pods(
    joined: dict[str, Plane], kube: KubeClient, member_kube: dict[str, KubeClient], namespace: str
) -> None:
    doc = spread("patched", 6)
    await kube.create(UD, doc, namespace=namespace)
    await converged(kube, member_kube, namespace, doc, 2)
    subsets = doc["spec"]["topology"]["subsets"]
    env = [{"name": "WHERE", "value": "m2"}]
    subsets[2]["patch"] = {"spec": {"containers": [{"name": "main", "env": env}]}}
    await patch_ud(kube, namespace, doc, {"spec": {"topology": {"subsets": subsets}}})

    def envs(pod: dict[str, Any]) -> list[Any]:
        return [c.get("env") for c in pod["spec"]["containers"]]

    async def reached() -> None:
        m2 = await pods_of(member_kube["member-2"], namespace, "patched")
        assert m2 and all(envs(p) == [env] for p in m2), [envs(p) for p in m2]
        m1 = await pods_of(member_kube["member-1"], namespace, "patched")
        assert m1 and all(envs(p) == [None] for p in m1), [envs(p) for p in m1]

    await eventually(reached, within=90, what="the patch in member-2's pods only")


async def test_delete_waits_for_unreachable_member(
    joined: dict[str, Plane], kube: KubeClient, member_kube: dict[str, KubeClient], namespace: str
) -> None:
    """Member-1 down at deletion: the UD stays, saying why, until the abandon annotation names
    member-1; member-2's child is deleted meanwhile, member-1's stays where it is — until member-1
    is back and the child, its owner gone, is collected as an orphan."""
    doc = spread("held", 6)
    await kube.create(UD, doc, namespace=namespace)
    await converged(kube, member_kube, namespace, doc, 2)
    plane = joined["member-1"]
    plane.stop_apiserver()
    try:

        async def unreachable() -> None:
            ready = condition(await kube.get(CLUSTERS, "member-1"), "Ready")
            assert ready.get("status") == "False", ready

        await eventually(unreachable, within=15, what="member-1 Unreachable")
        await kube.delete(UD, "held", namespace=namespace)

        async def waiting() -> None:
            obj = await kube.get(UD, "held", namespace=namespace)
            reconciling = condition(obj, "Reconciling")
            assert reconciling.get("reason") == "RemoteChildrenPending", reconciling
            assert reconciling["message"].startswith("waiting to delete the children in member-1 unreachable since ")
            assert await remote_children(member_kube["member-2"], namespace) == [], "member-2's child not deleted"

        await eventually(waiting, within=30, what="the UD waits for member-1, member-2's child gone")

        async def warned() -> None:
            events = await kube.list(EVENTS, namespace=namespace)
            assert any(e.get("reason") == "RemoteDeleteBlocked" for e in events.items)

        await eventually(warned, within=10, what="a RemoteDeleteBlocked Event (posted after the status)")
        annotation = {"metadata": {"annotations": {f"{G}/abandon-remote-children": "member-1"}}}
        await patch_ud(kube, namespace, doc, annotation)

        async def gone() -> None:
            try:
                await kube.get(UD, "held", namespace=namespace)
            except NotFound:
                return
            raise AssertionError("the UnitedDeployment is still there")

        await eventually(gone, within=30, what="the UD gone once member-1 is abandoned")
    finally:
        plane.start_apiserver()
    assert len(await remote_children(member_kube["member-1"], namespace)) == 1, "abandoned: left where it was"

    async def collected() -> None:
        assert await remote_children(member_kube["member-1"], namespace) == [], "the orphan is still in member-1"

    await eventually(collected, within=90, what="member-1 back: the abandoned child collected as an orphan")
