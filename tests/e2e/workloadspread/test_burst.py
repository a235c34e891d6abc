"""Never over-fill a subset: a Deployment scaled 0 -> 60 at once, every pod event watched.

``united run --webhook-port/--webhook-url`` serves the pod webhook; the API server calls it
for each of the ReplicaSet controller's creates, which arrive in parallel batches. The
:class:`~tests.e2e.workloadspread.occupancy.Occupancy` checker sees every pod event and
records any moment at which a subset held more active pods than its ``maxReplicas``.

The second test SIGKILLs the controller mid-burst: pods created while nothing answers are
admitted unplaced (``failurePolicy: Ignore``) and must never count into the limited subsets;
after the restart the status agrees with the pods again.

Each run prints its figures (per-subset counts and peaks, unplaced, seconds)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import signal
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tests.e2e.controller.conftest import LOG_DIR, Controller, free_port
from tests.e2e.workloadspread.occupancy import Occupancy, watching
from united.controller.webhooks import MUTATING, VALIDATING
from united.devcluster.cluster import LocalCluster
from united.devcluster.installation import install_controller
from united.devcluster.nodes import ZONE_LABEL
from united.devcluster.wait import eventually
from united.kube.client import DEPLOYMENTS, NAMESPACES, KubeClient, PatchType
from united.kube.errors import NotFound
from united.uniteddeployment.model import GROUP
from united.workloadspread.reconciler import ws_resource
from united.workloadspread.webhookconfig import NAME

pytestmark = pytest.mark.e2e

JSON = dict[str, Any]
SPREADS = ws_resource(GROUP)
MAXIMA: dict[str, int | None] = {"zone-a": 10, "zone-b": 20, "zone-c": None}
BURST = 60
APP = "burst"


def spread(name: str) -> JSON:
    subsets = []
    for zone, maximum in MAXIMA.items():
        subset: JSON = {"name": zone, "requiredNodeSelector": {
            "matchExpressions": [{"key": ZONE_LABEL, "operator": "In", "values": [zone]}]}}  # fmt: skip
        if maximum is not None:
            subset["maxReplicas"] = maximum
        subsets.append(subset)
    return {
        "apiVersion": SPREADS.api_version,
        "kind": "WorkloadSpread",
        "metadata": {"name": name},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": APP}, "subsets": subsets},
    }


def deployment() -> JSON:
    labels = {"app": APP}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": APP},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {
                "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.2"}]}},
        },
    }  # fmt: skip


@pytest.fixture
def webhook_controller(cluster: LocalCluster, simulation: Any) -> Iterator[Controller]:
    """``united run`` serving the pod webhook at ``https://127.0.0.1:PORT`` (admin credentials:
    this test is about admission, the least-privilege suite about RBAC); its configurations
    are removed afterwards so later tests' pods do not call a stopped server."""
    port = free_port()
    # Short: the serving certificate's common name is "united-webhook.<namespace>.svc" (64 at most).
    controller_ns = f"ws-burst-{secrets.token_hex(3)}"

    async def prepare() -> None:
        async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as kube:
            await install_controller(kube)
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": controller_ns}}
            await kube.create(NAMESPACES, body)

    async def cleanup() -> None:
        async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as kube:
            for resource in (MUTATING, VALIDATING):
                with contextlib.suppress(NotFound):
                    await kube.delete(resource, NAME)
            with contextlib.suppress(NotFound):
                await kube.delete(NAMESPACES, controller_ns)

    asyncio.run(prepare())
    running = Controller(cluster.admin_kubeconfig, name="ws-burst", leader_elect=False, extra=(
        "--webhook-port", str(port), "--webhook-host", "127.0.0.1", "--webhook-url", f"https://127.0.0.1:{port}",
        "--controller-namespace", controller_ns))  # fmt: skip
    running.start()
    try:
        yield running
    finally:
        running.stop()
        asyncio.run(cleanup())


