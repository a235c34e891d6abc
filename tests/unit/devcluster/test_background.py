"""The simulators' shared lifecycle."""

import asyncio
import contextlib

from united.devcluster.background import Background


class Sleeper(Background):
    def __init__(self, *, hang: bool = False) -> None:
        self._tasks = []
        self.ended = 0
        self.hang = hang
        self.begun = asyncio.Event()

    async def start(self) -> None:
        self._tasks = [asyncio.create_task(self._sleep()) for _ in range(3)]
        self.begun.set()
        if self.hang:
            await asyncio.sleep(3600)

    async def _sleep(self) -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            self.ended += 1


async def test_async_with_starts_then_cancels_and_awaits_every_task() -> None:
    async with Sleeper() as s:
        tasks = list(s._tasks)
        await asyncio.sleep(0)
        assert s.ended == 0
    assert s.ended == 3 and all(t.done() for t in tasks) and s._tasks == []
    await s.stop()  # stopping twice is harmless


async def test_a_start_cancelled_half_way_leaves_no_task_running() -> None:
    sleeper = Sleeper(hang=True)

    async def enter() -> None:
        async with sleeper:
            raise AssertionError("never entered")

    entering = asyncio.create_task(enter())
    await sleeper.begun.wait()
    tasks = list(sleeper._tasks)
    entering.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await entering
    assert sleeper.ended == 3 and all(t.done() for t in tasks) and sleeper._tasks == []
