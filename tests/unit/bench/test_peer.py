"""``python -m bench --peer-command``: the command's placeholders, the order the sides run in,
the API server's counts as each side's writes, and the peer / ours / ratio table."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.controller import py_spy
from bench.env import ROOT
from bench.peer import (
    FIGURES,
    PLACEHOLDERS,
    PeerCommandError,
    PeerProcess,
    ServerCounted,
    check_command,
    compare,
    interleave,
    manifests,
    medians,
    our_files,
    peer_argv,
    profiled,
    ratio,
    render,
    side_figures,
    spread_figures,
    without_webhooks,
)
from bench.report import render as render_report
from bench.run import main, parser
from bench.scenarios import Context
from bench.webhook import webhook_configurations

VALUES = {"kubeconfig": "/k/config", "port": "8001", "metrics_port": "8002", "namespace": "a,b"}


def test_placeholders_are_filled_inside_words_and_quoting_is_kept() -> None:
    argv = peer_argv(
        "env WEBHOOK_HOST=127.0.0.1 /bin/mgr --kubeconfig {kubeconfig} --health-probe-addr=:{port} "
        "--metrics-addr=127.0.0.1:{metrics_port} --namespace {namespace} --note 'two words {port}'",
        VALUES,
    )
    assert argv == ["env", "WEBHOOK_HOST=127.0.0.1", "/bin/mgr", "--kubeconfig", "/k/config",
                    "--health-probe-addr=:8001", "--metrics-addr=127.0.0.1:8002", "--namespace", "a,b",
                    "--note", "two words 8001"]  # fmt: skip


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("", "empty command"),
        ("mgr --x {port} {cert_dir}", "unknown placeholder {cert_dir}; known: " + ", ".join(PLACEHOLDERS)),
        ("mgr 'unclosed {port}", "No closing quotation"),
        ("mgr --kubeconfig {kubeconfig}", "must name {port}"),
    ],
)
def test_a_command_the_bench_cannot_run_is_refused(command: str, message: str) -> None:
    with pytest.raises(PeerCommandError, match=message.replace("{", r"\{").replace("}", r"\}")):
        check_command(command)


def test_a_good_command_passes_unchanged() -> None:
    assert check_command("mgr --probe :{port}") == "mgr --probe :{port}"


def test_bad_peer_options_exit_2_with_the_reason(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        parser().parse_args(["--peer-command", "mgr {bogus}"])
    assert exc.value.code == 2
    assert "argument --peer-command: unknown placeholder {bogus}" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["--peer-command", "mgr {port}", "--out", str(tmp_path)])
    assert exc.value.code == 2 and "--peer-command needs --peer-manifests" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["--peer-command", "mgr {port}", "--peer-manifests", str(tmp_path / "nope"), "--out", str(tmp_path)])
    assert exc.value.code == 2 and "no such file or directory" in capsys.readouterr().err


def test_sides_alternate_who_goes_first_and_each_runs_once_a_repeat() -> None:
    assert interleave(3) == [(0, "peer"), (0, "ours"), (1, "ours"), (1, "peer"), (2, "peer"), (2, "ours")]
    order = interleave(4, ("a", "b", "c"))
    assert [side for r, side in order if r == 1] == ["b", "c", "a"]
    assert all(sorted(s for r, s in order if r == k) == ["a", "b", "c"] for k in range(4))
    assert interleave(0) == []


def test_ratio_is_ours_over_the_peers() -> None:
    assert ratio(2.0, 1.0) == 0.5
    assert ratio(0.0, 0.0) == 1.0  # both write nothing: even
    assert ratio(0.0, 3.0) == math.inf
    assert ratio(None, 1.0) is None and ratio(1.0, math.nan) is None


def test_compare_sets_goals_and_skips_figures_a_side_lacks() -> None:
    peer = {"cold_seconds": 10.0, "controller_cpu_ms_per_event": 1.0, "rss_kb": 50_000.0, "resync_writes": 0.0}
    ours = {"cold_seconds": 8.0, "controller_cpu_ms_per_event": 2.5, "rss_kb": 40_000.0, "resync_writes": 0.0}
    rows = {r["key"]: r for r in compare(peer, ours)}
    assert set(rows) == {"cold_seconds", "controller_cpu_ms_per_event", "rss_kb", "resync_writes"}
    assert rows["cold_seconds"]["ratio"] == 0.8 and rows["cold_seconds"]["met"] is True
    assert rows["controller_cpu_ms_per_event"]["goal"] == 2.0 and rows["controller_cpu_ms_per_event"]["met"] is False
    assert rows["resync_writes"]["met"] is True
    assert [r["key"] for r in compare(peer, ours)] == [f.key for f in FIGURES if f.key in rows]  # table order


def test_medians_take_every_numeric_figure_over_repeats() -> None:
    runs: list[dict[str, Any]] = [{"a": 1.0, "b": 5, "by": {"x": 1}}, {"a": 3.0, "b": 7}, {"a": 2.0}]
    assert medians(runs) == {"a": 2.0, "b": 6.0}


def scenario_results(scale_p50: float) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    cold = {"seconds": 4.0, "reconcile_writes": 50, "event_writes": 10, "cpu_seconds": 1.5,
            "server_cpu_seconds": 3.0, "rss_kb": 60_000}  # fmt: skip
    restart = {"writes": 0, "writes_by_resource": {}, "cpu_seconds_total": 0.7}

    def case(p50: float) -> dict[str, Any]:
        return {"p50_ms": p50, "p99_ms": 2 * p50, "writes_per_event": 2.0, "event_writes_per_event": 1.0,
                "writes_by_resource_per_event": {"PATCH deployments": 1.0, "PATCH uniteddeployments/status": 1.0},
                "floor_p50_ms": 5.0, "floor_p99_ms": 9.0, "controller_leg_p50_ms": p50 / 2,
                "cpu_ms_per_event": {"controller": {"controller": 3.0, "kube-apiserver": 4.0, "etcd": 1.0}},
                }  # fmt: skip

    return cold, restart, {"one_at_a_time": case(scale_p50), "bursts": case(3 * scale_p50)}


def test_side_figures_are_read_from_the_scenarios_results() -> None:
    f = side_figures(*scenario_results(10.0))
    assert (f["cold_seconds"], f["cold_writes"], f["rss_kb"], f["resync_writes"]) == (4.0, 50, 60_000, 0)
    assert (f["one_p50_ms"], f["burst_p50_ms"], f["burst_p99_ms"]) == (10.0, 30.0, 60.0)
    assert (f["controller_cpu_ms_per_event"], f["server_cpu_ms_per_event"]) == (3.0, 5.0)
    assert f["floor_burst_p99_ms"] == 9.0
    assert (f["one_over_floor_p50"], f["burst_over_floor_p50"]) == (2.0, 6.0)
    assert f["one_controller_leg_p50_ms"] == 5.0


def test_a_side_slowed_only_by_its_turns_api_server_is_even_over_its_floor() -> None:
    peer, ours = scenario_results(10.0), scenario_results(15.0)
    for case in ours[2].values():
        case["floor_p50_ms"], case["floor_p99_ms"] = 7.5, 13.5
    rows = {r["key"]: r for r in compare(side_figures(*peer), side_figures(*ours))}
    assert rows["burst_p50_ms"]["met"] is False
    for key in ("one_over_floor_p50", "burst_over_floor_p50"):
        assert rows[key]["ratio"] == pytest.approx(1.0) and rows[key]["met"] is True


def test_the_table_shows_peer_ours_ratio_and_the_floor() -> None:
    peer, ours = side_figures(*scenario_results(10.0)), side_figures(*scenario_results(20.0))
    result = {
        "command": "mgr {port}",
        "sizes": {"uds": 5, "subsets": 3, "repeats": 2},
        "rows": compare(medians([peer]), medians([ours])),
        "floor": {"cold_seconds": 2.0, "one_p50_ms": 5.0, "burst_p50_ms": 5.0, "burst_p99_ms": 9.0},
        "writes_by_resource_per_event": {"peer": peer["writes_by_resource_per_event"], "ours": {}},
    }
    table = render(result)
    assert table.startswith("| Figure | Peer | This project | Ratio (ours / peer) | Goal | Met |")
    assert (
        "| scale, one at a time: p50 (PATCH /scale → child via watch) | 10.00 ms | 20.00 ms | 2.00x | ≤ 1x | **no** |"
        in (table)
    )
    assert "| memory: RSS once converged | 58.6 MiB | 58.6 MiB | 1.00x | ≤ 1x | yes |" in table
    assert "floor (the API server's limit)" in table and "2.00 s; 5.00 ms; 5.00 ms / 9.00 ms" in table
    assert "Writes per scale event, peer: PATCH deployments 1.00, PATCH uniteddeployments/status 1.00." in table
    assert "Writes per scale event, ours: none." in table
    assert "5 UDs x 3 subsets; 2 repeat(s)" in table and "`mgr {port}`" in table
    whole = render_report({"peer": result, "machine": {}})  # the bench's report: the comparison alone
    assert whole.startswith("| Figure | Peer |") and "| Scenario |" not in whole


class FakeServer:
    """``/metrics`` of an API server whose counters move between calls."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)

    async def get_path(self, path: str) -> str:
        assert path == "/metrics"
        return self.texts.pop(0)


