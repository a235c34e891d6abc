"""A virtual-time event loop for the runtime's timing tests: when the loop would sleep
until its next timer, the clock jumps there, so backoffs and lease periods of seconds run
in microseconds and deterministically."""

from __future__ import annotations

import asyncio
import selectors
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")
MAX_LOOP_ITERATIONS = 500_000


class _FastForwardSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """Polls without blocking; when the loop would sleep until its next timer, moves
    the virtual clock there instead."""

    loop: VirtualTimeLoop

    def select(self, timeout: float | None = None) -> list[tuple[Any, int]]:
        # Busy work never lets virtual time pass, so a runaway loop would spin
        # forever instead of hitting a timeout: fail it instead.
        self.loop.iterations += 1
        if self.loop.iterations > MAX_LOOP_ITERATIONS:
            raise RuntimeError(f"virtual loop ran {MAX_LOOP_ITERATIONS} iterations: a busy loop?")
        events: list[tuple[Any, int]] = super().select(0)
        if events:
            return events
        if timeout is None:
            raise RuntimeError("virtual loop would block forever: nothing is scheduled (a deadlock)")
        if timeout > 0:
            self.loop.now += timeout
        return events


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        selector = _FastForwardSelector()
        super().__init__(selector)
        selector.loop = self
        self.now = 0.0
        self.iterations = 0

    def time(self) -> float:
        return self.now


def run_virtual(main: Callable[[], Awaitable[T]]) -> T:
    async def wrapper() -> T:
        return await main()

    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        return runner.run(wrapper())


def now() -> float:
    return asyncio.get_running_loop().time()


class CpuTimeLoop(VirtualTimeLoop):
    """A virtual clock that also advances with this process's CPU time: waits cost nothing,
    work costs what it costs. Timeouts then measure how long code holds the loop, and a
    loaded machine (other processes' CPU) cannot change the outcome."""

    def __init__(self) -> None:
        super().__init__()
        self._cpu0 = time.process_time()

    def time(self) -> float:
        return self.now + time.process_time() - self._cpu0


def run_cpu_timed(main: Callable[[], Awaitable[T]]) -> T:
    async def wrapper() -> T:
        return await main()

    with asyncio.Runner(loop_factory=CpuTimeLoop) as runner:
        return runner.run(wrapper())
