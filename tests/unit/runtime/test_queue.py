"""The work queue: dedup, dirty-while-processing, delays, rate limiters, shutdown, and
a randomized multi-worker schedule that must never process one key twice at once.

Everything runs on a virtual-time event loop (``VirtualTimeLoop``): the loop's clock
jumps to the next timer whenever nothing is ready, so delays of seconds (or of
1000 s) take no wall time and the times asserted are exact.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.runtime.virtual_time import now, run_virtual
from united.runtime.queue import (
    BucketRateLimiter,
    ExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    ShutDown,
    WorkQueue,
    default_controller_rate_limiter,
)

# -- dedup and processing ---------------------------------------------------------------


def test_a_key_added_twice_is_queued_once() -> None:
    async def main() -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.add("ns/a")
        queue.add("ns/b")
        queue.add("ns/a")
        assert len(queue) == 2
        assert await queue.get() == "ns/a"
        assert await queue.get() == "ns/b"
        assert len(queue) == 0

    run_virtual(main)


def test_a_key_added_while_processing_is_requeued_once_after_done() -> None:
    async def main() -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.add("a")
        key = await queue.get()
        assert queue.processing == {"a"}
        queue.add("a")
        queue.add("a")
        assert len(queue) == 0, "a key being processed must not be handed to another worker"

        second = asyncio.create_task(queue.get())
        await asyncio.sleep(1)
        assert not second.done(), "a second worker got a key that is still processing"

        queue.done(key)
        assert await asyncio.wait_for(second, 1) == "a"
        queue.done("a")
        assert len(queue) == 0
        assert queue.processing == frozenset()

    run_virtual(main)


def test_done_of_a_key_not_processing_is_harmless() -> None:
    async def main() -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.done("never-got")
        queue.add("a")
        queue.done("a")  # queued, not processing: must stay queued
        assert len(queue) == 1
        assert await queue.get() == "a"

    run_virtual(main)


def test_a_cancelled_getter_passes_its_wake_up_on() -> None:
    async def main() -> None:
        queue: WorkQueue[str] = WorkQueue()
        first = asyncio.create_task(queue.get())
        second = asyncio.create_task(queue.get())
        await asyncio.sleep(0)
        queue.add("a")  # wakes `first`...
        first.cancel()  # ...which is cancelled before it runs
        assert await asyncio.wait_for(second, 1) == "a"
        assert first.cancelled()

    run_virtual(main)


# -- delays -----------------------------------------------------------------------------


def test_add_after_hands_keys_out_in_ready_time_order_at_the_right_time() -> None:
    async def main() -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.add_after("late", 3.0)
        queue.add_after("early", 1.0)
        queue.add_after("middle", 2.0)
        assert len(queue) == 0
        assert queue.waiting == 3
        seen = []
        for _ in range(3):
            key = await queue.get()
            seen.append((key, now()))
            queue.done(key)
        assert seen == [("early", 1.0), ("middle", 2.0), ("late", 3.0)]
        assert queue.waiting == 0

    run_virtual(main)


def test_a_later_add_after_with_a_shorter_delay_wins_and_a_longer_one_is_ignored() -> None:
    async def main() -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.add_after("a", 10.0)
        queue.add_after("a", 2.0)  # shorter: now ready at 2
        queue.add_after("a", 5.0)  # longer than the one waiting: ignored
        assert queue.waiting == 1
        assert await queue.get() == "a"
        assert now() == 2.0
        queue.done("a")
        # Neither the 5 s nor the 10 s entry may fire later.
        late = asyncio.create_task(queue.get())
        await asyncio.sleep(20)
        assert not late.done(), "a superseded delayed add fired"
        late.cancel()

    run_virtual(main)


def test_add_after_without_delay_adds_at_once() -> None:
    async def main() -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.add_after("a", 0)
        queue.add_after("b", -1)
        assert len(queue) == 2
        assert queue.waiting == 0

    run_virtual(main)


def test_a_delayed_key_already_queued_is_not_queued_twice() -> None:
    async def main() -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.add("a")
        queue.add_after("a", 1.0)
        await asyncio.sleep(2)
        assert len(queue) == 1

    run_virtual(main)


# -- rate limiters ----------------------------------------------------------------------


def test_exponential_limiter_doubles_from_5ms_to_the_1000s_cap_and_forget_resets() -> None:
    limiter: ExponentialFailureRateLimiter[str] = ExponentialFailureRateLimiter()
    delays = [limiter.when("a", 0.0) for _ in range(20)]
    assert delays[:5] == pytest.approx([0.005, 0.01, 0.02, 0.04, 0.08])
    assert delays[17] == pytest.approx(0.005 * 2**17)  # 655.36 s, still under the cap
    assert delays[18] == 1000.0
    assert delays[19] == 1000.0
    assert limiter.num_requeues("a") == 20
    assert limiter.when("b", 0.0) == pytest.approx(0.005), "keys back off independently"
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a", 0.0) == pytest.approx(0.005)
    for _ in range(5000):  # far past the point where 2**n overflows a float
        assert limiter.when("c", 0.0) <= 1000.0


def test_bucket_limiter_allows_a_burst_of_100_then_10_per_second() -> None:
    bucket: BucketRateLimiter[str] = BucketRateLimiter()
    assert [bucket.when(f"k{i}", 0.0) for i in range(100)] == [0.0] * 100
    assert bucket.when("k100", 0.0) == pytest.approx(0.1)
    assert bucket.when("k101", 0.0) == pytest.approx(0.2)
    # One second refills ten tokens; two were owed, so eight go at once.
    assert [bucket.when("x", 1.0) for _ in range(8)] == [0.0] * 8
    assert bucket.when("x", 1.0) == pytest.approx(0.1)
    # A long pause refills to the burst, never beyond it.
    assert [bucket.when("y", 1000.0) for _ in range(100)] == [0.0] * 100
    assert bucket.when("y", 1000.0) == pytest.approx(0.1)
    assert bucket.num_requeues("y") == 0


def test_max_of_limiter_takes_the_longest_delay_and_every_limiter_counts_the_failure() -> None:
    limiter = default_controller_rate_limiter()
    delays = [limiter.when(f"k{i}", 0.0) for i in range(101)]
    assert delays[:100] == pytest.approx([0.005] * 100), "the per-key backoff dominates inside the burst"
    assert delays[100] == pytest.approx(0.1), "the bucket dominates past the burst"
    assert limiter.num_requeues("k0") == 1
    limiter.forget("k0")
    assert limiter.num_requeues("k0") == 0

    custom: MaxOfRateLimiter[str] = MaxOfRateLimiter(
        ExponentialFailureRateLimiter(base_delay=1.0, max_delay=4.0),
        BucketRateLimiter(qps=1.0, burst=1),
    )
    assert [custom.when("a", 0.0) for _ in range(4)] == [1.0, 2.0, 4.0, 4.0]
    with pytest.raises(ValueError):
        MaxOfRateLimiter[str]()


def test_limiter_options_are_validated() -> None:
    with pytest.raises(ValueError):
        ExponentialFailureRateLimiter[str](base_delay=0)
    with pytest.raises(ValueError):
        ExponentialFailureRateLimiter[str](base_delay=2, max_delay=1)
    with pytest.raises(ValueError):
        BucketRateLimiter[str](qps=0)
    with pytest.raises(ValueError):
        BucketRateLimiter[str](burst=0)


def test_add_rate_limited_waits_the_limiter_delay_and_forget_resets_it() -> None:
    async def main() -> None:
        queue: WorkQueue[str] = WorkQueue(
            rate_limiter=ExponentialFailureRateLimiter(base_delay=1.0, max_delay=60.0),
        )
        times = []
        for _ in range(4):
            start = now()
            queue.add_rate_limited("a")
            key = await queue.get()
            times.append(now() - start)
            queue.done(key)
        assert times == [1.0, 2.0, 4.0, 8.0]
        assert queue.num_requeues("a") == 4
        queue.forget("a")
        assert queue.num_requeues("a") == 0
        start = now()
        queue.add_rate_limited("a")
        await queue.get()
        assert now() - start == 1.0

    run_virtual(main)


# -- shutdown ---------------------------------------------------------------------------


def test_shutdown_hands_out_what_is_queued_then_raises_and_ignores_new_adds() -> None:
    async def main() -> None:
        queue: WorkQueue[str] = WorkQueue()
        queue.add("a")
        queue.add_after("delayed", 1.0)
        queue.shutdown()
        assert queue.shutting_down
        queue.add("b")
        queue.add_after("c", 1.0)
        queue.add_rate_limited("d")
        assert await queue.get() == "a"
        with pytest.raises(ShutDown):
            await queue.get()
        await asyncio.sleep(5)
        assert len(queue) == 0, "a delayed add survived shutdown"
        assert queue.waiting == 0

    run_virtual(main)


def test_shutdown_wakes_every_waiting_worker() -> None:
    async def main() -> None:
        queue: WorkQueue[str] = WorkQueue()
        workers = [asyncio.create_task(queue.get()) for _ in range(3)]
        await asyncio.sleep(0)
        queue.shutdown()
        results = await asyncio.gather(*workers, return_exceptions=True)
        assert all(isinstance(result, ShutDown) for result in results)

    run_virtual(main)


def test_shutdown_dropping_queued_keys_hands_out_nothing_more() -> None:
    async def main() -> None:
        queue: WorkQueue[str] = WorkQueue()
        for key in ("a", "b", "c"):
            queue.add(key)
        assert await queue.get() == "a"
        queue.add("a")  # dirty while processing: would be queued again when done
        queue.shutdown(drop_queued=True)
        assert len(queue) == 0
        with pytest.raises(ShutDown):
            await queue.get()
        queue.done("a")
        assert len(queue) == 0, "a key dirty while processing came back"
        with pytest.raises(ShutDown):
            await queue.get()
        await asyncio.wait_for(queue.drain(), 1)

    run_virtual(main)


def test_shutdown_with_drain_waits_for_queued_and_in_flight_work() -> None:
    async def main() -> None:
        queue: WorkQueue[str] = WorkQueue()
        finished: list[tuple[str, float]] = []

        async def worker() -> None:
            while True:
                try:
                    key = await queue.get()
                except ShutDown:
                    return
                await asyncio.sleep(5)
                finished.append((key, now()))
                queue.done(key)

        for key in ("a", "b", "c"):
            queue.add(key)
        workers = [asyncio.create_task(worker()) for _ in range(2)]
        await asyncio.sleep(1)
        queue.add("a")  # dirty while processing: one more round of "a" before the drain ends
        await queue.shutdown_with_drain()
        assert sorted(finished) == [("a", 5.0), ("a", 10.0), ("b", 5.0), ("c", 10.0)]
        assert now() == 10.0
        await asyncio.wait_for(asyncio.gather(*workers), 1)

    run_virtual(main)


def test_drain_returns_at_once_when_idle() -> None:
    async def main() -> None:
        queue: WorkQueue[str] = WorkQueue()
        await asyncio.wait_for(queue.drain(), 0.001)

    run_virtual(main)


# -- metrics hooks ----------------------------------------------------------------------


class RecordingMetrics:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Hashable | int, float | None]] = []

    def on_add(self, key: Hashable) -> None:
        self.calls.append(("add", key, None))

    def on_get(self, key: Hashable, queued_seconds: float) -> None:
        self.calls.append(("get", key, queued_seconds))

    def on_done(self, key: Hashable, work_seconds: float) -> None:
        self.calls.append(("done", key, work_seconds))

    def on_retry(self, key: Hashable) -> None:
        self.calls.append(("retry", key, None))

    def on_depth(self, depth: int) -> None:
        self.calls.append(("depth", depth, None))


def test_metrics_hooks_see_adds_waits_work_retries_and_depth() -> None:
    async def main() -> None:
        metrics = RecordingMetrics()
        queue: WorkQueue[str] = WorkQueue(metrics=metrics, rate_limiter=ExponentialFailureRateLimiter(base_delay=1.0))
        queue.add("a")
        queue.add("a")  # dedup: no second add
        await asyncio.sleep(2)
        key = await queue.get()
        assert queue.unfinished_work_seconds() == 0.0
        await asyncio.sleep(3)
        assert queue.unfinished_work_seconds() == 3.0
        assert queue.longest_running_processor_seconds() == 3.0
        queue.add_rate_limited(key)
        queue.done(key)
        assert queue.unfinished_work_seconds() == 0.0
        assert queue.longest_running_processor_seconds() == 0.0
        assert metrics.calls == [
            ("add", "a", None),
            ("depth", 1, None),
            ("depth", 0, None),
            ("get", "a", 2.0),
            ("retry", "a", None),
            ("done", "a", 3.0),
        ]
        metrics.calls.clear()
        await queue.get()  # the retry, ready after the 1 s backoff
        assert metrics.calls == [("add", "a", None), ("depth", 1, None), ("depth", 0, None), ("get", "a", 0.0)]

    run_virtual(main)


# -- concurrency ------------------------------------------------------------------------

_schedules = st.lists(
    st.tuples(
        st.floats(min_value=0.0, max_value=5.0, allow_nan=False),  # when the key is added
        st.sampled_from(["a", "b", "c", "d", "e"]),
        st.sampled_from(["add", "add_after", "add_rate_limited"]),
        st.floats(min_value=0.0, max_value=2.0, allow_nan=False),  # add_after delay
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    schedule=_schedules,
    workers=st.integers(min_value=1, max_value=5),
    work=st.lists(st.floats(min_value=0.0, max_value=1.5, allow_nan=False), min_size=1, max_size=20),
    fail_every=st.integers(min_value=0, max_value=4),
)
def test_random_schedules_never_process_a_key_concurrently_and_lose_no_add(
    schedule: list[tuple[float, str, str, float]], workers: int, work: list[float], fail_every: int
) -> None:
    async def main() -> None:
        queue: WorkQueue[str] = WorkQueue(rate_limiter=ExponentialFailureRateLimiter(base_delay=0.01, max_delay=0.5))
        in_flight: set[str] = set()
        starts: dict[str, list[float]] = {}
        adds: dict[str, list[float]] = {}  # when each add (of any kind) was made
        counter = 0

        async def worker() -> None:
            nonlocal counter
            while True:
                try:
                    key = await queue.get()
                except ShutDown:
                    return
                assert key not in in_flight, f"{key} handed to two workers at once"
                in_flight.add(key)
                starts.setdefault(key, []).append(now())
                counter += 1
                await asyncio.sleep(work[counter % len(work)])
                in_flight.discard(key)
                if fail_every and counter % fail_every == 0:
                    queue.add_rate_limited(key)
                    adds.setdefault(key, []).append(now())
                else:
                    queue.forget(key)
                queue.done(key)

        tasks = [asyncio.create_task(worker()) for _ in range(workers)]
        for at, key, how, delay in sorted(schedule):
            await asyncio.sleep(max(0.0, at - now()))
            adds.setdefault(key, []).append(now())
            if how == "add":
                queue.add(key)
            elif how == "add_after":
                queue.add_after(key, delay)
            else:
                queue.add_rate_limited(key)
        # Every delay is at most 2 s (add_after) or 0.5 s (the limiter's cap): after
        # 3 s more, everything added so far is due. Shutdown drops delayed adds, so
        # only adds due before it are owed a run.
        await asyncio.sleep(3)
        shutdown_at = now()
        queue.shutdown()
        await asyncio.wait_for(queue.drain(), 60)
        await asyncio.wait_for(asyncio.gather(*tasks), 60)

        for key, times in adds.items():
            for added in times:
                if added + 2.0 < shutdown_at:
                    assert any(start >= added for start in starts.get(key, [])), (
                        f"{key} added at {added} was never processed after that"
                    )
            # Dedup: N adds collapse into at most N runs, never more.
            assert len(starts.get(key, [])) <= len(times)
        assert not in_flight

    run_virtual(main)
