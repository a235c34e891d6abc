"""Turns at a spread's status, and the last answer kept while the cache is behind."""

from __future__ import annotations

import asyncio

import pytest

from united.workloadspread.statuses import Statuses


def spread(rv: int, uid: str = "u1") -> dict[str, object]:
    return {"metadata": {"resourceVersion": str(rv), "uid": uid}}


async def test_writers_of_one_spread_take_turns_first_come_first_and_others_do_not_wait() -> None:
    statuses = Statuses()
    order: list[str] = []

    async def write(key: str, name: str, seconds: float) -> None:
        async with statuses.turn(key):
            order.append(f"{name}+")
            await asyncio.sleep(seconds)
            order.append(f"{name}-")

    await asyncio.gather(write("ns/a", "1", 0.03), write("ns/a", "2", 0.0), write("ns/b", "3", 0.01))
    assert order.index("1-") < order.index("2+"), order
    assert order.index("3+") < order.index("1-"), "another spread's write does not wait"
    assert len(statuses) == 0


async def test_a_turn_is_released_when_its_write_fails() -> None:
    statuses = Statuses()
    with pytest.raises(RuntimeError):
        async with statuses.turn("ns/a"):
            raise RuntimeError("409")
    async with asyncio.timeout(1):
        async with statuses.turn("ns/a"):
            assert len(statuses) == 1
    assert len(statuses) == 0


def test_the_last_answer_is_read_while_the_cache_is_behind_it_and_only_for_the_same_spread() -> None:
    statuses = Statuses()
    answer = spread(5)
    statuses.record("ns/a", answer)
    assert statuses.freshest("ns/a", spread(4)) is answer
    caught_up = spread(5)
    assert statuses.freshest("ns/a", caught_up) is caught_up
    recreated = spread(3, uid="u2")
    assert statuses.freshest("ns/a", recreated) is recreated
    statuses.record("ns/a", answer)
    statuses.forget("ns/a")
    old = spread(4)
    assert statuses.freshest("ns/a", old) is old
