"""A kind plugs into the manager through its ``setup`` alone: a kind the manager has never heard
of gets its controller run, its webhook routes served (screened, gating readiness), the
undecodable objects of its informers and its shutdown work, with no line of the manager naming it."""

from __future__ import annotations

from typing import Any, cast

import pytest

from united.api.decode import Undecodable
from united.api.document import Json
from united.controller.manager import Manager, Settings
from united.kube import KubeClient, Resource
from united.runtime.controller import Controller, Host, Registry, Result
from united.runtime.metrics import Metrics

GADGETS = Resource("example.com", "v1", "gadgets", True, "Gadget")
WIDGETS = Resource("example.com", "v1", "widgets", True, "Widget")


class Gadgets(Controller):
    name = "gadget"

    def __init__(self, host: Host) -> None:
        super().__init__(host)
        self.informers = host.watch(GADGETS, None, lambda kind, obj, old: self.enqueue(obj))
        self.reconciler = self
        self.undecodables: list[Json] = []

    async def reconcile(self, key: str) -> Result:
        return Result()

    def undecodable(self, problem: Undecodable) -> None:
        self.undecodables.append(problem.object)


class Gadget:
    """A fake kind: one controller, one optional one (widgets), one webhook route, a shutdown hook."""

    def __init__(self) -> None:
        self.controller: Gadgets | None = None
        self.synced = False
        self.closed = 0
        self.routes = {"/gadgets": self.review}

    async def review(self, review: Json) -> Json:
        return review

    def ready(self) -> bool:
        if not self.synced:
            raise RuntimeError("gadget caches not synced yet")
        return True

    async def close(self) -> None:
        self.closed += 1

    def setup(self, registry: Registry, settings: Settings) -> None:
        self.controller = registry.add(Gadgets(registry))
        registry.add_when_served(WIDGETS, Gadgets)
        registry.add_webhook(self.routes, screens={"/gadgets": lambda namespace: namespace == "g"}, ready=self.ready)
        registry.on_shutdown(self.close)


def manager(*kinds: Any) -> Manager:
    return Manager(cast(KubeClient, object()), Settings(), kinds=kinds, metrics=Metrics(process_metrics=False))


async def test_a_kind_registers_its_controller_routes_readiness_and_shutdown_through_setup_alone() -> None:
    gadget = Gadget()
    m = manager(gadget.setup)
    assert gadget.controller is not None
    assert m.controllers == [gadget.controller] and gadget.controller.active
    assert set(gadget.controller.informers) <= set(m.informers), "its informers count in readiness"
    assert [(r, f) for r, f, _ in m._optional] == [(WIDGETS, Gadgets)]
    assert m._routes == gadget.routes and m._screens["/gadgets"]("g") and not m._screens["/gadgets"]("x")
    m._webhooks = cast(Any, object())
    with pytest.raises(RuntimeError, match="gadget caches not synced yet"):
        m._not_serving()
    gadget.synced = True
    assert m._not_serving()
    m._on_undecodable(Undecodable({"kind": "Gadget", "metadata": {"name": "bad"}}, "unreadable"))
    assert gadget.controller.undecodables == [{"kind": "Gadget", "metadata": {"name": "bad"}}]
    m._webhooks = None
    await m._shutdown()
    assert gadget.closed == 1


def test_two_kinds_cannot_claim_the_same_webhook_path() -> None:
    with pytest.raises(ValueError, match="/gadgets"):
        manager(Gadget().setup, Gadget().setup)


def test_the_manager_alone_runs_nothing() -> None:
    m = manager()
    assert m.controllers == [] and m._optional == [] and m._routes == {}
