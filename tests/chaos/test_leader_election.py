"""Two controllers, one Lease: take-over after SIGKILL and after SIGTERM.

Each controller talks through its own fault proxy (no faults), so each request log holds one
controller's requests only. The leader is killed with SIGKILL (its Lease must expire: 15 s)
and, in a second round, stopped with SIGTERM (it releases the Lease: the standby takes over at
its next retry, about 2 s). Take-over is judged in the standby's Lease polls, read from its
proxy's log — after SIGKILL no sooner than a Lease after the old leader's last renewal and
within the polls a Lease takes, after SIGTERM at the first poll that sees the release — not in
seconds, which a loaded machine stretches; the seconds are recorded as figures. Each new leader
must then serve a scale write. The logs prove the standby wrote nothing but Lease requests
before it took over, while its informers (LIST/WATCH) kept its caches warm.

A third test freezes the leader (SIGSTOP) in the middle of its passes, past its Lease, lets the
standby take over and serve new work, then resumes it (SIGCONT) with stale caches, a pass in
flight and keys to queue: its own proxy's log must show no write from it after its Lease
expired, and it must exit (code 1) on its own.
"""

from __future__ import annotations

import contextlib
import math
import signal
import time
from pathlib import Path

import pytest

from tests.chaos.figures import record
from tests.chaos.invariants import scale, storm_doc, wait_converged
from tests.chaos.support import proxied_controller, proxy_for
from tests.e2e.controller.helpers import UD
from tests.support.controller import Controller
from tests.support.faultproxy import LogEntry, ThreadedFaultProxy
from united.controller.settings import Settings
from united.devcluster.cluster import LocalCluster
from united.devcluster.simulation import Simulation
from united.kube.client import KubeClient
from united.kube.wait import eventually

pytestmark = [pytest.mark.chaos, pytest.mark.e2e, pytest.mark.timeout(600)]


def _leading(controller: Controller) -> bool:
    return controller.counter("leader_election_master_status") == 1  # one lease: its sample


async def _wait_leading(controller: Controller, within: float) -> None:
    async def leading() -> None:
        assert _leading(controller), "not leading yet"

    await eventually(leading, within=within, interval=0.1, what=f"{controller.log_path.name} leading")


def _acquired(proxy: ThreadedFaultProxy, identity: str, since: float) -> LogEntry:
    """The first successful Lease write (create or update) of ``identity`` after ``since``."""
    wins = [
        e
        for e in proxy.log.writes(identity=identity, resource="leases")
        if e.time >= since and e.status in (200, 201) and e.method in ("PUT", "POST")
    ]
    assert wins, f"{identity} never wrote the Lease successfully"
    return wins[0]


async def _three_uds(kube: KubeClient, namespace: str, prefix: str) -> list[str]:
    names = [f"{prefix}-{i}" for i in range(3)]
    for i, name in enumerate(names):
        await kube.create(UD, storm_doc(name, i, replicas=2), namespace=namespace)
    return names


def _lease_polls(proxy: ThreadedFaultProxy, identity: str, since: float, until: float) -> int:
    """The Lease reads (GET) of ``identity`` that arrived in ``[since, until]``."""
    polls = proxy.log.requests(identity=identity, resource="leases", verb="get")
    return sum(1 for e in polls if since <= e.time <= until)


def _standby_writes(proxy: ThreadedFaultProxy, identity: str, until: float) -> list[str]:
    return [
        f"{e.method} {e.path}" for e in proxy.log.writes(identity=identity) if e.time < until and e.resource != "leases"
    ]


