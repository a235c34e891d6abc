"""The UnitedDeployment scenarios (the WorkloadSpread ones are ``bench.admission`` and
``bench.scaleout``; ``docs/performance.md`` describes them all). Each returns plain JSON-able
data; ``bench.report`` turns it into the table.
Every controller-versus-floor pair is measured in the same run, side by side (interleaved where
it can be), so the ratios hold on a busy machine even when the absolute numbers do not.
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.controller import ControllerProcess, CpuLedger, die_with_parent, diff_counts
from bench.crd import without_workload_spreads
from bench.env import BenchCluster, bounded, create_namespace
from bench.observe import KRUISE_UD, UD, NamespaceView
from bench.serverprofile import ServerProfile, client_requests
from bench.workload import (
    allocation,
    deployment_status,
    floor_plan,
    plain_deployment,
    pod,
    pod_status,
    subset_names,
    ud_name,
    united_deployment,
)
from united.api.document import Json
from united.api.groups import GROUP
from united.controller.manager import Settings
from united.kube.client import DEPLOYMENTS, JSON, PODS, KubeClient, PatchType
from united.uniteddeployment import defaults
from united.uniteddeployment.allocation import SubsetState, allocate, choose
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import parse

ROOT = Path(__file__).resolve().parents[1]
CHILD_WRITES = ("deployments", "uniteddeployments/status", "controllerrevisions")
"""Resources whose writes are the reconcile's own (Events are counted apart)."""


DEFAULT_WORKERS = Settings.workers


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def reconcile_writes(writes: Mapping[str, int]) -> int:
    return sum(n for k, n in writes.items() if k.split(" ", 1)[1] in CHILD_WRITES)


def event_writes(writes: Mapping[str, int]) -> int:
    return sum(n for k, n in writes.items() if k.split(" ", 1)[1] == "events")


@dataclass
class Context:
    bench: BenchCluster
    client: KubeClient
    workers: int | None
    """Controller workers; None: the controller's default."""
    log_dir: Path
    source: Path | None = None
    profile_dir: Path | None = None
    floor_concurrency: int = 3
    """UDs the floor script writes at once (set from the sweep unless given)."""
    floor_watch: bool = False
    """Cold starts also run ``floor-watch``: the floor with a controller's watches."""
    server_profile: int = 0
    """Seconds of kube-apiserver CPU profile to take from the first scale burst on (0: none)."""
    controllers: list[ControllerProcess] = field(default_factory=list)
    group: str = GROUP
    """The group of the UnitedDeployments the controller measured serves (the floor's stay in
    this project's group: its script writes there)."""
    spawn: Callable[[Sequence[str], str, Sequence[str]], ControllerProcess] | None = None
    """Makes the controller measured instead of ``united run`` (a peer), from its namespaces,
    a name for its log and the flags ``united run`` would get (a peer's command has its own)."""
    published: list[Json] | None = None
    """In a peer's turn: the webhook configurations it fills in itself (from its manifests),
    created before it serves its pod webhook and deleted after; None: this project's."""

    @property
    def ud(self) -> Any:
        return KRUISE_UD if self.group == KRUISE_UD.group else UD

    @property
    def subset_key(self) -> str:
        return Keys(self.group).subset_name

    def view(self, namespace: str) -> NamespaceView:
        """The bench's watch on a namespace of the controller measured."""
        return NamespaceView(self.client, namespace, ud=self.ud, subset_key=self.subset_key)

    def controller(
        self, namespaces: Sequence[str], *, name: str, profile: Path | None = None, extra: Sequence[str] = ()
    ) -> ControllerProcess:
        if self.spawn is not None:
            made = self.spawn(namespaces, name, extra)
            self.controllers.append(made)
            return made
        ctl = ControllerProcess(
            self.bench.controller_kubeconfig,
            namespaces=namespaces,
            workers=self.workers,
            log_dir=self.log_dir,
            name=name,
            source=self.source,
            extra=extra,
            profile=profile,
        )
        self.controllers.append(ctl)
        return ctl

    def stop_all(self) -> None:
        for ctl in self.controllers:
            ctl.stop()


async def create_uds(
    client: KubeClient, namespace: str, *, uds: int, subsets: int, group: str = GROUP
) -> dict[str, JSON]:
    await create_namespace(client, namespace)
    docs = {
        ud_name(i): united_deployment(ud_name(i), namespace, subsets=subsets, replicas=2 * subsets, group=group)
        for i in range(uds)
    }
    resource = KRUISE_UD if group == KRUISE_UD.group else UD

    async def one(doc: JSON) -> None:
        await client.create(resource, doc, namespace=namespace)

    await bounded(docs.values(), one, concurrency=16)
    return docs


# -- 1. cold start ------------------------------------------------------------------------------


