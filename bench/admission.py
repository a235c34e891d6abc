"""What the pod webhook adds to a pod CREATE: the same pods POSTed directly, one at a time and
in bursts, measured from request to response, side by side in one run.

Cases, interleaved pod by pod (their order rotating) so load drift hits each alike:

* ``floor``: a namespace the webhook configurations exclude — the API server calls nobody;
* ``no_spread``: a namespace without any WorkloadSpread (the webhook is called and finds
  nothing to match);
* ``untargeted``: a namespace with a WorkloadSpread, the pod of another workload (the webhook
  walks the pod's owners in its caches and lets it in unchanged, no API call);
* ``targeted``: a pod of the spread's Deployment: the webhook books a subset (one status write
  of the spread) and injects its placement. Every subset has a ``maxReplicas``, so every pod books.

``unconfigured``: the floor's pods again, before the controller first runs (no webhook
configuration exists at all), to show the excluded namespace is a true floor.

Each pod is owned by a ReplicaSet of a Deployment, as a ReplicaSet controller makes it; the
bench's kube-controller-manager runs no ReplicaSet controller, so these hand-made owners stay
as created and nothing else writes pods meanwhile.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import time
from collections.abc import Mapping, Sequence
from typing import Any

from bench.controller import diff_counts
from bench.scenarios import Context, log, percentile
from bench.webhook import (
    NOBODY,
    create_spread,
    delete_namespaces,
    maxima_for,
    placement,
    prepare_namespace,
    remove_configurations,
    serving,
    spread,
)
from united.api.document import Json
from united.kube.client import DEPLOYMENTS, PODS, REPLICA_SETS, KubeClient

CASES = ("floor", "no_spread", "untargeted", "targeted")
NAMESPACE = "admission"
FLOOR_NAMESPACE = "admission-floor"
NO_SPREAD_NAMESPACE = "admission-no-spread"
SPREAD = "admission"
HASH = "6b8f9c7d5"
SUBSETS = 3
WARMUP = 5
"""Pods of each case created first and not counted (connections, caches, the webhook's TLS)."""


def deployment(name: str, namespace: str, *, replicas: int) -> Json:
    labels = {"app": name}
    template = {
        "metadata": {"labels": labels},
        "spec": {
            "schedulerName": NOBODY,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {"name": "main", "image": "registry.invalid/united/bench:1",
                 "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}
            ],
        },
    }  # fmt: skip
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template},
    }


def replica_set(owner: Mapping[str, Any]) -> Json:
    """The ReplicaSet a deployment controller would make for ``owner`` (a created Deployment)."""
    meta, spec = owner["metadata"], owner["spec"]
    labels = {**spec["template"]["metadata"]["labels"], "pod-template-hash": HASH}
    template = {**spec["template"], "metadata": {"labels": labels}}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{meta['name']}-{HASH}",
            "namespace": meta["namespace"],
            "labels": labels,
            "ownerReferences": [_controller_ref(owner)],
        },
        "spec": {"replicas": spec["replicas"], "selector": {"matchLabels": labels}, "template": template},
    }


def pod(name: str, owner: Mapping[str, Any]) -> Json:
    """A pod as ReplicaSet ``owner`` (a created one) makes it."""
    template = owner["spec"]["template"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": owner["metadata"]["namespace"],
            "labels": dict(template["metadata"]["labels"]),
            "ownerReferences": [_controller_ref(owner)],
        },
        "spec": template["spec"],
    }


def _controller_ref(owner: Mapping[str, Any]) -> Json:
    meta = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": True}  # fmt: skip


def compare(latencies: Mapping[str, Sequence[float]], *, floor: str = "floor") -> Json:
    """p50/p99/mean (ms) of each case and its ratio to the floor's."""
    base50, base99 = percentile(latencies[floor], 50), percentile(latencies[floor], 99)
    out: Json = {}
    for case, values in latencies.items():
        p50, p99 = percentile(values, 50), percentile(values, 99)
        out[case] = {
            "pods": len(values),
            "p50_ms": p50,
            "p99_ms": p99,
            "mean_ms": statistics.mean(values) if values else float("nan"),
            "ratio_p50": p50 / base50,
            "ratio_p99": p99 / base99,
            "added_p50_ms": p50 - base50,
        }
    return out


def rotated(cases: Sequence[str], i: int) -> list[str]:
    """``cases`` starting at the ``i``-th: each case goes first as often as the others."""
    k = i % len(cases)
    return [*cases[k:], *cases[:k]]


