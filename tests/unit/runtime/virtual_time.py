"""A virtual-time event loop for the runtime's timing tests: when the loop would sleep
until its next timer, the clock jumps there, so backoffs and lease periods of seconds run
in microseconds and deterministically."""

from __future__ import annotations

import asyncio
import selectors
import sys
from collections.abc import Awaitable, Callable
from types import FrameType
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


class Operations:
    """Counts the function calls (Python and builtin) this thread makes while entered: a
    measure of work that neither the machine's speed nor its load changes (``sys.setprofile``;
    a tracer such as coverage, ``sys.settrace``, is not in the way)."""

    def __init__(self) -> None:
        self.count = 0
        self._previous: Any = None

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" or event == "c_call":
            self.count += 1

    def __enter__(self) -> Operations:
        self._previous = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(self._previous)


class WorkClockLoop(VirtualTimeLoop):
    """A virtual clock that also advances by a fixed price per operation counted: waits cost
    nothing, work costs what it would on a machine making ``1 / seconds_per_operation`` calls a
    second — the same on every machine, loaded or not. Timeouts then measure how much work
    code does while it holds the loop."""

    def __init__(self, operations: Operations, seconds_per_operation: float) -> None:
        super().__init__()
        self.operations = operations
        self.seconds_per_operation = seconds_per_operation

    def time(self) -> float:
        return self.now + self.operations.count * self.seconds_per_operation


def run_work_timed(main: Callable[[], Awaitable[T]], operations: Operations, *, seconds_per_operation: float) -> T:
    """``main()`` on a :class:`WorkClockLoop`, counting ``operations`` throughout."""

    async def wrapper() -> T:
        return await main()

    def factory() -> WorkClockLoop:
        return WorkClockLoop(operations, seconds_per_operation)

    with operations, asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(wrapper())
