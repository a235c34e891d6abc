"""Our own recent writes, read in place of an informer cache that has not shown them yet.

A controller reads its caches, decides, writes; the watch brings the write back a moment
later — usually milliseconds, but API Priority and Fairness can hold a LIST back for many
seconds. A pass in between would decide from the old object and write again: create a
second child for a subset (children have generated names), patch a status already patched,
or send a status patch conditional on a resourceVersion the server has moved past. client-go
calls the cure *expectations*; here it is one module for every kind.

* :class:`Expectations` — objects written per owner key, resource, cluster and name: the
  answer (``None`` once deleted) overlays a cached list until the cache shows that version,
  or for at most :data:`TTL` seconds.
* :class:`LastWrite` — the last write of each object itself (its status), kept while the
  cached copy is older than it.

resourceVersions are opaque; comparing them as integers is the documented shortcut (etcd
revisions) that client-go's and OpenKruise's expectations take too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from united.api.document import Json

__all__ = ["TTL", "Expectations", "Kind", "LastWrite", "rv_of"]

T = TypeVar("T")

TTL = 300.0
"""Seconds to trust our own write over a cache that has not shown it: client-go's 5 minutes.
It only bounds how long an object we wrote and someone else deleted before the cache saw it
stands in for it (a subset whose new child was deleted so waits that long for another)."""


class Kind(Protocol):
    """What names a resource across API versions (``united.kube.Resource`` is one)."""

    @property
    def group(self) -> str: ...

    @property
    def plural(self) -> str: ...


def rv_of(obj: Mapping[str, Any]) -> int:
    """An object's resourceVersion as an integer (0 when absent or not a number)."""
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


_Entry = tuple[str, str, str, str]
"""(cluster, group, plural, name); cluster ``""`` is the host."""


class Expectations:
    """The objects this process wrote, per owner key (a UnitedDeployment's ``namespace/name``)."""

    def __init__(self, *, ttl: float = TTL, clock: Callable[[], float] | None = None) -> None:
        self.ttl = ttl
        self.clock = clock
        """Seconds, monotonic (None: ``time.monotonic``, looked up at each call)."""
        self._by_key: dict[str, dict[_Entry, tuple[int, Json | None, float, str]]] = {}

    def remember(
        self, key: str, kind: Kind, name: str, obj: Json | None, *, rv: int, cluster: str = "", uid: str = ""
    ) -> None:
        """Our write of ``name`` for ``key``: ``obj`` is the API server's answer at ``rv``, or
        None for a delete (``rv`` then the version deleted; ``uid`` the object a delete's uid
        precondition named, whose later versions the cache may still show are gone too)."""
        entry = (cluster, kind.group, kind.plural, name)
        self._by_key.setdefault(key, {})[entry] = (rv, obj, self._now(), uid)

    def fresh(self, key: str, kind: Kind, cached: Iterable[Json], *, cluster: str = "") -> list[Json]:
        """``cached`` (objects of ``kind`` in ``cluster`` for ``key``) with our recent writes in
        place of what the cache lacks; writes the cache has caught up with are forgotten."""
        mine = self._by_key.get(key)
        if not mine:
            return list(cached)
        by_name = {_name(o): o for o in cached}
        now = self._now()
        for entry, (rv, obj, at, uid) in list(mine.items()):
            where, group, plural, name = entry
            if (where, group, plural) != (cluster, kind.group, kind.plural):
                continue
            have = by_name.get(name)
            if (
                now - at > self.ttl
                or (obj is None and have is None)
                # a deleted object's last version stays cached until the watch says it is gone; a
                # newer version of the uid we deleted was written before our delete, and is gone too
                or (
                    have is not None
                    and (rv_of(have) > rv and _uid(have) != uid if obj is None else rv_of(have) >= rv > 0)
                )
            ):
                del mine[entry]
            elif obj is None:
                by_name.pop(name, None)
            else:
                by_name[name] = obj
        if not mine:
            del self._by_key[key]
        return list(by_name.values())

    def _now(self) -> float:
        return self.clock() if self.clock is not None else time.monotonic()

    def forget(self, key: str) -> None:
        """``key`` is gone: nothing of it is expected any more."""
        self._by_key.pop(key, None)

    def clear(self) -> None:
        self._by_key.clear()

    def __len__(self) -> int:
        """Owner keys with writes still expected."""
        return len(self._by_key)


class LastWrite(Generic[T]):
    """What our last write of each object recorded (its answer, or the status it wrote), at the
    resourceVersion the API server answered: valid while the cache shows an older version of
    the same object (same uid, when one is given)."""

    def __init__(self) -> None:
        self._by_key: dict[str, tuple[int, str | None, T]] = {}

    def record(self, key: str, rv: int, value: T, *, uid: str | None = None) -> None:
        """``uid``: the object written (``""`` when it had none); None: any object of ``key``."""
        self._by_key[key] = (rv, uid, value)

    def newer(self, key: str, cached: Mapping[str, Any]) -> tuple[int, T] | None:
        """The last write of ``key`` and its version when ``cached`` is older than it; None once
        the cache has caught up (the record is kept: a pass may go on with an object built from
        a write's answer while the cache still lags), or when ``cached`` is another object
        (then forgotten)."""
        written = self._by_key.get(key)
        if written is None:
            return None
        rv, uid, value = written
        if uid is not None and _uid(cached) != uid:
            del self._by_key[key]
            return None
        return (rv, value) if rv_of(cached) < rv else None

    def forget(self, key: str) -> None:
        self._by_key.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._by_key
