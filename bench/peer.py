"""Another controller of OpenKruise's UnitedDeployments — OpenKruise's own manager, say — measured
on the bench's cluster against this project's, with ``python -m bench --peer-command "CMD"``.

Both sides serve ``apps.kruise.io`` and the two cannot share its CRDs, so they run **one at a
time**: before a side runs, the CRDs of the side before it are deleted and its own installed
(the peer's from ``--peer-manifests``; this project's compat ones and its apps.kruise.io role),
and after it the side's namespaces are deleted and waited for, so no garbage collection of one
side runs into the other's measurement. Repeats interleave the sides, the first alternating.

Each side gets the same objects and the same scenarios (``bench.scenarios``): a cold start,
a restart (the no-op resync), scale events one at a time and in bursts; then the WorkloadSpread
scenarios through the side's own pod webhook (``bench.scaleout``, ``bench.admission``), with
``apps.kruise.io/v1alpha1`` spreads. A peer's webhook configurations in its manifests are
applied empty for the UnitedDeployment scenarios (no webhook called, as for this project) and
whole only while its pod webhook is measured (``bench.webhook.serving_published``). Requests are counted by
the API server (``apiserver_request_total``) for both sides alike, since a peer's client
metrics need not say which resource a request was for; CPU and RSS come from ``/proc``.
"""

from __future__ import annotations

import contextlib
import math
import re
import shlex
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from bench.admission import admission
from bench.controller import WRITE_VERBS, ControllerProcess, Samples, parse_metrics
from bench.crd import collector_maps
from bench.env import ROOT, create_namespace
from bench.observe import KRUISE_UD
from bench.scaleout import scaleout
from bench.scenarios import Context, cold_start_run, event_writes, log, reconcile_writes, resync_restart, scale_events
from bench.serverprofile import requests
from bench.webhook import WEBHOOK_KINDS, remove_configurations, webhook_configurations
from united.api import yamlload
from united.api.document import Json
from united.api.groups import GROUP, KRUISE_GROUP
from united.data import MANIFESTS, crds, documents
from united.devcluster.ports import free_port
from united.kube.apply import apply
from united.kube.client import CRDS, NAMESPACES, KubeClient
from united.kube.errors import NotFound
from united.kube.wait import eventually

PLACEHOLDERS = ("kubeconfig", "port", "metrics_port", "namespace")
"""What ``--peer-command`` may name: its kubeconfig; the port it must answer ``/readyz`` on;
the port of its Prometheus ``/metrics`` (``{port}`` when not named); its namespaces (comma
separated)."""
SIDES = ("peer", "ours")
SHARED_CRDS = tuple(f"{plural}.{KRUISE_GROUP}" for plural in ("uniteddeployments", "workloadspreads"))
"""The CRDs both sides define: swapped between sides."""
PEER_ACCOUNT = "bench-peer"
"""The peer's ServiceAccount and namespace, bound to cluster-admin (the peer brings no RBAC)."""

_FIELD = re.compile(r"\{([^{}]*)\}")


class PeerCommandError(ValueError):
    """``--peer-command`` cannot be run: the message says why."""