class Burst:
    def __init__(self, kube: KubeClient, namespace: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.occupancy = Occupancy("spread", MAXIMA)

    async def prepare(self) -> None:
        """The target at 0 and its spread, once the webhook places a pod of it (its caches
        hold the spread and the API server calls it)."""
        await self.kube.create(DEPLOYMENTS, deployment(), namespace=self.namespace)
        await self.kube.create(SPREADS, spread("spread"), namespace=self.namespace)

        async def observed() -> None:
            ws = await self.kube.get(SPREADS, "spread", namespace=self.namespace)
            assert (ws.get("status") or {}).get("observedGeneration") == 1, ws.get("status")

        await eventually(observed, within=60, what="the controller observes the spread")

    async def scale(self, replicas: int) -> None:
        await self.kube.patch(DEPLOYMENTS, APP, {"spec": {"replicas": replicas}}, namespace=self.namespace,
                              patch_type=PatchType.MERGE)  # fmt: skip

    def total(self) -> int:
        return sum(self.occupancy.counts().values()) + self.occupancy.unplaced()

    async def all_created(self) -> None:
        assert self.total() == BURST, f"{self.total()} of {BURST} pods so far"

    async def status_agrees(self) -> None:
        status = (await self.kube.get(SPREADS, "spread", namespace=self.namespace)).get("status") or {}
        replicas = {s["name"]: s.get("replicas", 0) for s in status.get("subsetStatuses") or []}
        counts = self.occupancy.counts()
        assert replicas == {zone: counts.get(zone, 0) for zone in MAXIMA}, (replicas, counts)
        assert status.get("unplacedReplicas", 0) == self.occupancy.unplaced(), status

    def report(self, test: str, seconds: float, **extra: Any) -> JSON:
        figures = {"test": test, "counts": self.occupancy.counts(), "peaks": self.occupancy.peaks,
                   "unplaced": self.occupancy.unplaced(), "events": self.occupancy.events,
                   "seconds": round(seconds, 1), **extra}  # fmt: skip
        print(f"\nburst figures: {json.dumps(figures)}")
        with (LOG_DIR / "ws-burst-figures.jsonl").open("a") as out:
            out.write(json.dumps(figures) + "\n")
        return figures


@pytest.fixture
async def burst(kube: KubeClient, namespace: str, webhook_controller: Controller) -> AsyncIterator[Burst]:
    yield Burst(kube, namespace)


async def test_a_burst_of_60_never_overfills_a_subset(burst: Burst) -> None:
    await burst.prepare()
    async with watching(burst.kube, burst.occupancy, namespace=burst.namespace, selector=f"app={APP}"):
        started = time.monotonic()
        await burst.scale(BURST)
        await eventually(burst.all_created, within=180, what="the Deployment creates its pods")
        seconds = time.monotonic() - started
        await eventually(burst.status_agrees, within=60, what="the status counts the pods")
    burst.report("burst", seconds)
    assert burst.occupancy.violations == []
    assert burst.occupancy.counts() == {"zone-a": 10, "zone-b": 20, "zone-c": 30}
    assert burst.occupancy.unplaced() == 0


async def test_a_burst_with_the_controller_killed_midway_never_overfills(
    burst: Burst, webhook_controller: Controller
) -> None:
    await burst.prepare()
    async with watching(burst.kube, burst.occupancy, namespace=burst.namespace, selector=f"app={APP}"):
        started = time.monotonic()
        await burst.scale(BURST)

        async def some_placed() -> None:
            assert sum(burst.occupancy.counts().values()) >= 8

        await eventually(some_placed, within=120, interval=0.05, what="the burst under way")
        webhook_controller.stop(signal.SIGKILL)
        at_kill = burst.total()
        await eventually(burst.all_created, within=180, what="the Deployment creates its pods while we are down")
        seconds = time.monotonic() - started
        unplaced = burst.occupancy.unplaced()
        webhook_controller.start()
        await eventually(burst.status_agrees, within=90, what="the status recovers after the restart")
    burst.report("burst-kill", seconds, killed_after=at_kill)
    assert burst.occupancy.violations == []
    counts = burst.occupancy.counts()
    assert unplaced > 0, "the kill came too late to leave any pod unplaced"
    assert burst.occupancy.unplaced() == unplaced
    assert counts.get("zone-a", 0) <= 10 and counts.get("zone-b", 0) <= 20
