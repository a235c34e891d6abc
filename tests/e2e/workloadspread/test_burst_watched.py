"""Never over-fill a subset: a Deployment scaled 0 -> 60 at once, every pod event watched
(``test_burst.py`` samples the pods every 0.2 s and judges what admission placed; here every
event is checked, the controller's adoption of unplaced pods included).

``united run --webhook-port/--webhook-url`` serves the pod webhook; the API server calls it
for each of the ReplicaSet controller's creates, which arrive in parallel batches. The
:class:`~tests.e2e.workloadspread.occupancy.Occupancy` checker sees every pod event and
records any moment at which a subset held more active pods than its ``maxReplicas``.

The second test SIGKILLs the controller mid-burst: pods created while nothing answers are
admitted unplaced (``failurePolicy: Ignore``) and must never count into the limited subsets;
after the restart the status agrees with the pods again.

Each run prints its figures (per-subset counts and peaks, unplaced, seconds)."""

from __future__ import annotations

import signal
import time
from collections.abc import AsyncIterator

import pytest

from tests.e2e.workloadspread.conftest import Spreading
from tests.e2e.workloadspread.harness import Latency, Target, deployment
from tests.e2e.workloadspread.occupancy import watching
from tests.e2e.workloadspread.test_spread import webhook_ready
from united.kube.client import DEPLOYMENTS, PODS, KubeClient
from united.kube.wait import eventually
from united.workloadspread.webhookconfig import MUTATE_PATH

pytestmark = pytest.mark.e2e

MAXIMA: dict[str, int | None] = {"zone-a": 10, "zone-b": 20, "zone-c": None}
BURST = 60


@pytest.fixture
async def target(kube: KubeClient, namespace: str, spreading: Spreading) -> AsyncIterator[Target]:
    target = Target(kube, namespace, MAXIMA)
    await webhook_ready(kube, spreading)
    await target.create()
    yield target


async def all_created(target: Target) -> None:
    assert target.total() == BURST, f"{target.total()} of {BURST} pods so far"


async def test_a_burst_of_60_never_overfills_a_subset(target: Target, spreading: Spreading) -> None:
    async with watching(target.kube, target.occupancy, namespace=target.namespace, selector=target.selector):
        started = time.monotonic()
        before = Latency(spreading.metrics(), MUTATE_PATH)
        await target.patch({"replicas": BURST})
        await eventually(lambda: all_created(target), within=180, what="the Deployment creates its pods")
        seconds = time.monotonic() - started
        targeted = Latency(spreading.metrics(), MUTATE_PATH).since(before)
        await eventually(target.status_agrees, within=60, what="the status counts the pods")
    # The same burst of a Deployment no spread targets: answered from the caches alone.
    other = deployment(BURST)
    other["metadata"]["name"] = other["spec"]["template"]["metadata"]["labels"]["app"] = "untargeted"
    other["spec"]["selector"]["matchLabels"]["app"] = "untargeted"
    before = Latency(spreading.metrics(), MUTATE_PATH)
    await target.kube.create(DEPLOYMENTS, other, namespace=target.namespace)

    async def untargeted_created() -> None:
        pods = await target.kube.list(PODS, namespace=target.namespace, label_selector="app=untargeted")
        assert len(pods.items) == BURST

    await eventually(untargeted_created, within=180, what="the untargeted Deployment's pods")
    untargeted = Latency(spreading.metrics(), MUTATE_PATH).since(before)
    target.report("burst", seconds, admission_targeted=targeted, admission_untargeted=untargeted)
    assert targeted["requests"] >= BURST
    assert target.occupancy.violations == []
    assert target.occupancy.counts() == {"zone-a": 10, "zone-b": 20, "zone-c": 30}
    assert target.occupancy.unplaced() == 0


async def test_a_burst_with_the_controller_killed_midway_never_overfills(
    target: Target,
    spreading: Spreading,
) -> None:
    async with watching(target.kube, target.occupancy, namespace=target.namespace, selector=target.selector):
        started = time.monotonic()
        await target.patch({"replicas": BURST})

        async def under_way() -> None:
            assert sum(target.occupancy.counts().values()) >= 8

        await eventually(under_way, within=120, interval=0.05, what="the burst under way")
        spreading.stop(signal.SIGKILL)
        killed_after = target.total()
        await eventually(lambda: all_created(target), within=180, what="the pods created while we are down")
        seconds = time.monotonic() - started
        unplaced = target.occupancy.unplaced()
        restarted = time.monotonic()
        spreading.start()
        await eventually(target.status_agrees, within=90, what="the status recovers after the restart")
        recovered = time.monotonic() - restarted
    target.report("burst-kill", seconds, killed_after=killed_after, unplaced_while_down=unplaced,
                  recovered_seconds=round(recovered, 1))  # fmt: skip
    assert unplaced > 0, "the kill came too late to leave any pod unplaced"
    assert target.occupancy.violations == []
    # Back up, the controller adopts what fits: an unplaced pod on a node of a subset with room.
    assert target.occupancy.unplaced() <= unplaced
    assert sum(target.occupancy.counts().values()) + target.occupancy.unplaced() == BURST
