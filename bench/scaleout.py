"""Pods created per second when a Deployment is scaled 0 → N (200 by default): the pods are
made by kube-controller-manager's ReplicaSet controller and admitted by the API server, through
the pod webhook or not, exactly as in a cluster.

The bench's control plane runs no workload controllers, so this scenario starts a second
kube-controller-manager with only ``deployment,replicaset`` for its duration, at the client
rate limits given (``--kube-api-qps``; its default, 20 per second with bursts of 30, caps the
ReplicaSet controller's pod creations in any cluster that keeps it). It must run before any
other scenario has created Deployments. Each run is a fresh namespace, in the order
``floor`` (a namespace the webhook configurations exclude), ``untargeted`` (the webhook is
called, the namespace has no spread) and ``targeted`` (a WorkloadSpread on the Deployment,
every subset with a ``maxReplicas``: every pod is booked), rotating with each repeat. The time
runs from the PATCH of ``spec.replicas`` until a watch has delivered the N-th pod; every spread
pod's subset is then checked against the maxima (none may hold more), so the figure counts
only pods placed correctly.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import subprocess
from collections.abc import Sequence
from typing import Any

from bench.admission import deployment, rotated
from bench.controller import die_with_parent
from bench.scenarios import Context, log
from bench.webhook import (
    create_spread,
    delete_namespaces,
    maxima_for,
    placement,
    prepare_namespace,
    remove_configurations,
    serving,
    spread,
    until,
)
from united.api.document import Json
from united.api.groups import GROUP
from united.devcluster import versions
from united.devcluster.ports import free_port
from united.devcluster.versions import DEFAULT, KubeVersion
from united.kube.client import DEPLOYMENTS, PODS, REPLICA_SETS, KubeClient, PatchType
from united.runtime.informer import ADDED, Informer

VARIANTS = ("floor", "untargeted", "targeted")
APP = "web"
SUBSETS = 4


def rate(arrivals: Sequence[float], *, start: float) -> Json:
    """Pods per second from ``start`` (the scale request) to the last arrival, and between the
    first and the last arrival (without the controllers' reaction time)."""
    ordered = sorted(arrivals)
    if not ordered:
        return {"pods": 0}
    span = ordered[-1] - ordered[0]
    return {
        "pods": len(ordered),
        "seconds": ordered[-1] - start,
        "first_pod_seconds": ordered[0] - start,
        "pods_per_second": len(ordered) / (ordered[-1] - start),
        "first_to_last_pods_per_second": (len(ordered) - 1) / span if span > 0 else math.nan,
    }


def kcm_argv(binary: str, kubeconfig: str, *, qps: int, port: int, version: KubeVersion = DEFAULT) -> list[str]:
    """A kube-controller-manager running only the Deployment and ReplicaSet controllers (no
    insecure port: ``--port=0`` while ``version`` has the flag)."""
    burst = math.ceil(qps * 1.5)
    insecure = ["--port=0"] if versions.controller_manager_has_port_flag(version) else []
    return [binary, f"--kubeconfig={kubeconfig}", "--bind-address=127.0.0.1", f"--secure-port={port}", *insecure,
            "--leader-elect=false", "--controllers=deployment,replicaset", "--controller-start-interval=0",
            f"--kube-api-qps={qps}", f"--kube-api-burst={burst}", "--profiling=false", "--v=1"]  # fmt: skip


@contextlib.contextmanager
def workload_controllers(ctx: Context, *, qps: int) -> Any:
    """A second kube-controller-manager (deployment, replicaset) while the block runs."""
    argv = kcm_argv(str(ctx.bench.cluster.binaries.kube_controller_manager), str(ctx.bench.admin_kubeconfig),
                    qps=qps, port=free_port(), version=ctx.bench.cluster.binaries.version)  # fmt: skip
    with (ctx.log_dir / f"kcm-workloads-{qps}.log").open("ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def one_run(client: KubeClient, namespace: str, variant: str, *, replicas: int, group: str = GROUP) -> Json:
    """Scale a fresh Deployment 0 → ``replicas``; time the pods' arrival through a watch."""
    await prepare_namespace(client, namespace, excluded=variant == "floor")
    await client.create(DEPLOYMENTS, deployment(APP, namespace, replicas=0), namespace=namespace)

    async def has_replica_set() -> bool:
        return bool((await client.list(REPLICA_SETS, namespace=namespace)).items)

    await until(has_replica_set, within=120, what=f"the ReplicaSet of {namespace}/{APP}")
    maxima = maxima_for(replicas, SUBSETS)
    if variant == "targeted":
        await create_spread(client, spread(APP, namespace, target=APP, maxima=maxima, group=group))
    loop = asyncio.get_running_loop()
    arrivals: dict[str, float] = {}

    async def seen(kind: str, obj: Json, old: Json | None) -> None:
        if kind == ADDED:
            arrivals.setdefault(str(obj["metadata"]["name"]), loop.time())

    pods = Informer(client, PODS, namespace=namespace, handlers=[seen])
    task = asyncio.create_task(pods.run())
    try:
        await pods.has_synced.wait()
        start = loop.time()
        patch = {"spec": {"replicas": replicas}}
        await client.patch(DEPLOYMENTS, APP, patch, patch_type=PatchType.MERGE, namespace=namespace)

        async def all_seen() -> bool:
            return len(arrivals) >= replicas

        await until(all_seen, within=120 + replicas, what=f"{replicas} pods in {namespace}")
        result = {"variant": variant, "namespace": namespace, **rate(list(arrivals.values()), start=start)}
        placed = placement(pods.store.list(), spread=APP, maxima=maxima)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    if variant == "targeted":
        result["placement"] = placed
    else:
        result["placed"] = result["pods"] - placed["unplaced"]
    return result


def summarise(runs: Sequence[Json]) -> Json:
    """Per variant, the median pods per second of its runs; the targeted and untargeted rates
    against the floor's (a ratio below 1 is a slower scale-out)."""
    by: dict[str, list[Json]] = {v: [r for r in runs if r["variant"] == v] for v in VARIANTS}
    pps = {v: sorted(r["pods_per_second"] for r in rs)[len(rs) // 2] for v, rs in by.items() if rs}
    out: Json = {f"{v}_pods_per_second": x for v, x in pps.items()}
    for v in ("untargeted", "targeted"):
        if v in pps and "floor" in pps:
            out[f"{v}_ratio"] = pps[v] / pps["floor"]
    spreads = [r["placement"] for r in runs if "placement" in r]
    out["over_filled"] = sum(len(p["over_filled"]) for p in spreads)
    out["unplaced"] = sum(p["unplaced"] for p in spreads)
    out["wrong_zone"] = sum(p["wrong_zone"] for p in spreads)
    out["untargeted_placed"] = sum(r.get("placed", 0) for r in runs)
    return out


async def scaleout(ctx: Context, *, replicas: int, qps_levels: Sequence[int], repeats: int = 1) -> Json:
    client = ctx.client
    namespaces = [f"scaleout-{qps}-{v}-{r}" for qps in qps_levels for r in range(repeats) for v in VARIANTS]
    ctl = await serving(ctx, namespaces=[ns for ns in namespaces if "-floor-" not in ns], name="scaleout")
    levels: list[Json] = []
    try:
        for qps in qps_levels:
            runs: list[Json] = []
            with workload_controllers(ctx, qps=qps):
                for r in range(repeats):
                    for variant in rotated(VARIANTS, r):
                        log(f"scale-out 0 → {replicas}, kube-controller-manager at {qps} QPS: {variant}")
                        ns = f"scaleout-{qps}-{variant}-{r}"
                        run = await one_run(client, ns, variant, replicas=replicas, group=ctx.group)
                        log(f"  {run['pods_per_second']:.1f} pods/s ({run['seconds']:.2f} s)")
                        runs.append(run)
            levels.append({"qps": qps, **summarise(runs), "runs": runs})
    finally:
        ctl.stop()
        await remove_configurations(client, ctx.published or ())
    await delete_namespaces(client, namespaces)
    return {"replicas": replicas, "subsets": SUBSETS, "repeats": repeats, "levels": levels}


__all__ = ["VARIANTS", "kcm_argv", "rate", "scaleout", "summarise"]
