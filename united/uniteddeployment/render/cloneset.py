"""OpenKruise CloneSet (``apps.kruise.io/v1alpha1``) children.

A CloneSet always holds ``updateStrategy.partition`` whatever its update type. A live
partition may be a percentage; it is read back against the child's replicas rounding up,
as CloneSet itself interprets it.
"""

from __future__ import annotations

import math
import re

from united.api.document import Json
from united.uniteddeployment.model import CLONE_SET

_PERCENT = re.compile(r"^([0-9]+)%$")


class CloneSet:
    variant = CLONE_SET
    api_version = "apps.kruise.io/v1alpha1"
    kind = "CloneSet"
    plural = "clonesets"
    mutable = frozenset(
        {
            "replicas",
            "template",
            "volumeClaimTemplates",
            "scaleStrategy",
            "updateStrategy",
            "revisionHistoryLimit",
            "minReadySeconds",
            "lifecycle",
            "persistentVolumeClaimRetentionPolicy",
        }
    )
    """Everything but the selector (OpenKruise's CloneSet webhook)."""

    def set_partition(self, spec: Json, partition: int) -> bool:
        spec["updateStrategy"] = {**(spec.get("updateStrategy") or {}), "partition": partition}
        return True

    def read_partition(self, child: Json) -> int | None:
        spec = child.get("spec") or {}
        value = (spec.get("updateStrategy") or {}).get("partition", 0)
        if isinstance(value, int):
            return value
        match = _PERCENT.match(str(value))
        if match is None:
            return 0
        replicas = spec.get("replicas") or 0
        return math.ceil(replicas * int(match.group(1)) / 100)


KIND = CloneSet()
