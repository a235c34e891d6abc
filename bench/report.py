"""The results as a Markdown table (figures, floors, ratios, goals) plus the machine they
ran on; ``python -m bench.report results.json`` re-renders a saved run."""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

from united.api.document import Json

GOALS = {
    "cold_ratio": 1.25,
    "scale_p50_ratio": 2.5,
    "burst_p50_ratio": 3.0,
    "burst_p99_ratio": 4.0,
    "cpu_per_write_ratio": 1.5,
    "noop_writes": 0,
    "kb_per_child": 4.0,
    "kb_per_pod": 4.0,
    "alloc_1000_ms": 5.0,
}


def machine() -> Json:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def _pairs(ratios: list[float] | None) -> str:
    """The ratio of each controller/floor pair, when there were several."""
    if not ratios or len(ratios) < 2:
        return ""
    return " (pairs " + ", ".join(f"{r:.2f}" for r in ratios) + ")"


def _without_ws(mem: dict[str, Any], figure: str) -> str:
    """The same figure for an install without WorkloadSpreads, when measured."""
    alone = mem.get(f"{figure}_without_ws")
    return "" if alone is None else f" ({alone:.2f} KB without WorkloadSpreads)"


def _mark(ok: bool | None) -> str:
    return "—" if ok is None else ("yes" if ok else "**no**")


def _scale_goal(key: str, s: Json) -> tuple[str, str]:
    if key == "bursts":
        p50, p99 = GOALS["burst_p50_ratio"], GOALS["burst_p99_ratio"]
        return f"p50 ≤ {p50}x, p99 ≤ {p99}x", _mark(s["ratio_p50"] <= p50 and s["ratio_p99"] <= p99)
    return f"p50 ≤ {GOALS['scale_p50_ratio']}x", _mark(s["ratio_p50"] <= GOALS["scale_p50_ratio"])


Row = tuple[str, str, str, str, str, str, str]


def _admission_rows(adm: Json) -> list[Row]:
    """The webhook's cost per pod CREATE against the floor's (no call), by case and mode."""
    rows: list[Row] = []
    for mode, label in (("one_at_a_time", "one at a time"), ("bursts", f"bursts of {adm['burst']}")):
        cases = adm[mode]
        floor = cases["floor"]
        base = f"{floor['p50_ms']:.1f} / {floor['p99_ms']:.1f} ms"
        rows.append((
            f"Pod admission, {label} ({floor['pods']} pods a case)",
            "POST pod → response, p50 / p99: no webhook configuration at all (before the controller ran)",
            "", f"{cases['unconfigured']['p50_ms']:.1f} / {cases['unconfigured']['p99_ms']:.1f} ms", "", "", "",
        ))  # fmt: skip
        for case, what in (
            ("no_spread", "webhook called, namespace without a spread"),
            ("untargeted", "webhook called, pod of no spread"),
            ("targeted", "pod of a spread (booked)"),
        ):
            c = cases[case]
            rows.append((
                "", f"{what}, p50 / p99 (floor: namespace excluded from the webhook)",
                f"{c['p50_ms']:.1f} / {c['p99_ms']:.1f} ms", base,
                f"{c['ratio_p50']:.2f}x / {c['ratio_p99']:.2f}x (+{c['added_p50_ms']:.1f} ms p50)", "", "",
            ))  # fmt: skip
    placed = adm["placement"]
    ok = not (placed["over_filled"] or placed["unplaced"] or placed["wrong_zone"] or adm["untargeted_placed"])
    rows.append((
        "", "targeted pods per subset (maxima); unplaced; in another zone; untargeted pods placed",
        f"{placed['counts']} ({placed['maxima']}); {placed['unplaced']}; {placed['wrong_zone']}; "
        f"{adm['untargeted_placed']}", "", "", "none over, 0, 0, 0", _mark(ok),
    ))  # fmt: skip
    return rows


