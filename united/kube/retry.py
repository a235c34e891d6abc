"""Transport-level retries, used by the client for every request but watches.

Why a separate layer: a reconcile that fails goes back to the work queue with
per-key exponential backoff, which is the right place for "the world is not the
way we want yet". A single GET or status PATCH that hits a dropped connection, a
5xx during an API-server rollout or API priority-and-fairness throttling (429)
should not cost a whole requeue, so those — and only those — are retried here,
a few times, quickly.

Rules, after kopf's request loop (nolar/kopf: ``kopf/_cogs/clients/api.py``):

* retry only :class:`~united.kube.errors.TransientError` (connection errors, 5xx,
  timeouts) and its subclass :class:`~united.kube.errors.TooManyRequests`. Conflict,
  Invalid, NotFound, Forbidden, AlreadyExists, Gone... are answers, not accidents:
  repeating the same request cannot change them, so they propagate at once;
* when the server sent ``Retry-After`` (429, sometimes 503) wait exactly that long
  (capped, so a hostile header cannot park a worker for an hour); otherwise back off
  exponentially with jitter, so that replicas hit by the same blip do not retry in
  lock-step;
* stop after a number of *attempts*, never after a wall-clock delay: a fast-forwarded
  test loop (looptime) does not advance ``time.monotonic()``, so a deadline would never
  come there;
* after the last attempt the original typed error is re-raised, so callers keep
  handling one error hierarchy.

The first attempt is a plain ``await``: it wraps every request the controller sends, and a
retry library's per-attempt bookkeeping cost 3 % of a cold start's CPU when it wrapped them all.
Only a call that failed with a retryable error enters tenacity, which runs the rest.

Only *idempotent* calls are retried on any transient error: GET/LIST, PUT with a
resourceVersion (a replayed write then fails with Conflict instead of writing twice),
server-side apply, merge patches of absolute values, DELETE. A POST that timed out may
have been applied (the API server answers 504 and goes on storing), and a retried
``generateName`` create would make a second object; a JSON patch may append. Those are
retried only on 429 (:func:`is_throttled`): API priority and fairness refuses a request
before any handler sees it.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import structlog
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from united.kube.errors import TooManyRequests, TransientError

T = TypeVar("T")

DEFAULT_ATTEMPTS = 4
DEFAULT_INITIAL_DELAY = 0.2
DEFAULT_MAX_DELAY = 5.0
DEFAULT_JITTER = 0.2
# The API server sends Retry-After: 1 for APF throttling; anything above a minute is not
# something a worker should sit through — the work queue's backoff takes over instead.
MAX_RETRY_AFTER = 60.0

_log = structlog.get_logger(__name__)


def is_retryable(exc: BaseException) -> bool:
    """True for errors where the *same* request may succeed later (5xx, 429, no answer)."""
    return isinstance(exc, TransientError)


def is_throttled(exc: BaseException) -> bool:
    """True for a 429: the request was refused before it was processed, whatever its verb."""
    return isinstance(exc, TooManyRequests)


def delay(
    exc: BaseException, attempt: int, *, initial: float, max_delay: float, jitter: float, max_retry_after: float
) -> float:
    """The wait after failed ``attempt`` (1-based): the server's ``Retry-After`` when it gave
    one (capped), else ``min(initial * 2**(attempt-1) + uniform(0, jitter), max_delay)``."""
    if isinstance(exc, TransientError) and exc.retry_after is not None:
        return min(max(exc.retry_after, 0.0), max_retry_after)
    exponent = min(attempt - 1, 64)  # 2**64 * anything exceeds any sane cap
    return min(initial * 2.0**exponent + random.uniform(0.0, jitter), max_delay)


async def retrying(
    call: Callable[[], Awaitable[T]],
    *,
    attempts: int = DEFAULT_ATTEMPTS,
    initial_delay: float = DEFAULT_INITIAL_DELAY,
    max_delay: float = DEFAULT_MAX_DELAY,
    jitter: float = DEFAULT_JITTER,
    max_retry_after: float = MAX_RETRY_AFTER,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    what: str = "",
    retryable: Callable[[BaseException], bool] = is_retryable,
) -> T:
    """Await ``call()`` up to ``attempts`` times while it fails with an error ``retryable``
    accepts (:func:`is_retryable`: any transient one).

    ``call`` must build a *new* awaitable each time (a lambda or a function, not a
    coroutine object), e.g. ``await retrying(lambda: client.get(PODS, name, namespace=ns))``.
    ``what`` names the call in the retry log lines. ``sleep`` is injectable for tests.
    The last error is re-raised unchanged; non-transient errors are raised at once.

    Each retry logs one debug line: a retry inside one request is not news to an operator;
    if it still fails, its caller reports that once (informers through their failure log,
    passes in the status), so an outage stays a few lines however many requests retry.
    """
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    try:
        return await call()
    except Exception as exc:
        if attempts == 1 or not retryable(exc):
            raise
        first = exc

    def wait_after(failed: BaseException, attempt: int) -> float:
        wait = delay(
            failed, attempt, initial=initial_delay, max_delay=max_delay, jitter=jitter, max_retry_after=max_retry_after
        )
        _log.debug(
            "retrying API call",
            call=what or getattr(call, "__qualname__", "call"),
            attempt=attempt,
            delay=round(wait, 3),
            error=str(failed),
            status=getattr(failed, "status", None),
        )
        return wait

    def wait_strategy(state: RetryCallState) -> float:
        assert state.outcome is not None
        failed = state.outcome.exception()
        assert failed is not None
        return wait_after(failed, state.attempt_number + 1)

    await sleep(wait_after(first, 1))
    retryer = AsyncRetrying(
        stop=stop_after_attempt(attempts - 1),
        wait=wait_strategy,
        retry=retry_if_exception(retryable),
        sleep=sleep,
        reraise=True,
    )
    return await retryer(call)


__all__ = [
    "DEFAULT_ATTEMPTS",
    "MAX_RETRY_AFTER",
    "is_retryable",
    "is_throttled",
    "retrying",
]