def peer_argv(command: str, values: Mapping[str, str]) -> list[str]:
    """``command`` split as a shell would (no shell runs it, so the pid is the peer's own) with
    every ``{placeholder}`` replaced from ``values``."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise PeerCommandError(str(exc)) from None
    if not words:
        raise PeerCommandError("empty command")

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise PeerCommandError(f"unknown placeholder {{{name}}}; known: {', '.join(PLACEHOLDERS)}")
        return values[name]

    return [_FIELD.sub(one, word) for word in words]


def check_command(command: str) -> str:
    """An argparse type: a command whose placeholders are known and which names ``{port}``
    (else the bench could not tell when it is ready)."""
    peer_argv(command, dict.fromkeys(PLACEHOLDERS, "x"))
    if "{port}" not in command:
        raise PeerCommandError("must name {port}: the port it answers /readyz on")
    return command


def interleave(repeats: int, sides: Sequence[str] = SIDES) -> list[tuple[int, str]]:
    """``(repeat, side)`` in the order they run: every side once per repeat, the side that goes
    first rotating, so neither always runs on the machine the other has just warmed or loaded."""
    order: list[tuple[int, str]] = []
    for r in range(repeats):
        k = r % len(sides)
        order += [(r, side) for side in (*sides[k:], *sides[:k])]
    return order


class ServerCounted(ControllerProcess):
    """A controller whose writes are counted by the API server, from :meth:`mark` on: fair to
    both sides when only one controller runs (the bench's own requests — ``/scale`` patches,
    label touches — are in no resource the reconcile figures count)."""

    counter: KubeClient | None = None
    baseline: dict[str, int]

    async def server_writes(self) -> dict[str, int]:
        assert self.counter is not None
        counts = requests({}, parse_metrics(await self.counter.get_path("/metrics")))
        out: dict[str, int] = {}
        for (verb, resource, sub), n in counts.items():
            if verb in WRITE_VERBS:
                key = f"{verb} {resource}" + (f"/{sub}" if sub else "")
                out[key] = out.get(key, 0) + n
        return out

    async def mark(self) -> None:
        self.baseline = await self.server_writes()

    async def writes(self) -> dict[str, int]:
        after = await self.server_writes()
        return {k: v - self.baseline.get(k, 0) for k, v in after.items() if v != self.baseline.get(k, 0)}


class PeerProcess(ServerCounted):
    """The peer: ``--peer-command`` with its placeholders filled in; ready when ``/readyz``
    on ``{port}`` answers 200; ``/metrics`` read on ``{metrics_port}``."""

    def __init__(self, command: str, kubeconfig: Path, *, namespaces: Sequence[str], log_dir: Path, name: str) -> None:
        super().__init__(kubeconfig, namespaces=namespaces, workers=None, log_dir=log_dir, name=name)
        self.command = command
        self.metrics_port = 0

    def argv(self) -> list[str]:
        values = {
            "kubeconfig": str(self.kubeconfig),
            "port": str(self.port),
            "metrics_port": str(self.metrics_port),
            "namespace": ",".join(self.namespaces),
        }
        return peer_argv(self.command, values)

    def start(self) -> None:
        self.metrics_port = free_port() if "{metrics_port}" in self.command else 0
        super().start()
        if not self.metrics_port:
            self.metrics_port = self.port

    async def samples(self) -> Samples:
        self.scrapes += 1
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=aiohttp.ClientTimeout(10)) as r,
        ):
            return parse_metrics(await r.text())


# -- the figures -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    unit: str
    goal: float | None
    """Ours may be at most this times the peer's (None: shown, no goal); with ``higher``, at
    least the peer's over this."""
    higher: bool = False
    """More is better (a rate)."""


