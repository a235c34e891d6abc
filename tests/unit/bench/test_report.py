"""The report's rows for the WorkloadSpread scenarios and the cold start."""

from __future__ import annotations

from typing import Any

from bench.report import render


def case(p50: float, p99: float, floor: tuple[float, float] = (4.0, 10.0)) -> dict[str, Any]:
    return {"pods": 300, "p50_ms": p50, "p99_ms": p99, "ratio_p50": p50 / floor[0], "ratio_p99": p99 / floor[1],
            "added_p50_ms": p50 - floor[0]}  # fmt: skip


def results(*, over: dict[str, int], unplaced: int = 0, wrong: int = 0) -> dict[str, Any]:
    mode = {"floor": case(4.0, 10.0), "unconfigured": case(4.2, 11.0), "untargeted": case(6.0, 15.0),
            "no_spread": case(5.0, 12.0), "targeted": case(12.0, 40.0)}  # fmt: skip
    level = {"qps": 20, "floor_pods_per_second": 19.5, "untargeted_pods_per_second": 19.0,
             "targeted_pods_per_second": 18.0, "untargeted_ratio": 19.0 / 19.5, "targeted_ratio": 18.0 / 19.5,
             "over_filled": len(over), "unplaced": unplaced, "wrong_zone": wrong, "untargeted_placed": 0}  # fmt: skip
    return {
        "admission": {"pods": 300, "burst": 10, "one_at_a_time": mode, "bursts": mode, "untargeted_placed": 0,
                      "placement": {"counts": {"s0": 207, "s1": 207, "s2": 191}, "maxima": [207, 207, 207],
                                    "unplaced": unplaced, "over_filled": over, "wrong_zone": wrong}},
        "scaleout": {"replicas": 200, "levels": [level]},
        "machine": {"cpus": 2},
    }  # fmt: skip


def test_admission_and_scaleout_rows_show_figures_floors_ratios_and_the_placement_check() -> None:
    table = render(results(over={}))
    assert "| Pod admission, one at a time (300 pods a case) |" in table
    assert "| Pod admission, bursts of 10 (300 pods a case) |" in table
    assert "| 4.2 / 11.0 ms |" in table  # no configuration at all, in the floor column
    assert "| 12.0 / 40.0 ms | 4.0 / 10.0 ms | 3.00x / 4.00x (+8.0 ms p50) |" in table
    assert "| 6.0 / 15.0 ms | 4.0 / 10.0 ms | 1.50x / 1.50x (+2.0 ms p50) |" in table
    assert (
        "| webhook called, namespace without a spread, p50 / p99 (floor: namespace excluded from the webhook) "
        "| 5.0 / 12.0 ms | 4.0 / 10.0 ms | 1.25x / 1.20x (+1.0 ms p50) |" in table
    )
    assert "{'s0': 207, 's1': 207, 's2': 191} ([207, 207, 207]); 0; 0; 0 |  |  | none over, 0, 0, 0 | yes |" in table
    assert "| Scale-out 0 → 200, kube-controller-manager at 20 QPS |" in table
    assert "| 19.0; 18.0 | 19.5 | 0.97x; 0.92x |" in table
    assert "| 0; 0; 0; 0 |  |  | 0; 0; 0; 0 | yes |" in table


def test_an_over_filled_subset_an_unplaced_pod_or_one_in_another_zone_fails_the_check() -> None:
    assert "| none over, 0, 0, 0 | **no** |" in render(results(over={"s0": 208}))
    assert "| 1; 1; 0; 0 |  |  | 0; 0; 0; 0 | **no** |" in render(results(over={"s0": 208}, unplaced=1))
    assert "| 0; 0; 2; 0 |  |  | 0; 0; 0; 0 | **no** |" in render(results(over={}, wrong=2))


def cold(**extra: Any) -> dict[str, Any]:
    return {"cold_start": {
        "uds": 500, "subsets": 3, "workers": 3, "workers_default": True, "floor_concurrency": 64,
        "controller_seconds": 9.0, "floor_seconds": 5.0, "ratio": 1.8, "pair_ratios": [1.8, 1.8],
        "controller_reconcile_writes": 2500, "expected_writes": 2500, "controller_cpu_seconds": 4.0,
        "controller_server_cpu_seconds": 10.0, "floor_cpu_seconds": 1.6, "floor_server_cpu_seconds": 7.0,
        "controller_event_writes": 500, "duplicate_children_created": 0, "controller_passes_per_ud": 1.25,
        **extra}, "machine": {"cpus": 2}}  # fmt: skip


