"""Two controllers, one Lease: take-over after SIGKILL and after SIGTERM (issue #6, item 4).

Each controller talks through its own fault proxy (no faults), so each request log holds one
controller's requests only. The leader is killed with SIGKILL (its Lease must expire: 15 s)
and, in a second round, stopped with SIGTERM (it releases the Lease: the standby takes over at
its next retry, about 2 s). Take-over time = from the signal to the standby's first successful
Lease write, read from its proxy's log; each new leader must then serve a scale write. The
logs prove the standby wrote nothing but Lease requests before it took over, while its
informers (LIST/WATCH) kept its caches warm.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.chaos.figures import record
from tests.chaos.invariants import scale, storm_doc, wait_converged
from tests.chaos.support import proxied_controller, proxy_for
from tests.e2e.controller.conftest import Controller
from tests.e2e.controller.helpers import UD
from united.devcluster.cluster import LocalCluster
from united.devcluster.faultproxy import LogEntry, ThreadedFaultProxy
from united.devcluster.simulation import Simulation
from united.devcluster.wait import eventually
from united.kube.client import KubeClient

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
    names = [f"le-{i}" for i in range(3)]
    for i, name in enumerate(names):
        await kube.create(UD, storm_doc(name, i, replicas=2), namespace=namespace)
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
        await scale(kube, namespace, names[1], 5)
        await _wait_leading(b, within=40)
        won = _acquired(proxies["b"], "b", since=killed)
        sigkill_takeover = won.time - killed
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
    assert sigkill_takeover < 20, f"take-over after SIGKILL took {sigkill_takeover:.1f}s (lease: 15 s)"
    assert sigterm_takeover < 4, f"take-over after SIGTERM took {sigterm_takeover:.1f}s (retry period: 2 s)"
    record(
        "leader election",
        {
            "take-over seconds after SIGKILL (lease 15 s)": round(sigkill_takeover, 1),
            "take-over seconds after SIGTERM (Lease released)": round(sigterm_takeover, 1),
            "first child/status write after SIGKILL, seconds": round(first_write - killed, 1),
            "standby writes other than Lease while not leading": 0,
            "standby LIST/WATCH requests while not leading": b_lists,
            "standby Lease polls (GET)": b_lease_polls,
        },
    )
