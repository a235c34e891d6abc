"""The admission latency figure read from two ``/metrics`` texts (no cluster needed)."""

from __future__ import annotations

from tests.e2e.workloadspread.harness import Latency

NAME = "controller_runtime_webhook_latency_seconds"


def metrics(buckets: dict[str, int], total: float, *, other: int = 0) -> str:
    lines = [f'{NAME}_bucket{{le="{le}",webhook="/mutate-pods"}} {n}.0' for le, n in buckets.items()]
    lines += [f'{NAME}_bucket{{le="0.005",webhook="/convert"}} {other}.0',
              f'{NAME}_count{{webhook="/mutate-pods"}} {max(buckets.values())}.0',
              f'{NAME}_sum{{webhook="/mutate-pods"}} {total}']  # fmt: skip
    return "\n".join(lines)


def test_requests_between_two_readings_with_mean_and_quantile_buckets() -> None:
    before = Latency(metrics({"0.005": 10, "0.05": 10, "0.5": 10, "+Inf": 10}, 0.01, other=3), "/mutate-pods")
    after = Latency(metrics({"0.005": 40, "0.05": 108, "0.5": 110, "+Inf": 110}, 2.01, other=9), "/mutate-pods")
    assert after.since(before) == {"requests": 100, "mean_ms": 20.0, "p50_le_ms": 50.0, "p99_le_ms": 500.0}


def test_no_request_in_between() -> None:
    reading = Latency(metrics({"0.005": 1, "+Inf": 1}, 0.001), "/mutate-pods")
    assert reading.since(reading) == {"requests": 0}