@dataclass
class ColdRun:
    who: str
    namespace: str
    seconds: float
    """Spawn to the last write of a converged namespace, as delivered by a watch."""
    ready_seconds: float | None = None
    writes: dict[str, int] = field(default_factory=dict)
    cpu_seconds: float | None = None
    cpu: JSON | None = None
    """The controller's CPU, gross and net of the bench's ``/metrics`` scrapes."""
    own_seconds: float | None = None
    server_cpu_seconds: float | None = None
    """kube-apiserver + etcd CPU during the run."""
    passes: int | None = None
    """Reconcile passes of the controller (every controller of the process)."""
    rss_kb: int | None = None
    """The controller's resident memory once converged."""

    def as_json(self) -> JSON:
        return {k: v for k, v in self.__dict__.items() if v is not None}


async def cold_start_run(
    ctx: Context, who: str, namespace: str, *, uds: int, subsets: int, profile: Path | None = None
) -> tuple[ColdRun, ControllerProcess | None]:
    """One cold start in a fresh namespace, by the controller or by the floor script."""
    floor = who in ("floor", "floor-watch")
    docs = await create_uds(ctx.client, namespace, uds=uds, subsets=subsets, group=GROUP if floor else ctx.group)
    view = NamespaceView(ctx.client, namespace) if floor else ctx.view(namespace)
    await view.start()
    view.expect({name: allocation(doc) for name, doc in docs.items()})
    within = 120 + uds * subsets * 0.5
    server_cpu = ctx.bench.server_cpu_seconds()
    try:
        if floor:
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, dir=ctx.log_dir) as f:
                json.dump({name: floor_plan(doc) for name, doc in docs.items()}, f)
            argv = [sys.executable, "-m", "bench.floor", "--kubeconfig", str(ctx.bench.controller_kubeconfig)]
            argv += ["--namespace", namespace, "--workers", str(ctx.floor_concurrency), "--plan", f.name]
            if who == "floor-watch":
                argv.append("--watch")
            # The floor uses the controller's client: from --source too when there is one.
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in (ctx.source, ROOT) if p)}
            spawned = time.monotonic()
            proc = await asyncio.create_subprocess_exec(
                *argv, stdout=subprocess.PIPE, cwd=ctx.source or ROOT, env=env, preexec_fn=die_with_parent
            )
            try:
                converged = await view.wait_quiet(lambda: view.converged, quiet=1.0, within=within, what="floor")
                out, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
            finally:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
            if proc.returncode != 0:
                raise RuntimeError(f"floor script exited with {proc.returncode}")
            own = json.loads(out)
            run = ColdRun(who, namespace, converged - spawned, writes={"floor": int(own["writes"])})
            run.own_seconds = float(own["seconds"])
            run.cpu_seconds = float(own["cpu_seconds"])
            run.server_cpu_seconds = ctx.bench.server_cpu_seconds() - server_cpu
            return run, None
        ctl = ctx.controller([namespace], name=f"cold-{namespace}", profile=profile)
        await ctl.mark()
        ctl.start()
        ready = await ctl.wait_ready()
        converged = await view.wait_quiet(lambda: view.converged, quiet=1.0, within=within, what="controller")
        await ctl.wait_idle(quiet=0.5)
        if view.last_event_at != converged:  # more writes while we waited for idle
            converged = await view.wait_quiet(lambda: view.converged, quiet=1.0, within=within, what="controller")
        run = ColdRun(who, namespace, converged - ctl.spawned_at, ready_seconds=ready)
        run.writes = await ctl.writes()
        run.passes = await ctl.reconciles()
        gross = ctl.cpu_seconds()
        run.server_cpu_seconds = ctx.bench.server_cpu_seconds() - server_cpu
        run.cpu = await ctl.net_cpu(gross, ctl.scrapes)
        run.cpu_seconds = run.cpu["cpu_seconds"]
        run.rss_kb = ctl.rss_kb()
        return run, ctl
    finally:
        await view.stop()


