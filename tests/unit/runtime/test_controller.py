"""The workers' failure lines: passes that got no answer join the manager's failure log, so an
outage amid many queued keys is a line per step and one recovery, not a line per retry."""

from __future__ import annotations

import asyncio

import structlog

from tests.unit.controller.test_manager import Passes, manager, ud
from tests.unit.runtime.test_failures import Clock, Lines
from united.kube.errors import ApiError, Forbidden, transport_error
from united.runtime.failures import FailureLog
from united.runtime.queue import ExponentialFailureRateLimiter, WorkQueue

KEYS = [f"ns/web-{n}" for n in range(30)]


class Outage:
    """Passes that get no answer, then the ``answer`` per key (None: the pass succeeds)."""

    def __init__(self) -> None:
        self.down = True
        self.answer: dict[str, ApiError] = {}
        self.passes: list[tuple[str, bool]] = []
        self.every_key_answered = asyncio.Event()

    async def reconcile(self, key: str) -> None:
        down = self.down
        self.passes.append((key, down))
        if all((k, False) in self.passes for k in KEYS):
            self.every_key_answered.set()
        await asyncio.sleep(0)
        if down:
            raise transport_error(ConnectionRefusedError(111, "refused"), "https://127.0.0.1:6443")
        if key in self.answer:
            raise self.answer[key]


async def run(outage: Outage, *, forbidden: set[str]) -> tuple[Lines, list[dict[str, object]]]:
    m = manager(Passes())
    controller = ud(m)
    controller.reconciler = outage
    controller.queue = WorkQueue(rate_limiter=ExponentialFailureRateLimiter(base_delay=0.001, max_delay=0.02))
    lines = Lines()
    m.failures = FailureLog(logger=lines, clock=Clock())
    with structlog.testing.capture_logs() as logs:
        workers = [asyncio.create_task(controller._worker()) for _ in range(2)]
        for key in KEYS:
            controller.queue.add(key)
        await asyncio.sleep(0.3)
        outage.down = False
        outage.answer = dict.fromkeys(forbidden, Forbidden("403 Forbidden: no", status=403, reason="Forbidden"))
        await asyncio.wait_for(outage.every_key_answered.wait(), 5)
        controller.queue.shutdown(drop_queued=True)
        await asyncio.gather(*workers, return_exceptions=True)
    return lines, logs


async def test_an_outage_amid_many_keys_is_one_line_then_one_recovery() -> None:
    outage = Outage()
    lines, logs = await run(outage, forbidden=set())
    unanswered = sum(1 for _, down in outage.passes if down)
    assert unanswered > 3 * len(KEYS), "each key retried through the outage"
    assert [(level, event) for level, event, _ in lines.lines] == [
        ("warning", "cannot reach https://127.0.0.1:6443: connection refused; retrying with backoff"),
        ("info", "recovered: cannot reach https://127.0.0.1:6443: connection refused"),
    ]
    assert lines.lines[0][2]["resource"] == "uniteddeployment ns/web-0"
    assert lines.lines[1][2]["failures"] == unanswered
    assert not [log for log in logs if log["log_level"] == "warning"], logs


async def test_a_key_refused_after_the_outage_is_logged_and_no_longer_holds_the_recovery() -> None:
    outage = Outage()
    lines, logs = await run(outage, forbidden={"ns/web-7"})
    assert lines.lines[-1][1] == "recovered: cannot reach https://127.0.0.1:6443: connection refused"
    refused = [log for log in logs if log["event"] == "reconcile failed; requeued with backoff"]
    assert refused and {log["ud"] for log in refused} == {"ns/web-7"}
    assert refused[0]["error"] == "403 Forbidden: no"
