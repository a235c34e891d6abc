"""OpenKruise Advanced StatefulSet (``apps.kruise.io/v1beta1``) children.

Same partition field as apps/v1 StatefulSet, but an empty update-strategy type stays empty
(Kruise defaults it server-side), as OpenKruise renders it.
"""

from __future__ import annotations

from united.api.document import Json
from united.uniteddeployment.model import ADVANCED_STATEFUL_SET
from united.uniteddeployment.render.kind import read_rolling_partition, rolling_partition
from united.uniteddeployment.validation import ADVANCED_STATEFUL_SET_MUTABLE


class AdvancedStatefulSet:
    variant = ADVANCED_STATEFUL_SET
    api_version = "apps.kruise.io/v1beta1"
    kind = "StatefulSet"
    plural = "statefulsets"
    mutable = ADVANCED_STATEFUL_SET_MUTABLE

    def set_partition(self, spec: Json, partition: int) -> bool:
        return rolling_partition(spec, partition, set_type=False)

    def read_partition(self, child: Json) -> int | None:
        return read_rolling_partition(child)


KIND = AdvancedStatefulSet()