async def cold_start(
    ctx: Context, *, uds: int, subsets: int, repeats: int, profile: bool, prefix: str = "cold"
) -> tuple[JSON, str, ControllerProcess]:
    """Floor and controller, interleaved ``repeats`` times (alternating who goes first).
    Returns the figures, the namespace of the last controller run and its controller."""
    runs: list[ColdRun] = []
    last: tuple[str, ControllerProcess] | None = None
    for r in range(repeats):
        order: tuple[str, ...] = ("floor", "controller") if r % 2 == 0 else ("controller", "floor")
        if ctx.floor_watch:
            order = (*order, "floor-watch")
        for who in order:
            ns = f"{prefix}-{who}-{r}"
            spy = ctx.profile_dir / "cold-start.raw" if profile and ctx.profile_dir and who == "controller" else None
            if spy is not None and r != repeats - 1:
                spy = None
            log(f"cold start {r + 1}/{repeats}: {who}, {uds} UDs x {subsets} subsets in {ns}")
            run, ctl = await cold_start_run(ctx, who, ns, uds=uds, subsets=subsets, profile=spy)
            ready = f" (ready after {run.ready_seconds:.2f} s)" if run.ready_seconds else ""
            log(f"  {who}: {run.seconds:.2f} s{ready}")
            runs.append(run)
            if ctl is not None:
                if last is not None:
                    last[1].stop()
                last = (ns, ctl)
    assert last is not None
    ctl_runs = [r for r in runs if r.who == "controller"]
    floor_runs = [r for r in runs if r.who == "floor"]
    ctl_s = statistics.median(r.seconds for r in ctl_runs)
    floor_s = statistics.median(r.seconds for r in floor_runs)
    pair_ratios = [c.seconds / f.seconds for c, f in zip(ctl_runs, floor_runs, strict=True)]
    expected_children = uds * subsets
    writes = ctl_runs[-1].writes
    ctl_cpu = statistics.median(r.cpu_seconds or 0.0 for r in ctl_runs)
    floor_cpu = statistics.median(r.cpu_seconds or 0.0 for r in floor_runs)
    per_write = uds * (subsets + 2)
    result: JSON = {
        "uds": uds,
        "subsets": subsets,
        "workers": ctx.workers or DEFAULT_WORKERS,
        "workers_default": ctx.workers is None,
        "floor_concurrency": ctx.floor_concurrency,
        "controller_cpu_ms_per_write": 1000 * ctl_cpu / per_write,
        "floor_cpu_ms_per_write": 1000 * floor_cpu / per_write,
        "cpu_per_write_ratio": ctl_cpu / floor_cpu if floor_cpu else math.nan,
        "controller_seconds": ctl_s,
        "floor_seconds": floor_s,
        "ratio": statistics.median(pair_ratios),  # pairs run back to back: robust to load drifting
        "pair_ratios": pair_ratios,
        "controller_ready_seconds": statistics.median(r.ready_seconds or 0.0 for r in ctl_runs),
        "controller_cpu_seconds": statistics.median(r.cpu_seconds or 0.0 for r in ctl_runs),
        "controller_gross_cpu_seconds": statistics.median(
            (r.cpu or {}).get("gross_cpu_seconds", 0.0) for r in ctl_runs
        ),
        "floor_cpu_seconds": statistics.median(r.cpu_seconds or 0.0 for r in floor_runs),
        "controller_server_cpu_seconds": statistics.median(r.server_cpu_seconds or 0.0 for r in ctl_runs),
        "floor_server_cpu_seconds": statistics.median(r.server_cpu_seconds or 0.0 for r in floor_runs),
        "expected_writes": uds * (subsets + 2),
        "controller_reconcile_writes": reconcile_writes(writes),
        "controller_event_writes": event_writes(writes),
        "controller_passes_per_ud": statistics.median((r.passes or 0) / uds for r in ctl_runs),
        "duplicate_children_created": writes.get("POST deployments", 0) - expected_children,
        "runs": [r.as_json() for r in runs],
    }
    watched = [r for r in runs if r.who == "floor-watch"]
    if watched:
        watch_cpu = statistics.median(r.cpu_seconds or 0.0 for r in watched)
        result |= {
            "floor_watch_seconds": statistics.median(r.seconds for r in watched),
            "floor_watch_cpu_seconds": watch_cpu,
            "floor_watch_server_cpu_seconds": statistics.median(r.server_cpu_seconds or 0.0 for r in watched),
            "floor_watch_cpu_ms_per_write": 1000 * watch_cpu / per_write,
            "ratio_to_floor_watch": ctl_s / statistics.median(r.seconds for r in watched),
        }
    return result, last[0], last[1]


def slope(points: Sequence[tuple[int, float]]) -> float:
    """Least-squares slope of ``(x, y)`` points (seconds per UnitedDeployment for a cold start)."""
    n = len(points)
    if n < 2:
        return math.nan
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else math.nan


async def growth(ctx: Context, *, sizes: Sequence[int], subsets: int) -> JSON:
    """One cold start pair (floor, controller) at each size: how the cost grows with the number of
    UnitedDeployments. Earlier sizes' objects stay in the API server, as in a cluster that grows."""
    rows: list[JSON] = []
    for uds in sizes:
        cold, _, ctl = await cold_start(ctx, uds=uds, subsets=subsets, repeats=1, profile=False, prefix=f"grow{uds}")
        ctl.stop()
        rows.append(
            {
                key: cold[key]
                for key in (
                    "uds",
                    "controller_seconds",
                    "floor_seconds",
                    "ratio",
                    "controller_cpu_seconds",
                    "floor_cpu_seconds",
                    "cpu_per_write_ratio",
                    "floor_watch_seconds",
                    "ratio_to_floor_watch",
                )
                if key in cold
            }
        )
    return {
        "sizes": rows,
        "controller_ms_per_ud": 1000 * slope([(r["uds"], r["controller_seconds"]) for r in rows]),
        "floor_ms_per_ud": 1000 * slope([(r["uds"], r["floor_seconds"]) for r in rows]),
    }


