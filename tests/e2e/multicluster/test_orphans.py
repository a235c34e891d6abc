"""Remote orphans: a child in a member whose UnitedDeployment is gone from the host is deleted by
the controller (a member's garbage collector cannot follow an owner in another cluster); a child
of a live UnitedDeployment, and a child another host made, are never touched."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

import pytest

from tests.e2e.controller.helpers import DEPLOYMENTS, UD, ud
from tests.e2e.multicluster.remote import G, by_hand, joined, remote_children
from tests.support.controller import Controller
from united.devcluster.planes import Plane
from united.kube.client import NAMESPACES, KubeClient
from united.kube.errors import NotFound
from united.kube.wait import eventually
from united.multicluster.collector import GRACE

__all__ = ["joined"]
pytestmark = pytest.mark.e2e

COLLECTED = "united_remote_orphans_collected_total"


async def test_orphans_collected_live_and_foreign_children_kept(
    joined: dict[str, Plane],
    kube: KubeClient,
    member_kube: dict[str, KubeClient],
    namespace: str,
    controller: Controller,
) -> None:
    host_id = (await kube.get(NAMESPACES, "kube-system"))["metadata"]["uid"]
    member = member_kube["member-1"]
    doc = ud("keeper", [{"name": "m1", "cluster": "member-1"}], replicas=1)
    keeper = await kube.create(UD, doc, namespace=namespace)

    async def keeper_child() -> dict[str, Any]:
        children = await remote_children(member, namespace)
        assert len(children) == 1, children
        child = children[0]
        assert child["metadata"]["labels"][f"{G}/owner-uid"] == keeper["metadata"]["uid"], child
        return child

    kept: dict[str, Any] = await eventually(keeper_child, within=90, what="keeper's child in member-1")
    before = controller.counter(COLLECTED, cluster="member-1")
    ghost = by_hand("ghost", owner="ghost", owner_uid=str(uuid.uuid4()), host_id=host_id)
    impostor = by_hand("impostor", owner="keeper", owner_uid=str(uuid.uuid4()), host_id=host_id)
    foreign = by_hand("foreign", owner="ghost", owner_uid=str(uuid.uuid4()), host_id="another-host")
    made = {}
    try:
        for doc in (ghost, impostor, foreign):
            made[doc["metadata"]["name"]] = await member.create(DEPLOYMENTS, doc, namespace=namespace)
        await asyncio.sleep(GRACE / 3)
        left = {c["metadata"]["name"] for c in await remote_children(member, namespace)}
        assert {"ghost", "impostor"} <= left, f"collected before the grace ({GRACE}s): {left}"

        async def collected() -> None:
            left = {c["metadata"]["name"] for c in await remote_children(member, namespace)}
            assert not {"ghost", "impostor"} & left, f"orphans still in member-1: {left}"

        await eventually(collected, within=90, what="orphans deleted in member-1")
        assert controller.counter(COLLECTED, cluster="member-1", resource="deployments") >= before + 2
        log = controller.log_path.read_text()
        for name in ("ghost", "impostor"):
            lines = [line for line in log.splitlines() if '"collected remote orphan"' in line and f'"{name}"' in line]
            assert len(lines) == 1, lines
        there = {c["metadata"]["name"]: c for c in await remote_children(member, namespace)}
        assert there["foreign"]["metadata"]["uid"] == made["foreign"]["metadata"]["uid"], "another host's child"
        assert not there["foreign"]["metadata"].get("deletionTimestamp")
        child = there[kept["metadata"]["name"]]
        assert child["metadata"]["uid"] == kept["metadata"]["uid"] and not child["metadata"].get("deletionTimestamp")
    finally:
        with contextlib.suppress(NotFound):
            await member.delete(DEPLOYMENTS, "foreign", namespace=namespace)
