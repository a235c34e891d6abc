"""The interface every child kind implements: what differs between workload kinds.

Everything else about a child (names, labels, selector, owner, placement, replicas) is the
same for all kinds and lives in :mod:`united.uniteddeployment.render`. A kind only knows its API identity and
how its workload spells a partition — the one thing Deployment, StatefulSet, CloneSet and
Advanced StatefulSet disagree on.
"""

from __future__ import annotations

from typing import Protocol

from united.api.document import Json


class ChildKind(Protocol):
    variant: str
    """The ``spec.template`` field naming this kind, e.g. ``deploymentTemplate``."""
    api_version: str
    kind: str
    plural: str
    mutable: frozenset[str]
    """Top-level spec fields an update may change. The others are never patched: the API
    server (or OpenKruise's webhook) refuses a patch touching one as a whole, replicas
    included, so a child could never be scaled again."""

    def set_partition(self, spec: Json, partition: int) -> bool:
        """Write ``partition`` into a rendered child ``spec``, replacing (never changing in
        place) the strategy that holds it, which ``spec`` may share with a kept blueprint;
        return whether the workload will hold it (False where the kind or its update strategy
        has no partition)."""
        ...

    def read_partition(self, child: Json) -> int | None:
        """The partition a live child holds, or None where it holds none."""
        ...


def rolling_partition(spec: Json, partition: int, *, set_type: bool) -> bool:
    """StatefulSet-style partition: only for ``RollingUpdate`` (or unset) strategies.

    ``set_type`` fills an empty type with ``RollingUpdate`` (apps/v1 does, Advanced
    StatefulSet leaves it empty, as OpenKruise does).
    """
    strategy = spec.get("updateStrategy") or {}
    kind = strategy.get("type") or ""
    if kind not in ("", "RollingUpdate"):
        return False
    strategy = spec["updateStrategy"] = dict(strategy)
    if set_type:
        strategy["type"] = "RollingUpdate"
    strategy["rollingUpdate"] = {**(strategy.get("rollingUpdate") or {}), "partition": partition}
    return True


def read_rolling_partition(child: Json) -> int | None:
    strategy = (child.get("spec") or {}).get("updateStrategy") or {}
    if (strategy.get("type") or "") not in ("", "RollingUpdate"):
        return None
    value = (strategy.get("rollingUpdate") or {}).get("partition", 0)
    return value if isinstance(value, int) else 0
