"""The UnitedDeployment controller's side of member clusters: which member events and health
flips queue which UnitedDeployments, and member informers started on every replica (warm
standby), not only by the leader's passes."""

from __future__ import annotations

from typing import Any, cast

from united.controller.manager import Manager, Settings
from united.kube import KubeClient
from united.multicluster.member import Members, Watching
from united.runtime.metrics import Metrics
from united.uniteddeployment.kind import setup
from united.uniteddeployment.model import Spec, UnitedDeployment


class Member:
    def __init__(self) -> None:
        self.ensured: list[str] = []

    def ensure(self, variant: str) -> None:
        self.ensured.append(variant)


class FakeMembers:
    def __init__(self) -> None:
        self.by_name = {"member-1": Member(), "member-2": Member()}
        self.watching: Watching | None = None
        self.subscribers: list[Any] = []

    def get(self, name: str) -> Member | None:
        return self.by_name.get(name)

    def watch(self, watching: Watching) -> None:
        self.watching = watching

    def subscribe(self, callback: Any) -> None:
        self.subscribers.append(callback)


def ud(name: str, *clusters: str | None) -> dict[str, Any]:
    subsets = [{"name": f"s{i}", **({"cluster": c} if c else {})} for i, c in enumerate(clusters)]
    return {
        "apiVersion": "apps.united.io/v1alpha1",
        "kind": "UnitedDeployment",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {"template": {"deploymentTemplate": {}}, "topology": {"subsets": subsets}},
    }


def controller_with(*objs: dict[str, Any]) -> tuple[Any, FakeMembers]:
    manager = Manager(cast(KubeClient, object()), Settings(), metrics=Metrics(process_metrics=False))
    controller = setup(manager, manager.settings)
    for obj in objs:
        controller.uds[0].store.upsert(obj)
    members = FakeMembers()
    controller.attach(cast(Members, members), host_id="host", namespaces=[None])
    return controller, members


def queued(controller: Any) -> set[str]:
    out = set()
    while len(controller.queue):
        out.add(controller.queue._queue.popleft())
    return out


async def test_member_informers_start_for_the_cached_and_new_uds_on_every_replica() -> None:
    controller, members = controller_with(ud("web", None, "member-1"))
    assert members.by_name["member-1"].ensured == ["deploymentTemplate"]
    assert members.by_name["member-2"].ensured == []
    controller._on_ud("ADDED", ud("api", "member-2"), None)
    assert members.by_name["member-2"].ensured == ["deploymentTemplate"]


async def test_member_events_and_flips_queue_the_uds_concerned() -> None:
    controller, members = controller_with(ud("web", None, "member-1"), ud("api", "member-2"), ud("host", None))
    queued(controller)
    assert members.watching is not None
    owner = UnitedDeployment(
        api_version="apps.united.io/v1alpha1", name="web", namespace="ns", spec=Spec(), uid="uid-web"
    )
    child = {"metadata": {"name": "web-s1-x", "namespace": "ns", "labels": members.watching.remote.labels(owner)}}
    members.watching.on_child("member-1", child)
    assert queued(controller) == {"ns/web"}
    [flip] = members.subscribers
    flip("member-2")
    assert queued(controller) == {"ns/api"}
    assert members.by_name["member-2"].ensured == ["deploymentTemplate", "deploymentTemplate"]