async def floor_sweep(ctx: Context, *, uds: int, subsets: int, levels: Sequence[int]) -> JSON:
    """The floor's cold start at each concurrency in ``levels``: the API server's capacity is
    the fastest of them (more in flight than it can serve only queues)."""
    seconds: dict[int, float] = {}
    for level in levels:
        ctx.floor_concurrency = level
        run, _ = await cold_start_run(ctx, "floor", f"sweep-{level}", uds=uds, subsets=subsets)
        seconds[level] = run.seconds
        log(f"floor sweep: {uds} UDs at concurrency {level}: {run.seconds:.2f} s")
    best = min(seconds, key=lambda level: (seconds[level], level))
    ctx.floor_concurrency = best
    return {"uds": uds, "subsets": subsets, "seconds": {str(k): v for k, v in seconds.items()}, "best": best}


# -- 2. scale events ------------------------------------------------------------------------------


@dataclass
class ScaleSample:
    ud: str
    latency: float
    ud_seen: float
    """Of ``latency``: until the watch delivered the UD's own new spec.replicas (the API
    server's custom-resource write and watch, before the controller can act)."""
    changed: int
    writes: dict[str, int]


async def _floor_deployments(ctx: Context, namespace: str, count: int) -> list[str]:
    names = [f"floor-{i:04d}" for i in range(count)]

    async def one(name: str) -> None:
        body = plain_deployment(name, namespace, replicas=1, subset_label=False)
        await ctx.client.create(DEPLOYMENTS, body, namespace=namespace)

    await bounded(names, one, concurrency=16)
    return names


async def _object_sizes(ctx: Context, namespace: str, ud: str, child: str) -> Json:
    """What the API server decodes and encodes on each write: one UnitedDeployment and one of
    its children as the side left them, in bytes of JSON, whole and by part; both kept next to
    the profile."""
    out: Json = {}
    for kind, resource, name in (("ud", ctx.ud, ud), ("child", DEPLOYMENTS, child)):
        obj = await ctx.client.get(resource, name, namespace=namespace)
        (ctx.log_dir.parent / f"object-{kind}-{namespace}.json").write_text(json.dumps(obj, indent=1))
        meta = obj.get("metadata") or {}
        out[kind] = {
            "bytes": len(json.dumps(obj, separators=(",", ":"))),
            "managed_fields_bytes": len(json.dumps(meta.get("managedFields") or [], separators=(",", ":"))),
            "status_bytes": len(json.dumps(obj.get("status") or {}, separators=(",", ":"))),
            "managers": [m.get("manager") for m in meta.get("managedFields") or []],
        }
    return out


async def _scale(client: KubeClient, resource: Any, namespace: str, name: str, replicas: int) -> None:
    await client.patch(
        resource,
        name,
        {"spec": {"replicas": replicas}},
        patch_type=PatchType.MERGE,
        namespace=namespace,
        subresource="scale",
    )


