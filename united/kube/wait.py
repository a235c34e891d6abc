"""Polling helpers: the control plane runs on the wall clock, so tests and startup
code wait for a condition with a deadline instead of sleeping a guessed time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeoutError(AssertionError):
    """The condition did not hold in time; the last failure is chained as ``__cause__``.

    An ``AssertionError`` so that pytest reports it as a test failure, not an error.
    """


def wait_until(
    check: Callable[[], T],
    *,
    timeout: float,
    interval: float = 0.2,
    what: str = "condition",
    retry_on: tuple[type[BaseException], ...] = (AssertionError,),
) -> T:
    """Call ``check`` until it returns a truthy value without raising one of
    ``retry_on``; return that value. Blocking; for startup code, not event loops."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            value = check()
            if value:
                return value
            last = None
        except retry_on as exc:
            last = exc
        if time.monotonic() >= deadline:
            raise WaitTimeoutError(f"{what}: not true after {timeout:g}s: {last or 'falsy result'}") from last
        time.sleep(interval)


async def eventually(
    check: Callable[[], Awaitable[T]],
    *,
    within: float = 30.0,
    interval: float = 0.25,
    what: str = "condition",
    retry_on: tuple[type[BaseException], ...] = (AssertionError,),
) -> T:
    """Await ``check()`` until it neither raises one of ``retry_on`` nor
    returns a falsy value other than ``None``; return what it returned.

    ``check`` is typically a small async function full of ``assert`` statements:
    the last assertion message is what the timeout reports.
    """
    deadline = asyncio.get_running_loop().time() + within
    last: BaseException | None = None
    while True:
        try:
            value = await check()
            if value is None or value:
                return value
            last = None
        except retry_on as exc:
            last = exc
        if asyncio.get_running_loop().time() >= deadline:
            raise WaitTimeoutError(f"{what}: not true after {within:g}s: {last or 'falsy result'}") from last
        await asyncio.sleep(interval)