def counts(status_patches: int, creates: int, lists: int) -> str:
    return "\n".join([
        "# TYPE apiserver_request_total counter",
        f'apiserver_request_total{{code="200",resource="uniteddeployments",subresource="status",verb="PATCH"}} '
        f"{status_patches}",
        f'apiserver_request_total{{code="201",resource="deployments",subresource="",verb="POST"}} {creates}',
        f'apiserver_request_total{{code="200",resource="deployments",subresource="",verb="LIST"}} {lists}',
    ])  # fmt: skip


async def test_a_sides_writes_are_what_the_api_server_served_since_the_mark(tmp_path: Path) -> None:
    ctl = ServerCounted(tmp_path / "kc", namespaces=["ns"], workers=None, log_dir=tmp_path)
    ctl.counter = FakeServer(counts(5, 10, 3), counts(8, 16, 9))  # type: ignore[assignment]
    await ctl.mark()
    # Reads are not writes; only what changed since the mark counts.
    assert await ctl.writes() == {"PATCH uniteddeployments/status": 3, "POST deployments": 6}


def test_the_peer_runs_its_command_with_its_ports_and_namespaces(tmp_path: Path) -> None:
    peer = PeerProcess("mgr --kubeconfig={kubeconfig} -p {port} -m {metrics_port} -n {namespace}",
                       tmp_path / "kc", namespaces=["x", "y"], log_dir=tmp_path, name="cold")  # fmt: skip
    peer.port, peer.metrics_port = 10, 11
    assert peer.argv() == ["mgr", f"--kubeconfig={tmp_path / 'kc'}", "-p", "10", "-m", "11", "-n", "x,y"]
    assert peer.log_path == tmp_path / "cold.log"


