"""Defaults, as OpenKruise's mutating webhook applies them.

There is no webhook in front of our controller (and Kubernetes 1.20 cannot express
cross-field defaults in a CRD schema), so the controller and the CLI apply these in memory on
every read. They are never written back to the object: the user's manifest stays as written,
and a reconcile with nothing to change stays write-free.

OpenKruise also injects the standard pod-spec defaults into ``statefulSetTemplate`` pod
templates. We do not: the API server defaults the child's pod template itself, and our
child diff compares the rendered input (see ``united.uniteddeployment.render``), not server-defaulted output.
"""

from __future__ import annotations

import dataclasses

from united.uniteddeployment.model import (
    MANUAL,
    Adaptive,
    ScheduleStrategy,
    Spec,
    UnitedDeployment,
)

DEFAULT_REPLICAS = 1
DEFAULT_REVISION_HISTORY_LIMIT = 10
DEFAULT_RESCHEDULE_CRITICAL_SECONDS = 30
DEFAULT_UNSCHEDULABLE_DURATION = 300


def apply(ud: UnitedDeployment) -> UnitedDeployment:
    """Return ``ud`` with every reference default filled in; idempotent."""
    return dataclasses.replace(ud, spec=spec_defaults(ud.spec))


def spec_defaults(spec: Spec) -> Spec:
    update = spec.update
    if update.type == "":
        update = dataclasses.replace(update, type=MANUAL)
    if update.type == MANUAL and update.partitions is None:
        update = dataclasses.replace(update, partitions={})
    subsets = spec.subsets
    if any(s.elastic for s in subsets) and not any(s.replicas is not None for s in subsets):
        subsets = tuple(dataclasses.replace(s, min_replicas=0) if s.min_replicas is None else s for s in subsets)
    return dataclasses.replace(
        spec,
        replicas=DEFAULT_REPLICAS if spec.replicas is None else spec.replicas,
        revision_history_limit=(
            DEFAULT_REVISION_HISTORY_LIMIT if spec.revision_history_limit is None else spec.revision_history_limit
        ),
        update=update,
        subsets=subsets,
        schedule=_schedule_defaults(spec.schedule),
    )


def _schedule_defaults(schedule: ScheduleStrategy) -> ScheduleStrategy:
    adaptive = schedule.adaptive or Adaptive()
    return dataclasses.replace(
        schedule,
        adaptive=Adaptive(
            reschedule_critical_seconds=(
                DEFAULT_RESCHEDULE_CRITICAL_SECONDS
                if adaptive.reschedule_critical_seconds is None
                else adaptive.reschedule_critical_seconds
            ),
            unschedulable_duration=(
                DEFAULT_UNSCHEDULABLE_DURATION
                if adaptive.unschedulable_duration is None
                else adaptive.unschedulable_duration
            ),
            reserve_unschedulable_pods=adaptive.reserve_unschedulable_pods,
        ),
    )