async def test_standby_takes_over_after_sigkill_and_sigterm_and_never_writes_while_standby(
    cluster: LocalCluster,
    sim: Simulation,
    kube: KubeClient,
    namespace: str,
    controller_identity: Path,
    tmp_path: Path,
) -> None:
    names = await _three_uds(kube, namespace, "le")
    proxies = {n: proxy_for(cluster, controller_identity, name=n) for n in ("a", "b")}
    controllers = {
        n: proxied_controller(
            p, controller_identity, tmp_path / f"{n}.kubeconfig", name=f"chaos-le-{n}", leader_elect=True
        )
        for n, p in proxies.items()
    }
    a, b = controllers["a"], controllers["b"]
    try:
        a.start()
        await _wait_leading(a, within=40)  # a Lease left by an earlier test may have to expire first
        b.start()
        await wait_converged(kube, namespace, within=90, what="converged under leader a", controllers=[a, b])
        # b is a warm standby: synced caches, polling the Lease, nothing else.
        await proxies["b"].log.wait_for(3, within=30, identity="b", resource="leases", verb="get")
        await scale(kube, namespace, names[0], 4)
        await wait_converged(kube, namespace, within=60, what="a scale served by leader a", controllers=[a, b])
        assert not _leading(b)

        # Round 1: SIGKILL the leader; the standby waits out the Lease.
        killed = time.time()
        assert a.stop(signal.SIGKILL) == -signal.SIGKILL
        last_renewal = _last_renewal(proxies["a"], "a")
        await scale(kube, namespace, names[1], 5)
        await _wait_leading(b, within=40)
        won = _acquired(proxies["b"], "b", since=killed)
        sigkill_takeover = won.time - killed
        sigkill_polls = _lease_polls(proxies["b"], "b", since=killed, until=won.time)
        assert not _standby_writes(proxies["b"], "b", until=won.time), "the standby wrote before it led"
        await wait_converged(
            kube, namespace, within=60, what="the scale made while a was dead, served by b", controllers=[b]
        )
        first_write = min(e.time for e in proxies["b"].log.writes(identity="b") if e.resource != "leases")
        standby_reads = proxies["b"].log.requests(identity="b", verb=("list", "watch"))
        b_lists = sum(1 for e in standby_reads if e.time < won.time)
        b_lease_polls = sum(
            1 for e in proxies["b"].log.requests(identity="b", resource="leases", verb="get") if e.time < won.time
        )

        # Round 2: a new standby, then SIGTERM the leader: it releases the Lease.
        mark = proxies["a"].log.mark()
        a.start()
        await proxies["a"].log.wait_for(2, within=30, identity="a", resource="leases", verb="get", since=mark)
        assert not _leading(a)
        stopped = time.time()
        assert b.stop(signal.SIGTERM) == 0
        release = [
            e for e in proxies["b"].log.writes(identity="b", resource="leases") if e.time >= stopped and e.status == 200
        ]
        assert release, "the leader did not write the Lease on its way out"
        await _wait_leading(a, within=20)
        won_a = _acquired(proxies["a"], "a", since=stopped)
        sigterm_takeover = won_a.time - stopped
        sigterm_polls = _lease_polls(proxies["a"], "a", since=release[0].time, until=won_a.time)
        assert not [
            f"{e.method} {e.path}"
            for e in proxies["a"].log.writes(identity="a", since=mark)
            if e.time < won_a.time and e.resource != "leases"
        ], "the new standby wrote before it led"
        await scale(kube, namespace, names[2], 6)
        await wait_converged(
            kube, namespace, within=60, what="a scale served by a after the hand-over", controllers=[a]
        )
    finally:
        codes = {n: c.stop() for n, c in controllers.items()}
        for proxy in proxies.values():
            proxy.stop()
    assert codes["a"] == 0, f"controller a exited with {codes['a']}; see {a.log_path}"
    # The standby polls every retry period or later: a Lease seen unchanged takes at most
    # lease / retry polls to run out (by the standby's clock, from the poll that saw the last
    # renewal), and one more poll takes it over. A loaded machine makes fewer polls, not more.
    settings = Settings()
    lease, retry = settings.leader_election_lease_duration, settings.leader_election_retry_period
    assert won.time - last_renewal >= lease, f"b took over {won.time - last_renewal:.1f}s after a's last renewal"
    most = math.ceil(lease / retry) + 2
    assert 1 <= sigkill_polls <= most, f"b polled the Lease {sigkill_polls} times after the SIGKILL (at most {most})"
    assert 1 <= sigterm_polls <= 2, f"a polled the released Lease {sigterm_polls} times before taking it over"
    record(
        "leader election",
        {
            "take-over seconds after SIGKILL (lease 15 s)": round(sigkill_takeover, 1),
            "take-over seconds after SIGTERM (Lease released)": round(sigterm_takeover, 1),
            "standby Lease polls from SIGKILL to take-over": sigkill_polls,
            "standby Lease polls from the release to take-over": sigterm_polls,
            "first child/status write after SIGKILL, seconds": round(first_write - killed, 1),
            "standby writes other than Lease while not leading": 0,
            "standby LIST/WATCH requests while not leading": b_lists,
            "standby Lease polls (GET)": b_lease_polls,
        },
    )


LEASE, RENEW, RETRY = 8, 6, 1
"""Shorter Lease timings for the freeze test (seconds): its pause must outlast the Lease."""


