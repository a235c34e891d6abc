"""The simulators' shared lifecycle."""

import asyncio

from united.devcluster.background import Background


class Sleeper(Background):
    def __init__(self) -> None:
        self._tasks = []
        self.ended = 0

    async def start(self) -> None:
        self._tasks = [asyncio.create_task(self._sleep()) for _ in range(3)]

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
