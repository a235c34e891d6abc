"""The Lease elector's state machine on a virtual clock, against an in-memory Lease
store that has the API server's optimistic concurrency (resourceVersion conflicts)
and can be made to fail. The real API server is exercised in tests/e2e/runtime.

The wall clock handed to the electors is derived from the loop's virtual clock, so
the Lease timestamps are checked exactly.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from tests.unit.runtime.virtual_time import VirtualTimeLoop, now, run_virtual
from united.kube.client import DEPLOYMENTS, JSON, LEASES, Resource
from united.kube.errors import AlreadyExists, Conflict, Fenced, NotFound, TransientError
from united.runtime.leader import LeaderElector, format_microtime, parse_microtime, timing_problems

EPOCH = datetime(2024, 2, 29, 23, 59, 59, tzinfo=UTC)
MICROTIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def wall_clock() -> datetime:
    return EPOCH + timedelta(seconds=now())


async def wait_for_event(event: asyncio.Event, within: float) -> float:
    """Wait (virtual time) for ``event``; return when it was set."""
    await asyncio.wait_for(event.wait(), within)
    return now()


# -- an in-memory Lease store -----------------------------------------------------------


class FakeLeases:
    """get/create/replace with resourceVersions and conflicts, 1 ms per request; ``hanging``
    requests never get an answer."""

    def __init__(self) -> None:
        self.leases: dict[str, JSON] = {}
        self.rv = 0
        self.failing = False
        self.hanging = False
        self.requests: list[tuple[str, str]] = []  # (verb, outcome)
        self._write_waiters: list[asyncio.Future[JSON]] = []

    async def _answer(self) -> None:
        if self.hanging:
            await asyncio.get_running_loop().create_future()
        await asyncio.sleep(0.001)

    def _check(self, resource: Resource, verb: str) -> None:
        assert resource is LEASES
        if self.failing:
            self.requests.append((verb, "unavailable"))
            raise TransientError("503 apiserver unavailable")

    async def get(self, resource: Resource, name: str, *, namespace: str | None = None) -> JSON:
        await self._answer()
        self._check(resource, "get")
        lease = self.leases.get(f"{namespace}/{name}")
        if lease is None:
            self.requests.append(("get", "NotFound"))
            raise NotFound("404")
        self.requests.append(("get", "ok"))
        return copy.deepcopy(lease)

    async def create(self, resource: Resource, body: JSON, *, namespace: str | None = None) -> JSON:
        await self._answer()
        self._check(resource, "create")
        key = f"{namespace}/{body['metadata']['name']}"
        if key in self.leases:
            self.requests.append(("create", "AlreadyExists"))
            raise AlreadyExists("409")
        return self._write("create", key, body)

    async def replace(self, resource: Resource, body: JSON, *, namespace: str | None = None) -> JSON:
        await self._answer()
        self._check(resource, "replace")
        key = f"{namespace}/{body['metadata']['name']}"
        current = self.leases.get(key)
        if current is None:
            raise NotFound("404")
        if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            self.requests.append(("replace", "Conflict"))
            raise Conflict("409 the object has been modified")
        return self._write("replace", key, body)

    def _write(self, verb: str, key: str, body: JSON) -> JSON:
        self.rv += 1
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(self.rv)
        stored["spec"] = {k: v for k, v in stored["spec"].items() if v is not None}
        self.leases[key] = stored
        self.requests.append((verb, "ok"))
        for waiter in self._write_waiters:
            if not waiter.done():
                waiter.set_result(copy.deepcopy(stored))
        self._write_waiters.clear()
        return copy.deepcopy(stored)

    async def next_write(self, within: float = 30.0) -> JSON:
        """Wait for the next successful create or replace; return what it stored."""
        waiter: asyncio.Future[JSON] = asyncio.get_running_loop().create_future()
        self._write_waiters.append(waiter)
        return await asyncio.wait_for(waiter, within)

    def spec(self, name: str = "ns/united") -> JSON:
        spec: JSON = self.leases[name]["spec"]
        return spec

    def tamper(self, name: str = "ns/united", **spec: Any) -> None:
        """An out-of-band write, as another client would make."""
        lease = self.leases[name]
        lease["spec"].update(spec)
        self.rv += 1
        lease["metadata"]["resourceVersion"] = str(self.rv)


def elector(store: FakeLeases, identity: str, **options: Any) -> LeaderElector:
    options.setdefault("clock", wall_clock)
    return LeaderElector(store, name="united", namespace="ns", identity=identity, **options)


async def leading(store: FakeLeases, identity: str = "one", **options: Any) -> tuple[LeaderElector, asyncio.Task[None]]:
    """An elector running (``run()``) and elected."""
    candidate = elector(store, identity, **options)
    task = asyncio.create_task(candidate.run())
    await asyncio.wait_for(candidate.elected.wait(), 1)
    return candidate, task


# -- time formats and options -----------------------------------------------------------


def test_microtime_is_utc_with_six_fractional_digits() -> None:
    moment = datetime(2024, 1, 2, 4, 5, 6, tzinfo=timezone(timedelta(hours=2)))
    assert format_microtime(moment) == "2024-01-02T02:05:06.000000Z"
    assert format_microtime(datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)) == "2024-01-02T03:04:05.123456Z"
    with pytest.raises(ValueError):
        format_microtime(datetime(2024, 1, 2))  # naive
    assert parse_microtime("2024-01-02T02:05:06.000000Z") == moment
    assert parse_microtime("2024-01-02T02:05:06Z") == moment
    assert parse_microtime(format_microtime(moment)) == moment


@pytest.mark.parametrize(
    "timings",
    [
        {"lease_duration": 10, "renew_deadline": 10},
        {"renew_deadline": 2, "retry_period": 2},
        {"lease_duration": 0.5, "renew_deadline": 0.4, "retry_period": 0.1},
        {"retry_period": 0},
    ],
)
def test_inconsistent_timings_are_rejected(timings: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        LeaderElector(FakeLeases(), name="l", namespace="ns", identity="me", **timings)
    with pytest.raises(ValueError):
        LeaderElector(FakeLeases(), name="l", namespace="ns", identity="")


# -- acquisition and renewal ------------------------------------------------------------


def test_first_candidate_creates_the_lease_and_renews_it_every_retry_period() -> None:
    async def main() -> None:
        store = FakeLeases()
        started: list[float] = []
        one = elector(store, "one", on_started_leading=lambda: started.append(now()))
        task = asyncio.create_task(one.run())
        assert await wait_for_event(one.elected, 1) == pytest.approx(0.002)  # a GET (404), then a create
        assert one.is_leader and started == [pytest.approx(0.002)]
        spec = store.spec()
        assert spec["holderIdentity"] == "one"
        assert spec["leaseDurationSeconds"] == 15
        assert spec["leaseTransitions"] == 0
        assert spec["acquireTime"] == spec["renewTime"] == "2024-02-29T23:59:59.000000Z"

        renewals = []
        for _ in range(5):
            await store.next_write()
            renewals.append(now())
        gaps = [b - a for a, b in itertools.pairwise(renewals)]
        assert all(2.0 <= gap <= 2.0 * 1.2 + 0.11 for gap in gaps), gaps
        assert MICROTIME.match(store.spec()["renewTime"])
        assert store.spec()["acquireTime"] == "2024-02-29T23:59:59.000000Z", "renewal keeps acquireTime"
        # The fast path: renewals are single PUTs from the cached copy, no GET.
        assert store.requests[-3:] == [("replace", "ok")] * 3
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run_virtual(main)


def test_two_candidates_never_lead_together_and_the_standby_waits() -> None:
    async def main() -> None:
        store = FakeLeases()
        one, two = elector(store, "one"), elector(store, "two")
        tasks = [asyncio.create_task(one.run()), asyncio.create_task(two.run())]
        await asyncio.wait_for(one.elected.wait(), 1)
        for _ in range(600):  # a minute of virtual time, sampled every 0.1 s
            assert not (one.is_leader and two.is_leader)
            assert one.is_leader
            await asyncio.sleep(0.1)
        assert two.observed_holder == "one"
        assert store.spec()["leaseTransitions"] == 0
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    run_virtual(main)


def test_release_hands_over_within_one_retry_period_and_counts_a_transition() -> None:
    async def main() -> None:
        store = FakeLeases()
        stopped: list[float] = []
        one = elector(store, "one", on_stopped_leading=lambda: stopped.append(now()))
        two = elector(store, "two")
        one_task = asyncio.create_task(one.run())
        await asyncio.wait_for(one.elected.wait(), 1)
        two_task = asyncio.create_task(two.run())
        await asyncio.sleep(30)

        released_at = now()
        assert await one.release()
        assert not one.is_leader and not one.elected.is_set() and not one.lost.is_set()
        assert stopped == [released_at + 0.001]
        assert "holderIdentity" not in store.spec()
        assert store.spec()["leaseDurationSeconds"] == 1
        await asyncio.wait_for(one_task, 3)  # run() returns after a release

        took_over = await wait_for_event(two.elected, 3)
        assert took_over - released_at <= 2.0 * 1.2 + 0.01
        assert store.spec()["holderIdentity"] == "two"
        assert store.spec()["leaseTransitions"] == 1
        assert store.spec()["leaseDurationSeconds"] == 15
        assert not await one.release(), "releasing twice does nothing"
        two_task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await two_task

    run_virtual(main)


def test_cancelling_the_leader_releases_the_lease_unless_told_not_to() -> None:
    async def main() -> None:
        store = FakeLeases()
        _, task = await leading(store)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert "holderIdentity" not in store.spec()

        crashed = elector(store, "crashed", release_on_cancel=False)
        task = asyncio.create_task(crashed.run())
        await asyncio.wait_for(crashed.elected.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert store.spec()["holderIdentity"] == "crashed"

    run_virtual(main)


def test_a_release_after_a_renewal_that_landed_unseen_releases_the_lease_as_it_is() -> None:
    """A renewal cancelled in flight may land on the server; the release then conflicts with
    the copy kept, re-reads the Lease and, still holding it, releases it."""

    async def main() -> None:
        store = FakeLeases()
        one, task = await leading(store)
        store.tamper(renewTime="2030-01-01T00:00:00.000000Z")  # our renewal, its answer lost
        assert await one.release()
        assert "holderIdentity" not in store.spec() and store.spec()["leaseDurationSeconds"] == 1
        assert store.requests[-3:] == [("replace", "Conflict"), ("get", "ok"), ("replace", "ok")]
        await asyncio.wait_for(task, 3)

    run_virtual(main)


def test_a_release_never_takes_back_a_lease_another_holds_now() -> None:
    async def main() -> None:
        store = FakeLeases()
        one, task = await leading(store)
        store.tamper(holderIdentity="two", acquireTime="2030-01-01T00:00:00.000000Z")
        assert not await one.release()
        assert store.spec()["holderIdentity"] == "two"
        assert store.requests[-2:] == [("replace", "Conflict"), ("get", "ok")]
        await asyncio.wait_for(task, 3)

    run_virtual(main)


def test_a_crashed_leader_is_replaced_only_after_the_lease_duration() -> None:
    async def main() -> None:
        store = FakeLeases()
        one = elector(store, "one", release_on_cancel=False)
        two = elector(store, "two")
        one_task = asyncio.create_task(one.run())
        await asyncio.wait_for(one.elected.wait(), 1)
        two_task = asyncio.create_task(two.run())
        await asyncio.sleep(20)
        one_task.cancel()  # a crash: no release
        with pytest.raises(asyncio.CancelledError):
            await one_task
        last_renewal = parse_microtime(store.spec()["renewTime"])
        crashed_at = now()
        took_over = await wait_for_event(two.elected, 30)
        # The standby judges expiry from when *it* saw the record change (at its
        # next poll, up to one jittered retry period after the renewal), so it
        # waits at least a lease duration after the last renewal, and at most that
        # plus two retry periods (one to see the renewal, one to notice expiry).
        since_renewal = (EPOCH + timedelta(seconds=took_over) - last_renewal).total_seconds()
        assert 15.0 <= since_renewal <= 15.0 + 2 * 2.0 * 1.2 + 0.1
        assert took_over - crashed_at <= 15.0 + 2 * 2.0 * 1.2 + 0.1
        assert store.spec()["holderIdentity"] == "two"
        assert store.spec()["leaseTransitions"] == 1
        two_task.cancel()
        await asyncio.gather(two_task, return_exceptions=True)

    run_virtual(main)


def test_a_new_candidate_does_not_trust_an_old_renew_time_written_by_another_clock() -> None:
    async def main() -> None:
        store = FakeLeases()
        # A lease held by "ghost" whose renewTime is a year old (a skewed clock):
        # still respected for a full lease duration from when we first saw it.
        store.leases["ns/united"] = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "united", "namespace": "ns", "resourceVersion": "1"},
            "spec": {
                "holderIdentity": "ghost",
                "leaseDurationSeconds": 15,
                "leaseTransitions": 4,
                "renewTime": "2023-01-01T00:00:00.000000Z",
                "acquireTime": "2023-01-01T00:00:00.000000Z",
            },
        }
        store.rv = 1
        two = elector(store, "two")
        task = asyncio.create_task(two.run())
        took_over = await wait_for_event(two.elected, 30)
        assert 15.0 <= took_over <= 15.0 + 2.0 * 1.2 + 0.1
        assert store.spec()["leaseTransitions"] == 5
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    run_virtual(main)


# -- losing -----------------------------------------------------------------------------


def test_renewal_failing_past_the_renew_deadline_loses_leadership() -> None:
    async def main() -> None:
        store = FakeLeases()
        stopped: list[float] = []
        one, task = await leading(store, on_stopped_leading=lambda: stopped.append(now()))
        await asyncio.sleep(10)
        await store.next_write()
        last_success = now()
        store.failing = True
        lost_at = await wait_for_event(one.lost, 30)
        assert not one.is_leader and not one.elected.is_set()
        assert stopped == [lost_at]
        # It gives up within the renew deadline of the last success (when its fence
        # closes), and well before a standby could take over (the lease duration).
        assert 10.0 - 2.0 <= lost_at - last_success <= 10.0
        assert lost_at - last_success < 15.0
        await asyncio.wait_for(task, 1)  # run() returns: the caller should exit
        failed = [r for r in store.requests if r[1] == "unavailable"]
        assert len(failed) >= 3, "it retries within the deadline before giving up"

    run_virtual(main)


def test_a_conflict_on_the_fast_path_falls_back_to_get_and_keeps_leading() -> None:
    async def main() -> None:
        store = FakeLeases()
        one, task = await leading(store)
        await asyncio.sleep(5)
        store.tamper(renewTime="2000-01-01T00:00:00.000000Z")  # e.g. someone edited the Lease
        store.requests.clear()
        renewed = await store.next_write()
        assert not renewed["spec"]["renewTime"].startswith("2000")
        assert store.requests[:3] == [("replace", "Conflict"), ("get", "ok"), ("replace", "ok")]
        await asyncio.sleep(30)
        assert one.is_leader and not one.lost.is_set()
        assert store.spec()["holderIdentity"] == "one"
        assert store.spec()["leaseTransitions"] == 0
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    run_virtual(main)


def test_seeing_another_live_holder_loses_at_once() -> None:
    async def main() -> None:
        store = FakeLeases()
        one, task = await leading(store)
        await asyncio.sleep(5)
        taken_at = now()
        store.tamper(holderIdentity="intruder", leaseTransitions=1)
        lost_at = await wait_for_event(one.lost, 5)
        assert lost_at - taken_at <= 2.0 * 1.2 + 0.01, "no need to wait out the renew deadline"
        await asyncio.wait_for(task, 1)
        assert store.spec()["holderIdentity"] == "intruder", "the loser must not overwrite the new holder"

    run_virtual(main)


def test_create_race_is_lost_gracefully() -> None:
    async def main() -> None:
        store = FakeLeases()
        one, two = elector(store, "one"), elector(store, "two")
        results = await asyncio.gather(one.try_acquire_or_renew(), two.try_acquire_or_renew())
        assert sorted(results) == [False, True]
        assert ("create", "AlreadyExists") in store.requests

    run_virtual(main)


def test_callback_errors_are_contained() -> None:
    async def main() -> None:
        store = FakeLeases()

        def boom() -> None:
            raise RuntimeError("callback bug")

        one, task = await leading(store, on_started_leading=boom, on_stopped_leading=boom)
        assert await one.release()
        await asyncio.wait_for(task, 5)

    run_virtual(main)


# -- the fence --------------------------------------------------------------------------

WRITE = ("PATCH", DEPLOYMENTS.path(namespace="ns", name="web-a"))
LEASE_WRITES = [("PUT", LEASES.path(namespace="ns", name="united")), ("POST", LEASES.path(namespace="ns"))]


def test_the_fence_lets_writes_through_only_while_leading_but_always_its_own_lease_writes() -> None:
    async def main() -> None:
        store = FakeLeases()
        one, task = await leading(store)
        two = elector(store, "two")
        tasks = [task, asyncio.create_task(two.run())]
        await asyncio.sleep(5)
        one.fence(*WRITE)
        with pytest.raises(Fenced, match="does not hold the Lease ns/united"):
            two.fence(*WRITE)
        for method, path in LEASE_WRITES:
            two.fence(method, path)
        assert await one.release()
        with pytest.raises(Fenced):
            one.fence(*WRITE)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    run_virtual(main)


def test_the_fence_closes_renew_deadline_after_the_last_successful_renewal_started() -> None:
    async def main() -> None:
        store = FakeLeases()
        one, task = await leading(store)
        await asyncio.sleep(5)
        await store.next_write()
        started = now() - 0.001  # each request takes 1 ms
        store.hanging = True  # the API server stops answering: no renewal succeeds any more
        await asyncio.sleep(started + 10.0 - 0.01 - now())
        one.fence(*WRITE)
        lost_at = await wait_for_event(one.lost, 5)
        assert lost_at == pytest.approx(started + 10.0)
        with pytest.raises(Fenced):
            one.fence(*WRITE)
        await asyncio.wait_for(task, 1)

    run_virtual(main)


def test_a_frozen_leader_is_fenced_by_its_own_clock_before_its_election_task_has_run() -> None:
    async def main() -> None:
        store = FakeLeases()
        one, task = await leading(store)
        await asyncio.sleep(5)
        one.fence(*WRITE)
        loop = asyncio.get_running_loop()
        assert isinstance(loop, VirtualTimeLoop)
        loop.now += 20.0  # SIGSTOP ... SIGCONT: time passed, no task ran
        frozen_until = now()
        assert one.is_leader and not one.lost.is_set(), "the election task has not noticed yet"
        assert not one.holds_lease()
        with pytest.raises(Fenced):
            one.fence(*WRITE)
        for method, path in LEASE_WRITES:
            one.fence(method, path)
        assert await wait_for_event(one.lost, 1) == frozen_until, "it notices at its first step"
        await asyncio.wait_for(task, 1)

    run_virtual(main)


def test_timing_problems_name_the_parameter() -> None:
    assert timing_problems(lease_duration=15, renew_deadline=10, retry_period=2) == {}
    assert timing_problems(lease_duration=8, renew_deadline=8, retry_period=0) == {
        "renew_deadline": "Invalid value: 8: must be less than the lease duration (8)",
        "retry_period": "Invalid value: 0: must be greater than 0",
    }
    assert timing_problems(lease_duration=15, renew_deadline=6, retry_period=5) == {
        "retry_period": "Invalid value: 5: must be less than the renew deadline / 1.2 (5)"
    }
