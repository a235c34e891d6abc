"""apps/v1 StatefulSet children: partition through ``rollingUpdate.partition``."""

from __future__ import annotations

from united.api.document import Json
from united.uniteddeployment.model import STATEFUL_SET
from united.uniteddeployment.render.kind import read_rolling_partition, rolling_partition
from united.uniteddeployment.validation import STATEFUL_SET_MUTABLE


class StatefulSet:
    variant = STATEFUL_SET
    api_version = "apps/v1"
    kind = "StatefulSet"
    plural = "statefulsets"
    mutable = STATEFUL_SET_MUTABLE

    def set_partition(self, spec: Json, partition: int) -> bool:
        return rolling_partition(spec, partition, set_type=True)

    def read_partition(self, child: Json) -> int | None:
        return read_rolling_partition(child)


KIND = StatefulSet()
