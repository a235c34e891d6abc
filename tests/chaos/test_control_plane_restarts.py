"""Restart kube-apiserver and etcd under a running controller.

The controller's watches die with the API server; it must re-establish every one of them
(the proxy in front of it, without faults, logs the new WATCHes and LISTs), keep running as
the same process, and converge on what changed after each restart. An etcd restart is
absorbed by the API server (its watch cache keeps client streams open), so there the proof
is convergence on writes made after etcd came back. It runs
without leader election: an API server restart here takes longer than the leader's renew
deadline (10 s), after which a leader gives up its Lease and exits on purpose, as client-go
leaders do (its Deployment restarts it); that is tested in ``tests/e2e/runtime``.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import aiohttp
import pytest

from tests.chaos.figures import record
from tests.chaos.invariants import scale, storm_doc, wait_converged
from tests.chaos.support import SEED, proxied_controller, proxy_for
from tests.e2e.controller.helpers import UD
from united.devcluster.cluster import LocalCluster
from united.devcluster.simulation import Simulation
from united.kube.client import KubeClient
from united.kube.errors import ApiError
from united.kube.wait import eventually

pytestmark = [pytest.mark.chaos, pytest.mark.e2e, pytest.mark.timeout(600)]

UDS = 6
RESTARTS = ("kube-apiserver", "etcd", "kube-apiserver", "etcd", "kube-apiserver", "etcd")


async def test_controller_survives_apiserver_and_etcd_restarts(
    cluster: LocalCluster,
    sim: Simulation,
    kube: KubeClient,
    namespace: str,
    controller_identity: Path,
    tmp_path: Path,
) -> None:
    rng = random.Random(f"{SEED}/restarts")
    names = [f"cp-{i}" for i in range(UDS)]
    for i, name in enumerate(names):
        await kube.create(UD, storm_doc(name, i, replicas=rng.randint(1, 5)), namespace=namespace)
    proxy = proxy_for(cluster, controller_identity, name="restarts")
    controller = proxied_controller(proxy, controller_identity, tmp_path / "proxy.kubeconfig", name="chaos-restarts")
    controller.start()
    outages: list[float] = []
    recoveries: list[float] = []
    rewatches: list[int] = []
    relists: list[int] = []
    try:
        assert controller.proc is not None
        pid = controller.proc.pid
        await wait_converged(
            kube, namespace, within=120, what="converged before the restarts", controllers=[controller]
        )
        informers = len(proxy.open_watches(identity="restarts"))
        assert informers >= 5, f"{informers} open watches"
        for n, component in enumerate(RESTARTS, start=1):
            mark = proxy.log.mark()
            reconciles = controller.counter("controller_runtime_reconcile_total")
            before = cluster.pids[component]
            started = time.monotonic()
            # Blocking on purpose: components must be started from the thread that started the cluster.
            assert cluster.restart(component) != before
            outages.append(time.monotonic() - started)
            cluster.check_alive()
            # What changed after the outage must be picked up.
            async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as fresh:
                for name in rng.sample(names, 3):
                    target = rng.randint(0, 6)

                    async def write(name: str = name, target: int = target) -> None:
                        await scale(fresh, namespace, name, target)

                    await eventually(
                        write,
                        within=30,
                        what="a scale write after the restart",
                        retry_on=(ApiError, aiohttp.ClientError),
                    )
                await wait_converged(
                    fresh,
                    namespace,
                    within=120,
                    what=f"converged after restart {n} ({component})",
                    controllers=[controller],
                )
            recoveries.append(time.monotonic() - started - outages[-1])
            assert controller.proc is not None and controller.proc.poll() is None, "the controller exited"
            assert controller.proc.pid == pid, "the controller was restarted"
            assert controller.counter("controller_runtime_reconcile_total") > reconciles, "no progress"
            watches = proxy.log.requests(identity="restarts", verb="watch", since=mark)
            lists = proxy.log.requests(identity="restarts", verb="list", since=mark)
            if component == "kube-apiserver":
                # Every stream died with the API server: each informer must have watched again.
                assert len(watches) >= informers, f"{len(watches)} watches after restart {n}, {informers} informers"
                rewatches.append(len(watches))
            relists.append(len(lists))
    finally:
        code = controller.stop()
        proxy.stop()
    assert code == 0, f"controller exited with {code} on SIGTERM; see {controller.log_path}"
    record(
        "control-plane restarts",
        {
            "restarts survived": len(recoveries),
            "kube-apiserver restarts": RESTARTS.count("kube-apiserver"),
            "etcd restarts": RESTARTS.count("etcd"),
            "controller pid unchanged": True,
            "outage seconds (restart call), max": round(max(outages), 1),
            "converged seconds after the component was back, max": round(max(recoveries), 1),
            "watches re-established per API server restart, min": min(rewatches),
            "open watches (informers)": informers,
            "LISTs after a restart, min/max": [min(relists), max(relists)],
            "403s answered by a freshly restarted API server (RBAC cache not yet synced)": len(
                proxy.log.requests(identity="restarts", status=403)
            ),
            "lost": 0,
        },
    )
