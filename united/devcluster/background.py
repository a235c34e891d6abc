"""The lifecycle the simulators share: background tasks started by ``start()``, cancelled
and awaited by ``stop()``, and ``async with`` around both."""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType
from typing import Self


class Background:
    """Base of a simulator made of background tasks kept in ``_tasks``."""

    _tasks: list[asyncio.Task[None]]

    async def start(self) -> None:
        raise NotImplementedError

    async def stop(self) -> None:
        """Cancel every background task and wait until each has ended."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def __aenter__(self) -> Self:
        """A start cancelled or failed half-way stops the tasks it had begun: ``async with``
        runs no ``__aexit__`` then, and the client they use is about to be closed."""
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
