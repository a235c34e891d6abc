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


def kstatus(
    previous: Mapping[Any, Mapping[str, Any]],
    values: Mapping[str, tuple[bool, str, str]],
    *,
    generation: int,
    now: str,
) -> list[dict[str, Any]]:
    """Conditions from ``type -> (status, reason, message)``, in that order; a condition's
    ``lastTransitionTime`` moves only when its status does (``previous``: the old ones by type).
    Every kind's status builds its conditions here."""
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
