"""Writes that act go before writes that report.

In a burst of events each pass makes a write that acts (a child's replicas, a revision) and
then one that reports (the status). On a busy API server the reports of the first passes
queued with the acting writes of the passes that ran beside them: in bursts of 25 scale
events, every child waited behind statuses nobody acts on within the second, and a status is
the dearer write of the two (the custom resource's whole schema validated, its merge patch
applied to the stored object).

So a report first waits for the acting writes already in flight when it is ready — not for
those sent after it, so a stream of them (a cold start) cannot starve it — and at most
``patience`` seconds, so one slow or hanging write delays reports by a bounded time. Only
writes to the same API server as the reports should act here: a write elsewhere does not
compete with them, and one held open by a hostile server would hold every report. A pass
alone on the server waits for nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

__all__ = ["Ordering"]


class Ordering:
    """The acting writes in flight, for reports to wait on; one per controller, on its loop."""

    def __init__(self, *, patience: float = 0.25) -> None:
        self.patience = patience
        self._acting: set[asyncio.Future[None]] = set()

    @contextlib.contextmanager
    def acting(self) -> Iterator[None]:
        """Around an acting write: reports made ready while it is in flight wait for it."""
        done = asyncio.get_running_loop().create_future()
        self._acting.add(done)
        try:
            yield
        finally:
            self._acting.discard(done)
            done.set_result(None)

    async def reporting(self) -> None:
        """Wait until the acting writes in flight now are answered, at most ``patience``."""
        if self._acting:
            await asyncio.wait(tuple(self._acting), timeout=self.patience)