def _server_profile_row(p: Json) -> Row:
    """kube-apiserver's CPU by handler during the bursts: per request where the handler serves
    one kind of request, else its share of the profile."""
    what = f"kube-apiserver's CPU profile from the first burst on ({p['requested_seconds']} s; {p['profile']})"
    if "handlers" not in p:
        return ("Scale bursts: API server profile", what, f"not read: {p.get('unread', '?')}", "", "", "", "")
    parts = []
    for label, h in p["handlers"].items():
        if h.get("ms_per_request") is not None:
            parts.append(f"{label} {h['ms_per_request']:.2f} ms per request ({h['requests']})")
        elif "requests" not in h:
            parts.append(f"{label} {100 * h['share']:.0f} %")
    sampled = f"{p['cpu_seconds']:.2f} s of CPU sampled in {p['duration_seconds']:.1f} s"
    return ("Scale bursts: API server profile", what, "; ".join(parts), "", sampled, "", "")


def _scaleout_rows(out: Json) -> list[Row]:
    rows: list[Row] = []
    for level in out["levels"]:
        floor = level.get("floor_pods_per_second", 0.0)
        rows.append((
            f"Scale-out 0 → {out['replicas']}, kube-controller-manager at {level['qps']} QPS",
            "pods per second, scale request → last pod via watch: webhook without spread; with a spread",
            f"{level.get('untargeted_pods_per_second', 0.0):.1f}; {level.get('targeted_pods_per_second', 0.0):.1f}",
            f"{floor:.1f}",
            f"{level.get('untargeted_ratio', 0.0):.2f}x; {level.get('targeted_ratio', 0.0):.2f}x",
            "", "",
        ))  # fmt: skip
        misplaced = (level["over_filled"], level["unplaced"], level["wrong_zone"], level["untargeted_placed"])
        rows.append((
            "", "spread pods: over-filled subsets; unplaced; in another zone; pods of no spread placed",
            "; ".join(str(n) for n in misplaced), "", "", "0; 0; 0; 0", _mark(not any(misplaced)),
        ))  # fmt: skip
    return rows


def _crdcost_rows(cost: Json) -> list[Row]:
    """Each CRD copy's write → watch time and API server CPU against the installed copy's."""
    rows: list[Row] = []
    base = cost["copies"]["as installed"]
    for label, writes in cost["copies"].items():
        for write, w in writes.items():
            b = base[write]
            cpu = "" if w["ratio_cpu"] is None else f"; CPU {w['ratio_cpu']:.2f}x"
            rows.append((
                "" if rows else f"CRD declarations ({cost['rounds']} rounds, {cost['objects']} UDs a copy)",
                f"{write} write → watch p50 / p90, API server + etcd CPU per write: {label}",
                f"{w['p50_ms']:.2f} / {w['p90_ms']:.2f} ms; {w['server_cpu_ms_per_write']:.1f} ms",
                f"{b['p50_ms']:.2f} / {b['p90_ms']:.2f} ms; {b['server_cpu_ms_per_write']:.1f} ms (as installed)",
                f"{w['ratio_p50']:.2f}x ({w['added_p50_ms']:+.2f} ms){cpu}", "", "",
            ))  # fmt: skip
    return rows


