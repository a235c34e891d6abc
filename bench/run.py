"""``python -m bench``: every scenario on a fresh local control plane; results as JSON and
a Markdown table (``--out``, default ``bench/results/``). Several minutes at the defaults.

The machine's load is recorded before and after: on a shared machine absolute figures
move, the controller/floor ratios (measured side by side, interleaved) much less.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from bench import report
from bench.controller import py_spy
from bench.env import ROOT, BenchCluster, local_cluster
from bench.peer import PeerCommandError, check_command, manifests
from bench.profile import render as render_profile
from bench.profile import summarise
from bench.scenarios import Context, log, run_all
from united.devcluster import versions
from united.devcluster.build import provision
from united.kube.client import KubeClient
from united.log import configure_logging

SCENARIOS = (
    "scaleout", "admission", "crdcost", "cold", "scale", "resync", "growth", "memory", "allocation", "limits",
)  # fmt: skip
IN_PROCESS = ("allocation", "limits")
"""Scenarios that need no cluster."""
HERE = Path(__file__).resolve().parent


def positive(text: str) -> int:
    """An argument that must be a whole number above 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: must be a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be at least 1")
    return value


def positives(text: str) -> list[int]:
    """A comma-separated list of :func:`positive` numbers, at least one."""
    values = [positive(part.strip()) for part in text.split(",") if part.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"{text!r}: must list at least one number")
    return values


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("--uds", type=int, default=500, help="UnitedDeployments in the cold start (default 500)")
    p.add_argument("--subsets", type=int, default=3, help="subsets per UnitedDeployment (default 3)")
    p.add_argument("--workers", type=int, help="controller workers (default: the controller's own default)")
    p.add_argument(
        "--floor-concurrency",
        type=int,
        help="UDs the floor script writes at once (default: the API server's best, found by a short sweep)",
    )
    p.add_argument(
        "--floor-sweep",
        default="2,4,8,16,32,64,128",
        help="concurrencies the sweep tries, each a cold start of --sweep-uds UDs (default 2,4,8,16,32,64,128)",
    )
    p.add_argument(
        "--floor-watch",
        action="store_true",
        help="cold starts also run the floor with the watches a controller needs (bench/floor.py --watch)",
    )
    p.add_argument("--sweep-uds", type=int, default=200, help="UDs in each sweep run (default 200)")
    p.add_argument("--repeats", type=int, default=1, help="cold starts of each (interleaved; medians reported)")
    p.add_argument("--scale-singles", type=int, default=40, help="scale events one at a time (default 40)")
    p.add_argument("--scale-bursts", type=int, default=4, help="bursts of scale events (default 4)")
    p.add_argument("--burst-size", type=int, default=25, help="scale events per burst (default 25)")
    p.add_argument(
        "--server-profile",
        type=int,
        default=0,
        metavar="SECONDS",
        help="take kube-apiserver's CPU profile (pprof) for SECONDS from the first scale burst on, and "
        "summarise it by handler and per request (needs `go`; default 0: none)",
    )
    p.add_argument("--children", type=int, default=10_000, help="cached children in the memory scenario")
    p.add_argument(
        "--growth",
        default="500,2000,5000",
        help="UnitedDeployments in each cold start of the growth scenario (default 500,2000,5000)",
    )
    p.add_argument("--pods", type=int, default=10_000, help="cached pods in the memory scenario")
    p.add_argument(
        "--admission-pods", type=positive, default=300, help="pods of each admission case one at a time (default 300)"
    )
    p.add_argument("--admission-burst", type=positive, default=10, help="pods per admission burst (default 10)")
    p.add_argument(
        "--scaleout-replicas", type=positive, default=200, help="replicas of the scale-out from 0 (default 200)"
    )
    p.add_argument(
        "--scaleout-qps",
        type=positives,
        default=[20, 1000],
        help="client QPS limits of the scale-out's kube-controller-manager, one set of runs each (default 20,1000)",
    )
    p.add_argument(
        "--crdcost-rounds",
        type=positive,
        default=1000,
        help="rounds of the crdcost scenario: one /scale and one status write per CRD copy each (default 1000)",
    )
    p.add_argument(
        "--scaleout-repeats", type=positive, default=1, help="scale-outs of each variant per QPS (default 1)"
    )
    p.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma-separated subset of {','.join(SCENARIOS)}")
    p.add_argument("--out", type=Path, default=HERE / "results", help="directory for results (default bench/results)")
    p.add_argument("--name", default="latest", help="results file stem (default latest)")
    p.add_argument("--profile", action="store_true", help="run the (last) cold-start controller under py-spy")
    p.add_argument(
        "--source", type=Path, help="run the controller from this source tree (PYTHONPATH), e.g. a patched worktree"
    )
    p.add_argument(
        "--kube-version",
        help="the local control plane's Kubernetes (a release or newest/floor; default: $UNITED_KUBE_VERSION, "
        "else the default)",
    )
    p.add_argument(
        "--peer-command",
        type=peer_command,
        metavar="CMD",
        help="compare with another controller of apps.kruise.io UnitedDeployments (e.g. OpenKruise's manager), "
        "run as CMD with {kubeconfig}, {port} (its /readyz), {metrics_port} and {namespace} filled in: one side at "
        "a time, --repeats times interleaved; runs this comparison instead of --scenarios",
    )
    p.add_argument(
        "--peer-manifests",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="YAML file or directory applied before each run of the peer: its CRDs (which replace this project's "
        "apps.kruise.io ones) and whatever else it needs; repeatable",
    )
    return p


