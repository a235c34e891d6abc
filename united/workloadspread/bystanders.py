"""The workloads of a spread's namespace whose pods no spread targets, known to the webhook
server's own thread.

A pod review from a namespace with a spread crosses to the controller's loop, where the pod's
owners are walked through the caches. Most pods of such a namespace belong to other workloads,
and each of their reviews would pay that crossing (a wake-up of each thread, and a wait behind
whatever the loop is doing). So when the loop finds a pod's controller a bystander (its chain of
owners walked to the end from the caches, reaching no spread's target), it notes that controller,
and the server answers the next pods of it on its own thread.

A namespace's are forgotten at once whenever something such a walk read there may have changed:
a spread added, removed or changed (anything but its status), an owner removed or given other
owners. In between, the server's answer is the one the loop would give, and as fresh as the caches."""

from __future__ import annotations

from united.api.document import Json
from united.workloadspread.model import group_of

LIMIT = 4096
"""Controllers remembered in all; past it the oldest is forgotten first (its next pod crosses again)."""

_Key = tuple[str, str, str, str]


class Bystanders:
    """Noted and forgotten on the controller's loop, by namespace (a walk reads only its own
    namespace's owners, so a tenant's changes cost no one else's pods their early answer);
    asked on the webhook server's thread, which only reads (a lookup in a dict, and one in a
    dict the loop replaces or updates in one step)."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._known: dict[str, dict[_Key, None]] = {}
        self._size = 0

    def note(self, namespace: str, ref: Json) -> None:
        """No spread of ``namespace`` targets a pod whose controller is ``ref``."""
        key = _key(ref)
        if key is None or key in self._known.get(namespace, ()):
            return
        if self._size >= self.limit:
            oldest = next(iter(self._known))
            self._known[oldest].pop(next(iter(self._known[oldest])))
            self._size -= 1
            if not self._known[oldest]:
                del self._known[oldest]
        self._known.setdefault(namespace, {})[key] = None
        self._size += 1

    def forget(self, namespace: str) -> None:
        """The spreads, or the owners a walk read, changed in ``namespace``."""
        self._size -= len(self._known.pop(namespace, ()))

    def holds(self, namespace: str, ref: Json) -> bool:
        """Whether ``ref`` was noted in ``namespace`` and not forgotten since."""
        key = _key(ref)
        return key is not None and key in self._known.get(namespace, ())

    def __len__(self) -> int:
        return self._size


def _key(ref: Json) -> _Key | None:
    """The reference as a whole: a review naming a noted controller's uid under another name
    (or the reverse) is not that controller."""
    parts = (ref.get("apiVersion"), ref.get("kind"), ref.get("name"), ref.get("uid"))
    if not all(isinstance(p, str) and p for p in parts):
        return None
    version, kind, name, uid = (str(p) for p in parts)
    return group_of(version), kind, name, uid


__all__ = ["LIMIT", "Bystanders"]
