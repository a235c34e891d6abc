"""What a UnitedDeployment write costs the API server by how its CRD is declared.

The same objects (a bench UnitedDeployment with the status this project writes for it) under
copies of the compat CRD that differ in one declaration each, every copy in a group of its own:
as installed; with ``v1beta1`` served too (``united install --kruise-v1beta1``); without the CEL
validation rules. Each round writes ``/scale`` and then the status of one object per copy, in
a shuffled order, one write at a time, and times each from the request to the watch event that
carries it — the path a controller's watch and the bench's single scale take. The API server
and etcd CPU is summed per copy around its writes (coarse: the kernel counts in ticks; over
hundreds of writes the ticks average out).

Why: the CRD is this project's to declare, and a declaration may put a price on every write that
no controller code can win back; this scenario measures that price one declaration at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

from bench.scenarios import Context, log
from bench.workload import floor_plan, united_deployment
from united import data
from united.api.crdrules import without_rules
from united.api.document import Json
from united.api.groups import KRUISE_GROUP, KRUISE_UD_CRD
from united.kube.apply import install_crds
from united.kube.client import CRDS, NAMESPACES, KubeClient, PatchType, Resource
from united.kube.errors import AlreadyExists, ApiError, NotFound

WRITES = ("scale", "status")
"""The writes timed, in each round and for each copy: ``/scale`` (a user's or an HPA's), then the
status (the controller's)."""
NAMESPACE = "bench-crdcost"
VARIANTS: dict[str, Callable[[Json], Json]] = {
    "as installed": lambda crd: crd,
    "v1beta1 served": lambda crd: data.serving([crd], KRUISE_UD_CRD, "v1beta1")[0],
    "no CEL rules": without_rules,
}
"""Each copy of the compat UnitedDeployment CRD measured, by what differs from the installed one."""


def group_of(index: int) -> str:
    return f"v{index}.crdcost.bench.test"


def variants(crd: Json) -> dict[str, Json]:
    """The CRD copies, each renamed into its own group (so all live side by side)."""
    out = {}
    for index, (label, change) in enumerate(VARIANTS.items()):
        copy = change(crd)
        group = group_of(index)
        spec = copy["spec"] | {"group": group}
        meta = {"name": f"{spec['names']['plural']}.{group}"}
        out[label] = copy | {"metadata": meta, "spec": spec}
    return out


def summary(samples: Mapping[tuple[str, str], list[float]], cpu: Mapping[tuple[str, str], float]) -> Json:
    """Per copy and write: p50 / p90 of the write → watch times, the API server and etcd CPU per
    write, and the ratios to the installed copy's."""
    base = {write: samples[("as installed", write)] for write in WRITES}
    base_p50 = {write: statistics.median(times) for write, times in base.items()}
    base_per_write = {write: cpu[("as installed", write)] / len(times) for write, times in base.items()}
    out: Json = {}
    for (label, write), times in samples.items():
        p50, per_write = statistics.median(times), cpu[(label, write)] / len(times)
        out.setdefault(label, {})[write] = {
            "writes": len(times),
            "p50_ms": p50,
            "p90_ms": statistics.quantiles(times, n=10)[-1],
            "ratio_p50": p50 / base_p50[write],
            "added_p50_ms": p50 - base_p50[write],
            "server_cpu_ms_per_write": per_write,
            "ratio_cpu": per_write / base_per_write[write] if base_per_write[write] else None,
        }
    return out


async def crdcost(ctx: Context, *, rounds: int, objects: int = 5, seed: int = 0) -> Json:
    """``rounds`` rounds of one ``/scale`` and one status write per CRD copy (see the module)."""
    client = ctx.client
    (crd,) = data.documents(data.crd(KRUISE_GROUP))
    copies = variants(crd)
    log(f"crdcost: {len(copies)} CRD copies x {objects} UnitedDeployments, {rounds} rounds")
    await install_crds(client, list(copies.values()))
    with contextlib.suppress(AlreadyExists):
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    resources = {
        label: Resource(c["spec"]["group"], "v1alpha1", "uniteddeployments", True, "UnitedDeployment")
        for label, c in copies.items()
    }
    doc = united_deployment("ud", NAMESPACE, subsets=3, replicas=6, group=KRUISE_GROUP)
    status = floor_plan(doc)["status"]
    names = [f"ud-{i}" for i in range(objects)]
    seen: dict[tuple[str, str, str], float] = {}
    watches = []
    try:
        for label, resource in resources.items():
            for name in names:
                obj = doc | {"apiVersion": resource.api_version, "metadata": {"name": name, "namespace": NAMESPACE}}
                await _create_or_keep(client, resource, obj)
                await client.patch(resource, name, {"status": status}, patch_type=PatchType.MERGE,
                                   namespace=NAMESPACE, subresource="status")  # fmt: skip
            watches.append(asyncio.create_task(_watch(client, resource, label, seen)))
        samples, cpu = await _rounds(ctx, resources, names, status, seen, rounds=rounds, seed=seed)
    finally:
        for task in watches:
            task.cancel()
        await asyncio.gather(*watches, return_exceptions=True)
        for c in copies.values():
            with contextlib.suppress(NotFound):
                await client.delete(CRDS, c["metadata"]["name"])
    return {"objects": objects, "rounds": rounds, "copies": summary(samples, cpu)}


async def _create_or_keep(client: KubeClient, resource: Resource, obj: Json) -> None:
    with contextlib.suppress(AlreadyExists):
        await client.create(resource, obj, namespace=NAMESPACE)


async def _watch(client: KubeClient, resource: Resource, label: str, seen: dict[tuple[str, str, str], float]) -> None:
    while True:
        with contextlib.suppress(ApiError):
            async with client.watch(resource, namespace=NAMESPACE) as events:
                async for event in events:
                    meta = event.object.get("metadata") or {}
                    seen[(label, str(meta.get("name")), str(meta.get("resourceVersion")))] = time.perf_counter()
        await asyncio.sleep(0.1)


async def _rounds(
    ctx: Context,
    resources: Mapping[str, Resource],
    names: list[str],
    status: Json,
    seen: Mapping[tuple[str, str, str], float],
    *,
    rounds: int,
    seed: int,
) -> tuple[dict[tuple[str, str], list[float]], dict[tuple[str, str], float]]:
    client = ctx.client
    samples: dict[tuple[str, str], list[float]] = {(label, w): [] for label in resources for w in WRITES}
    cpu = dict.fromkeys(samples, 0.0)
    order = list(resources)
    shuffle = random.Random(seed).shuffle
    first = next(iter(status["subsetReplicas"]))
    await asyncio.sleep(1.0)  # the watches opened

    async def timed(label: str, kind: str, write: Any) -> None:
        used = ctx.bench.server_cpu_seconds()
        sent = time.perf_counter()
        written = await write
        key = (label, written["metadata"]["name"], written["metadata"]["resourceVersion"])
        deadline = sent + 30.0
        while key not in seen:
            if time.perf_counter() > deadline:
                raise TimeoutError(f"crdcost: no watch event for {key} within 30 s")
            await asyncio.sleep(0.0002)
        samples[(label, kind)].append((seen[key] - sent) * 1000)
        cpu[(label, kind)] += (ctx.bench.server_cpu_seconds() - used) * 1000

    for n in range(rounds):
        shuffle(order)
        name = names[n % len(names)]
        replicas = 7 + n
        for label in order:
            resource = resources[label]
            scale = {"spec": {"replicas": replicas}}
            await timed(label, "scale", client.patch(resource, name, scale, patch_type=PatchType.MERGE,
                                                     namespace=NAMESPACE, subresource="scale"))  # fmt: skip
            changed = {"status": {"subsetReplicas": {**status["subsetReplicas"], first: replicas}}}
            await timed(label, "status", client.patch(resource, name, changed, patch_type=PatchType.MERGE,
                                                      namespace=NAMESPACE, subresource="status"))  # fmt: skip
    return samples, cpu
