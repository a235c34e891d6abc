"""A rate-limited, de-duplicating work queue of keys, after client-go's ``workqueue``.

Why a queue of *keys* and not of events: reconciliation is level-triggered. Ten
events about ``ns/a`` while a worker is busy with ``ns/a`` must collapse into one
more reconcile of ``ns/a`` once that worker is done, never into ten, and never into a
second worker reconciling ``ns/a`` at the same time. client-go gets this with two
sets, and so does this module (the design is copied, the code is not):

* ``dirty`` — keys that need processing; adding a dirty key is a no-op;
* ``processing`` — keys handed out by :meth:`WorkQueue.get` and not yet
  :meth:`WorkQueue.done`. A key added while it is processing is only marked dirty;
  ``done`` puts it back in the queue, once.

Delays (``add_after``) live in a heap of ready times driven by ``loop.call_at``; as
in client-go's delaying queue, a key waiting already keeps the *earlier* of its two
ready times, so a later ``add_after`` with a shorter delay wins and a longer one is
ignored. Retries (``add_rate_limited``) take their delay from a :class:`RateLimiter`;
the default is client-go's ``DefaultControllerRateLimiter``: the maximum of a
per-key exponential backoff (5 ms doubling to 1000 s, reset by ``forget``) and a
global token bucket (10 qps, burst 100) that keeps a storm of failures from
hammering the API server.

All time comes from the running loop (``loop.time()``, ``loop.call_at``), never
from ``time.monotonic()``, so tests can run the queue on a virtual clock. The
queue is single-loop and not thread-safe, like everything else in asyncio.

Metrics are a hook, not a dependency: pass an object implementing
:class:`QueueMetrics` to feed prometheus ``workqueue_*`` series from another module.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import deque
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

K = TypeVar("K", bound=Hashable)
K_contra = TypeVar("K_contra", bound=Hashable, contravariant=True)

__all__ = [
    "BucketRateLimiter",
    "ExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "NoQueueMetrics",
    "QueueMetrics",
    "RateLimiter",
    "ShutDown",
    "WorkQueue",
    "default_controller_rate_limiter",
]


class ShutDown(Exception):  # noqa: N818 - named like client-go's "shutdown" answer, it is not an error
    """Raised by :meth:`WorkQueue.get` once the queue is shut down and empty: the
    worker that gets it should return."""


class RateLimiter(Protocol[K_contra]):
    """Decides how long a key waits before it is retried.

    ``now`` is the loop time of the call; passing it in keeps limiters pure, so
    their numbers can be tested without any clock at all.
    """

    def when(self, key: K_contra, now: float) -> float:
        """The delay, in seconds, before ``key`` may be retried (records one failure)."""
        ...

    def forget(self, key: K_contra) -> None:
        """Stop tracking ``key``: its next failure starts the backoff afresh."""
        ...

    def num_requeues(self, key: K_contra) -> int:
        """How many failures of ``key`` are being tracked."""
        ...


class ExponentialFailureRateLimiter(Generic[K]):
    """Per-key exponential backoff: ``base_delay * 2**failures``, capped at ``max_delay``.

    The first retry waits ``base_delay``; each further one doubles until the cap.
    """

    def __init__(self, *, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        if base_delay <= 0 or max_delay < base_delay:
            raise ValueError("need 0 < base_delay <= max_delay")
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[K, int] = {}

    def when(self, key: K, now: float) -> float:
        exponent = self._failures.get(key, 0)
        self._failures[key] = exponent + 1
        # 2**exponent overflows a float after ~1024 doublings; the cap is reached long before.
        if exponent >= 1024:
            return self.max_delay
        return min(self.base_delay * 2.0**exponent, self.max_delay)

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)

    def num_requeues(self, key: K) -> int:
        return self._failures.get(key, 0)


class BucketRateLimiter(Generic[K]):
    """A global token bucket (``qps`` refill, ``burst`` capacity) over all keys.

    Semantics of ``golang.org/x/time/rate``'s ``Reserve``: every call takes a token
    (the balance may go negative) and waits until the balance would have been
    refilled to zero. So the first ``burst`` retries go at once and the rest are
    spaced ``1/qps`` apart.
    """

    def __init__(self, *, qps: float = 10.0, burst: int = 100) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("need qps > 0 and burst >= 1")
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst)
        self._last: float | None = None

    def when(self, key: K, now: float) -> float:
        if self._last is not None and now > self._last:
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        if self._last is None or now > self._last:
            self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, key: K) -> None:
        """The bucket is global: nothing to forget per key."""

    def num_requeues(self, key: K) -> int:
        return 0


class MaxOfRateLimiter(Generic[K]):
    """The longest delay any of its limiters asks for (client-go's ``MaxOf``)."""

    def __init__(self, *limiters: RateLimiter[K]) -> None:
        if not limiters:
            raise ValueError("need at least one limiter")
        self.limiters = limiters

    def when(self, key: K, now: float) -> float:
        # Every limiter must see the failure, so no short-circuiting max() over a generator.
        delays = [limiter.when(key, now) for limiter in self.limiters]
        return max(delays)

    def forget(self, key: K) -> None:
        for limiter in self.limiters:
            limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        return max(limiter.num_requeues(key) for limiter in self.limiters)


def default_controller_rate_limiter(
    *,
    base_delay: float = 0.005,
    max_delay: float = 1000.0,
    qps: float = 10.0,
    burst: int = 100,
) -> MaxOfRateLimiter[Hashable]:
    """client-go's ``DefaultControllerRateLimiter``, with every number adjustable."""
    return MaxOfRateLimiter[Hashable](
        ExponentialFailureRateLimiter[Hashable](base_delay=base_delay, max_delay=max_delay),
        BucketRateLimiter[Hashable](qps=qps, burst=burst),
    )


class QueueMetrics(Protocol[K_contra]):
    """Callbacks a metrics module implements to export ``workqueue_*`` series.

    ``on_add`` fires when a key becomes dirty (``workqueue_adds_total``), ``on_get``
    when a worker takes it, with the seconds it waited (``queue_duration``),
    ``on_done`` with the seconds it was processed (``work_duration``), ``on_retry``
    for each ``add_rate_limited`` (``retries_total``) and ``on_depth`` whenever the
    number of ready keys changes (``depth``). Unfinished work is polled instead:
    see :meth:`WorkQueue.unfinished_work_seconds`.
    """

    def on_add(self, key: K_contra) -> None: ...

    def on_get(self, key: K_contra, queued_seconds: float) -> None: ...

    def on_done(self, key: K_contra, work_seconds: float) -> None: ...

    def on_retry(self, key: K_contra) -> None: ...

    def on_depth(self, depth: int) -> None: ...


class NoQueueMetrics:
    """The default :class:`QueueMetrics`: does nothing."""

    def on_add(self, key: Hashable) -> None:
        pass

    def on_get(self, key: Hashable, queued_seconds: float) -> None:
        pass

    def on_done(self, key: Hashable, work_seconds: float) -> None:
        pass

    def on_retry(self, key: Hashable) -> None:
        pass

    def on_depth(self, depth: int) -> None:
        pass


class WorkQueue(Generic[K]):
    """Keys waiting to be processed by workers; see the module docstring.

    A worker loop::

        while True:
            try:
                key = await queue.get()
            except ShutDown:
                return
            try:
                ...  # reconcile key
            except Exception:
                queue.add_rate_limited(key)
            else:
                queue.forget(key)
            finally:
                queue.done(key)

    Create and use it inside one running event loop.
    """

    def __init__(
        self,
        *,
        name: str = "",
        rate_limiter: RateLimiter[K] | None = None,
        metrics: QueueMetrics[K] | None = None,
    ) -> None:
        self.name = name
        self.rate_limiter: RateLimiter[K] = (
            rate_limiter if rate_limiter is not None else default_controller_rate_limiter()
        )
        self.metrics: QueueMetrics[K] = metrics if metrics is not None else NoQueueMetrics()
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: dict[K, float] = {}  # key -> loop time the worker took it
        self._added_at: dict[K, float] = {}  # key -> loop time it became dirty
        self._getters: deque[asyncio.Future[None]] = deque()
        self._idle_waiters: list[asyncio.Future[None]] = []
        self._shutting_down = False
        # Delayed adds: ready time per key, plus a heap with lazily dropped stale entries.
        self._waiting: dict[K, float] = {}
        self._heap: list[tuple[float, int, K]] = []
        self._sequence = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop of the last get(), for scrapes

    # -- adding ---------------------------------------------------------------------

    def add(self, key: K) -> None:
        """Queue ``key`` unless it is queued already; if it is being processed, queue
        it again once when it is done. Ignored after :meth:`shutdown`."""
        if self._shutting_down or key in self._dirty:
            return
        self.metrics.on_add(key)
        self._dirty.add(key)
        self._added_at.setdefault(key, self._now())
        if key in self._processing:
            return
        self._push(key)

    def add_after(self, key: K, delay: float) -> None:
        """Add ``key`` after ``delay`` seconds (at once if ``delay <= 0``). If it is
        already waiting, the earlier of the two ready times is kept."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        ready_at = loop.time() + delay
        current = self._waiting.get(key)
        if current is not None and current <= ready_at:
            return
        self._waiting[key] = ready_at
        heapq.heappush(self._heap, (ready_at, next(self._sequence), key))
        self._arm_timer(loop)

    def add_rate_limited(self, key: K) -> None:
        """Add ``key`` after the delay the rate limiter gives it (one more failure)."""
        if self._shutting_down:
            return
        self.metrics.on_retry(key)
        self.add_after(key, self.rate_limiter.when(key, self._now()))

    def forget(self, key: K) -> None:
        """Reset the rate limiter's failure count for ``key`` (call after a success)."""
        self.rate_limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        """How many rate-limited retries of ``key`` are being tracked."""
        return self.rate_limiter.num_requeues(key)

    # -- taking ---------------------------------------------------------------------

    async def get(self) -> K:
        """Wait for a key and mark it processing; the caller must call :meth:`done`.

        After :meth:`shutdown` the keys still queued are handed out; once there are
        none, raises :class:`ShutDown`.
        """
        loop = asyncio.get_running_loop()
        while not self._queue:
            if self._shutting_down:
                raise ShutDown(self.name)
            waiter = loop.create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                # Pass a wake-up we may have consumed on to the next getter.
                if waiter in self._getters:
                    self._getters.remove(waiter)
                elif self._queue:
                    self._wake_one()
                raise
        key = self._queue.popleft()
        self._loop = loop
        now = loop.time()
        self._dirty.discard(key)
        self._processing[key] = now
        added = self._added_at.pop(key, now)
        self.metrics.on_depth(len(self._queue))
        self.metrics.on_get(key, now - added)
        return key

    def done(self, key: K) -> None:
        """Mark ``key`` processed; if it was added meanwhile, queue it again."""
        started = self._processing.pop(key, None)
        if started is None:
            return
        self.metrics.on_done(key, self._now() - started)
        if key in self._dirty:
            self._push(key)
        else:
            self._notify_idle()

    # -- shutting down ----------------------------------------------------------------

    def shutdown(self, *, drop_queued: bool = False) -> None:
        """Stop accepting keys and drop the delayed ones. Workers still get the keys
        queued already, then :class:`ShutDown` — unless ``drop_queued``: then those are
        dropped too and every :meth:`get` raises at once (leadership lost: nothing queued
        may be processed any more)."""
        self._shutting_down = True
        if drop_queued:
            self._queue.clear()
            self._dirty.clear()
            self._added_at.clear()
            self.metrics.on_depth(0)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._waiting.clear()
        self._heap.clear()
        while self._getters:
            self._wake_one()
        self._notify_idle()

    async def drain(self) -> None:
        """Wait until no key is queued or being processed (delayed keys don't count)."""
        while self._queue or self._processing:
            waiter = asyncio.get_running_loop().create_future()
            self._idle_waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._idle_waiters:
                    self._idle_waiters.remove(waiter)

    async def shutdown_with_drain(self) -> None:
        """:meth:`shutdown`, then wait for the workers to finish every key queued and
        in flight. Bound it with ``asyncio.timeout`` for a graceful-shutdown deadline."""
        self.shutdown()
        await self.drain()

    @property
    def shutting_down(self) -> bool:
        """Whether :meth:`shutdown` was called."""
        return self._shutting_down

    # -- introspection ----------------------------------------------------------------

    def __len__(self) -> int:
        """The depth: keys ready and waiting for a worker (not delayed, not in flight)."""
        return len(self._queue)

    @property
    def waiting(self) -> int:
        """How many keys wait for a delay (``add_after``/``add_rate_limited``) to pass."""
        return len(self._waiting)

    @property
    def processing(self) -> frozenset[K]:
        """The keys handed out and not yet done."""
        return frozenset(self._processing)

    def unfinished_work_seconds(self) -> float:
        """Seconds of work in flight, summed over the keys being processed.

        Safe to call from outside the loop (a metrics scrape): it reads the clock of
        the loop the workers run on."""
        if not self._processing or self._loop is None:
            return 0.0
        now = self._loop.time()
        return sum(now - started for started in self._processing.values())

    def longest_running_processor_seconds(self) -> float:
        """How long the longest-running key in flight has been processed."""
        if not self._processing or self._loop is None:
            return 0.0
        return self._loop.time() - min(self._processing.values())

    # -- internals --------------------------------------------------------------------

    @staticmethod
    def _now() -> float:
        return asyncio.get_running_loop().time()

    def _push(self, key: K) -> None:
        self._queue.append(key)
        self.metrics.on_depth(len(self._queue))
        self._wake_one()

    def _wake_one(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _notify_idle(self) -> None:
        if self._queue or self._processing:
            return
        for waiter in self._idle_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._idle_waiters.clear()

    def _arm_timer(self, loop: asyncio.AbstractEventLoop) -> None:
        """Make sure a timer fires at the earliest ready time in the heap."""
        self._drop_stale()
        if not self._heap:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            return
        first = self._heap[0][0]
        if self._timer is not None and self._timer_at <= first:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = first
        self._timer = loop.call_at(first, self._fire)

    def _fire(self) -> None:
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        ready: list[K] = []
        self._drop_stale()
        while self._heap and self._heap[0][0] <= now:
            _, _, key = heapq.heappop(self._heap)
            del self._waiting[key]
            ready.append(key)
            self._drop_stale()
        for key in ready:
            self.add(key)
        self._arm_timer(loop)

    def _drop_stale(self) -> None:
        """Pop heap entries superseded by an earlier ready time for the same key."""
        while self._heap:
            ready_at, _, key = self._heap[0]
            if self._waiting.get(key) == ready_at:
                return
            heapq.heappop(self._heap)
