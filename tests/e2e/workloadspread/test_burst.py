"""Never over-fill: a Deployment scaled 0 -> 60 at once against maxima 10 / 20 / the rest, with
the controller running, then killed (SIGKILL) and restarted in the middle of the burst. And
what the webhook costs a pod, measured through its HTTPS server."""

from __future__ import annotations

import asyncio
import json
import signal
import ssl
import statistics
import time
import urllib.request
from collections import Counter
from typing import Any

import pytest

from tests.e2e.workloadspread.conftest import Spreading
from tests.e2e.workloadspread.test_spread import WS, deployment, observed, pods_of, spread, subset_of, webhook_ready
from united.devcluster.wait import eventually
from united.kube.client import DEPLOYMENTS, REPLICA_SETS, KubeClient, PatchType

pytestmark = pytest.mark.e2e

JSON = dict[str, Any]
MAXIMA = {"zone-a": 10, "zone-b": 20}


async def burst(kube: KubeClient, namespace: str, *, during: Any = None) -> dict[str | None, int]:
    """Scale ``burst`` 0 -> 60 and watch its pods until all 60 exist; returns the largest count
    each subset ever had (sampled every 0.2 s; pods are only added, so the last sample bounds
    every moment, and the samples show no pod was taken back)."""
    await kube.patch(DEPLOYMENTS, "burst", {"spec": {"replicas": 60}}, patch_type=PatchType.MERGE, namespace=namespace)
    seen: dict[str, str | None] = {}
    peak: Counter[str | None] = Counter()
    started = time.monotonic()
    called = False
    while time.monotonic() - started < 180:
        pods = await pods_of(kube, namespace, "burst")
        for pod in pods:
            seen.setdefault(pod["metadata"]["uid"], subset_of(pod))
        counts = Counter(subset_of(p) for p in pods)
        for subset, n in counts.items():
            peak[subset] = max(peak[subset], n)
        if during is not None and not called and len(pods) >= 15:
            called = True
            during()
        if len(pods) >= 60:
            break
        await asyncio.sleep(0.2)
    assert len(seen) == 60, f"{len(seen)} pods created"
    return dict(peak)


async def prepared(kube: KubeClient, namespace: str, spreading: Spreading) -> None:
    await webhook_ready(kube, spreading)
    await kube.create(WS, spread("burst", "burst", [10, 20, None]), namespace=namespace)
    await observed(kube, namespace, "burst")
    await kube.create(DEPLOYMENTS, deployment("burst", 0), namespace=namespace)


async def test_a_burst_of_60_pods_never_over_fills_a_subset(
    kube: KubeClient, namespace: str, spreading: Spreading
) -> None:
    await prepared(kube, namespace, spreading)
    peak = await burst(kube, namespace)
    assert peak == {"zone-a": 10, "zone-b": 20, "zone-c": 30}, peak


async def test_a_burst_with_the_controller_killed_midway_never_over_fills_a_subset(
    kube: KubeClient, namespace: str, spreading: Spreading
) -> None:
    await prepared(kube, namespace, spreading)

    def kill_and_restart() -> None:
        spreading.stop(signal.SIGKILL)
        spreading.start()

    peak = await burst(kube, namespace, during=kill_and_restart)
    for subset, maximum in MAXIMA.items():
        assert peak.get(subset, 0) <= maximum, peak
    assert sum(peak.values()) == 60, peak
    print(f"\nburst with SIGKILL: {peak}")


def post(port: int, review: JSON) -> float:
    """Seconds the webhook took to answer ``review`` over HTTPS (the test trusts any certificate:
    trust is the API server's business, tested elsewhere)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    body = json.dumps(review).encode()
    request = urllib.request.Request(
        f"https://127.0.0.1:{port}/mutate-pods", data=body, headers={"Content-Type": "application/json"}
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, context=context, timeout=10) as answer:
        reply = json.loads(answer.read())
    took = time.perf_counter() - started
    assert reply["response"]["allowed"], reply
    return took


def admission(namespace: str, name: str, owner: JSON) -> JSON:
    meta = owner["metadata"]
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": meta["name"], "uid": meta["uid"], "controller": True}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(meta.get("labels") or {}),
                     "ownerReferences": [ref]},
        "spec": {"containers": [{"name": "main", "image": "app"}]},
    }  # fmt: skip
    request = {"uid": name, "operation": "CREATE", "namespace": namespace, "object": pod,
               "kind": {"group": "", "version": "v1", "kind": "Pod"}}  # fmt: skip
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


async def test_admission_latency_of_untargeted_and_targeted_pods(
    kube: KubeClient, namespace: str, spreading: Spreading
) -> None:
    await webhook_ready(kube, spreading)
    await kube.create(WS, spread("lat", "lat", [1000, None]), namespace=namespace)
    await observed(kube, namespace, "lat")
    await kube.create(DEPLOYMENTS, deployment("lat", 0), namespace=namespace)
    await kube.create(DEPLOYMENTS, deployment("other", 0), namespace=namespace)

    async def replicasets() -> dict[str, JSON]:
        items = (await kube.list(REPLICA_SETS, namespace=namespace)).items
        by_app = {rs["metadata"]["labels"]["app"]: rs for rs in items}
        assert set(by_app) == {"lat", "other"}, by_app
        return by_app

    owners = await eventually(replicasets, within=60, what="the ReplicaSets")
    await asyncio.sleep(2)  # the controller's caches hold them
    port = spreading.webhook_port
    untargeted = [await asyncio.to_thread(post, port, admission(namespace, f"u-{n}", owners["other"]))
                  for n in range(200)]  # fmt: skip
    targeted = [await asyncio.to_thread(post, port, admission(namespace, f"t-{n}", owners["lat"]))
                for n in range(100)]  # fmt: skip
    status = (await kube.get(WS, "lat", namespace=namespace))["status"]
    lists = [status.get("subsetStatuses") or [], *(status.get("versionedSubsetStatuses") or {}).values()]
    booked = {pod for entries in lists for s in entries for pod in s.get("creatingPods") or {}}
    assert {f"t-{n}" for n in range(100)} <= booked, "every targeted admission booked a slot"

    def figures(samples: list[float]) -> str:
        ms = sorted(s * 1000 for s in samples)
        p99 = ms[max(0, int(len(ms) * 0.99) - 1)]
        return f"p50 {statistics.median(ms):.1f} ms, p99 {p99:.1f} ms"

    print(f"\nadmission latency: untargeted {figures(untargeted)}; targeted with booking {figures(targeted)}")
    assert statistics.median(untargeted) < statistics.median(targeted), "an untargeted pod costs less"