async def scale_events(
    ctx: Context,
    ctl: ControllerProcess,
    namespace: str,
    *,
    uds: int,
    subsets: int,
    singles: int,
    bursts: int,
    burst: int,
    bare: bool = True,
) -> JSON:
    """PATCH ``/scale`` on UnitedDeployments one at a time and in bursts; the floor is the
    same PATCH ``/scale`` on a plain Deployment, interleaved with them in the same run.
    ``bare``: also on UnitedDeployments no controller serves (not when one serves every
    namespace)."""
    loop = asyncio.get_running_loop()
    docs = {
        ud_name(i): united_deployment(ud_name(i), namespace, subsets=subsets, replicas=2 * subsets, group=ctx.group)
        for i in range(uds)
    }
    replicas = dict.fromkeys(docs, 2 * subsets)
    view = ctx.view(namespace)
    await view.start()
    floors = await _floor_deployments(ctx, namespace, max(1, burst))
    floor_replicas = dict.fromkeys(floors, 1)
    # The same UnitedDeployment /scale in a namespace no controller serves: what the custom
    # resource's own write and watch cost, with nothing reacting to it.
    bare_namespace = f"{namespace}-bare"
    bare_docs = (
        await create_uds(ctx.client, bare_namespace, uds=max(1, burst), subsets=subsets, group=ctx.group)
        if bare
        else {}
    )
    bare_replicas = dict.fromkeys(bare_docs, 2 * subsets)
    bare_view = ctx.view(bare_namespace)
    await bare_view.start()
    await view.wait(lambda: all(view.replicas(n) == 1 for n in floors), within=60, what="floor deployments")
    view.expect({name: allocation(doc) for name, doc in docs.items()})
    await view.wait(lambda: view.converged, within=60, what="converged before scaling")
    await ctl.wait_idle(quiet=1.0)
    names = list(docs)
    cursor = 0
    ledger = CpuLedger(lambda: {**ctx.bench.cpu_by_process(), "controller": ctl.cpu_seconds()})

    def next_uds(k: int) -> list[str]:
        nonlocal cursor
        picked = [names[(cursor + i) % len(names)] for i in range(k)]
        cursor += k
        return picked

    async def controller_batch(batch: list[str]) -> list[ScaleSample]:
        plans: dict[str, tuple[dict[str, int], dict[str, int]]] = {}
        for name in batch:
            state = view.child_replicas(name)
            replicas[name] += 1
            want = allocation(docs[name], replicas[name], state)
            plans[name] = (want, {s: n for s, n in want.items() if state.get(s) != n})
            view.expect({name: want})
        before = await ctl.writes()
        sent: dict[str, float] = {}

        async def send(name: str) -> None:
            sent[name] = loop.time()
            await _scale(ctx.client, ctx.ud, namespace, name, replicas[name])

        since = ledger.start()
        await asyncio.gather(*(send(n) for n in batch))

        def delivered(name: str) -> float | None:
            _, changed = plans[name]
            times = [view.first_seen(view.child_name(name, s), n, after=sent[name]) for s, n in changed.items()]
            return None if any(t is None for t in times) else max(t for t in times if t is not None)

        await view.wait(lambda: all(delivered(n) is not None for n in batch), within=120, what="scaled children")
        at = {n: delivered(n) for n in batch}
        await view.wait(lambda: view.converged, within=120, what="statuses after scaling")
        # The statuses too: a controller that writes them later still pays for them.
        ledger.charge(f"controller {len(batch)}", since, events=len(batch))
        await ctl.wait_idle(quiet=0.5)
        delta = diff_counts(await ctl.writes(), before)
        share = {k: v / len(batch) for k, v in delta.items()}
        ud_at = {n: view.first_seen(n, replicas[n], after=sent[n], ud=True) for n in batch}
        return [
            ScaleSample(n, (at[n] or 0.0) - sent[n], (ud_at[n] or math.nan) - sent[n], len(plans[n][1]), share)  # type: ignore[arg-type]
            for n in batch
        ]

    async def floor_batch(batch: list[str]) -> list[float]:
        sent: dict[str, float] = {}

        async def send(name: str) -> None:
            floor_replicas[name] = 3 - floor_replicas[name]  # 1 <-> 2
            sent[name] = loop.time()
            await _scale(ctx.client, DEPLOYMENTS, namespace, name, floor_replicas[name])

        since = ledger.start()
        await asyncio.gather(*(send(n) for n in batch))
        await view.wait(
            lambda: all(view.first_seen(n, floor_replicas[n], after=sent[n]) is not None for n in batch),
            within=60,
            what="floor scale delivered",
        )
        ledger.charge(f"floor {len(batch)}", since, events=len(batch))
        return [(view.first_seen(n, floor_replicas[n], after=sent[n]) or 0.0) - sent[n] for n in batch]

    async def bare_batch(batch: list[str]) -> list[float]:
        sent: dict[str, float] = {}

        async def send(name: str) -> None:
            bare_replicas[name] += 1
            sent[name] = loop.time()
            await _scale(ctx.client, ctx.ud, bare_namespace, name, bare_replicas[name])

        since = ledger.start()
        await asyncio.gather(*(send(n) for n in batch))

        def seen(n: str) -> float | None:
            return bare_view.first_seen(n, bare_replicas[n], after=sent[n], ud=True)

        await bare_view.wait(lambda: all(seen(n) is not None for n in batch), within=60, what="bare UD scale delivered")
        ledger.charge(f"bare {len(batch)}", since, events=len(batch))
        return [(seen(n) or 0.0) - sent[n] for n in batch]

    bare_names = list(bare_docs)
    try:
        log(f"scale events: {singles} one at a time, interleaved with as many raw writes")
        one_ctl: list[ScaleSample] = []
        one_floor: list[float] = []
        one_bare: list[float] = []
        for k in range(singles):
            one_ctl += await controller_batch(next_uds(1))
            one_floor += await floor_batch([floors[k % len(floors)]])
            if bare_names:
                one_bare += await bare_batch([bare_names[k % len(bare_names)]])
        log(f"scale events: {bursts} bursts of {burst}")
        if ctx.server_profile:
            profile = ServerProfile(
                ctx.client,
                ctx.bench.cluster.binaries.kube_apiserver,
                ctx.log_dir.parent / f"apiserver-bursts-{namespace}.pprof",
                seconds=ctx.server_profile,
            )
            await profile.start()
            client_before = await ctl.samples()
        burst_ctl: list[ScaleSample] = []
        burst_floor: list[float] = []
        burst_bare: list[float] = []
        for _ in range(bursts):
            burst_ctl += await controller_batch(next_uds(burst))
            burst_floor += await floor_batch(floors[:burst])
            if bare_names:
                burst_bare += await bare_batch(bare_names[:burst])
        if ctx.server_profile:
            server = await profile.finish()
            child = view.child_name(names[0], subset_names(subsets)[0])
            server["objects"] = await _object_sizes(ctx, namespace, names[0], child)
            server["controller_requests"] = client_requests(client_before, await ctl.samples())
    finally:
        await view.stop()
        await bare_view.stop()

    def summary(samples: list[ScaleSample], floor: list[float], bare: list[float], size: int) -> JSON:
        lat = [s.latency for s in samples]
        writes: dict[str, float] = {}
        for s in samples:
            for k, v in s.writes.items():
                writes[k] = writes.get(k, 0.0) + v / len(samples)
        changed = statistics.mean(s.changed for s in samples) if samples else math.nan
        recon = sum(v for k, v in writes.items() if k.split(" ", 1)[1] in CHILD_WRITES)
        ud_leg = [s.ud_seen for s in samples]
        controller_leg = [s.latency - s.ud_seen for s in samples]
        return {
            "events": len(samples),
            "p50_ms": 1000 * percentile(lat, 50),
            "p99_ms": 1000 * percentile(lat, 99),
            "ud_write_p50_ms": 1000 * percentile(ud_leg, 50),
            "controller_leg_p50_ms": 1000 * percentile(controller_leg, 50),
            "floor_p50_ms": 1000 * percentile(floor, 50),
            "floor_p99_ms": 1000 * percentile(floor, 99),
            "bare_ud_p50_ms": 1000 * percentile(bare, 50),
            "bare_ud_p99_ms": 1000 * percentile(bare, 99),
            "bare_ud_ratio_p50": percentile(bare, 50) / percentile(floor, 50),
            "ratio_p50": percentile(lat, 50) / percentile(floor, 50),
            "ratio_p99": percentile(lat, 99) / percentile(floor, 99),
            "changed_children_per_event": changed,
            "writes_per_event": recon,
            "goal_writes_per_event": changed + 1,
            "event_writes_per_event": sum(v for k, v in writes.items() if k.split(" ", 1)[1] == "events"),
            "writes_by_resource_per_event": writes,
            "latencies_ms": [round(1000 * x, 2) for x in lat],
            "floor_latencies_ms": [round(1000 * x, 2) for x in floor],
            # Until the children and every status (floor: the Deployments; bare: the UDs) were
            # seen: what every process of the machine spent on one event, so a ratio can be read
            # as CPU.
            "cpu_ms_per_event": {
                case: ledger.per_event_ms(f"{case} {size}") for case in ("controller", "floor", "bare")
            },
        }

    out: JSON = {
        "one_at_a_time": summary(one_ctl, one_floor, one_bare, 1),
        "bursts": {"size": burst, **summary(burst_ctl, burst_floor, burst_bare, burst)},
    }
    if ctx.server_profile:
        out["apiserver_profile"] = server
    return out


