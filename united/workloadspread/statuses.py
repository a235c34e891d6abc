"""A spread's status has two writers in one process: the reconciler's recount and the webhook's
bookings (:mod:`~united.workloadspread.ledger`). Written side by side, the second one 409s on
the first's resourceVersion and pays a fresh read and another write while pods wait for their
admission (the slowest admissions were those). So the two take turns per spread, and each
starts from the other's last answer while the cache has not shown it yet."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

from united.api.document import Json
from united.runtime.expectations import LastWrite, rv_of


class Statuses:
    """The status writes of one process's spreads: whose turn it is, and the last answer."""

    def __init__(self) -> None:
        self._written: LastWrite[Json] = LastWrite()
        self._turns: dict[str, tuple[asyncio.Lock, int]] = {}
        """The lock of each spread someone writes or waits to write, with how many do; a spread
        leaves when the last one is done, so memory follows the writes in flight."""

    @contextlib.asynccontextmanager
    async def turn(self, key: str) -> AsyncIterator[None]:
        """Write ``key``'s status in this block only; others wait their turn, first come first."""
        lock, users = self._turns.get(key) or (asyncio.Lock(), 0)
        self._turns[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._turns[key]
            if users == 1:
                del self._turns[key]
            else:
                self._turns[key] = (lock, users - 1)

    def record(self, key: str, answer: Json) -> None:
        """The spread as a write (or a fresh read) returned it."""
        self._written.record(key, rv_of(answer), answer, uid=_uid(answer))

    def freshest(self, key: str, cached: Json) -> Json:
        """``cached``, or the last recorded answer while the cache is behind it."""
        written = self._written.newer(key, cached)
        return written[1] if written is not None else cached

    def superseded(self, key: str, *, resource_version: str, uid: str) -> bool:
        """Whether a write recorded since makes a status computed from this version stale (its
        write would 409)."""
        return self._written.newer(key, {"metadata": {"resourceVersion": resource_version, "uid": uid}}) is not None

    def forget(self, key: str) -> None:
        """The spread is gone."""
        self._written.forget(key)

    def __len__(self) -> int:
        """Spreads being written or waited for."""
        return len(self._turns)


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


__all__ = ["Statuses"]
