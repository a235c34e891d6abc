"""Which child and revision events queue their UnitedDeployment: every change but the echo of
our own write, whose pass already knew it."""

from __future__ import annotations

from typing import Any

from tests.unit.uniteddeployment.test_controller_members import controller_with, ud
from united.kube.client import CONTROLLER_REVISIONS, DEPLOYMENTS

OWNER = {"apiVersion": "apps.united.io/v1alpha1", "kind": "UnitedDeployment", "name": "web", "controller": True}


async def queued(controller: Any) -> set[str]:
    """The keys queued, taken and done (so they can be queued again)."""
    out = set()
    while len(controller.queue):
        key = await controller.queue.get()
        controller.queue.done(key)
        out.add(key)
    return out


def child(name: str, rv: str, *, kind: str = "Deployment") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, "ownerReferences": [OWNER]},
    }


async def test_the_echo_of_our_own_write_queues_nothing_and_any_other_version_does() -> None:
    controller, _ = controller_with(ud("web", None))
    written = child("web-s0", "5")
    controller.reconciler.remember("ns/web", DEPLOYMENTS, "web-s0", written, rv=5)
    controller._on_owned(DEPLOYMENTS, "ADDED", written, None)
    assert await queued(controller) == set()
    assert "ns/web" not in controller.reconciler._children, "the cache holds it now"
    controller._on_owned(DEPLOYMENTS, "MODIFIED", child("web-s0", "6"), written)
    assert await queued(controller) == {"ns/web"}
    controller._on_owned(DEPLOYMENTS, "DELETED", written, None)
    assert await queued(controller) == {"ns/web"}


async def test_an_echo_is_told_apart_by_resource_and_a_deleted_write_is_never_an_echo() -> None:
    controller, _ = controller_with(ud("web", None))
    revision = child("web-abc", "7", kind="ControllerRevision")
    controller.reconciler.remember("ns/web", CONTROLLER_REVISIONS, "web-abc", revision, rv=7)
    controller._on_revision("ADDED", revision, None)
    assert await queued(controller) == set()
    controller._on_owned(DEPLOYMENTS, "ADDED", child("web-abc", "7"), None)
    assert await queued(controller) == {"ns/web"}
    controller.reconciler.remember("ns/web", DEPLOYMENTS, "web-s1", None, rv=9)
    controller._on_owned(DEPLOYMENTS, "MODIFIED", child("web-s1", "9"), None)
    assert await queued(controller) == {"ns/web"}
