"""Status conditions in the kstatus convention (``Ready``, ``Reconciling``, ``Stalled``) that
GitOps tools read, built the same way for every kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

READY = "Ready"
RECONCILING = "Reconciling"
STALLED = "Stalled"


@dataclass(frozen=True, slots=True)
class Problem:
    """Why an object cannot progress (``stalled``) or why this pass failed."""

    reason: str
    message: str
    stalled: bool = True


Said = tuple[str, str]
"""A condition's ``(reason, message)``."""


def kstatus(
    previous: Mapping[Any, Mapping[str, Any]],
    *,
    ready: tuple[bool, str, str],
    reconciling: Said | None,
    stalled: Said | None,
    others: Mapping[str, tuple[bool, str, str]] | None = None,
    generation: int,
    now: str,
) -> list[dict[str, Any]]:
    """``Ready`` from ``(status, reason, message)``; ``Reconciling`` and ``Stalled`` only while
    True (None: absent), as kstatus reads them — an absent abnormal-true condition is False, and
    every condition written is a few hundred bytes the API server handles on each write and
    watch event of the object; then ``others`` in their order. A condition's
    ``lastTransitionTime`` moves only when its status does (``previous``: the old ones by type).
    Every kind's status builds its conditions here."""
    values = {READY: ready}
    for kind, said in ((RECONCILING, reconciling), (STALLED, stalled)):
        if said is not None:
            values[kind] = (True, *said)
    values.update(others or {})
    out = []
    for kind, (value, reason, message) in values.items():
        state = "True" if value else "False"
        before = previous.get(kind) or {}
        since = before.get("lastTransitionTime") if before.get("status") == state else None
        out.append(
            {
                "type": kind,
                "status": state,
                "observedGeneration": generation,
                "lastTransitionTime": since or now,
                "reason": reason,
                "message": message,
            }
        )
    return out
