"""Trimming the C heap: returns freed pages where glibc can, and is a quiet no-op elsewhere."""

from __future__ import annotations

import ctypes
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
