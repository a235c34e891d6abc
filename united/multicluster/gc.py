"""Remote orphans: children in a member whose owner is gone from the host.

Host garbage collection follows ownerReferences; a member's cannot, so the controller looks
for children labelled with a uid no live UnitedDeployment has. A suspect is only that: the
caller confirms each with the host (a GET of the named owner) before deleting, so cache lag or
a sharded controller that does not see every UnitedDeployment never deletes a live child.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from typing import Any

from united.api.document import Json
from united.multicluster.identity import RemoteKeys


def suspects(children: Iterable[Json], live_uids: Container[str], remote: RemoteKeys) -> list[Json]:
    """Children this host made whose owner uid is not among ``live_uids`` (from a synced
    host cache); children of other hosts or without an owner label are never suspects."""
    out = []
    for child in children:
        owner = remote.owner_of(child)
        if owner is not None and owner not in live_uids and not _deleting(child):
            out.append(child)
    return out


def _deleting(child: Mapping[str, Any]) -> bool:
    return bool((child.get("metadata") or {}).get("deletionTimestamp"))


class Sightings:
    """When each suspect of one member becomes due for collection.

    A child must stay a suspect for ``grace`` seconds before it is collected: the host cache may
    not show a UnitedDeployment created a moment ago yet. After an attempt the next waits
    ``retry`` seconds (the member cache may still show a child just deleted; the owner may have
    been alive after all; the member may have refused), so a child that cannot be collected costs
    one request per ``retry``, never a tight loop. A child that stops being a suspect is
    forgotten: it starts over if it becomes one again."""

    def __init__(self, *, grace: float, retry: float) -> None:
        self.grace = grace
        self.retry = retry
        self._due: dict[str, float] = {}

    def due(self, suspects: Iterable[Json], now: float) -> tuple[list[Json], float | None]:
        """The suspects whose time has come, and the seconds until the next one's (None: none)."""
        ready: list[Json] = []
        seen: dict[str, float] = {}
        for child in suspects:
            uid = str((child.get("metadata") or {}).get("uid") or "")
            if not uid:
                continue
            at = seen[uid] = self._due.get(uid, now + self.grace)
            if at <= now:
                ready.append(child)
        self._due = seen
        waits = [at - now for at in seen.values() if at > now]
        return ready, min(waits, default=None)

    def tried(self, child: Mapping[str, Any], now: float) -> None:
        """An attempt at ``child`` was made: the next one, if needed, after :attr:`retry`."""
        uid = str((child.get("metadata") or {}).get("uid") or "")
        if uid in self._due:
            self._due[uid] = now + self.retry
