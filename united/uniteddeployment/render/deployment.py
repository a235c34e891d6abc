"""apps/v1 Deployment children. Deployments have no partition; we never pretend they do."""

from __future__ import annotations

from united.api.document import Json
from united.uniteddeployment.model import DEPLOYMENT


class Deployment:
    variant = DEPLOYMENT
    api_version = "apps/v1"
    kind = "Deployment"
    plural = "deployments"
    mutable = frozenset(
        {"replicas", "template", "strategy", "minReadySeconds", "revisionHistoryLimit", "paused"}
        | {"progressDeadlineSeconds"}
    )
    """Everything but the selector."""

    def set_partition(self, spec: Json, partition: int) -> bool:
        return False

    def read_partition(self, child: Json) -> int | None:
        return None


KIND = Deployment()
