"""What a subset in an unreachable member last looked like — never "0 replicas" by accident.

A member that cannot be reached still has its pods (probably running). Reading its empty or
stale cache as "no child" would make the allocator create a second child once it is back, and
the status would claim the replicas are gone. So, in order:

1. the member's cache, if it synced at least once in this process (an informer keeps its store
   on a failed LIST/WATCH: the child there is the last one seen);
2. else the previous status' entry for the same subset *and* cluster (a restart while the member
   is down);
3. else nothing: the subset has no state, like one whose child was never created.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from united.uniteddeployment.allocation import SubsetState
from united.uniteddeployment.status import ChildView

STORE = "store"
STATUS = "status"


@dataclass(frozen=True, slots=True)
class LastKnown:
    """A subset's last-known child, and where it was learnt (:data:`STORE` or :data:`STATUS`)."""

    child: ChildView
    source: str

    def state(self) -> SubsetState:
        """The allocator's view: the child's replicas and ready pods as last seen."""
        return SubsetState(
            replicas=self.child.spec_replicas,
            ready_replicas=self.child.ready,
            reserved_pods=self.child.reserved,
        )

    def view(self) -> ChildView:
        """The status' view of the child."""
        return self.child


def last_known(
    previous_status: Mapping[str, Any] | None,
    subset: str,
    cluster: str,
    *,
    store: ChildView | None = None,
    synced: bool = False,
) -> LastKnown | None:
    """The last-known child of ``subset`` in ``cluster``. ``store``: the child the member's cache
    holds (None: none there); it counts only when that cache has ``synced`` in this process."""
    if synced:
        return None if store is None else LastKnown(store, STORE)
    for entry in (previous_status or {}).get("subsetStatuses") or ():
        if isinstance(entry, Mapping) and entry.get("name") == subset and entry.get("cluster") == cluster:
            return LastKnown(_from_status(entry), STATUS)
    return None


def _from_status(entry: Mapping[str, Any]) -> ChildView:
    replicas = _count(entry, "replicas")
    return ChildView(
        name="",
        spec_replicas=replicas,
        replicas=replicas,
        ready=_count(entry, "readyReplicas"),
        updated=_count(entry, "updatedReplicas"),
        updated_ready=_count(entry, "updatedReadyReplicas"),
        reserved=_count(entry, "reservedPods"),
        current=False,
    )


def _count(entry: Mapping[str, Any], key: str) -> int:
    value = entry.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