# -- 3. no-op resync --------------------------------------------------------------------------------


async def _wait_reconciled(ctl: ControllerProcess, target: int, *, within: float) -> None:
    deadline = time.monotonic() + within
    while await ctl.reconciles() < target:
        if time.monotonic() > deadline:
            raise TimeoutError(f"fewer than {target} reconciles within {within:g} s")
        await asyncio.sleep(0.1)
    await ctl.wait_idle(quiet=1.0, within=within)


async def resync_restart(
    ctx: Context, ctl: ControllerProcess, namespace: str, *, uds: int
) -> tuple[JSON, ControllerProcess]:
    """Restart the controller on a converged namespace: every UD is reconciled once more."""
    ctl.stop()
    fresh = ctx.controller([namespace], name=f"resync-{namespace}")
    await fresh.mark()
    fresh.start()
    ready = await fresh.wait_ready()
    cpu_ready = fresh.cpu_seconds()
    started = time.monotonic()
    await _wait_reconciled(fresh, uds, within=120 + uds)
    seconds = time.monotonic() - started - 1.0
    writes = await fresh.writes()
    cpu = await fresh.net_cpu(fresh.cpu_seconds(), fresh.scrapes)
    return {
        "uds": uds,
        "reconciles": await fresh.reconciles(),
        "writes": reconcile_writes(writes),
        "event_writes": event_writes(writes),
        "writes_by_resource": writes,
        "ready_seconds": ready,
        "resync_seconds": seconds,
        "cpu_seconds_total": cpu["cpu_seconds"],
        "cpu": cpu,
        # /readyz turns true once the UD, revision and pod caches are synced, before the
        # children's cache and the workers: reconciles may run before or after this reading.
        "cpu_seconds_at_ready": cpu_ready,
    }, fresh


