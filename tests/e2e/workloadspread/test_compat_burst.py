"""A burst of an OpenKruise spread's pods (``apps.kruise.io/v1alpha1``, stored as ``v1beta1``)
is placed as one of this project's group is, when the process that books them also converts.

Every booking is a status write, and the API server converts a spread written in one version
and last applied in another through the conversion webhook — which the same ``united run``
serves. Pod reviews waiting for their booking once held every place of the webhook server, the
conversion could not get one, and each side waited for the other until the handlers timed out:
a 0 → 200 scale-out left 185 pods unplaced. The test runs on ``own_cluster``, where the
controller of ``apps.kruise.io`` is the only one and owns the compat CRD's conversion."""

from __future__ import annotations

import asyncio
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from bench.webhook import spread as bench_spread
from tests.e2e.workloadspread.test_burst import admission, answer, placed_in, replicaset_of
from tests.e2e.workloadspread.test_conversion import ALPHA, BETA
from tests.e2e.workloadspread.test_spread import deployment
from tests.support.controller import WebhookController
from tests.support.namespace import fresh_namespace
from united.api.groups import KRUISE_GROUP
from united.devcluster.cluster import LocalCluster
from united.kube.client import DEPLOYMENTS, KubeClient
from united.kube.errors import ApiError
from united.kube.wait import eventually

pytestmark = pytest.mark.e2e

PODS = 120
AT_ONCE = 60


async def test_a_burst_of_an_openkruise_spreads_pods_is_placed_by_the_process_that_converts(
    own_cluster: LocalCluster, kruise_cluster: KubeClient
) -> None:
    kube = kruise_cluster
    kruise = WebhookController(own_cluster.admin_kubeconfig, name="kruise-spreads", leader_elect=False,
                               extra=("--api-group", KRUISE_GROUP))  # fmt: skip
    kruise.start()
    try:
        async with fresh_namespace(kube, "kruise-burst") as namespace:
            spread = bench_spread("fast", namespace, target="fast", maxima=[40, 40, 40], group=KRUISE_GROUP)
            await eventually(lambda: kube.create(ALPHA, spread, namespace=namespace), within=60, retry_on=(ApiError,),
                             what="the API server converts through the controller")  # fmt: skip
            await kube.create(DEPLOYMENTS, deployment("fast", 0), namespace=namespace)
            owner = await replicaset_of(kube, namespace, "fast")

            async def placing() -> None:
                ws = await kube.get(BETA, "fast", namespace=namespace)
                assert (ws.get("status") or {}).get("observedGeneration") == ws["metadata"]["generation"], ws
                probe = admission(namespace, "probe", owner)
                assert placed_in(await asyncio.to_thread(answer, kruise.webhook_port, probe)) == "s0"

            await eventually(placing, within=60, what="the controller placing the spread's pods")
            converted = kruise.counter("controller_runtime_webhook_requests_total", webhook="/convert", code="200")
            loop = asyncio.get_running_loop()
            with ThreadPoolExecutor(max_workers=AT_ONCE) as pool:
                answers = await asyncio.gather(
                    *(loop.run_in_executor(pool, answer, kruise.webhook_port, admission(namespace, f"fast-{n}", owner))
                      for n in range(PODS - 1))
                )  # fmt: skip
            converted = kruise.counter("controller_runtime_webhook_requests_total", webhook="/convert", code="200") \
                - converted  # fmt: skip
            writes = kruise.counter("rest_client_requests_total", resource="workloadspreads/status", verb="PATCH")
            await kube.delete(BETA, "fast", namespace=namespace)
    finally:
        kruise.stop()
    placed = Counter(placed_in(a) for a in answers)
    print(f"\nOpenKruise spread, {PODS - 1} admissions {AT_ONCE} at once: placed {dict(placed)}; "
          f"{writes:.0f} status writes, {converted:.0f} conversions served meanwhile")  # fmt: skip
    assert converted > 0, "the bookings' writes went through the controller's own conversion webhook"
    assert placed == {"s0": 39, "s1": 40, "s2": 40}, placed
