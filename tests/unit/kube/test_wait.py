"""Polling helpers."""

import pytest

from united.kube.wait import WaitTimeoutError, eventually, wait_until


def test_wait_until_returns_the_first_truthy_value() -> None:
    calls = iter([0, None, 7])
    assert wait_until(lambda: next(calls), timeout=5, interval=0) == 7


def test_wait_until_reports_the_last_failure() -> None:
    def never() -> bool:
        raise AssertionError("still broken")

    with pytest.raises(WaitTimeoutError, match="still broken"):
        wait_until(never, timeout=0.05, interval=0.01, what="thing")


async def test_eventually_retries_assertions_until_they_pass() -> None:
    state = {"n": 0}

    async def check() -> int:
        state["n"] += 1
        assert state["n"] >= 3, "not yet"
        return state["n"]

    assert await eventually(check, within=5, interval=0) == 3


async def test_eventually_gives_up_with_the_last_message() -> None:
    async def check() -> None:
        raise AssertionError("pods not ready: 1/3")

    with pytest.raises(WaitTimeoutError, match=r"pods not ready: 1/3"):
        await eventually(check, within=0.05, interval=0.01)


async def test_eventually_does_not_swallow_other_errors() -> None:
    async def check() -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        await eventually(check, within=1, interval=0)
