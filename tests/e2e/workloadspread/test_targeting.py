"""A spread created together with its workload, in a namespace that held none: every pod is
placed. On 1.22+ the pod webhooks see only namespaces that hold a spread, so the spread's own
CREATE must put its namespace in their selectors before it returns (the spreads webhook),
not a poll a second later; on older servers every namespace is sent and this holds as before.
Pods in namespaces without a spread never reaching the webhook: ``test_untargeted.py``."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from tests.e2e.conftest import KUBE_VERSION
from tests.e2e.workloadspread.conftest import Spreading
from tests.e2e.workloadspread.test_spread import WS, deployment, pods_of, spread, webhook_ready
from tests.e2e.workloadspread.test_untargeted import NARROWS, selected
from tests.support.namespace import fresh_namespace
from united.kube.client import DEPLOYMENTS, KubeClient
from united.kube.wait import eventually
from united.workloadspread.webhookconfig import MUTATE_PATH

pytestmark = pytest.mark.e2e

ROUNDS = 4
REPLICAS = 6


def admissions(spreading: Spreading) -> dict[str, float]:
    """What the pod webhook did so far: reviews, those skipped (no spread cached in their
    namespace), pods placed and unplaced (a failure says which way a pod went)."""
    return {
        "reviews": spreading.counter("controller_runtime_webhook_requests_total", webhook=MUTATE_PATH),
        "skipped": spreading.counter("united_webhook_reviews_skipped_total", webhook=MUTATE_PATH),
        "placed": spreading.counter("united_workloadspread_placements_total", result="placed"),
        "unplaced": spreading.counter("united_workloadspread_placements_total", result="unplaced"),
    }


async def test_a_spread_and_its_workload_created_together_place_every_pod(
    kube: KubeClient, namespace: str, spreading: Spreading
) -> None:
    await webhook_ready(kube, spreading)
    took = []
    for n in range(ROUNDS):
        async with fresh_namespace(kube, f"{namespace}-{n}") as fresh:
            assert all(t is None or fresh not in t for t in await selected(kube)), "no spread there yet"
            before = admissions(spreading)
            started = time.perf_counter()
            await kube.create(WS, spread("web", "web", [2, 3, None]), namespace=fresh)
            took.append(time.perf_counter() - started)
            await kube.create(DEPLOYMENTS, deployment("web", REPLICAS), namespace=fresh)
            targets = await selected(kube)
            if NARROWS:
                assert all(t is not None and fresh in t for t in targets), (
                    f"not sent when the create returned: {targets}"
                )
            else:
                assert targets == [None, None], "1.20: every namespace is sent, as before"

            async def created() -> list[str | None]:
                pods = await pods_of(kube, fresh, "web")
                assert len(pods) == REPLICAS, f"{len(pods)} pods"
                # The subset's patch is applied only at admission (an unplaced pod adopted later
                # gets the subset's annotation, never its label).
                return [p["metadata"]["labels"].get("e2e.united.dev/zone") for p in pods]

            subsets = await eventually(created, within=60, what=f"{REPLICAS} pods created")
            seen = {k: v - before[k] for k, v in admissions(spreading).items()}
            assert Counter(subsets) == {"zone-a": 2, "zone-b": 3, "zone-c": 1}, f"round {n}: placed {subsets}, {seen}"
    ms = sorted(round(t * 1000, 1) for t in took)
    print(f"\nKubernetes {KUBE_VERSION}: WorkloadSpread CREATE in a namespace without one took {ms} ms "
          f"(selector {'narrowed' if NARROWS else 'wide'})")  # fmt: skip