FIGURES = (
    Figure("cold_seconds", "cold start: spawn → every child with its replicas, every status (watch)", "s", 1.0),
    Figure("cold_writes", "cold start: reconcile writes (children, revisions, status)", "", 1.0),
    Figure("cold_event_writes", "cold start: Event writes", "", None),
    Figure("cold_cpu_seconds", "cold start: controller CPU", "s", 2.0),
    Figure("cold_server_cpu_seconds", "cold start: kube-apiserver + etcd CPU", "s", None),
    Figure("rss_kb", "memory: RSS once converged", "KiB", 1.0),
    Figure("one_p50_ms", "scale, one at a time: p50 (PATCH /scale → child via watch)", "ms", 1.0),
    Figure("one_p99_ms", "scale, one at a time: p99", "ms", 1.0),
    Figure("burst_p50_ms", "scale, bursts: p50", "ms", 1.0),
    Figure("burst_p99_ms", "scale, bursts: p99", "ms", 1.0),
    Figure(
        "one_over_floor_p50",
        "scale, one at a time: p50 over the same turn's floor (Deployment /scale, no controller)",
        "x floor",
        1.0,
    ),
    Figure("burst_over_floor_p50", "scale, bursts: p50 over the same turn's floor", "x floor", 1.0),
    Figure(
        "one_controller_leg_p50_ms",
        "scale, one at a time: p50 from the UnitedDeployment's new replicas seen to the child's (the controller's leg)",
        "ms",
        None,
    ),
    Figure("writes_per_event", "scale: writes per event (children, status, revisions)", "", 1.0),
    Figure("event_writes_per_event", "scale: Event writes per event", "", None),
    Figure("controller_cpu_ms_per_event", "scale bursts: controller CPU per event", "ms", 2.0),
    Figure("server_cpu_ms_per_event", "scale bursts: kube-apiserver + etcd CPU per event", "ms", 1.0),
    Figure("resync_writes", "no-op resync (restart): writes", "", 1.0),
    Figure("resync_cpu_seconds", "no-op resync (restart): controller CPU, spawn → idle", "s", 2.0),
    Figure("ws_targeted_p50_ms", "WorkloadSpread admission, pod of a spread, one at a time: p50", "ms", 1.0),
    Figure("ws_targeted_p99_ms", "WorkloadSpread admission, pod of a spread, one at a time: p99", "ms", 1.0),
    Figure("ws_targeted_burst_p50_ms", "WorkloadSpread admission, pod of a spread, bursts: p50", "ms", 1.0),
    Figure("ws_targeted_burst_p99_ms", "WorkloadSpread admission, pod of a spread, bursts: p99", "ms", 1.0),
    Figure("ws_no_spread_p50_ms", "WorkloadSpread admission, namespace without a spread: p50", "ms", 1.0),
    Figure("ws_no_spread_p99_ms", "WorkloadSpread admission, namespace without a spread: p99", "ms", 1.0),
    Figure("ws_untargeted_p50_ms", "WorkloadSpread admission, other pod in a spread's namespace: p50", "ms", 1.0),
    Figure(
        "ws_no_spread_paid_ms",
        "WorkloadSpread admission, namespace without a spread: what the call adds, p50 over the turn's floor",
        "ms",
        1.0,
    ),
    Figure(
        "ws_untargeted_paid_ms",
        "WorkloadSpread admission, other pod in a spread's namespace: what the call adds, p50 over the turn's floor",
        "ms",
        1.0,
    ),
    Figure("ws_floor_p50_ms", "WorkloadSpread admission, floor (namespace excluded, no call): p50", "ms", None),
    Figure("ws_bookings_per_pod", "WorkloadSpread admission: spread writes per pod of a spread", "", 1.0),
    Figure("ws_scaleout_targeted_pps", "scale-out 0 → N with a spread: pods per second", "pods/s", 1.0, higher=True),
    Figure(
        "ws_scaleout_no_spread_pps",
        "scale-out 0 → N, namespace without a spread: pods per second",
        "pods/s",
        1.0,
        higher=True,
    ),
    Figure("ws_scaleout_floor_pps", "scale-out 0 → N, floor (namespace excluded): pods per second", "pods/s", None),
    Figure("ws_misplaced", "WorkloadSpread: pods misplaced (unplaced, over a maximum, wrong zone)", "", 1.0),
)


