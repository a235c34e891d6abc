"""Reports wait for the acting writes in flight when they are ready, for no later one, and
never longer than the patience; on a virtual clock, so the times asserted are exact."""

from __future__ import annotations

import asyncio

from tests.unit.runtime.virtual_time import now, run_virtual
from united.runtime.ordering import Ordering


async def write(ordering: Ordering, seconds: float) -> None:
    with ordering.acting():
        await asyncio.sleep(seconds)


def test_a_report_with_nothing_in_flight_waits_for_nothing() -> None:
    async def main() -> float:
        await Ordering().reporting()
        return now()

    assert run_virtual(main) == 0.0


def test_a_report_waits_for_the_writes_in_flight_when_it_is_ready() -> None:
    async def main() -> float:
        ordering = Ordering(patience=1.0)
        writes = [asyncio.create_task(write(ordering, s)) for s in (0.05, 0.1)]
        await asyncio.sleep(0)
        await ordering.reporting()
        at = now()
        await asyncio.gather(*writes)
        return at

    assert run_virtual(main) == 0.1


def test_a_write_sent_after_the_report_is_ready_does_not_hold_it() -> None:
    async def main() -> float:
        ordering = Ordering(patience=1.0)
        first = asyncio.create_task(write(ordering, 0.1))
        await asyncio.sleep(0)
        report = asyncio.create_task(ordering.reporting())
        await asyncio.sleep(0)
        later = asyncio.create_task(write(ordering, 0.5))
        await report
        at = now()
        await asyncio.gather(first, later)
        return at

    assert run_virtual(main) == 0.1


def test_a_hanging_write_holds_a_report_for_the_patience_only() -> None:
    async def main() -> tuple[float, bool]:
        ordering = Ordering(patience=0.25)
        hanging = asyncio.create_task(write(ordering, 3600))
        await asyncio.sleep(0)
        await ordering.reporting()
        at, still = now(), not hanging.done()
        hanging.cancel()
        return at, still

    assert run_virtual(main) == (0.25, True)


def test_a_failed_or_cancelled_write_releases_its_reports() -> None:
    async def main() -> float:
        ordering = Ordering(patience=10.0)

        async def failing() -> None:
            with ordering.acting():
                await asyncio.sleep(0.1)
                raise RuntimeError("refused")

        failed = asyncio.create_task(failing())
        cancelled = asyncio.create_task(write(ordering, 3600))
        await asyncio.sleep(0)
        asyncio.get_running_loop().call_later(0.2, cancelled.cancel)
        await ordering.reporting()
        await asyncio.gather(failed, cancelled, return_exceptions=True)
        return now()

    assert run_virtual(main) == 0.2
