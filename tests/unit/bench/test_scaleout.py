"""The scale-out scenario's pure parts: the rate, the summary per variant and the second
kube-controller-manager's flags."""

from __future__ import annotations

import math

import pytest

from bench.scaleout import kcm_argv, rate, summarise
from united.devcluster.versions import KubeVersion


def test_rate_from_the_request_and_between_first_and_last_pod() -> None:
    out = rate([10.5, 12.0, 11.0, 10.0 + 0.5 + 4.5], start=10.0)  # the last arrives 5 s after the request
    assert out == {"pods": 4, "seconds": 5.0, "first_pod_seconds": 0.5, "pods_per_second": 0.8,
                   "first_to_last_pods_per_second": pytest.approx(3 / 4.5)}  # fmt: skip
    assert math.isnan(rate([3.0], start=1.0)["first_to_last_pods_per_second"])
    assert rate([], start=0.0) == {"pods": 0}


def test_summary_takes_each_variants_median_and_counts_misplaced_pods() -> None:
    ok = {"counts": {"s0": 3}, "maxima": [3], "unplaced": 0, "over_filled": {}, "wrong_zone": 0}
    runs = [
        {"variant": "floor", "pods_per_second": 40.0, "placed": 0},
        {"variant": "floor", "pods_per_second": 50.0, "placed": 0},
        {"variant": "floor", "pods_per_second": 60.0, "placed": 0},
        {"variant": "untargeted", "pods_per_second": 40.0, "placed": 1},
        {"variant": "targeted", "pods_per_second": 20.0, "placement": ok},
        {"variant": "targeted", "pods_per_second": 25.0,
         "placement": {**ok, "unplaced": 2, "over_filled": {"s0": 4}, "wrong_zone": 3}},
    ]  # fmt: skip
    out = summarise(runs)
    assert out["floor_pods_per_second"] == 50.0
    assert out["targeted_pods_per_second"] == 25.0  # the upper median of two
    assert (out["untargeted_ratio"], out["targeted_ratio"]) == (0.8, 0.5)
    assert (out["over_filled"], out["unplaced"], out["wrong_zone"], out["untargeted_placed"]) == (1, 2, 3, 1)


def test_the_second_controller_manager_runs_only_the_workload_controllers_at_the_given_rate() -> None:
    argv = kcm_argv("/bin/kcm", "/k/admin.kubeconfig", qps=20, port=1234)
    assert argv[0] == "/bin/kcm"
    assert {"--controllers=deployment,replicaset", "--kube-api-qps=20", "--kube-api-burst=30",
            "--secure-port=1234", "--leader-elect=false", "--kubeconfig=/k/admin.kubeconfig"} <= set(argv)  # fmt: skip


def test_the_insecure_port_flag_is_given_only_to_releases_that_have_it() -> None:
    old = kcm_argv("/bin/kcm", "/k/c", qps=20, port=1, version=KubeVersion.parse("1.20.2"))
    new = kcm_argv("/bin/kcm", "/k/c", qps=20, port=1, version=KubeVersion.parse("1.37.2"))
    assert "--port=0" in old and not any(a.startswith("--port=") for a in new)
    assert set(old) - {"--port=0"} == set(new)