def side_figures(cold: Json, restart: Json, scale: Json) -> Json:
    """One side's figures of one repeat, from the scenarios' own results."""
    one, bursts = scale["one_at_a_time"], scale["bursts"]
    burst_cpu = bursts["cpu_ms_per_event"]["controller"]
    profiled = {"apiserver_profile": scale["apiserver_profile"]} if "apiserver_profile" in scale else {}
    return profiled | {
        "cold_seconds": cold["seconds"],
        "cold_writes": cold["reconcile_writes"],
        "cold_event_writes": cold["event_writes"],
        "cold_cpu_seconds": cold["cpu_seconds"],
        "cold_server_cpu_seconds": cold["server_cpu_seconds"],
        "rss_kb": cold["rss_kb"],
        "one_p50_ms": one["p50_ms"],
        "one_p99_ms": one["p99_ms"],
        "burst_p50_ms": bursts["p50_ms"],
        "burst_p99_ms": bursts["p99_ms"],
        "writes_per_event": bursts["writes_per_event"],
        "event_writes_per_event": bursts["event_writes_per_event"],
        "writes_by_resource_per_event": bursts["writes_by_resource_per_event"],
        "controller_cpu_ms_per_event": burst_cpu.get("controller", 0.0),
        "server_cpu_ms_per_event": burst_cpu.get("kube-apiserver", 0.0) + burst_cpu.get("etcd", 0.0),
        "floor_one_p50_ms": one["floor_p50_ms"],
        "floor_burst_p50_ms": bursts["floor_p50_ms"],
        "floor_burst_p99_ms": bursts["floor_p99_ms"],
        # The API server's pace differs between turns more than either controller's cost; each
        # turn's own floor (the same /scale on plain Deployments) takes that out of the ratio.
        # Not for the p99: two samples of the floor's would decide it.
        "one_over_floor_p50": one["p50_ms"] / one["floor_p50_ms"],
        "one_controller_leg_p50_ms": one["controller_leg_p50_ms"],
        "burst_over_floor_p50": bursts["p50_ms"] / bursts["floor_p50_ms"],
        "resync_writes": restart["writes"],
        "resync_writes_by_resource": restart["writes_by_resource"],
        "resync_cpu_seconds": restart["cpu_seconds_total"],
    }


def spread_figures(adm: Json | None, out: Json | None) -> Json:
    """One side's WorkloadSpread figures of one repeat: admission through its pod webhook (one
    pod at a time and in bursts), the writes to spreads per booked pod (counted by the API
    server), the scale-out's pods per second (its first QPS level), and every pod placed wrong."""
    figures: Json = {}
    misplaced = 0
    if adm is not None:
        one, bursts = adm["one_at_a_time"], adm["bursts"]
        writes = adm["controller_writes"].items()
        by_spread = {k: n for k, n in writes if k.split(" ")[-1].startswith("workloadspreads")}
        placed = adm["placement"]
        misplaced += placed["unplaced"] + len(placed["over_filled"]) + placed["wrong_zone"] + adm["untargeted_placed"]
        figures |= {
            "ws_targeted_p50_ms": one["targeted"]["p50_ms"],
            "ws_targeted_p99_ms": one["targeted"]["p99_ms"],
            "ws_targeted_burst_p50_ms": bursts["targeted"]["p50_ms"],
            "ws_targeted_burst_p99_ms": bursts["targeted"]["p99_ms"],
            "ws_no_spread_p50_ms": one["no_spread"]["p50_ms"],
            "ws_no_spread_p99_ms": one["no_spread"]["p99_ms"],
            "ws_untargeted_p50_ms": one["untargeted"]["p50_ms"],
            "ws_floor_p50_ms": one["floor"]["p50_ms"],
            # What an untargeted pod pays for the call, measured against the floor of the same turn:
            # the API server's own pace drifts between turns more than the call costs.
            "ws_no_spread_paid_ms": one["no_spread"]["p50_ms"] - one["floor"]["p50_ms"],
            "ws_untargeted_paid_ms": one["untargeted"]["p50_ms"] - one["floor"]["p50_ms"],
            "ws_bookings_per_pod": sum(by_spread.values()) / max(1, adm["targeted_pods"]),
            "ws_spread_writes": dict(sorted(by_spread.items())),
        }
    if out is not None:
        level = out["levels"][0]
        misplaced += level["over_filled"] + level["unplaced"] + level["wrong_zone"] + level["untargeted_placed"]
        figures |= {
            "ws_scaleout_targeted_pps": level["targeted_pods_per_second"],
            "ws_scaleout_no_spread_pps": level["untargeted_pods_per_second"],
            "ws_scaleout_floor_pps": level["floor_pods_per_second"],
        }
    if adm is not None or out is not None:
        figures["ws_misplaced"] = misplaced
    return figures


