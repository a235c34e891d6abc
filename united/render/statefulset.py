"""apps/v1 StatefulSet children: partition through ``rollingUpdate.partition``."""

from __future__ import annotations

from united.api.model import STATEFUL_SET
from united.api.validation import STATEFUL_SET_MUTABLE
from united.render.kind import Json, read_rolling_partition, rolling_partition


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
