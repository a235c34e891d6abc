"""A scale storm over many UnitedDeployments, and one over a WorkloadSpread's target, while
the API misbehaves.

The controller talks to the API server through the fault proxy under its own ServiceAccount:
10 % of its requests — reads, writes and watch connects alike — get a 409, a 429 (with
``Retry-After``), a 500 or a dropped connection, and every few seconds a share of its open
watches is cut (TCP reset or a truncated event). Meanwhile /scale patches hit 20
UnitedDeployments x 3 subsets. With the faults still on, everything must converge and
nothing may be lost (:mod:`tests.chaos.invariants`).
"""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path
from typing import Literal

import pytest

from tests.chaos.figures import record
from tests.chaos.invariants import scale, storm_doc, wait_converged
from tests.chaos.support import SEED, proxied_controller, proxy_for
from tests.e2e.controller.helpers import UD
from tests.e2e.workloadspread.harness import Target, webhook_flags
from tests.e2e.workloadspread.occupancy import watching
from tests.support.faultproxy import DROP, WatchAction
from united.devcluster.cluster import LocalCluster
from united.devcluster.simulation import Simulation
from united.kube.apply import SYSTEM
from united.kube.client import KubeClient
from united.kube.wait import eventually

pytestmark = [pytest.mark.chaos, pytest.mark.e2e, pytest.mark.timeout(600)]

UDS = 20
FAULT_RATE = 0.10
FAULTS: tuple[int | Literal["drop"], ...] = (409, 429, 500, DROP)
STORM_WRITES = 160


async def test_scale_storm_through_faults_converges_and_loses_nothing(
    cluster: LocalCluster,
    sim: Simulation,
    kube: KubeClient,
    namespace: str,
    controller_identity: Path,
    tmp_path: Path,
) -> None:
    rng = random.Random(f"{SEED}/storm")
    names = [f"storm-{i:02d}" for i in range(UDS)]
    for i, name in enumerate(names):
        await kube.create(UD, storm_doc(name, i, replicas=rng.randint(0, 6)), namespace=namespace)

    proxy = proxy_for(cluster, controller_identity, name="controller")
    # Four rules in a row, each firing with p: 1 - (1 - p)^4 = 10 % of requests get one fault.
    p = 1 - (1 - FAULT_RATE) ** (1 / len(FAULTS))
    rules = [proxy.add_rule(respond=code, probability=p) for code in FAULTS]
    cuts = [
        proxy.add_watch_rule(WatchAction.CUT, every=3.0, share=0.5, how="reset"),
        proxy.add_watch_rule(WatchAction.CUT, every=5.0, share=0.3, how="truncate"),
    ]
    controller = proxied_controller(proxy, controller_identity, tmp_path / "proxy.kubeconfig", name="chaos-storm")
    controller.start()
    try:
        assert controller.proc is not None
        pid = controller.proc.pid
        started = time.monotonic()
        for _ in range(STORM_WRITES):
            await scale(kube, namespace, rng.choice(names), rng.randint(0, 6))
            await asyncio.sleep(rng.uniform(0.05, 0.35))  # pacing the load, not waiting for anything
        storm = time.monotonic() - started
        await wait_converged(
            kube,
            namespace,
            within=240,
            what=f"{UDS} UnitedDeployments converged under faults",
            controllers=[controller],
        )
        converged = time.monotonic() - started
        assert controller.proc is not None and controller.proc.poll() is None and controller.proc.pid == pid

        requests = proxy.log.requests(identity="controller")
        faulted = [e for e in requests if e.faults]
        by_code = {str(rule.respond): rule.fired for rule in rules}
        watch_cuts = sum(rule.fired for rule in cuts)
        assert all(n > 0 for n in by_code.values()), f"every fault kind must have fired: {by_code}"
        assert watch_cuts >= 10, f"only {watch_cuts} watch cuts"
        rate = sum(by_code.values()) / len(requests)
        assert 0.07 <= rate <= 0.13, f"fault rate {rate:.3f} is not about {FAULT_RATE}"
        writes = proxy.log.writes(identity="controller")
        assert len(writes) >= STORM_WRITES, f"{len(writes)} writes for {STORM_WRITES} scale events"
        record(
            "fault storm",
            {
                "uniteddeployments": UDS,
                "subsets": UDS * 3,
                "scale writes": STORM_WRITES,
                "controller requests": len(requests),
                "controller writes": len(writes),
                "request faults": sum(by_code.values()),
                "request fault rate": round(rate, 3),
                "request faults by kind": by_code,
                "write faults": sum(1 for e in writes if any(f.startswith(("status:", "drop")) for f in e.faults)),
                "requests touched (faults, watch cuts)": len(faulted),
                "watch cuts": watch_cuts,
                "storm seconds": round(storm, 1),
                "converged after seconds": round(converged, 1),
                "lost": 0,
            },
        )
    finally:
        proxy.clear_rules()
        code = controller.stop()
        proxy.stop()
    assert code == 0, f"controller exited with {code}; see {controller.log_path}"


WS_MAXIMA: dict[str, int | None] = {"zone-a": 10, "zone-b": 20, "zone-c": None}
WS_SCALES = 24


async def test_workloadspread_scale_storm_through_faults_never_overfills_and_converges(
    cluster: LocalCluster,
    sim: Simulation,
    kube: KubeClient,
    namespace: str,
    controller_identity: Path,
    tmp_path: Path,
) -> None:
    """The webhook's bookings and the controller's recounts go through the same faults (10 %
    of requests, watches cut) while a Deployment under a 10/20/rest spread is scaled between
    0 and 60 again and again: no subset is ever above its maximum at any pod event, and with
    the faults still on the status agrees with the pods in the end."""
    rng = random.Random(f"{SEED}/ws-storm")
    proxy = proxy_for(cluster, controller_identity, name="ws-controller")
    p = 1 - (1 - FAULT_RATE) ** (1 / len(FAULTS))
    rules = [proxy.add_rule(respond=code, probability=p) for code in FAULTS]
    cuts = [proxy.add_watch_rule(WatchAction.CUT, every=3.0, share=0.5, how="reset")]
    target = Target(kube, namespace, WS_MAXIMA)
    async with webhook_flags(cluster, namespace=SYSTEM) as flags:
        controller = proxied_controller(proxy, controller_identity, tmp_path / "proxy.kubeconfig",
                                        name="chaos-ws-storm", extra=flags)  # fmt: skip
        controller.start()
        try:
            await target.create()
            async with watching(kube, target.occupancy, namespace=namespace, selector=target.selector):
                started = time.monotonic()
                for replicas in [rng.randint(0, 60) for _ in range(WS_SCALES - 1)] + [60]:
                    await target.patch({"replicas": replicas})
                    await asyncio.sleep(rng.uniform(0.3, 1.5))  # pacing the load, not waiting for anything

                async def converged() -> None:
                    assert target.total() == 60, target.total()
                    await target.status_agrees()

                await eventually(converged, within=240, what="the spread's status converged under faults")
                seconds = time.monotonic() - started
            requests = proxy.log.requests(identity="ws-controller")
            by_code = {str(rule.respond): rule.fired for rule in rules}
            figures = target.report("ws-fault-storm", seconds, faults=by_code, requests=len(requests),
                                    watch_cuts=sum(rule.fired for rule in cuts))  # fmt: skip
            record("workloadspread fault storm", figures)
            assert sum(by_code.values()) > 0, "no fault fired"
            assert target.occupancy.violations == []
        finally:
            proxy.clear_rules()
            code = controller.stop()
            proxy.stop()
    assert code == 0, f"controller exited with {code}; see {controller.log_path}"