def ratio(peer: float | None, ours: float | None) -> float | None:
    """Ours over the peer's (below 1: this project is ahead); 0 over 0 is even."""
    if peer is None or ours is None or math.isnan(peer) or math.isnan(ours):
        return None
    if peer == 0:
        return 1.0 if ours == 0 else math.inf
    return ours / peer


def medians(runs: Iterable[Mapping[str, Any]]) -> Json:
    """The median of every numeric figure over a side's repeats."""
    runs = list(runs)
    keys = {k for r in runs for k, v in r.items() if isinstance(v, int | float)}
    return {k: statistics.median(r[k] for r in runs if k in r) for k in sorted(keys)}


def compare(peer: Mapping[str, float], ours: Mapping[str, float]) -> list[Json]:
    """A row per figure both sides have: peer, ours, ratio, goal and whether it is met."""
    rows: list[Json] = []
    for f in FIGURES:
        if f.key not in peer or f.key not in ours:
            continue
        r = ratio(peer[f.key], ours[f.key])
        met = None if f.goal is None or r is None else (r >= 1 / f.goal if f.higher else r <= f.goal)
        rows.append({"key": f.key, "label": f.label, "unit": f.unit, "peer": peer[f.key], "ours": ours[f.key],
                     "ratio": r, "goal": f.goal, "higher": f.higher, "met": met})  # fmt: skip
    return rows


def _value(v: float, unit: str) -> str:
    if unit == "KiB":
        return f"{v / 1024:.1f} MiB"
    text = f"{v:.0f}" if abs(v) >= 100 or (not unit and float(v).is_integer()) else f"{v:.2f}"
    return f"{text} {unit}".strip()


def _ratio(r: float | None) -> str:
    if r is None:
        return "—"
    return "∞" if math.isinf(r) else f"{r:.2f}x"


def render(result: Mapping[str, Any]) -> str:
    """The peer / ours / ratio table, then the floor (the API server's own limit) and the
    writes per event by verb and resource of each side."""
    lines = ["| Figure | Peer | This project | Ratio (ours / peer) | Goal | Met |", "|---|---|---|---|---|---|"]
    for row in result["rows"]:
        goal = "" if row["goal"] is None else f"{'≥' if row.get('higher') else '≤'} {row['goal']:g}x"
        met = "" if row["met"] is None else ("yes" if row["met"] else "**no**")
        lines.append(f"| {row['label']} | {_value(row['peer'], row['unit'])} | {_value(row['ours'], row['unit'])} | "
                     f"{_ratio(row['ratio'])} | {goal} | {met} |")  # fmt: skip
    floor = result.get("floor") or {}
    if floor:
        lines.append(
            f"| floor (the API server's limit): cold start by a plain client; Deployment /scale p50 one at a time, "
            f"p50 / p99 in bursts | {_value(floor.get('cold_seconds', math.nan), 's')}; "
            f"{_value(floor.get('one_p50_ms', math.nan), 'ms')}; {_value(floor.get('burst_p50_ms', math.nan), 'ms')}"
            f" / {_value(floor.get('burst_p99_ms', math.nan), 'ms')} | | | | |"
        )
    m = result.get("sizes") or {}
    for side, by in (result.get("writes_by_resource_per_event") or {}).items():
        text = ", ".join(f"{k} {v:.2f}" for k, v in sorted(by.items())) or "none"
        lines.append(f"\nWrites per scale event, {side}: {text}.")
    for side in SIDES:
        by = (result.get("spread_writes") or {}).get(side)
        if by is not None:
            text = ", ".join(f"{k} {v}" for k, v in sorted(by.items())) or "none"
            lines.append(f"\nWrites to spreads during the admission scenario, {side}: {text}.")
    sizes = [f"{m['uds']} UDs x {m.get('subsets')} subsets"] if m.get("uds") else []
    if m.get("admission_pods"):
        sizes.append(
            f"WorkloadSpread admission: {m['admission_pods']} pods a case one at a time, then bursts of "
            f"{m['admission_burst']}; scale-out 0 → {m['scaleout_replicas']} at {m['scaleout_qps']} QPS"
        )
    lines.append(
        f"\n{'; '.join(sizes)}; {m.get('repeats')} repeat(s) of each side, interleaved; "
        f"medians. Peer: `{result.get('command', '')}`."
    )
    return "\n".join(lines) + "\n"