def _last_renewal(proxy: ThreadedFaultProxy, identity: str) -> float:
    """When the last Lease write of ``identity`` that succeeded arrived."""
    renewals = [e.time for e in proxy.log.writes(identity=identity, resource="leases") if e.status in (200, 201)]
    assert renewals, f"{identity} never wrote the Lease"
    return max(renewals)


def _not_lease(entry: LogEntry) -> bool:
    return entry.resource != "leases"


async def _exit_code(controller: Controller, within: float) -> int:
    async def exited() -> int:
        assert controller.proc is not None
        code = controller.proc.poll()
        assert code is not None, "still running"
        return code

    return await eventually(exited, within=within, interval=0.1, what=f"{controller.log_path.name} exiting")


async def test_a_leader_frozen_past_its_lease_writes_nothing_when_it_resumes(
    cluster: LocalCluster,
    sim: Simulation,
    kube: KubeClient,
    namespace: str,
    controller_identity: Path,
    tmp_path: Path,
) -> None:
    names = await _three_uds(kube, namespace, "fz")
    timings = (
        *("--leader-election-lease-duration", str(LEASE)),
        *("--leader-election-renew-deadline", str(RENEW)),
        *("--leader-election-retry-period", str(RETRY)),
    )
    proxies = {n: proxy_for(cluster, controller_identity, name=n) for n in ("a", "b")}
    controllers = {
        n: proxied_controller(
            p, controller_identity, tmp_path / f"{n}.kubeconfig", name=f"chaos-fz-{n}", leader_elect=True, extra=timings
        )
        for n, p in proxies.items()
    }
    a, b = controllers["a"], controllers["b"]
    codes: dict[str, int | None] = {}
    try:
        a.start()
        await _wait_leading(a, within=40)  # a Lease left by an earlier test may have to expire first
        b.start()
        await wait_converged(kube, namespace, within=90, what="converged under leader a", controllers=[a, b])
        assert not _leading(b)

        # Slow a's writes (not its Lease) so that passes are in flight when it freezes.
        proxies["a"].add_rule(methods={"POST", "PUT", "PATCH", "DELETE"}, path=r"^(?!.*/leases/)", latency=1.5)
        mark = proxies["a"].log.mark()
        for name, replicas in zip(names, (5, 4, 3), strict=True):
            await scale(kube, namespace, name, replicas)
        await proxies["a"].log.wait_for(
            1, within=30, identity="a", method={"POST", "PUT", "PATCH", "DELETE"}, since=mark, where=_not_lease
        )
        assert a.proc is not None
        a.proc.send_signal(signal.SIGSTOP)
        frozen = time.time()

        # While a is frozen: the standby takes over and serves new work, which a's watches
        # will deliver to its stale caches (queued keys) when it resumes.
        for name, replicas in zip(names, (1, 6, 2), strict=True):
            await scale(kube, namespace, name, replicas)
        await _wait_leading(b, within=40)
        await wait_converged(kube, namespace, within=90, what="served by b while a is frozen", controllers=[b])
        expired = _last_renewal(proxies["a"], "a") + LEASE
        assert time.time() > expired, "a's Lease has not run out yet"

        a.proc.send_signal(signal.SIGCONT)
        resumed = time.time()
        codes["a"] = await _exit_code(a, within=40)
        exit_seconds = time.time() - resumed
        late = [
            f"{e.method} {e.path} at +{e.time - expired:.2f}s"
            for e in proxies["a"].log.writes(identity="a", where=_not_lease)
            if e.time >= expired
        ]
        before_freeze = len(proxies["a"].log.writes(identity="a", since=mark, where=lambda e: e.time < frozen))
        await scale(kube, namespace, names[0], 3)
        await wait_converged(kube, namespace, within=90, what="converged under b after a resumed", controllers=[b])
    finally:
        if a.proc is not None and a.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                a.proc.send_signal(signal.SIGCONT)
        for n, c in controllers.items():
            codes.setdefault(n, c.stop())
        for proxy in proxies.values():
            proxy.stop()
    assert not late, f"the old leader wrote after its Lease expired: {late}"
    assert codes["a"] == 1, f"the old leader exited with {codes['a']}; see {a.log_path}"
    assert codes["b"] == 0, f"controller b exited with {codes['b']}; see {b.log_path}"
    record(
        "leader election: frozen leader",
        {
            "Lease / renew deadline / retry, seconds": f"{LEASE} / {RENEW} / {RETRY}",
            "old leader's writes between the scale and its freeze": before_freeze,
            "seconds frozen": round(resumed - frozen, 1),
            "old leader's writes after its Lease expired": len(late),
            "seconds from SIGCONT to its exit (code 1)": round(exit_seconds, 1),
        },
    )