def test_peer_manifests_are_read_from_files_and_directories(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "b.yaml").write_text("kind: B\n---\n---\nkind: C\n")
    (tmp_path / "d" / "a.yaml").write_text("kind: A\n")
    (tmp_path / "d" / "skip.txt").write_text("kind: X\n")
    (tmp_path / "e.yaml").write_text("kind: E\n")
    assert [d["kind"] for d in manifests([tmp_path / "d", tmp_path / "e.yaml"])] == ["A", "B", "C", "E"]


def test_a_kubernetes_the_bench_cannot_run_exits_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--kube-version", "1.19.0", "--out", str(tmp_path)])
    assert exc.value.code == 2 and "--kube-version: 1.19.0 cannot be built here" in capsys.readouterr().err
    monkeypatch.setenv("UNITED_KUBE_VERSION", "bogus")
    with pytest.raises(SystemExit) as exc:
        main(["--out", str(tmp_path)])
    assert exc.value.code == 2 and "UNITED_KUBE_VERSION: 'bogus' is not a Kubernetes release" in capsys.readouterr().err


def test_with_profile_only_the_controller_that_takes_the_scale_events_is_recorded(tmp_path: Path) -> None:
    ctx = Context(bench=None, client=None, workers=None, log_dir=tmp_path, profile_dir=tmp_path)  # type: ignore[arg-type]
    assert profiled(ctx, "resync-ours-1") == tmp_path / "resync-ours-1.raw"
    assert profiled(ctx, "cold-ours-1") is None
    ctx.profile_dir = None
    assert profiled(ctx, "resync-ours-1") is None