# -- running the sides ------------------------------------------------------------------------------


def manifests(paths: Sequence[Path]) -> list[Json]:
    """Every YAML document of ``paths`` (files, or directories of ``*.yaml``), in order."""
    docs: list[Json] = []
    for path in paths:
        files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
        for f in files:
            docs += [d for d in yamlload.load_all(f.read_text(encoding="utf-8")) if d]
    return docs


async def delete_crds(client: KubeClient, names: Iterable[str]) -> None:
    """Delete the CRDs ``names`` and wait until they are gone."""
    names = list(names)
    for name in names:
        with contextlib.suppress(NotFound):
            await client.delete(CRDS, name)

    async def gone() -> None:
        for name in names:
            with contextlib.suppress(NotFound):
                await client.get(CRDS, name)
                raise AssertionError(f"CRD {name} still there")

    await eventually(gone, within=120, what="CRDs deleted")


async def wipe(client: KubeClient, namespaces: Iterable[str]) -> None:
    """Delete ``namespaces`` and wait until the namespace controller has emptied them."""
    namespaces = list(namespaces)
    for ns in namespaces:
        with contextlib.suppress(NotFound):
            await client.delete(NAMESPACES, ns)

    async def gone() -> None:
        for ns in namespaces:
            with contextlib.suppress(NotFound):
                await client.get(NAMESPACES, ns)
                raise AssertionError(f"namespace {ns} still there")

    await eventually(gone, within=600, what="namespaces deleted")


def without_webhooks(docs: Sequence[Json]) -> list[Json]:
    """``docs`` with every webhook configuration emptied: the peer finds the configurations it
    expects (OpenKruise's manager is not ready until it has filled them in) and the API server
    calls nobody."""
    return [d | {"webhooks": []} if d.get("kind") in WEBHOOK_KINDS else d for d in docs]


def our_files(source: Path | None) -> list[Path]:
    """This project's compat CRDs and its apps.kruise.io role, from ``source`` when the controller
    runs from another tree: a tree's CRDs go with its code (a schema change is measured with it)."""
    files = [Path(str(f)) for f in (*crds(KRUISE_GROUP), MANIFESTS / "kruise" / "clusterrole.yaml")]
    return files if source is None else [source / f.relative_to(ROOT) for f in files]


async def install_side(client: KubeClient, side: str, peer_docs: Sequence[Json], *, source: Path | None = None) -> None:
    """The side's CRDs in place of the other's (and, for this project, its apps.kruise.io role);
    no webhook configured (the peer's, if it has some, empty)."""
    await delete_crds(client, SHARED_CRDS)
    await remove_configurations(client, webhook_configurations(peer_docs))
    if side == "peer":
        await apply(client, without_webhooks(peer_docs))
    else:
        await apply(client, documents(*our_files(source)))


async def peer_identity(ctx: Context) -> Path:
    """A kubeconfig for the peer: ServiceAccount :data:`PEER_ACCOUNT`, bound to cluster-admin, so
    its requests pass authentication and RBAC as this project's do."""
    meta = {"name": PEER_ACCOUNT, "namespace": PEER_ACCOUNT}
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": PEER_ACCOUNT},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": PEER_ACCOUNT, "namespace": PEER_ACCOUNT}],
    }
    await create_namespace(ctx.client, PEER_ACCOUNT)
    await apply(ctx.client, [account, binding])
    return await ctx.bench.cluster.service_account_kubeconfig(
        ctx.client, namespace=PEER_ACCOUNT, name=PEER_ACCOUNT, within=60
    )