class Creator:
    """POSTs the pods of each case, timing each request."""

    def __init__(self, client: KubeClient, owners: Mapping[str, Json]) -> None:
        self.client = client
        self.owners = owners
        self.names = {case: itertools.count() for case in owners}
        self.created = dict.fromkeys(owners, 0)

    async def one(self, case: str) -> float:
        owner = self.owners[case]
        body = pod(f"{case.replace('_', '-')}-{next(self.names[case]):05d}", owner)
        started = time.perf_counter()
        await self.client.create(PODS, body, namespace=owner["metadata"]["namespace"])
        self.created[case] += 1
        return 1000 * (time.perf_counter() - started)

    async def phase(self, cases: Sequence[str], *, pods: int, burst: int) -> dict[str, dict[str, list[float]]]:
        """``pods`` pods of each case one at a time, then ``pods // burst`` bursts of each."""
        for case in cases:
            for _ in range(WARMUP):
                await self.one(case)
        singles: dict[str, list[float]] = {c: [] for c in cases}
        bursts: dict[str, list[float]] = {c: [] for c in cases}
        for i in range(pods):
            for case in rotated(cases, i):
                singles[case].append(await self.one(case))
        for i in range(pods // burst):
            for case in rotated(cases, i):
                bursts[case] += await asyncio.gather(*(self.one(case) for _ in range(burst)))
        return {"one_at_a_time": singles, "bursts": bursts}


async def _workload(client: KubeClient, namespace: str, name: str, *, replicas: int) -> Json:
    created = await client.create(DEPLOYMENTS, deployment(name, namespace, replicas=replicas), namespace=namespace)
    return await client.create(REPLICA_SETS, replica_set(created), namespace=namespace)


async def admission(ctx: Context, *, pods: int, burst: int) -> Json:
    client = ctx.client
    burst = max(1, min(burst, pods))
    per_case = WARMUP + pods + (pods // burst) * burst
    published = ctx.published or ()
    await remove_configurations(client, published)
    await prepare_namespace(client, FLOOR_NAMESPACE, excluded=True)
    await prepare_namespace(client, NO_SPREAD_NAMESPACE)
    await prepare_namespace(client, NAMESPACE)
    owners = {
        "floor": await _workload(client, FLOOR_NAMESPACE, "web", replicas=2 * per_case),
        "no_spread": await _workload(client, NO_SPREAD_NAMESPACE, "web", replicas=per_case),
        "untargeted": await _workload(client, NAMESPACE, "other", replicas=per_case),
        "targeted": await _workload(client, NAMESPACE, "web", replicas=per_case),
    }
    creator = Creator(client, owners)
    log(f"admission: {pods} pods one at a time and {pods // burst} bursts of {burst}, no webhook configured")
    unconfigured = await creator.phase(["floor"], pods=pods, burst=burst)
    ctl = await serving(ctx, namespaces=[NAMESPACE, NO_SPREAD_NAMESPACE], name="admission")
    try:
        maxima = maxima_for(per_case, SUBSETS)
        await create_spread(client, spread(SPREAD, NAMESPACE, target="web", maxima=maxima, group=ctx.group))
        log(f"admission: {pods} pods of each case one at a time and {pods // burst} bursts of {burst}, interleaved")
        await ctl.wait_idle(quiet=0.5)
        before = await ctl.writes()
        timed = await creator.phase(CASES, pods=pods, burst=burst)
        writes = diff_counts(await ctl.writes(), before)
    finally:
        ctl.stop()
        await remove_configurations(client, published)
    targeted = (await client.list(PODS, namespace=NAMESPACE, label_selector="app=web")).items
    others = (await client.list(PODS, namespace=NAMESPACE, label_selector="app=other")).items
    await delete_namespaces(client, [NAMESPACE, FLOOR_NAMESPACE, NO_SPREAD_NAMESPACE])
    results: Json = {"pods": pods, "burst": burst, "warmup": WARMUP, "subsets": SUBSETS}
    for mode in ("one_at_a_time", "bursts"):
        results[mode] = compare({**timed[mode], "unconfigured": unconfigured[mode]["floor"]})
    results["placement"] = placement(targeted, spread=SPREAD, maxima=maxima)
    results["placement"]["pods"] = len(targeted)
    results["untargeted_placed"] = len(others) - placement(others, spread=SPREAD, maxima=maxima)["unplaced"]
    results["controller_writes"] = writes
    results["targeted_pods"] = creator.created["targeted"] - WARMUP
    return results


__all__ = ["CASES", "admission", "compare", "deployment", "pod", "replica_set", "rotated"]