def test_cold_start_rows_give_the_passes_per_ud_and_the_floor_with_watches_when_it_ran() -> None:
    assert "| 500; 0; 1.25 |" in render(cold())
    assert "floor with a controller's watches" not in render(cold())
    watched = render(cold(floor_watch_seconds=6.0, floor_watch_cpu_seconds=2.5, floor_watch_server_cpu_seconds=9.0,
                          ratio_to_floor_watch=1.5))  # fmt: skip
    assert "| 9.00 s | 6.00 s; 2.5 s; 9.0 s | 1.50x |" in watched


def test_the_scale_rows_give_the_bare_custom_resource_leg_beside_the_floor() -> None:
    one = {"events": 40, "p50_ms": 10.0, "p99_ms": 16.0, "floor_p50_ms": 3.0, "floor_p99_ms": 4.0, "ratio_p50": 3.3,
           "ratio_p99": 4.0, "ud_write_p50_ms": 5.0, "controller_leg_p50_ms": 5.0, "bare_ud_p50_ms": 39.0,
           "bare_ud_p99_ms": 86.0, "bare_ud_ratio_p50": 13.0, "writes_per_event": 2.0, "goal_writes_per_event": 2.0,
           "event_writes_per_event": 1.0}  # fmt: skip
    table = render({"scale": {"one_at_a_time": one, "bursts": {"size": 25, **one}}, "machine": {"cpus": 2}})
    bare = "where no controller runs → UD via watch, p50 / p99 (the custom resource's own cost)"
    assert f"{bare} | 39 / 86 ms | 3 / 4 ms | 13.00x |" in table


def test_the_scale_rows_give_each_event_s_cpu_by_process_against_the_floor_s() -> None:
    one = {"events": 25, "p50_ms": 100.0, "p99_ms": 160.0, "floor_p50_ms": 20.0, "floor_p99_ms": 30.0,
           "ratio_p50": 5.0, "ratio_p99": 5.3, "writes_per_event": 2.0, "goal_writes_per_event": 2.0,
           "event_writes_per_event": 1.0,
           "cpu_ms_per_event": {"controller": {"kube-apiserver": 9.0, "controller": 3.0, "total": 15.0},
                                "floor": {"kube-apiserver": 1.0, "total": 2.5},
                                "bare": {"kube-apiserver": 2.5, "total": 4.0}}}  # fmt: skip
    table = render({"scale": {"one_at_a_time": one, "bursts": {"size": 25, **one}}, "machine": {"cpus": 2}})
    row = "the bare UD /scale: 4.0 ms (2.5) | 15.0 ms (9.0; 3.0) | 2.5 ms (1.0) | 6.00x (bare UD 1.60x) |"
    assert row in table
    partial = {**one, "cpu_ms_per_event": {"controller": {"total": 1.0}, "floor": {}, "bare": {}}}
    assert "CPU per event" not in render({"scale": {"one_at_a_time": partial, "bursts": {"size": 25, **partial}}})
    unmeasured = {**one, "cpu_ms_per_event": {**one["cpu_ms_per_event"], "floor": {"total": 0.0}}}  # under a tick
    assert "CPU per event" not in render({"scale": {"one_at_a_time": unmeasured, "bursts": {"size": 25, **unmeasured}}})


def test_the_growth_rows_give_the_watching_floor_when_it_ran() -> None:
    plain = {"uds": 2000, "controller_seconds": 33.0, "floor_seconds": 21.0, "ratio": 1.57, "cpu_per_write_ratio": 3.2}
    watched = {**plain, "floor_watch_seconds": 30.0, "ratio_to_floor_watch": 1.1}
    grown = {"controller_ms_per_ud": 16.8, "floor_ms_per_ud": 13.3}
    table = render({"growth": {"sizes": [watched], **grown}, "machine": {"cpus": 2}})
    assert "| 33.00 s | 21.00 s; 30.00 s (1.43x) | 1.57x; CPU 3.20x; 1.10x |" in table
    assert "(1.43x)" not in render({"growth": {"sizes": [plain], **grown}, "machine": {"cpus": 2}})
