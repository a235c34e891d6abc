"""Leader election on a real coordination.k8s.io/v1 Lease: one leader out of two,
a fast hand-over on release, take-over after expiry when the leader dies without
releasing, renewal through a conflicting write, loss to another holder, and a
leader cut off from the API server (through the fault proxy) stepping down before
its standby takes over."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support.faultproxy import FaultProxy
from united.devcluster.cluster import LocalCluster
from united.kube.client import JSON, LEASES, KubeClient, Resource
from united.kube.errors import ApiError
from united.kube.wait import eventually
from united.runtime.leader import LeaderElector, parse_microtime

pytestmark = pytest.mark.e2e

MICROTIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
LEASE = "united-e2e"


class RecordingClient:
    """The real client, with a log of (verb, outcome) for each Lease request."""

    def __init__(self, inner: KubeClient) -> None:
        self.inner = inner
        self.log: list[tuple[str, str]] = []

    async def _call(self, verb: str, call: Any) -> JSON:
        try:
            result: JSON = await call
        except ApiError as exc:
            self.log.append((verb, type(exc).__name__))
            raise
        self.log.append((verb, "ok"))
        return result

    async def get(self, resource: Resource, name: str, *, namespace: str | None = None) -> JSON:
        return await self._call("get", self.inner.get(resource, name, namespace=namespace))

    async def create(self, resource: Resource, body: JSON, *, namespace: str | None = None) -> JSON:
        return await self._call("create", self.inner.create(resource, body, namespace=namespace))

    async def replace(self, resource: Resource, body: JSON, *, namespace: str | None = None) -> JSON:
        return await self._call("replace", self.inner.replace(resource, body, namespace=namespace))


@contextlib.asynccontextmanager
async def campaigning(*electors: LeaderElector) -> AsyncIterator[list[asyncio.Task[None]]]:
    tasks = [asyncio.create_task(elector.run()) for elector in electors]
    try:
        yield tasks
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def lease_spec(kube: KubeClient, namespace: str) -> JSON:
    spec: JSON = (await kube.get(LEASES, LEASE, namespace=namespace))["spec"]
    return spec


async def elected_one(*electors: LeaderElector, within: float) -> LeaderElector:
    done, _ = await asyncio.wait(
        [asyncio.create_task(e.elected.wait()) for e in electors],
        timeout=within,
        return_when=asyncio.FIRST_COMPLETED,
    )
    assert done, f"nobody was elected within {within}s"
    leaders = [e for e in electors if e.is_leader]
    assert len(leaders) == 1, f"expected exactly one leader, got {[e.identity for e in leaders]}"
    return leaders[0]


async def test_one_of_two_leads_and_a_release_hands_over_in_under_three_seconds(
    kube: KubeClient, namespace: str
) -> None:
    # Default timings: 15 s lease, 10 s renew deadline, 2 s retry period.
    one = LeaderElector(kube, name=LEASE, namespace=namespace, identity="one")
    two = LeaderElector(kube, name=LEASE, namespace=namespace, identity="two")
    async with campaigning(one, two) as tasks:
        leader = await elected_one(one, two, within=10)
        standby = two if leader is one else one
        spec = await lease_spec(kube, namespace)
        assert spec["holderIdentity"] == leader.identity
        assert spec["leaseDurationSeconds"] == 15
        assert spec.get("leaseTransitions", 0) == 0
        assert MICROTIME.match(spec["renewTime"]) and MICROTIME.match(spec["acquireTime"])

        # A few renewals later there is still exactly one leader, and it renewed.
        first_renewal = parse_microtime(spec["renewTime"])

        async def renewed() -> None:
            assert parse_microtime((await lease_spec(kube, namespace))["renewTime"]) > first_renewal
            assert leader.is_leader and not standby.is_leader
            assert standby.observed_holder == leader.identity

        await eventually(renewed, within=8, what="a renewal by the leader, seen by the standby")

        loop = asyncio.get_running_loop()
        released_at = loop.time()
        assert await leader.release()
        await asyncio.wait_for(standby.elected.wait(), 3)
        assert loop.time() - released_at < 3.0
        spec = await lease_spec(kube, namespace)
        assert spec["holderIdentity"] == standby.identity
        assert spec["leaseTransitions"] == 1
        assert spec["leaseDurationSeconds"] == 15
        assert not leader.is_leader and not leader.lost.is_set()
        leader_task = tasks[0] if leader is one else tasks[1]
        await asyncio.wait_for(leader_task, 5)  # run() returns after a release


async def test_a_leader_that_dies_without_releasing_is_replaced_after_the_lease_duration(
    kube: KubeClient, namespace: str
) -> None:
    timings: dict[str, Any] = {"lease_duration": 4.0, "renew_deadline": 3.0, "retry_period": 0.5}
    dying = LeaderElector(kube, name=LEASE, namespace=namespace, identity="dying", release_on_cancel=False, **timings)
    heir = LeaderElector(kube, name=LEASE, namespace=namespace, identity="heir", **timings)
    async with campaigning(dying) as (dying_task,):
        await asyncio.wait_for(dying.elected.wait(), 5)
        async with campaigning(heir):

            async def heir_watches() -> None:
                assert heir.observed_holder == "dying"

            await eventually(heir_watches, within=5, what="the heir sees the leader")
            loop = asyncio.get_running_loop()
            dying_task.cancel()  # a crash: no release
            with contextlib.suppress(asyncio.CancelledError):
                await dying_task
            died_at = loop.time()
            assert (await lease_spec(kube, namespace))["holderIdentity"] == "dying"

            await asyncio.wait_for(heir.elected.wait(), 10)
            waited = loop.time() - died_at
            # At least the lease duration after the last renewal it saw (which was
            # at most one retry period before the crash), at most two retries more.
            assert 4.0 - 0.6 - 0.1 <= waited <= 4.0 + 2 * 0.6 + 1.0, waited
            spec = await lease_spec(kube, namespace)
            assert spec["holderIdentity"] == "heir"
            assert spec["leaseTransitions"] == 1


async def test_renewal_survives_a_conflicting_write(kube: KubeClient, namespace: str) -> None:
    client = RecordingClient(kube)
    leader = LeaderElector(
        client,
        name=LEASE,
        namespace=namespace,
        identity="steady",
        lease_duration=4.0,
        renew_deadline=3.0,
        retry_period=0.5,
    )
    async with campaigning(leader):
        await asyncio.wait_for(leader.elected.wait(), 5)
        # Another client edits the Lease (a label): the leader's cached
        # resourceVersion is now stale, so its next PUT conflicts.
        lease = await kube.get(LEASES, LEASE, namespace=namespace)
        lease["metadata"].setdefault("labels", {})["edited"] = "yes"
        edited = await kube.replace(LEASES, lease, namespace=namespace)
        client.log.clear()

        async def renewed_after_the_edit() -> None:
            current = await kube.get(LEASES, LEASE, namespace=namespace)
            assert int(current["metadata"]["resourceVersion"]) > int(edited["metadata"]["resourceVersion"])
            assert current["spec"]["holderIdentity"] == "steady"
            assert current["metadata"]["labels"] == {"edited": "yes"}, "renewal must not drop others' edits"

        await eventually(renewed_after_the_edit, within=5, what="renewal after a conflicting write")
        assert client.log[:3] == [("replace", "Conflict"), ("get", "ok"), ("replace", "ok")]

        async def still_leading() -> None:
            assert len([entry for entry in client.log if entry == ("replace", "ok")]) >= 6

        await eventually(still_leading, within=10, what="more renewals")
        assert leader.is_leader and not leader.lost.is_set()
        assert (await lease_spec(kube, namespace)).get("leaseTransitions", 0) == 0


async def test_a_leader_that_sees_another_live_holder_steps_down(kube: KubeClient, namespace: str) -> None:
    stopped: list[str] = []
    leader = LeaderElector(
        kube,
        name=LEASE,
        namespace=namespace,
        identity="deposed",
        lease_duration=4.0,
        renew_deadline=3.0,
        retry_period=0.5,
        on_stopped_leading=lambda: stopped.append("deposed"),
    )
    async with campaigning(leader) as (task,):
        await asyncio.wait_for(leader.elected.wait(), 5)
        lease = await kube.get(LEASES, LEASE, namespace=namespace)
        lease["spec"]["holderIdentity"] = "usurper"
        await kube.replace(LEASES, lease, namespace=namespace)
        await asyncio.wait_for(leader.lost.wait(), 3)
        await asyncio.wait_for(task, 1)  # run() returns: the caller is to exit
        assert stopped == ["deposed"]
        assert not leader.is_leader
        assert (await lease_spec(kube, namespace))["holderIdentity"] == "usurper"


@pytest.fixture
async def proxy(cluster: LocalCluster) -> AsyncIterator[FaultProxy]:
    async with FaultProxy(cluster.server, token=cluster.admin.token, ca_cert=cluster.ca_cert) as fault_proxy:
        yield fault_proxy


async def test_a_leader_cut_off_from_the_api_steps_down_before_a_standby_takes_over(
    kube: KubeClient, proxy: FaultProxy, namespace: str
) -> None:
    timings: dict[str, Any] = {"lease_duration": 4.0, "renew_deadline": 3.0, "retry_period": 0.5}
    loop = asyncio.get_running_loop()
    async with proxy.kube_client() as proxied:
        cut_off = LeaderElector(proxied, name=LEASE, namespace=namespace, identity="cut-off", **timings)
        standby = LeaderElector(kube, name=LEASE, namespace=namespace, identity="standby", **timings)
        async with campaigning(cut_off) as (cut_off_task,):
            await asyncio.wait_for(cut_off.elected.wait(), 5)
            async with campaigning(standby):

                async def standby_watches() -> None:
                    assert standby.observed_holder == "cut-off"

                await eventually(standby_watches, within=5, what="the standby sees the leader")
                # The leader's API server goes away (every Lease request answers 503).
                proxy.add_rule(path=r"/leases", respond=503)
                cut_at = loop.time()
                await asyncio.wait_for(cut_off.lost.wait(), 6)
                lost_at = loop.time()
                await asyncio.wait_for(standby.elected.wait(), 10)
                elected_at = loop.time()
                # It gives up within (a retry period +) the renew deadline, and before
                # the standby may take over: there is never a moment with two leaders.
                assert lost_at - cut_at <= 0.6 + 3.0 + 0.5
                assert lost_at < elected_at
                assert not cut_off.is_leader
                await asyncio.wait_for(cut_off_task, 1)
                spec = await lease_spec(kube, namespace)
                assert spec["holderIdentity"] == "standby"
                assert spec["leaseTransitions"] == 1
                assert proxy.log.requests(status=503), "the outage was real"
