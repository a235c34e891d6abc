"""Trimming the C heap: returns freed pages where glibc can, and is a quiet no-op elsewhere."""

from __future__ import annotations

import asyncio
import ctypes
import gc
import weakref
from typing import Any

import pytest

from united.runtime import heap


def rss_kb() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def test_trim_gives_freed_heap_pages_back() -> None:
    assert heap._libc() is not None, "the supported platforms (Debian, Ubuntu) have glibc"
    # Blocks too big for pymalloc and too small for mmap: glibc's heap keeps them once freed.
    blocks = [bytearray(4096) for _ in range(40_000)]  # ~160 MiB
    blocks.append(bytearray(2048))  # from glibc too: pins the heap's top, as live objects do
    del blocks[:-1]
    before = rss_kb()
    assert heap.trim() is True
    after = rss_kb()
    assert before - after > 100_000, (before, after)


def test_trim_is_a_no_op_without_malloc_trim(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(name: Any) -> Any:
        raise OSError("no such library")

    heap._libc.cache_clear()
    monkeypatch.setattr(ctypes, "CDLL", refuse)
    try:
        assert heap.trim() is False
    finally:
        heap._libc.cache_clear()


class Node:
    next: Any = None


async def test_the_collector_is_held_until_settled_then_finds_what_survived_set_aside() -> None:
    assert gc.isenabled()
    try:
        held = heap.hold(asyncio.get_running_loop())
        assert not gc.isenabled()
        cycle = Node()
        cycle.next = cycle
        gone = weakref.ref(cycle)
        alive = [{"metadata": {"name": str(n)}} for n in range(1000)]
        del cycle
        assert gone() is not None
        heap.settle(held)
        assert gc.isenabled()
        assert gone() is None, "the cycle made while held was collected when settling"
        assert gc.get_freeze_count() >= len(alive), "what survived is set aside"
    finally:
        gc.unfreeze()
        gc.enable()


async def test_a_hold_lapses_by_itself() -> None:
    try:
        heap.hold(asyncio.get_running_loop(), limit=0.01)
        assert not gc.isenabled()
        await asyncio.sleep(0.05)
        assert gc.isenabled(), "caches that never fill must not keep the collector off"
    finally:
        gc.enable()