def profiled(ctx: Context, name: str) -> Path | None:
    """With ``--profile``: where ``py-spy`` records this project's controller that restarts
    and then takes the scale events (``resync-…``), one raw profile per turn."""
    if ctx.profile_dir is None or not name.startswith("resync-"):
        return None
    return ctx.profile_dir / f"{name}.raw"


def spawner(ctx: Context, side: str, command: str, kubeconfig: Path) -> Any:
    """What makes the controller of ``side``: the peer's command, or ``united run`` serving
    apps.kruise.io (with the flags a scenario gives it: its webhook's); both counted by the API
    server. This project's serves the namespaces it is given only when the peer's command names
    ``{namespace}``; else, like the peer, every one."""
    scoped = "{namespace}" in command

    def make(namespaces: Sequence[str], name: str, extra: Sequence[str] = ()) -> ControllerProcess:
        made: ServerCounted
        if side == "peer":
            made = PeerProcess(command, kubeconfig, namespaces=namespaces, log_dir=ctx.log_dir, name=f"peer-{name}")
        else:
            made = ServerCounted(
                ctx.bench.controller_kubeconfig,
                namespaces=namespaces if scoped else (),
                workers=ctx.workers,
                log_dir=ctx.log_dir,
                name=name,
                source=ctx.source,
                extra=("--api-group", KRUISE_GROUP, *extra),
                profile=profiled(ctx, name),
            )
        made.counter = ctx.client
        return made

    return make


UD_SCENARIOS = ("cold", "scale", "resync")
"""Any of these in ``--scenarios``: the UnitedDeployment scenarios run (all of them, in one turn)."""
SPREAD_SCENARIOS = ("scaleout", "admission")
"""The WorkloadSpread scenarios, each run when named, scale-out first (it needs no Deployment
left by another scenario)."""


async def ud_turn(ctx: Context, config: Mapping[str, Any], ns: str) -> Json:
    """One side's UnitedDeployment scenarios in namespace ``ns``: cold start, restart, scale events."""
    uds, subsets = int(config["uds"]), int(config["subsets"])
    log(f"{ns}: cold start, {uds} UDs x {subsets} subsets")
    cold, ctl = await cold_start_run(ctx, "controller", ns, uds=uds, subsets=subsets)
    assert ctl is not None
    log(f"  {cold.seconds:.2f} s; restart (no-op resync)")
    restart, ctl = await resync_restart(ctx, ctl, ns, uds=uds)
    scale = await scale_events(ctx, ctl, ns, uds=uds, subsets=subsets, singles=int(config["scale_singles"]),
                               bursts=int(config["scale_bursts"]), burst=int(config["burst_size"]),
                               bare=False)  # fmt: skip
    ctl.stop()
    writes = {"reconcile_writes": reconcile_writes(cold.writes), "event_writes": event_writes(cold.writes)}
    cold_json = cold.as_json() | writes
    await wipe(ctx.client, [ns, f"{ns}-bare"])
    return side_figures(cold_json, restart, scale) | {"cold": cold_json}


async def spread_turn(ctx: Context, config: Mapping[str, Any], scenarios: Sequence[str]) -> Json:
    """One side's WorkloadSpread scenarios through its own pod webhook."""
    out = adm = None
    if "scaleout" in scenarios:
        out = await scaleout(ctx, replicas=int(config["scaleout_replicas"]), qps_levels=config["scaleout_qps"][:1],
                             repeats=int(config["scaleout_repeats"]))  # fmt: skip
    if "admission" in scenarios:
        adm = await admission(ctx, pods=int(config["admission_pods"]), burst=int(config["admission_burst"]))
    return spread_figures(adm, out) | {"spread": {"admission": adm, "scaleout": out}}