def peer_command(text: str) -> str:
    """``--peer-command``: known placeholders, and ``{port}``."""
    try:
        return check_command(text)
    except PeerCommandError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def config_of(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "uds": args.uds,
        "subsets": args.subsets,
        "workers": args.workers,
        "floor_concurrency": args.floor_concurrency,
        "floor_sweep": [int(x) for x in str(args.floor_sweep).split(",") if x.strip()],
        "sweep_uds": args.sweep_uds,
        "floor_watch": args.floor_watch,
        "repeats": args.repeats,
        "scale_singles": args.scale_singles,
        "scale_bursts": args.scale_bursts,
        "burst_size": args.burst_size,
        "children": args.children,
        "pods": args.pods,
        "growth": [int(n) for n in args.growth.split(",") if n],
        "admission_pods": args.admission_pods,
        "admission_burst": args.admission_burst,
        "scaleout_replicas": args.scaleout_replicas,
        "scaleout_qps": args.scaleout_qps,
        "scaleout_repeats": args.scaleout_repeats,
        "crdcost_rounds": args.crdcost_rounds,
        "profile": args.profile,
        "source": str(args.source) if args.source else None,
        "server_profile": args.server_profile,
        "peer_command": args.peer_command,
        "peer_manifests": [str(p) for p in args.peer_manifests],
    }


async def bench(bench_cluster: BenchCluster, config: dict[str, Any], scenarios: list[str], out: Path) -> dict[str, Any]:
    log_dir = out / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    async with await KubeClient.from_kubeconfig(bench_cluster.admin_kubeconfig) as client:
        ctx = Context(
            bench=bench_cluster,
            client=client,
            workers=config["workers"],
            log_dir=log_dir,
            source=Path(config["source"]) if config.get("source") else None,
            profile_dir=out if config.get("profile") else None,
            server_profile=int(config.get("server_profile") or 0),
        )
        try:
            if config.get("peer_command"):
                from bench.peer import compare_sides

                docs = manifests([Path(p) for p in config["peer_manifests"]])
                return {"peer": await compare_sides(ctx, config, config["peer_command"], docs, scenarios)}
            return await run_all(ctx, config, scenarios)
        finally:
            ctx.stop_all()


def run(args: argparse.Namespace) -> dict[str, Any]:
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown = set(scenarios) - set(SCENARIOS)
    if unknown:
        raise SystemExit(f"unknown scenarios: {', '.join(sorted(unknown))}")
    config = config_of(args)
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"config": config}
    start_machine = report.machine()
    started = time.monotonic()
    if args.peer_command or any(s not in IN_PROCESS for s in scenarios):
        compile_sources(args.source)  # only runs that spawn a controller and a floor need it
        log("starting the local control plane (no workload controllers)")
        binaries = provision(versions.chosen(args.kube_version, os.environ))
        with local_cluster(binaries, profiling=bool(args.server_profile)) as cluster:
            bench_cluster = asyncio.run(BenchCluster.prepare(cluster, owned=True))
            results["kubernetes"] = str(cluster.binaries.version)
            results.update(asyncio.run(bench(bench_cluster, config, scenarios, args.out)))
    else:
        results.update(in_process_only(scenarios))
    results["machine"] = {**report.machine(), "load_average_start": start_machine["load_average"]}
    results["seconds"] = time.monotonic() - started
    raw = args.out / "cold-start.raw"
    if args.profile and raw.exists():
        summary = summarise(raw)
        results["profile"] = summary
        (args.out / "cold-start-profile.txt").write_text(render_profile(summary))
    return results


def compile_sources(source: Path | None) -> None:
    """Byte-compile the trees the controller and the floor run from, as ``pip install`` does for
    a deployed wheel: with ``PYTHONDONTWRITEBYTECODE`` set (as in this project's image and CI)
    every spawn would otherwise compile the package from source again, ~0.1 s that a deployed
    controller never pays and the floor, which imports little, hardly pays."""
    for tree in {ROOT, *((source,) if source else ())}:
        for package in ("united", "bench"):
            if (tree / package).is_dir():
                compileall.compile_dir(tree / package, quiet=1)


def in_process_only(scenarios: list[str]) -> dict[str, Any]:
    from bench.limits import limits_bench
    from bench.scenarios import allocation_bench

    out: dict[str, Any] = {}
    if "allocation" in scenarios:
        out["allocation"] = allocation_bench()
    if "limits" in scenarios:
        out["limits"] = limits_bench()
    return out


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.peer_command and not args.peer_manifests:
        p.error("--peer-command needs --peer-manifests: the peer's CRDs")
    try:
        versions.chosen(args.kube_version, os.environ)
    except ValueError as exc:
        p.error(str(exc))
    if args.profile and py_spy() is None:
        p.error("--profile: needs py-spy on PATH or beside this Python (pip install 'united[bench]')")
    missing = [str(m) for m in args.peer_manifests if not m.exists()]
    if missing:
        p.error(f"--peer-manifests: no such file or directory: {', '.join(missing)}")
    args.out = args.out.resolve()  # controllers run from --source trees: no relative paths
    configure_logging(level="WARNING", log_format="console")
    signal.signal(signal.SIGTERM, _interrupt)  # clean up (controllers, control plane) as on Ctrl-C
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    results = run(args)
    (args.out / f"{args.name}.json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    table = report.render(results)
    (args.out / f"{args.name}.md").write_text(table)
    print(table)
    log(f"results in {args.out / args.name}.json and .md ({results['seconds']:.0f} s)")
    return 0