async def resync_touch(ctx: Context, ctl: ControllerProcess, namespace: str, *, uds: int) -> JSON:
    """Change a label on every UnitedDeployment: one reconcile each, nothing to write."""
    await ctl.wait_idle(quiet=1.0)
    before, reconciles = await ctl.writes(), await ctl.reconciles()
    cpu, scrapes = ctl.cpu_seconds(), ctl.scrapes
    stamp = str(int(time.time()))
    started = time.monotonic()

    async def touch(i: int) -> None:
        patch = {"metadata": {"labels": {"bench.united.dev/touched": stamp}}}
        await ctx.client.patch(ctx.ud, ud_name(i), patch, patch_type=PatchType.MERGE, namespace=namespace)

    await bounded(range(uds), touch, concurrency=16)
    await _wait_reconciled(ctl, reconciles + uds, within=120 + uds)
    seconds = time.monotonic() - started - 1.0
    used = ctl.cpu_seconds() - cpu
    net = await ctl.net_cpu(used, ctl.scrapes - scrapes)
    delta = diff_counts(await ctl.writes(), before)
    return {
        "uds": uds,
        "reconciles": await ctl.reconciles() - reconciles,
        "writes": reconcile_writes(delta),
        "event_writes": event_writes(delta),
        "writes_by_resource": delta,
        "seconds": seconds,
        "cpu_seconds": net["cpu_seconds"],
        "cpu_ms_per_ud": 1000 * net["cpu_seconds"] / uds,
        "cpu": net,
    }


# -- 4. memory ------------------------------------------------------------------------------------


async def memory(ctx: Context, *, children: int, pods: int, with_status: bool = True) -> JSON:
    """Controller RSS with ``children`` cached Deployments (orphans with the subset label,
    created directly), and apart with ``pods`` cached pods (a child's pods, running), each
    against the same controller with an empty namespace."""
    empty, full, with_pods = "mem-empty", "mem-full", "mem-pods"
    for ns in (empty, full, with_pods):
        await create_namespace(ctx.client, ns)
    template = plain_deployment("template", full, replicas=2, subset_label=True)
    log(f"memory: creating {children} Deployments" + (" with status" if with_status else ""))
    started = time.monotonic()

    async def one(i: int) -> int:
        body = plain_deployment(f"child-{i:05d}", full, replicas=2, subset_label=True, template=template)
        created = await ctx.client.create(DEPLOYMENTS, body, namespace=full)
        if with_status:
            await ctx.client.patch(
                DEPLOYMENTS,
                created["metadata"]["name"],
                {"status": deployment_status(2)},
                patch_type=PatchType.MERGE,
                namespace=full,
                subresource="status",
            )
        return len(json.dumps(created))

    async def one_pod(i: int) -> int:
        created = await ctx.client.create(PODS, pod(f"pod-{i:05d}", with_pods, template=template), namespace=with_pods)
        status = pod_status(f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}")
        answer = await ctx.client.patch(
            PODS,
            created["metadata"]["name"],
            {"status": status},
            patch_type=PatchType.MERGE,
            namespace=with_pods,
            subresource="status",
        )
        return len(json.dumps(answer))

    sizes = await bounded(range(children), one, concurrency=32)
    log(f"  created in {time.monotonic() - started:.1f} s; {pods} pods")
    pod_sizes = await bounded(range(pods), one_pod, concurrency=32)

    async def measure(suffix: str) -> dict[str, int]:
        rss: dict[str, int] = {}
        for label, ns in (("empty", empty), ("full", full), ("pods", with_pods), ("empty_again", empty)):
            if label == "pods" and not pods:
                continue
            ctl = ctx.controller([ns], name=f"memory-{label}{suffix}")
            ctl.start()
            try:
                await ctl.wait_ready(within=300)
                await asyncio.sleep(2.0)
                rss[label] = ctl.rss_kb()
            finally:
                ctl.stop()
        return rss

    rss = await measure("")
    async with without_workload_spreads(ctx.client):
        alone = await measure("-without-ws")
    baseline = min(rss["empty"], rss["empty_again"])
    baseline_alone = min(alone["empty"], alone["empty_again"])
    out: JSON = {
        "children": children,
        "with_status": with_status,
        "rss_empty_kb": baseline,
        "rss_full_kb": rss["full"],
        "rss_kb": rss,
        "rss_kb_without_ws": alone,
        "kb_per_child": (rss["full"] - baseline) / children,
        "kb_per_child_without_ws": (alone["full"] - baseline_alone) / children,
        "json_bytes_per_child_as_created": statistics.mean(sizes),
    }
    if pods:
        out |= {
            "pods": pods,
            "rss_pods_kb": rss["pods"],
            "kb_per_pod": (rss["pods"] - baseline) / pods,
            "kb_per_pod_without_ws": (alone["pods"] - baseline_alone) / pods,
            "json_bytes_per_pod": statistics.mean(pod_sizes),
        }
    return out


# -- 5. allocation --------------------------------------------------------------------------------


