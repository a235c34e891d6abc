"""Write the webhook's bookings: one status write per spread for every booking that queued
while the previous write was in flight (a group commit).

A booking must be written before its pod is answered, and two bookings of one spread cannot
be written side by side (the second would 409 on the first's resourceVersion). Written one
by one, a spread admits as many pods per second as the API server does status writes in a
row — about 15-20 under load — and a faster creator (a ReplicaSet at 1 000 QPS, a Job
with parallelism 200) meets the webhook's timeout: the API server lets its pods in
unplaced, and the late bookings hold slots until the controller's recount frees them.

So each spread has a queue and at most one writer. The writer takes everything queued,
books the requests one after another against the freshest spread (each against the status
the previous one left), writes the end status once with the spread's resourceVersion and
answers all of them; on 409 it reads the spread afresh and books the same requests again.
The writer takes its turn with the reconciler's status writes of the same spread
(:mod:`~united.workloadspread.statuses`): it waits for a recount in flight and books against
its answer instead of losing to it.
A request that waited past :data:`PATIENCE` is answered "no booking" without being written:
the API server is about to give up on it, and a booking it never sees would hold a slot.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import structlog

from united.api.document import Json
from united.kube import ApiError, Conflict, KubeClient, NotFound, PatchType, Resource
from united.workloadspread.booking import Booking
from united.workloadspread.model import WorkloadSpread
from united.workloadspread.reconciler import status_patch
from united.workloadspread.statuses import Statuses
from united.workloadspread.webhookconfig import TIMEOUT_SECONDS

log = structlog.get_logger(__name__)

ATTEMPTS = 5
"""Status writes per batch before its pods are let in unplaced."""
BACKOFF = 0.02
"""Seconds before the third attempt, doubled each time (about 0.3 s in all). The second follows
the fresh read at once: the write it lost to is most often this process's own recount, which
is done, and a pod under review waits for every pause (the slowest one-at-a-time admissions
were those that slept here)."""
PATIENCE = TIMEOUT_SECONDS - 1.0
"""Seconds a request may wait for its write to start: a second under the webhook's timeout,
so the answer still reaches the API server."""


@dataclass(slots=True)
class _Request:
    book: Callable[[WorkloadSpread], Booking]
    dry_run: bool
    since: float
    answer: asyncio.Future[Booking | None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


@dataclass(slots=True)
class _Queue:
    resource: Resource
    spread: WorkloadSpread
    requests: list[_Request] = field(default_factory=list)
    writer: asyncio.Task[None] | None = None


class Ledger:
    """The bookings of one process, by spread.

    ``admitted`` turns a spread as the API server returned it into the model (the caches'
    admission, ``None`` if it no longer admits)."""

    def __init__(
        self,
        client: KubeClient,
        admitted: Callable[[Json], WorkloadSpread | None],
        *,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        patience: float = PATIENCE,
        statuses: Statuses | None = None,
    ) -> None:
        self.client = client
        self.admitted = admitted
        self.clock = clock or (lambda: asyncio.get_running_loop().time())
        self.sleep = sleep
        self.patience = patience
        self.statuses = statuses if statuses is not None else Statuses()
        """Shared with the reconciler: turns at a spread's status and the last answer, newer
        than a cache that has not shown it yet, so the next batch does not 409."""
        self._queues: dict[str, _Queue] = {}

    async def book(
        self, resource: Resource, ws: WorkloadSpread, book: Callable[[WorkloadSpread], Booking], *, dry_run: bool
    ) -> Booking | None:
        """``book`` applied to the freshest spread and written; None: it could not be written
        in time, and the pod goes unplaced."""
        key = f"{ws.namespace}/{ws.name}"
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = _Queue(resource, ws)
        queue.spread = ws
        request = _Request(book, dry_run, self.clock())
        queue.requests.append(request)
        if queue.writer is None:
            queue.writer = asyncio.create_task(self._drain(key, queue))
        return await asyncio.shield(request.answer)

    async def _drain(self, key: str, queue: _Queue) -> None:
        try:
            while queue.requests:
                batch, queue.requests = queue.requests, []
                try:
                    await self._commit(key, queue, batch)
                except Exception:
                    log.exception("booking failed; pods admitted unplaced", workloadspread=key)
                finally:
                    for r in batch:
                        if not r.answer.done():
                            r.answer.set_result(None)
        finally:
            queue.writer = None
            if not queue.requests and self._queues.get(key) is queue:
                del self._queues[key]

    async def _commit(self, key: str, queue: _Queue, batch: list[_Request]) -> None:
        async with self.statuses.turn(key):
            await self._write(key, queue, batch)

    async def _write(self, key: str, queue: _Queue, batch: list[_Request]) -> None:
        ws = self._freshest(key, queue.spread)
        delay = BACKOFF
        for attempt in range(ATTEMPTS):
            batch = self._in_time(key, batch)
            if not batch:
                return
            end, bookings = _book_all(ws, batch)
            if end is ws:
                _answer(batch, bookings)
                return
            try:
                answer = await self.client.patch(
                    queue.resource,
                    ws.name,
                    status_patch(ws, end.status),
                    patch_type=PatchType.MERGE,
                    namespace=ws.namespace,
                    subresource="status",
                )
                self.statuses.record(key, answer)
                _answer(batch, bookings)
                return
            except Conflict:
                pass
            except NotFound:
                return
            except ApiError as e:
                log.warning("booking not written; pods admitted unplaced", workloadspread=key, error=str(e))
                return
            if attempt + 1 == ATTEMPTS:
                break
            if attempt:
                await self.sleep(delay)
                delay *= 2
            try:
                live = await self.client.get(queue.resource, ws.name, namespace=ws.namespace)
            except ApiError as e:
                log.warning("spread unreadable; pods admitted unplaced", workloadspread=key, error=str(e))
                return
            fresh = self.admitted(live)
            if fresh is None:
                return
            self.statuses.record(key, live)
            ws = fresh
        log.warning("booking kept conflicting; pods admitted unplaced", workloadspread=key, attempts=ATTEMPTS)

    def _in_time(self, key: str, batch: list[_Request]) -> list[_Request]:
        """The requests still worth writing; the others are answered "no booking"."""
        late = self.clock() - self.patience
        expired = [r for r in batch if r.since < late and not r.answer.done()]
        for r in expired:
            r.answer.set_result(None)
        if expired:
            log.warning("bookings waited too long; pods admitted unplaced", workloadspread=key, pods=len(expired))
        return [r for r in batch if not r.answer.done()]

    def _freshest(self, key: str, ws: WorkloadSpread) -> WorkloadSpread:
        """``ws`` from the cache, or as the last write of this process (ours or the
        reconciler's) returned it if the cache is behind that."""
        cached = {"metadata": {"resourceVersion": ws.resource_version, "uid": ws.uid}}
        written = self.statuses.freshest(key, cached)
        if written is cached:
            return ws
        fresh = self.admitted(written)
        return fresh if fresh is not None else ws


def _book_all(ws: WorkloadSpread, batch: list[_Request]) -> tuple[WorkloadSpread, list[Booking | None]]:
    """Each request booked against the status the previous one left; a dry run sees the
    others' bookings but leaves none. A request whose booking raises gets none (its pod goes
    unplaced) and the others are booked as if it had not come: one bad review costs one pod."""
    bookings: list[Booking | None] = []
    end = ws
    for r in batch:
        try:
            booking: Booking | None = r.book(end)
        except Exception:
            log.exception("booking failed; pod admitted unplaced", workloadspread=f"{ws.namespace}/{ws.name}")
            booking = None
        bookings.append(booking)
        if booking is not None and booking.status is not None and not r.dry_run:
            end = dataclasses.replace(end, status=booking.status)
    return end, bookings


def _answer(batch: list[_Request], bookings: list[Booking | None]) -> None:
    for r, b in zip(batch, bookings, strict=True):
        if not r.answer.done():
            r.answer.set_result(b)


__all__ = ["ATTEMPTS", "PATIENCE", "Ledger"]
