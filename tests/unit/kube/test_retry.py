"""Transient API failures are retried a bounded number of times with backoff (or the
server's Retry-After); answers like Conflict or NotFound are never retried."""

from __future__ import annotations

import pytest

from united.kube.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    TooManyRequests,
    TransientError,
    error_from_status,
)
from united.kube.retry import MAX_RETRY_AFTER, is_retryable, is_throttled, retrying


class FlakyCall:
    """Raises the given errors in order, then returns ``result``; records every attempt."""

    def __init__(self, *errors: ApiError, result: str = "done") -> None:
        self.errors = list(errors)
        self.result = result
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.result


class Sleeps:
    """A fake ``asyncio.sleep`` that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


async def test_transient_errors_are_retried_until_success() -> None:
    call = FlakyCall(error_from_status(503, {}), TransientError("connection reset"))
    sleeps = Sleeps()
    assert await retrying(call, attempts=4, sleep=sleeps) == "done"
    assert call.calls == 3
    assert len(sleeps.delays) == 2


async def test_gives_up_after_the_attempts_and_reraises_the_typed_error() -> None:
    last = error_from_status(500, {"message": "etcd timeout"})
    call = FlakyCall(error_from_status(502, {}), error_from_status(504, {}), last)
    sleeps = Sleeps()
    with pytest.raises(TransientError) as raised:
        await retrying(call, attempts=3, sleep=sleeps)
    assert raised.value is last
    assert call.calls == 3
    assert len(sleeps.delays) == 2


@pytest.mark.parametrize(
    "error",
    [
        error_from_status(409, {"reason": "Conflict"}),
        error_from_status(409, {"reason": "AlreadyExists"}),
        error_from_status(422, {"reason": "Invalid"}),
        error_from_status(404, {"reason": "NotFound"}),
        error_from_status(403, {"reason": "Forbidden"}),
        error_from_status(410, {"reason": "Expired"}),
        error_from_status(401, {}),
        error_from_status(405, {}),
    ],
    ids=lambda error: type(error).__name__ + str(error.status),
)
async def test_answers_are_never_retried(error: ApiError) -> None:
    call = FlakyCall(error)
    sleeps = Sleeps()
    with pytest.raises(type(error)) as raised:
        await retrying(call, attempts=5, sleep=sleeps)
    assert raised.value is error
    assert call.calls == 1
    assert sleeps.delays == []


def test_the_retryable_classification() -> None:
    assert is_retryable(TransientError("reset"))
    assert is_retryable(TooManyRequests("slow down", status=429, retry_after=1))
    for cls in (Conflict, Invalid, NotFound, Forbidden, AlreadyExists, Gone, ApiError):
        assert not is_retryable(cls("no", status=400))
    assert not is_retryable(ValueError("a bug"))


async def test_retry_after_is_honoured_and_capped() -> None:
    call = FlakyCall(
        TooManyRequests("throttled", status=429, retry_after=7.0),
        TooManyRequests("throttled", status=429, retry_after=3600.0),
        error_from_status(503, {}, retry_after=2.0),
    )
    sleeps = Sleeps()
    assert await retrying(call, attempts=4, max_delay=0.5, sleep=sleeps) == "done"
    assert sleeps.delays == [7.0, MAX_RETRY_AFTER, 2.0]


async def test_backoff_grows_exponentially_with_bounded_jitter_and_a_cap() -> None:
    call = FlakyCall(*(TransientError(f"blip {i}") for i in range(5)))
    sleeps = Sleeps()
    assert await retrying(call, attempts=6, initial_delay=0.1, max_delay=1.0, jitter=0.05, sleep=sleeps) == "done"
    assert len(sleeps.delays) == 5
    for attempt, delay in enumerate(sleeps.delays):
        base = min(0.1 * 2**attempt, 1.0)
        assert base <= delay <= min(base + 0.05, 1.0), (attempt, delay)
    assert sleeps.delays[-1] == 1.0


async def test_a_non_api_exception_propagates_at_once() -> None:
    calls = 0

    async def buggy() -> None:
        nonlocal calls
        calls += 1
        raise KeyError("spec")

    with pytest.raises(KeyError):
        await retrying(buggy, sleep=Sleeps())
    assert calls == 1


async def test_a_narrower_predicate_retries_only_what_it_accepts() -> None:
    throttled = FlakyCall(TooManyRequests("429", retry_after=0.0))
    assert await retrying(throttled, retryable=is_throttled, sleep=Sleeps()) == "done"
    failing = FlakyCall(error_from_status(503, {}))
    with pytest.raises(TransientError):
        await retrying(failing, retryable=is_throttled, sleep=Sleeps())
    assert failing.calls == 1
    assert not is_throttled(TransientError("reset"))


async def test_attempts_must_be_positive() -> None:
    with pytest.raises(ValueError):
        await retrying(FlakyCall(), attempts=0)


async def test_the_first_attempt_needs_no_retry_machinery(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every request goes through ``retrying``: success costs one await, no tenacity object."""
    import united.kube.retry as retry

    built: list[object] = []
    real = retry.AsyncRetrying

    def counting(*args: object, **kwargs: object) -> object:
        built.append(kwargs)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(retry, "AsyncRetrying", counting)
    assert await retrying(FlakyCall(), sleep=Sleeps()) == "done"
    assert built == []
    flaky = FlakyCall(TransientError("reset"), TransientError("reset"))
    assert await retrying(flaky, attempts=3, sleep=Sleeps()) == "done"
    assert len(built) == 1
    assert flaky.calls == 3
