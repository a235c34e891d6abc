"""A rolling update of the target keeps the split (kruise#834): the new template's pods book
slots of their own version while the old pods still hold theirs, so when the update is done
the subsets hold what they held before — not everything in the last subset."""

from __future__ import annotations

import time

import pytest

from tests.e2e.workloadspread.conftest import Spreading
from tests.e2e.workloadspread.harness import APP, Target
from tests.e2e.workloadspread.occupancy import watching
from tests.e2e.workloadspread.test_spread import webhook_ready
from united.kube.client import DEPLOYMENTS, KubeClient
from united.kube.wait import eventually

pytestmark = pytest.mark.e2e

MAXIMA: dict[str, int | None] = {"zone-a": 2, "zone-b": 3, "zone-c": None}
SPLIT = {"zone-a": 2, "zone-b": 3, "zone-c": 5}
REPLICAS = 10


async def test_a_rolling_update_keeps_the_split(kube: KubeClient, namespace: str,
                                                spreading: Spreading) -> None:  # fmt: skip
    target = Target(kube, namespace, MAXIMA, by_version=True)
    await webhook_ready(kube, spreading)
    await target.create()

    async def rolled_out(generation: int) -> None:
        status = (await kube.get(DEPLOYMENTS, APP, namespace=namespace)).get("status") or {}
        assert status.get("observedGeneration", 0) >= generation, status
        for field in ("replicas", "updatedReplicas", "availableReplicas"):
            assert status.get(field) == REPLICAS, status
        assert target.total() == REPLICAS, target.total()

    async with watching(kube, target.occupancy, namespace=namespace, selector=target.selector):
        await target.patch({"replicas": REPLICAS})
        await eventually(lambda: rolled_out(2), within=120, what="the first rollout")
        assert target.occupancy.counts() == SPLIT
        started = time.monotonic()
        env = [{"name": "RELEASE", "value": "2"}]
        template = {"spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.2", "env": env}]}}
        await target.patch({"template": template})
        await eventually(lambda: rolled_out(3), within=180, what="the rolling update")
        seconds = time.monotonic() - started
        await eventually(target.status_agrees, within=60, what="the status counts the new pods")
    target.report("rolling-update", seconds)
    assert target.occupancy.violations == []
    assert target.occupancy.counts() == SPLIT
    assert target.occupancy.unplaced() == 0
