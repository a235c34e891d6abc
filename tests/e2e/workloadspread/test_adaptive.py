"""Adaptive WorkloadSpread on the local control plane: a subset whose zone is cordoned keeps
its pods Pending (the real kube-scheduler marks them Unschedulable); after
``rescheduleCriticalSeconds`` the controller marks it ``Schedulable=False`` and deletes them,
the Deployment recreates them and the webhook places them in the next subsets. The subset
recovers once the recovery window (300 s at least) has passed since it was marked: the test
moves the recorded mark back instead of waiting five minutes."""

from __future__ import annotations

import copy
import time
from datetime import UTC, datetime, timedelta

import pytest

from tests.e2e.workloadspread.conftest import Spreading
from tests.e2e.workloadspread.harness import SPREAD, SPREADS, Target
from tests.e2e.workloadspread.occupancy import watching
from tests.e2e.workloadspread.test_spread import webhook_ready
from united.devcluster.simulation import Simulation
from united.kube.client import JSON, KubeClient
from united.kube.errors import Conflict
from united.kube.wait import eventually

pytestmark = pytest.mark.e2e

MAXIMA: dict[str, int | None] = {"zone-a": 2, "zone-b": 2, "zone-c": None}
CRITICAL = 3
STRATEGY = {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": CRITICAL}}


def schedulable(status: JSON, subset: str) -> JSON | None:
    entry: JSON = next((s for s in status.get("subsetStatuses") or [] if s["name"] == subset), {})
    return next((c for c in entry.get("conditions") or [] if c["type"] == "Schedulable"), None)


async def backdate(kube: KubeClient, namespace: str, subset: str, seconds: float) -> None:
    """Move the subset's ``Schedulable`` transition ``seconds`` into the past, in every list."""
    ws = await kube.get(SPREADS, SPREAD, namespace=namespace)
    body = copy.deepcopy(ws)
    moved = (datetime.now(UTC) - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = body["status"]
    for entries in [status.get("subsetStatuses") or [], *(status.get("versionedSubsetStatuses") or {}).values()]:
        for entry in entries:
            for condition in entry.get("conditions") or [] if entry["name"] == subset else []:
                if condition["type"] == "Schedulable":
                    condition["lastTransitionTime"] = moved
    await kube.replace(SPREADS, body, namespace=namespace, subresource="status")


async def test_a_cordoned_zones_pods_move_on_and_the_subset_recovers_after_the_window(
    kube: KubeClient, namespace: str, sim: Simulation, spreading: Spreading,
) -> None:  # fmt: skip
    target = Target(kube, namespace, MAXIMA)
    await webhook_ready(kube, spreading)
    await sim.cordon_zone("zone-a")
    await target.create(strategy=STRATEGY)
    async with watching(kube, target.occupancy, namespace=namespace, selector=target.selector):
        started = time.monotonic()
        await target.patch({"replicas": 4})

        async def first_in_zone_a() -> None:
            assert target.occupancy.peaks.get("zone-a") == 2, target.occupancy.peaks

        await eventually(first_in_zone_a, within=60, what="the first pods booked in the cordoned zone")

        async def moved_on() -> None:
            assert target.occupancy.counts() == {"zone-b": 2, "zone-c": 2}
            condition = schedulable(await target.status(), "zone-a")
            assert condition is not None and condition["status"] == "False", condition
            assert condition["reason"] == "PodUnschedulable"

        await eventually(moved_on, within=120, what="the pending pods rescheduled to later subsets")
        moved = time.monotonic() - started
        await eventually(target.status_agrees, within=60, what="the status counts the moved pods")

        # Still within the window: a new pod skips zone-a although it has slots and nodes again.
        await sim.cordon_zone("zone-a", False)
        await target.patch({"replicas": 5})

        async def skipped() -> None:
            assert target.occupancy.counts() == {"zone-b": 2, "zone-c": 3}

        await eventually(skipped, within=60, what="a pod placed while zone-a is marked unschedulable")
        condition = schedulable(await target.status(), "zone-a")
        assert condition is not None and condition["status"] == "False"

        await eventually(lambda: backdate(kube, namespace, "zone-a", 400), within=60, retry_on=(Conflict,),
                         what="the mark moved back past the window")  # fmt: skip

        async def recovered() -> None:
            condition = schedulable(await target.status(), "zone-a")
            assert condition is not None and condition["status"] == "True", condition

        await eventually(recovered, within=60, what="zone-a schedulable again after the window")
        await target.patch({"replicas": 7})

        async def refilled() -> None:
            assert target.occupancy.counts() == {"zone-a": 2, "zone-b": 2, "zone-c": 3}

        await eventually(refilled, within=60, what="new pods placed in the recovered subset first")
    target.report("adaptive", moved)
    assert target.occupancy.violations == []