def render(results: Json) -> str:
    rows: list[Row] = []
    if results.get("crdcost"):
        rows += _crdcost_rows(results["crdcost"])
    if results.get("scaleout"):
        rows += _scaleout_rows(results["scaleout"])
    if results.get("admission"):
        rows += _admission_rows(results["admission"])
    cold = results.get("cold_start")
    if cold:
        workers = f"{cold['workers']} workers" + (" (default)" if cold.get("workers_default") else "")
        floor = f"floor at {cold['floor_concurrency']} at once" if cold.get("floor_concurrency") else ""
        name = f"Cold start, {cold['uds']} UDs x {cold['subsets']} subsets, {workers}" + (f"; {floor}" if floor else "")
        rows.append(
            (
                name,
                "spawn → all children and statuses (watch)",
                f"{cold['controller_seconds']:.2f} s",
                f"{cold['floor_seconds']:.2f} s",
                f"{cold['ratio']:.2f}x" + _pairs(cold.get("pair_ratios")),
                f"≤ {GOALS['cold_ratio']}x",
                _mark(cold["ratio"] <= GOALS["cold_ratio"]),
            )
        )
        rows.append(
            (
                "",
                "reconcile writes (revision + children + status)",
                str(cold["controller_reconcile_writes"]),
                str(cold["expected_writes"]),
                f"{cold['controller_reconcile_writes'] / max(1, cold['expected_writes']):.2f}x",
                "= floor",
                _mark(cold["controller_reconcile_writes"] == cold["expected_writes"]),
            )
        )
        rows.append(
            (
                "",
                "CPU: own process (net of the bench's /metrics scrapes); kube-apiserver + etcd",
                f"{cold['controller_cpu_seconds']:.1f} s; {cold.get('controller_server_cpu_seconds', 0.0):.1f} s",
                f"{cold.get('floor_cpu_seconds', 0.0):.1f} s; {cold.get('floor_server_cpu_seconds', 0.0):.1f} s",
                "",
                "",
                "",
            )
        )
        if "floor_watch_seconds" in cold:
            rows.append(
                (
                    "",
                    "floor with a controller's watches (UDs, Deployments, revisions): time; CPU own; "
                    "kube-apiserver + etcd",
                    f"{cold['controller_seconds']:.2f} s",
                    f"{cold['floor_watch_seconds']:.2f} s; {cold['floor_watch_cpu_seconds']:.1f} s; "
                    f"{cold['floor_watch_server_cpu_seconds']:.1f} s",
                    f"{cold['ratio_to_floor_watch']:.2f}x",
                    "",
                    "",
                )
            )
        if "cpu_per_write_ratio" in cold:
            rows.append(
                (
                    "",
                    "CPU of the process per reconcile write",
                    f"{cold['controller_cpu_ms_per_write']:.2f} ms",
                    f"{cold['floor_cpu_ms_per_write']:.2f} ms",
                    f"{cold['cpu_per_write_ratio']:.2f}x",
                    f"≤ {GOALS['cpu_per_write_ratio']}x",
                    _mark(cold["cpu_per_write_ratio"] <= GOALS["cpu_per_write_ratio"]),
                )
            )
        rows.append(
            (
                "",
                "Event writes; duplicate children created; reconcile passes per UD",
                f"{cold['controller_event_writes']}; {cold['duplicate_children_created']}; "
                f"{cold.get('controller_passes_per_ud', 0.0):.2f}",
                "0; 0",
                "",
                "0 duplicates",
                _mark(cold["duplicate_children_created"] == 0),
            )
        )
    scale = results.get("scale")
    if scale:
        for key, label in (("one_at_a_time", "Scale, one at a time"), ("bursts", "Scale, bursts")):
            s = scale[key]
            if key == "bursts":
                label += f" of {s['size']}"
            label += f" ({s['events']} events)"
            rows.append(
                (
                    label,
                    "PATCH /scale → child's replicas via watch, p50 / p99",
                    f"{s['p50_ms']:.0f} / {s['p99_ms']:.0f} ms",
                    f"{s['floor_p50_ms']:.0f} / {s['floor_p99_ms']:.0f} ms",
                    f"{s['ratio_p50']:.2f}x / {s['ratio_p99']:.2f}x",
                    *_scale_goal(key, s),
                )
            )
            if "ud_write_p50_ms" in s:
                rows.append(
                    (
                        "",
                        "of which: UD /scale → UD via watch; then UD seen → child via watch, p50",
                        f"{s['ud_write_p50_ms']:.0f}; {s['controller_leg_p50_ms']:.0f} ms",
                        "",
                        f"{s['ud_write_p50_ms'] / s['floor_p50_ms']:.2f}x; "
                        f"{s['controller_leg_p50_ms'] / s['floor_p50_ms']:.2f}x",
                        "",
                        "",
                    )
                )
            if "bare_ud_p50_ms" in s:
                rows.append(
                    (
                        "",
                        "the same UD /scale where no controller runs → UD via watch, p50 / p99 (the custom "
                        "resource's own cost)",
                        f"{s['bare_ud_p50_ms']:.0f} / {s['bare_ud_p99_ms']:.0f} ms",
                        f"{s['floor_p50_ms']:.0f} / {s['floor_p99_ms']:.0f} ms",
                        f"{s['bare_ud_ratio_p50']:.2f}x",
                        "",
                        "",
                    )
                )
            cpu = s.get("cpu_ms_per_event") or {}
            if all(cpu.get(case) for case in ("controller", "floor", "bare")) and cpu["floor"]["total"] > 0:
                c, f, b = cpu["controller"], cpu["floor"], cpu["bare"]
                rows.append(
                    (
                        "",
                        "CPU per event until seen, all processes (of which kube-apiserver; controller); "
                        f"the bare UD /scale: {b['total']:.1f} ms ({b.get('kube-apiserver', 0.0):.1f})",
                        f"{c['total']:.1f} ms ({c.get('kube-apiserver', 0.0):.1f}; {c.get('controller', 0.0):.1f})",
                        f"{f['total']:.1f} ms ({f.get('kube-apiserver', 0.0):.1f})",
                        f"{c['total'] / f['total']:.2f}x (bare UD {b['total'] / f['total']:.2f}x)",
                        "",
                        "",
                    )
                )
            rows.append(
                (
                    "",
                    "writes per event (children + status); Event writes",
                    f"{s['writes_per_event']:.2f}; {s['event_writes_per_event']:.2f}",
                    "",
                    "",
                    f"{s['goal_writes_per_event']:.2f} (changed + 1)",
                    _mark(abs(s["writes_per_event"] - s["goal_writes_per_event"]) < 1e-9),
                )
            )
    profiled = (scale or {}).get("apiserver_profile")
    if profiled:
        rows.append(_server_profile_row(profiled))
    restart = results.get("resync_restart")
    if restart:
        rows.append(
            (
                f"No-op resync: restart ({restart['uds']} UDs)",
                "writes; CPU from spawn to idle (imports, LISTs, reconciles; net of scrapes)",
                f"{restart['writes']}; {restart['cpu_seconds_total']:.2f} s",
                "",
                "",
                "0 writes",
                _mark(restart["writes"] == GOALS["noop_writes"]),
            )
        )
    touch = results.get("resync_touch")
    if touch:
        rows.append(
            (
                f"No-op resync: label on every UD ({touch['uds']} UDs)",
                "writes; CPU of the reconciles (net of scrapes)",
                f"{touch['writes']}; {touch['cpu_seconds']:.2f} s ({touch['cpu_ms_per_ud']:.2f} ms per UD)",
                "",
                "",
                "0 writes",
                _mark(touch["writes"] == GOALS["noop_writes"]),
            )
        )
    grown = results.get("growth")
    if grown:
        for row in grown["sizes"]:
            watching = row.get("floor_watch_seconds")
            watched = watching is not None
            rows.append(
                (
                    f"Growth: cold start, {row['uds']} UDs",
                    "spawn → converged; CPU per write vs the floor's"
                    + ("; the floor with a controller's watches, and the controller against it" if watched else ""),
                    f"{row['controller_seconds']:.2f} s",
                    f"{row['floor_seconds']:.2f} s"
                    + (f"; {watching:.2f} s ({watching / row['floor_seconds']:.2f}x)" if watched else ""),
                    f"{row['ratio']:.2f}x; CPU {row['cpu_per_write_ratio']:.2f}x"
                    + (f"; {row['ratio_to_floor_watch']:.2f}x" if watched else ""),
                    f"≤ {GOALS['cold_ratio']}x",
                    _mark(row["ratio"] <= GOALS["cold_ratio"]),
                )
            )
        rows.append(
            (
                "Growth: slope (least squares)",
                "ms of cold start per UnitedDeployment",
                f"{grown['controller_ms_per_ud']:.2f} ms",
                f"{grown['floor_ms_per_ud']:.2f} ms",
                f"{grown['controller_ms_per_ud'] / grown['floor_ms_per_ud']:.2f}x",
                "",
                "",
            )
        )
    mem = results.get("memory")
    if mem:
        rows.append(
            (
                f"Memory, {mem['children']} cached children",
                "RSS full vs empty cache; per child",
                f"{mem['rss_full_kb'] / 1024:.0f} MiB vs {mem['rss_empty_kb'] / 1024:.0f} MiB; "
                f"{mem['kb_per_child']:.2f} KB" + _without_ws(mem, "kb_per_child"),
                f"{mem['json_bytes_per_child_as_created'] / 1024:.2f} KB JSON",
                "",
                f"≤ {GOALS['kb_per_child']:g} KB",
                _mark(mem["kb_per_child"] <= GOALS["kb_per_child"]),
            )
        )
        if "kb_per_pod" in mem:
            rows.append(
                (
                    f"Memory, {mem['pods']} cached pods",
                    "RSS with them vs empty cache; per pod",
                    f"{mem['rss_pods_kb'] / 1024:.0f} MiB vs {mem['rss_empty_kb'] / 1024:.0f} MiB; "
                    f"{mem['kb_per_pod']:.2f} KB" + _without_ws(mem, "kb_per_pod"),
                    f"{mem['json_bytes_per_pod'] / 1024:.2f} KB JSON",
                    "",
                    f"≤ {GOALS['kb_per_pod']:g} KB",
                    _mark(mem["kb_per_pod"] <= GOALS["kb_per_pod"]),
                )
            )
    alloc = results.get("allocation")
    if alloc:
        for kind in ("specified", "elastic"):
            figures = [v for v in alloc.values() if v["allocator"] == kind]
            figures.sort(key=lambda v: v["subsets"])
            if not figures:
                continue
            text = " / ".join(f"{v['ms']:.3f}" for v in figures)
            sizes = " / ".join(str(v["subsets"]) for v in figures)
            biggest = figures[-1]
            ok = biggest["ms"] <= GOALS["alloc_1000_ms"] if biggest["subsets"] >= 1000 else None
            rows.append(
                (
                    f"Allocation, {kind}",
                    f"ms per allocate(), {sizes} subsets",
                    text + " ms",
                    "",
                    "",
                    f"≤ {GOALS['alloc_1000_ms']:g} ms at 1000",
                    _mark(ok),
                )
            )
    for case, f in (results.get("limits") or {}).items():
        rows.append(
            (
                f"A pass at the limits, {case} ({f['subsets']} subsets, template {f['template_bytes'] // 1024} KiB)",
                "longest the loop is held, first / steady pass (both passes in all, turns of the loop)",
                f"{f['first_longest_ms']:.1f} / {f['steady_longest_ms']:.1f} ms CPU "
                f"({f['cpu_ms']:.0f} ms, {f['turns']} turns)",
                "",
                "",
                "",
                _mark(None),
            )
        )
    sweep = results.get("floor_sweep")
    if sweep:
        rows.insert(
            0,
            (
                f"Floor sweep, {sweep['uds']} UDs x {sweep['subsets']} subsets",
                "floor cold start by UDs written at once (the fastest is the floor below)",
                "",
                ", ".join(f"{k}: {v:.2f} s" for k, v in sweep["seconds"].items()),
                "",
                "",
                f"best {sweep['best']}",
            ),
        )
    header = ("Scenario", "Figure", "Controller", "Floor", "Ratio", "Goal", "Met")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] if rows else []
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    if results.get("peer"):
        from bench.peer import render as render_peer

        lines.append(render_peer(results["peer"]))
    m = results.get("machine") or {}
    notes = [
        "",
        f"Machine: {m.get('cpus')} CPUs ({m.get('cpu_model')}), load average at start "
        f"{m.get('load_average_start')}, at end {m.get('load_average')}; Python {m.get('python')}.",
    ]
    if results.get("config"):
        notes.append(f"Config: `{json.dumps(results['config'], sort_keys=True)}`.")
    notes.append(
        f"Local control plane (Kubernetes {results.get('kubernetes', '1.20.2')}); kube-controller-manager runs "
        "without its workload controllers (no pods, no child status): every counted write is the controller's."
    )
    return "\n".join(lines + notes) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m bench.report RESULTS.json", file=sys.stderr)
        return 2
    sys.stdout.write(render(json.loads(Path(args[0]).read_text())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
