"""Remote orphans: children in a member whose owner is gone from the host.

Host garbage collection follows ownerReferences; a member's cannot, so the controller looks
for children labelled with a uid no live UnitedDeployment has. A suspect is only that: the
caller confirms each with the host (a GET of the named owner) before deleting, so cache lag or
a sharded controller that does not see every UnitedDeployment never deletes a live child.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from typing import Any

from united.multicluster.identity import RemoteKeys

Json = dict[str, Any]


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
