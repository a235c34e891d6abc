"""When the collector may look at a member, and what it asks of the host and the member: nothing
before every cache synced, nothing before the grace, a confirming GET of the owner, then a delete
with the child's uid as precondition. (Against real members:
tests/e2e/multicluster/test_orphans.py.)"""

from __future__ import annotations

from typing import Any, cast

import pytest

from tests.unit.multicluster.test_member_informers import member, watching
from united.kube import KubeClient, NotFound
from united.multicluster.collector import GRACE, RETRY, Collector
from united.multicluster.member import Member
from united.runtime.informer import Informer
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.resources import resource_of

KEYS = Keys()
UDS = resource_of("deploymentTemplate")  # any Resource: the fake host answers by name


class Calls:
    """A stand-in client recording its requests; ``owners`` answers the host's GETs."""

    def __init__(self, owners: dict[str, str] | None = None) -> None:
        self.owners = owners or {}
        self.log: list[tuple[Any, ...]] = []

    async def get(self, resource: Any, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        self.log.append(("get", namespace, name))
        if name not in self.owners:
            raise NotFound(f"{name} not found", status=404)
        return {"metadata": {"name": name, "uid": self.owners[name]}}

    async def delete(self, resource: Any, name: str, **options: Any) -> dict[str, Any]:
        self.log.append(("delete", resource.plural, options["namespace"], name, options["preconditions"]))
        return {}


def remote_child(name: str, owner_uid: str, owner: str = "web", host: str = "host-uid") -> dict[str, Any]:
    labels = {
        KEYS.subset_name: "b",
        KEYS.owner_uid: owner_uid,
        KEYS.owner_name: owner,
        KEYS.owner_cluster: host,
    }
    return {"metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}", "labels": labels}}


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def setup(
    *children: dict[str, Any], live: tuple[str, ...] = (), owners: dict[str, str] | None = None
) -> tuple[Collector, Member, Informer, Calls, Calls, Clock, list[tuple[str, str]]]:
    m, _, spawned = member()
    m.watching = watching([])
    on_member = Calls()
    m.client = cast(KubeClient, on_member)
    m.ensure("deploymentTemplate")
    for coro in spawned:
        coro.close()
    for informer in m.informers:
        informer.has_synced.set()
    for obj in children:
        m.children["deploymentTemplate"][0].store.upsert(obj)
    uds = Informer(cast(KubeClient, object()), UDS)
    for uid in live:
        uds.store.upsert({"metadata": {"name": f"ud-{uid}", "namespace": "shop", "uid": uid}})
    uds.has_synced.set()
    host = Calls(owners)
    collected: list[tuple[str, str]] = []
    clock = Clock()
    collector = Collector(
        cast(KubeClient, host),
        uds=[uds],
        ud_resource=UDS,
        collected=lambda cluster, resource: collected.append((cluster, resource)),
        clock=clock,
    )
    return collector, m, uds, host, on_member, clock, collected


async def test_an_orphan_is_deleted_after_the_grace_with_its_uid_as_precondition() -> None:
    orphan, live = remote_child("web-b-1", "gone-uid"), remote_child("api-b-1", "live-uid", owner="api")
    collector, m, _, host, on_member, clock, collected = setup(orphan, live, live=("live-uid",))
    assert await collector.collect(m) == pytest.approx(GRACE, abs=0.2)
    assert host.log == on_member.log == [], "seen once: nothing asked yet"
    clock.now += GRACE
    await collector.collect(m)
    assert host.log == [("get", "shop", "web")]
    assert on_member.log == [("delete", "deployments", "shop", "web-b-1", {"uid": "uid-web-b-1"})]
    assert collected == [("member-1", "deployments")]
    clock.now += 1
    await collector.collect(m)
    assert len(on_member.log) == 1, "a child the member cache still shows is not deleted again at once"


async def test_an_owner_alive_in_the_host_keeps_its_child() -> None:
    collector, m, _, host, on_member, clock, collected = setup(remote_child("web-b-1", "u1"), owners={"web": "u1"})
    await collector.collect(m)
    clock.now += GRACE
    await collector.collect(m)
    assert host.log == [("get", "shop", "web")] and on_member.log == [] and collected == []
    clock.now += RETRY - 1
    await collector.collect(m)
    assert len(host.log) == 1, "asked again only after the retry"
    clock.now += 1
    await collector.collect(m)
    assert len(host.log) == 2


async def test_an_owner_of_the_same_name_with_another_uid_does_not_keep_it() -> None:
    collector, m, _, _, on_member, clock, _ = setup(remote_child("web-b-1", "old"), owners={"web": "new"})
    await collector.collect(m)
    clock.now += GRACE
    await collector.collect(m)
    assert [c[0] for c in on_member.log] == ["delete"]


async def test_nothing_while_a_cache_could_be_partial_or_the_member_unusable() -> None:
    collector, m, uds, host, on_member, clock, _ = setup(remote_child("web-b-1", "gone"))
    uds.has_synced.clear()
    assert collector.live_uids() is None
    assert await collector.collect(m) is None
    uds.has_synced.set()
    uds.last_error = "cannot watch uniteddeployments: connection refused"
    assert await collector.collect(m) is None
    uds.last_error = ""
    m.pods[0].has_synced.clear()
    assert await collector.collect(m) is None, "the member's caches have not synced"
    m.pods[0].has_synced.set()
    clock.now += GRACE
    assert await collector.collect(m) == pytest.approx(GRACE, abs=0.2), "the grace starts when it may look"
    assert host.log == on_member.log == []


async def test_children_of_another_host_are_never_suspects() -> None:
    theirs = remote_child("web-b-1", "gone", host="other-host")
    collector, m, _, host, on_member, clock, _ = setup(theirs)
    await collector.collect(m)
    clock.now += GRACE
    assert await collector.collect(m) is None
    assert host.log == on_member.log == []


async def test_undecodable_owners_count_as_live() -> None:
    from united.api.decode import Undecodable

    collector, _, uds, *_ = setup()
    stub = {"kind": "UnitedDeployment", "metadata": {"name": "deep", "namespace": "shop", "uid": "deep-uid"}}
    uds.undecodable["shop/deep"] = Undecodable(stub, "nested too deeply")
    assert collector.live_uids() == {"deep-uid"}
