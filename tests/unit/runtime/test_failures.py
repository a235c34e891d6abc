"""Repeated failures: one line per doubling step with a count, shared by every resource that
fails the same way, and one line when they have all recovered."""

from __future__ import annotations

from typing import Any

from united.kube.errors import Forbidden, TransientError
from united.runtime.failures import LISTED, FailureLog, error_type

REFUSED = TransientError("cannot reach https://127.0.0.1:6999: connection refused", reason="ConnectionRefused")


class Lines:
    """A logger that keeps ``(level, event, fields)``."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict[str, Any]]] = []

    def warning(self, event: str, **fields: Any) -> None:
        self.lines.append(("warning", event, fields))

    def info(self, event: str, **fields: Any) -> None:
        self.lines.append(("info", event, fields))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make() -> tuple[FailureLog, Lines, Clock]:
    lines, clock = Lines(), Clock()
    return FailureLog(logger=lines, first_step=1.0, max_step=8.0, clock=clock), lines, clock


def test_the_first_failure_is_logged_at_once_in_words_with_machine_fields() -> None:
    failures, out, _ = make()
    failures.failed(resource="pods", error=REFUSED, attempt=1)
    assert out.lines == [
        (
            "warning",
            "cannot reach https://127.0.0.1:6999: connection refused; retrying with backoff",
            {"resource": "pods", "error_type": "ConnectionRefused", "attempt": 1},
        )
    ]


def test_several_resources_failing_the_same_way_are_one_line_per_step() -> None:
    """Seven informers retrying every 0.25 s for 20 s: 560 failures, a handful of lines."""
    failures, out, clock = make()
    resources = [f"r{i}" for i in range(7)]
    attempt = 0
    while clock.now < 120.0:
        attempt += 1
        for resource in resources:
            failures.failed(resource=resource, error=REFUSED, attempt=attempt)
        clock.now += 0.25
    # at 0, then steps of 1, 2, 4, 8, 8, 8 (max_step) seconds: 0, 1, 3, 7, 15, 23 (> 20: not reached)
    assert len(out.lines) == 5
    later = out.lines[1][2]
    assert later["resources"] == resources
    assert later["failures"] == 6 + 3 * 7 + 1  # the rest of t=0, three rounds, then the line at t=1
    assert later["error_type"] == "ConnectionRefused"
    assert sum(line[2].get("failures", 1) for line in out.lines) < 7 * attempt


def test_different_failures_are_separate_groups() -> None:
    failures, out, _ = make()
    forbidden = Forbidden("403 Forbidden: clonesets is forbidden", status=403, reason="Forbidden")
    failures.failed(resource="pods", error=REFUSED, attempt=1)
    failures.failed(resource="clonesets", error=forbidden, attempt=1)
    assert [line[2]["error_type"] for line in out.lines] == ["ConnectionRefused", "Forbidden"]
    assert failures.failing == {str(REFUSED): {"pods"}, str(forbidden): {"clonesets"}}


def test_recovery_is_one_line_once_every_resource_works_again() -> None:
    failures, out, clock = make()
    failures.failed(resource="pods", error=REFUSED, attempt=1)
    failures.failed(resource="deployments", error=REFUSED, attempt=1)
    clock.now += 12.5
    failures.recovered("pods")
    assert len(out.lines) == 1
    failures.recovered("deployments")
    failures.recovered("deployments")
    assert out.lines[-1] == (
        "info",
        "recovered: cannot reach https://127.0.0.1:6999: connection refused",
        {"resource": "deployments", "error_type": "ConnectionRefused", "failures": 2, "seconds": 12.5},
    )
    assert failures.failing == {}
    failures.failed(resource="pods", error=REFUSED, attempt=1)
    assert out.lines[-1][1].endswith("retrying with backoff"), "a new outage is logged at once again"


def test_a_resource_that_fails_differently_moves_to_that_group_without_a_recovery() -> None:
    """A cut watch, then connection refused on the re-list: still failing, not recovered."""
    failures, out, _ = make()
    cut = TransientError("cannot reach https://127.0.0.1:6999: the answer was cut short", reason="Disconnected")
    failures.failed(resource="pods", error=cut, attempt=1)
    failures.failed(resource="deployments", error=cut, attempt=1)
    failures.failed(resource="pods", error=REFUSED, attempt=2)
    failures.failed(resource="deployments", error=REFUSED, attempt=2)
    assert [line[1] for line in out.lines] == [
        "cannot reach https://127.0.0.1:6999: the answer was cut short; retrying with backoff",
        "cannot reach https://127.0.0.1:6999: connection refused; retrying with backoff",
    ]
    assert failures.failing == {str(REFUSED): {"pods", "deployments"}}
    failures.recovered("pods")
    failures.recovered("deployments")
    assert [line[1] for line in out.lines[2:]] == ["recovered: cannot reach https://127.0.0.1:6999: connection refused"]


def test_error_type_is_the_reason_or_the_class() -> None:
    assert error_type(REFUSED) == "ConnectionRefused"
    assert error_type(TransientError("x")) == "TransientError"
    assert error_type(ValueError("x")) == "ValueError"


def test_a_line_names_a_bounded_number_of_resources_and_counts_the_rest() -> None:
    failures, out, clock = make()
    keys = [f"uniteddeployment ns/web-{n:04}" for n in range(1000)]
    for key in keys:
        failures.failed(resource=key, error=REFUSED, attempt=1)
    clock.now += 1.0
    failures.failed(resource=keys[0], error=REFUSED, attempt=2)
    assert len(out.lines) == 2
    fields = out.lines[1][2]
    assert fields["resources"] == keys[:LISTED]
    assert fields["unlisted"] == 1000 - LISTED
    assert fields["failures"] == 1000
