"""Which child and revision events queue their UnitedDeployment, and when: every change at
once, but the echo of our own write (the same resourceVersion our write returned) a moment
later, as its pass only brings the status up to date."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.unit.uniteddeployment.test_controller_members import controller_with, ud
from united.kube.client import CONTROLLER_REVISIONS, DEPLOYMENTS
from united.uniteddeployment.controller import ECHO_DELAY

OWNER = {"apiVersion": "apps.united.io/v1alpha1", "kind": "UnitedDeployment", "name": "web", "controller": True}


def child(name: str, rv: str, *, kind: str = "Deployment", owned: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "resourceVersion": rv, "labels": {"app": "web"}}
    if owned:
        meta["ownerReferences"] = [OWNER]
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta}


def lanes(controller: Any) -> tuple[list[str], list[str]]:
    """The keys queued (at once, after ECHO_DELAY), emptied."""
    queue = controller.queue
    now, delays = list(queue._queue), dict(queue._waiting)
    loop = asyncio.get_running_loop()
    later = [k for k, at in delays.items() if at - loop.time() == pytest.approx(ECHO_DELAY, abs=0.05)]
    assert later == list(delays), delays
    queue._queue.clear()
    queue._dirty.clear()
    queue._waiting.clear()
    queue._heap.clear()
    return now, later


async def test_the_echo_of_our_own_write_is_queued_later_and_any_other_version_at_once() -> None:
    controller, _ = controller_with(ud("web", None))
    lanes(controller)
    written = child("web-s0", "5")
    controller.reconciler.remember("ns/web", DEPLOYMENTS, "web-s0", written, rv=5)
    controller._on_owned(DEPLOYMENTS, "ADDED", written, None)
    assert lanes(controller) == ([], ["ns/web"])
    assert "ns/web" in controller.reconciler._children, "the expectation stays until a pass reads the cache"
    controller._on_owned(DEPLOYMENTS, "MODIFIED", child("web-s0", "6"), written)
    assert lanes(controller) == (["ns/web"], [])
    controller._on_owned(DEPLOYMENTS, "DELETED", written, None)
    assert lanes(controller) == (["ns/web"], [])


async def test_an_echo_is_told_apart_by_resource_and_a_delete_we_wrote_is_never_one() -> None:
    controller, _ = controller_with(ud("web", None))
    lanes(controller)
    revision = child("web-abc", "7", kind="ControllerRevision")
    controller.reconciler.remember("ns/web", CONTROLLER_REVISIONS, "web-abc", revision, rv=7)
    controller._on_owned(CONTROLLER_REVISIONS, "ADDED", revision, None)
    assert lanes(controller) == ([], ["ns/web"])
    controller._on_owned(DEPLOYMENTS, "ADDED", child("web-abc", "7"), None)
    assert lanes(controller) == (["ns/web"], [])
    controller.reconciler.remember("ns/web", DEPLOYMENTS, "web-s1", None, rv=9)
    controller._on_owned(DEPLOYMENTS, "MODIFIED", child("web-s1", "9"), None)
    assert lanes(controller) == (["ns/web"], [])


async def test_an_orphan_child_queues_the_uds_that_select_it_and_an_orphan_revision_none() -> None:
    selecting = ud("web", None)
    selecting["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    controller, _ = controller_with(selecting)
    lanes(controller)
    controller._on_owned(DEPLOYMENTS, "ADDED", child("stray", "3", owned=False), None)
    assert lanes(controller) == (["ns/web"], [])
    controller._on_owned(
        CONTROLLER_REVISIONS, "ADDED", child("stray", "4", kind="ControllerRevision", owned=False), None
    )
    assert lanes(controller) == ([], [])