async def compare_sides(
    ctx: Context, config: Mapping[str, Any], command: str, peer_docs: Sequence[Json],
    scenarios: Sequence[str] = UD_SCENARIOS + SPREAD_SCENARIOS,
) -> Json:  # fmt: skip
    """Every side's scenarios, one side at a time, ``repeats`` times interleaved; the floor's
    cold start once first. Medians per side, then peer / ours / ratio per figure."""
    uds, subsets, repeats = int(config["uds"]), int(config["subsets"]), int(config["repeats"])
    with_uds = any(s in scenarios for s in UD_SCENARIOS)
    spreads = [s for s in SPREAD_SCENARIOS if s in scenarios]
    floor: Json = {}
    if with_uds:
        ctx.floor_concurrency = int(config.get("floor_concurrency") or 16)
        log(f"floor: cold start of {uds} UDs x {subsets} subsets at {ctx.floor_concurrency} at once")
        floor_run, _ = await cold_start_run(ctx, "floor", "peer-floor", uds=uds, subsets=subsets)
        await wipe(ctx.client, ["peer-floor"])
        floor["cold_seconds"] = floor_run.seconds
    kubeconfig = await peer_identity(ctx)
    runs: dict[str, list[Json]] = {side: [] for side in SIDES}
    try:
        for r, side in interleave(repeats):
            log(f"{side} ({r + 1}/{repeats}): installing its CRDs")
            await install_side(ctx.client, side, peer_docs, source=ctx.source)
            ctx.group, ctx.spawn = KRUISE_GROUP, spawner(ctx, side, command, kubeconfig)
            figures: Json = {}
            if with_uds:
                waited = await collector_maps(ctx.client, KRUISE_UD)
                log(f"  the garbage collector maps every version of the kind after {waited:.1f} s")
                figures |= await ud_turn(ctx, config, f"{side}-{r}") | {"collector_wait_seconds": waited}
            if spreads:
                ctx.published = webhook_configurations(peer_docs) if side == "peer" else None
                figures |= await spread_turn(ctx, config, spreads)
                ctx.published = None
            runs[side].append(figures)
            shown = ("cold_seconds", "burst_p50_ms", "rss_kb", "ws_targeted_p50_ms", "ws_scaleout_targeted_pps")
            log(f"  {side}: " + ", ".join(f"{k} {figures[k]:.2f}" for k in shown if k in figures))
    finally:
        ctx.group, ctx.spawn, ctx.published = GROUP, None, None
        ctx.stop_all()
    peer, ours = medians(runs["peer"]), medians(runs["ours"])
    both = runs["peer"] + runs["ours"]
    if with_uds:
        floor |= {
            k.removeprefix("floor_"): statistics.median(r[k] for r in both)
            for k in ("floor_one_p50_ms", "floor_burst_p50_ms", "floor_burst_p99_ms")
        }
    sizes: Json = {"repeats": repeats}
    if with_uds:
        sizes |= {"uds": uds, "subsets": subsets, "burst": int(config["burst_size"])}
    if spreads:
        sizes |= {k: config[k] for k in ("admission_pods", "admission_burst", "scaleout_replicas")}
        sizes["scaleout_qps"] = config["scaleout_qps"][0]
    return {
        "command": command,
        "sizes": sizes,
        "rows": compare(peer, ours),
        "peer": peer,
        "ours": ours,
        "floor": floor,
        "writes_by_resource_per_event": {
            side: runs[side][-1]["writes_by_resource_per_event"] for side in SIDES if with_uds and runs[side]
        },
        "spread_writes": {
            side: runs[side][-1]["ws_spread_writes"]
            for side in SIDES
            if runs[side] and "ws_spread_writes" in runs[side][-1]
        },
        "runs": runs,
    }


__all__ = [
    "FIGURES",
    "PLACEHOLDERS",
    "SIDES",
    "SPREAD_SCENARIOS",
    "UD_SCENARIOS",
    "Figure",
    "PeerCommandError",
    "PeerProcess",
    "ServerCounted",
    "check_command",
    "compare",
    "compare_sides",
    "interleave",
    "medians",
    "peer_argv",
    "profiled",
    "ratio",
    "render",
    "side_figures",
    "spread_figures",
    "without_webhooks",
]