def allocation_spec(n: int, kind: str) -> Any:
    """A parsed, defaulted spec with ``n`` subsets: ``specified`` (a quarter fixed at 1, the
    rest an even share) or ``elastic`` (min 1, max 4 each)."""
    subsets: list[JSON] = []
    for j in range(n):
        s: JSON = {"name": f"s{j}"}
        if kind == "specified" and j % 4 == 0:
            s["replicas"] = 1
        if kind == "elastic":
            s["minReplicas"], s["maxReplicas"] = 1, 4
        subsets.append(s)
    doc = united_deployment("alloc", "bench", subsets=1, replicas=2 * n)
    doc["spec"]["topology"]["subsets"] = subsets
    return defaults.apply(parse(doc)).spec


def allocation_bench(sizes: Sequence[int] = (10, 100, 1000), *, budget: float = 0.5) -> JSON:
    """Milliseconds per ``allocate()`` (best of 5 repeats of a ~``budget``/5 s loop)."""
    out: JSON = {}
    for kind in ("specified", "elastic"):
        for n in sizes:
            spec = allocation_spec(n, kind)
            assert choose(spec) == kind
            state = {s.name: SubsetState(replicas=1 + j % 3) for j, s in enumerate(spec.subsets)}
            timer = timeit.Timer(functools.partial(allocate, spec, state))
            number, took = timer.autorange()
            number = max(1, int(number * budget / 5 / max(took, 1e-9)))
            best = min(timer.repeat(repeat=5, number=number)) / number
            out[f"{kind}/{n}"] = {"allocator": kind, "subsets": n, "ms": 1000 * best, "loops": number}
    return out


async def run_all(ctx: Context, config: Mapping[str, Any], scenarios: Sequence[str]) -> JSON:
    """Run the chosen scenarios in order (cold start feeds scale and resync)."""
    results: JSON = {}
    if "scaleout" in scenarios:  # first: its kube-controller-manager acts on every Deployment there is
        from bench.scaleout import scaleout

        results["scaleout"] = await scaleout(
            ctx,
            replicas=int(config["scaleout_replicas"]),
            qps_levels=config["scaleout_qps"],
            repeats=int(config["scaleout_repeats"]),
        )
    if "admission" in scenarios:
        from bench.admission import admission

        results["admission"] = await admission(
            ctx, pods=int(config["admission_pods"]), burst=int(config["admission_burst"])
        )
    if "crdcost" in scenarios:
        from bench.crdcost import crdcost

        results["crdcost"] = await crdcost(ctx, rounds=int(config.get("crdcost_rounds") or 1000))
    uds, subsets = int(config["uds"]), int(config["subsets"])
    need_cold = any(s in scenarios for s in ("cold", "scale", "resync"))
    need_floor = need_cold or "growth" in scenarios
    ctx.floor_watch = bool(config.get("floor_watch"))
    if config.get("floor_concurrency"):
        ctx.floor_concurrency = int(config["floor_concurrency"])
    elif need_floor:
        results["floor_sweep"] = await floor_sweep(
            ctx, uds=int(config.get("sweep_uds") or 200), subsets=subsets, levels=config.get("floor_sweep") or (3,)
        )
    if need_cold:
        cold, namespace, ctl = await cold_start(
            ctx, uds=uds, subsets=subsets, repeats=int(config["repeats"]), profile=bool(config["profile"])
        )
        if "cold" in scenarios:
            results["cold_start"] = cold
        log(f"resync: restart on {namespace}")
        restart, ctl = await resync_restart(ctx, ctl, namespace, uds=uds)
        if "resync" in scenarios:
            results["resync_restart"] = restart
        if "scale" in scenarios:
            results["scale"] = await scale_events(
                ctx,
                ctl,
                namespace,
                uds=uds,
                subsets=subsets,
                singles=int(config["scale_singles"]),
                bursts=int(config["scale_bursts"]),
                burst=int(config["burst_size"]),
            )
        if "resync" in scenarios:
            log("resync: touch every UD's labels")
            results["resync_touch"] = await resync_touch(ctx, ctl, namespace, uds=uds)
        ctl.stop()
    if "growth" in scenarios:
        log(f"growth: cold starts at {config['growth']} UDs")
        results["growth"] = await growth(ctx, sizes=config["growth"], subsets=subsets)
    if "memory" in scenarios:
        results["memory"] = await memory(ctx, children=int(config["children"]), pods=int(config.get("pods", 0)))
    if "allocation" in scenarios:
        log("allocation")
        results["allocation"] = allocation_bench(config.get("allocation_sizes", (10, 100, 1000)))
    if "limits" in scenarios:
        from bench.limits import limits_bench

        log("limits: a pass at the limits, in-process")
        # Each case runs on an event loop of its own (its clock counts calls): not this one.
        results["limits"] = await asyncio.to_thread(limits_bench)
    return results