def spread_results(targeted_p50: float, pps: float, *, unplaced: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    """What ``bench.admission`` and ``bench.scaleout`` return, reduced to what the comparison reads."""

    def case(p50: float) -> dict[str, Any]:
        return {"pods": 4, "p50_ms": p50, "p99_ms": 3 * p50}

    def mode(k: float) -> dict[str, Any]:
        return {"floor": case(2.0), "no_spread": case(3.0), "untargeted": case(3.5), "targeted": case(k * targeted_p50)}

    adm = {"one_at_a_time": mode(1.0), "bursts": mode(2.0), "targeted_pods": 10, "untargeted_placed": 0,
           "placement": {"unplaced": unplaced, "over_filled": {}, "wrong_zone": 0},
           "controller_writes": {"POST pods": 40, "PUT workloadspreads/status": 8, "PATCH workloadspreads/status": 4,
                                 "PUT leases": 1}}  # fmt: skip
    level = {"qps": 20, "floor_pods_per_second": 20.0, "untargeted_pods_per_second": 19.0,
             "targeted_pods_per_second": pps, "over_filled": 0, "unplaced": 0, "wrong_zone": 0,
             "untargeted_placed": 0}  # fmt: skip
    return adm, {"levels": [level, {**level, "targeted_pods_per_second": 999.0}]}


def test_spread_figures_are_read_from_admission_and_the_first_scale_out_level() -> None:
    f = spread_figures(*spread_results(6.0, 18.0, unplaced=2))
    assert (f["ws_targeted_p50_ms"], f["ws_targeted_p99_ms"], f["ws_targeted_burst_p50_ms"]) == (6.0, 18.0, 12.0)
    assert (f["ws_no_spread_p50_ms"], f["ws_no_spread_p99_ms"], f["ws_untargeted_p50_ms"]) == (3.0, 9.0, 3.5)
    assert f["ws_floor_p50_ms"] == 2.0
    assert (f["ws_no_spread_paid_ms"], f["ws_untargeted_paid_ms"]) == (1.0, 1.5), "p50 over the same turn's floor"
    # Only writes to spreads count as bookings (the bench's own pod creations and leases do not).
    assert f["ws_bookings_per_pod"] == 1.2
    assert f["ws_spread_writes"] == {"PATCH workloadspreads/status": 4, "PUT workloadspreads/status": 8}
    assert (f["ws_scaleout_targeted_pps"], f["ws_scaleout_no_spread_pps"], f["ws_scaleout_floor_pps"]) == (
        18.0,
        19.0,
        20.0,
    )
    assert f["ws_misplaced"] == 2
    assert spread_figures(None, None) == {}
    assert set(spread_figures(None, spread_results(1.0, 1.0)[1])) == {
        "ws_scaleout_targeted_pps", "ws_scaleout_no_spread_pps", "ws_scaleout_floor_pps", "ws_misplaced"}  # fmt: skip


def test_a_rate_meets_its_goal_when_ours_is_at_least_the_peers() -> None:
    peer, ours = spread_figures(*spread_results(6.0, 20.0)), spread_figures(*spread_results(4.0, 16.0))
    rows = {r["key"]: r for r in compare(medians([peer]), medians([ours]))}
    assert rows["ws_scaleout_targeted_pps"]["ratio"] == 0.8 and rows["ws_scaleout_targeted_pps"]["met"] is False
    assert rows["ws_scaleout_no_spread_pps"]["met"] is True  # even
    assert rows["ws_targeted_p50_ms"]["met"] is True and rows["ws_floor_p50_ms"]["met"] is None
    assert rows["ws_misplaced"]["ratio"] == 1.0 and rows["ws_misplaced"]["met"] is True  # none on either side
    table = render({"command": "mgr {port}", "rows": list(rows.values()), "floor": {},
                    "sizes": {"repeats": 1, "admission_pods": 4, "admission_burst": 2, "scaleout_replicas": 6,
                              "scaleout_qps": 20},
                    "spread_writes": {"peer": peer["ws_spread_writes"], "ours": {}}})  # fmt: skip
    assert (
        "| scale-out 0 → N with a spread: pods per second | 20.00 pods/s | 16.00 pods/s | 0.80x | ≥ 1x | **no** |"
        in (table)
    )
    assert "Writes per scale event" not in table and "floor (the API server's limit)" not in table  # no UD scenario
    assert "Writes to spreads during the admission scenario, peer: PATCH workloadspreads/status 4, PUT " in table
    assert "Writes to spreads during the admission scenario, ours: none." in table
    assert (
        "WorkloadSpread admission: 4 pods a case one at a time, then bursts of 2; scale-out 0 → 6 at 20 QPS; 1 rep"
        in (table)
    )


def test_the_peers_webhook_configurations_are_installed_empty_for_the_uniteddeployment_scenarios() -> None:
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kruise-system"}},
        {"kind": "MutatingWebhookConfiguration", "metadata": {"name": "m"}, "webhooks": [{"name": "mpod.kb.io"}]},
        {"kind": "ValidatingWebhookConfiguration", "metadata": {"name": "v"}, "webhooks": [{"name": "vpod.kb.io"}]},
    ]
    emptied = without_webhooks(docs)
    assert emptied[0] == docs[0] and [d["webhooks"] for d in emptied[1:]] == [[], []]
    assert docs[1]["webhooks"] == [{"name": "mpod.kb.io"}]  # the manifests themselves stay whole
    assert webhook_configurations(docs) == docs[1:]


