"""Give the C heap's free memory back to the operating system once the caches are filled.

Why: the first LIST of every informer decodes pages of JSON into objects that are then
compacted (``united.runtime.informer.compact``) and dropped. The Python objects are freed,
but glibc keeps the freed pages inside its heap, so the process's RSS — what a memory limit
and the operator see — stays near the LIST's peak. ``malloc_trim(0)`` returns those pages.
Measured with the bench's memory scenario (10 000 cached Deployments, 10 000 pods): 4.77 →
3.83 KB of RSS per cached child and 4.33 → 3.34 KB per pod, for a few milliseconds once.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache
from typing import Any

import structlog

log = structlog.get_logger(__name__)


@cache
def _libc() -> Any:
    """glibc, or None where there is none (musl, macOS): trimming is then a no-op."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
    except (OSError, TypeError):
        return None
    return libc if hasattr(libc, "malloc_trim") else None


def trim() -> bool:
    """Return the heap's free pages to the OS; False where the C library cannot."""
    libc = _libc()
    if libc is None:
        return False
    released = bool(libc.malloc_trim(0))
    log.debug("heap trimmed", released=released)
    return True


__all__ = ["trim"]
