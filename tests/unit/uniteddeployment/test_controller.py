"""Which child and revision events queue which UnitedDeployment: the owner of a child or
revision, and for a child of none the UDs whose selector matches it (they may adopt it)."""

from __future__ import annotations

from typing import Any

from tests.unit.uniteddeployment.test_controller_members import controller_with, ud

OWNER = {"apiVersion": "apps.united.io/v1alpha1", "kind": "UnitedDeployment", "name": "web", "controller": True}


def child(name: str, *, kind: str = "Deployment", owned: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "resourceVersion": "3", "labels": {"app": "web"}}
    if owned:
        meta["ownerReferences"] = [OWNER]
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta}


async def queued(controller: Any) -> set[str]:
    """The keys queued, each taken and done (so it can be queued again)."""
    out = set()
    while len(controller.queue):
        key = await controller.queue.get()
        controller.queue.done(key)
        out.add(key)
    return out


def selecting(name: str) -> dict[str, Any]:
    obj = ud(name, None)
    obj["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    return obj


async def test_a_child_or_revision_queues_its_owner_whatever_the_event() -> None:
    controller, _ = controller_with(selecting("web"), selecting("api"))
    await queued(controller)
    for kind in ("ADDED", "MODIFIED", "DELETED"):
        controller._on_child(kind, child("web-s0"), None)
        assert await queued(controller) == {"ns/web"}
        controller._on_owned(kind, child("web-abc", kind="ControllerRevision"), None)
        assert await queued(controller) == {"ns/web"}


async def test_an_orphan_child_queues_the_uds_that_select_it_and_an_orphan_revision_none() -> None:
    controller, _ = controller_with(selecting("web"), selecting("api"), ud("other", None))
    await queued(controller)
    controller._on_child("ADDED", child("stray", owned=False), None)
    assert await queued(controller) == {"ns/web", "ns/api"}
    controller._on_child("DELETED", child("stray", owned=False), None)
    assert await queued(controller) == set(), "a deleted orphan concerns no one"
    controller._on_owned("ADDED", child("stray", kind="ControllerRevision", owned=False), None)
    assert await queued(controller) == set()


async def test_discovery_tells_the_version_owner_references_name_and_a_silent_one_keeps_it() -> None:
    from tests.unit.kube.test_discovery import Discovery, resources
    from united.controller.manager import Manager, Settings
    from united.runtime.metrics import Metrics
    from united.uniteddeployment.kind import setup
    from united.uniteddeployment.model import TEMPLATE_VARIANTS

    client = Discovery({
        "/apis/apps.united.io": {"versions": [{"version": "v1beta1"}, {"version": "v1alpha1"}]},
        "/apis/apps.united.io/v1beta1": resources("uniteddeployments"),
    })  # fmt: skip
    manager = Manager(client, Settings(), metrics=Metrics(process_metrics=False))  # type: ignore[arg-type]
    controller = setup(manager, manager.settings)
    controller.child_informers = {v: [] for v in TEMPLATE_VARIANTS}  # every child kind already watched
    assert controller.caches.owner_api_version is None
    await controller.discover()
    assert controller.caches.owner_api_version == "apps.united.io/v1beta1"
    client.paths.clear()
    await controller.discover()
    assert controller.caches.owner_api_version == "apps.united.io/v1beta1"