def test_profile_without_py_spy_exits_2_and_finds_one_on_path_or_beside_python(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "python"))
    assert py_spy() is None
    with pytest.raises(SystemExit) as exc:
        main(["--profile", "--out", str(tmp_path)])
    assert exc.value.code == 2 and "--profile: needs py-spy" in capsys.readouterr().err
    for where in (tmp_path / "venv", tmp_path / "bin"):
        where.mkdir()
        spy = where / "py-spy"
        spy.write_text("#!/bin/sh\n")
        spy.chmod(0o755)
        assert py_spy() == str(spy)


def test_our_crds_come_from_the_source_tree_the_controller_runs_from(tmp_path: Path) -> None:
    """A tree's schema change is measured with its code, not with the bench's own CRDs."""
    here = our_files(None)
    assert [f.name for f in here] == [
        "apps.kruise.io_uniteddeployments.yaml",
        "apps.kruise.io_workloadspreads.yaml",
        "clusterrole.yaml",
    ]
    assert all(f.is_file() for f in here)
    there = our_files(tmp_path)
    assert [f.name for f in there] == [f.name for f in here]
    assert all(f.is_relative_to(tmp_path) and not f.is_relative_to(ROOT) for f in there)
    assert [f.relative_to(tmp_path) for f in there] == [f.relative_to(ROOT) for f in here]
