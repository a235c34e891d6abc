"""Adaptive scheduling decisions, per subset, as pure functions of facts.

``scheduleStrategy.type: Adaptive`` moves replicas away from a subset whose pods cannot be
scheduled. Everything that has to be *decided* for that lives here, apart from Kubernetes:
the inputs are the UnitedDeployment's adaptive settings, the subset's pods (raw dicts, as the
informer holds them), the subset's previous ``Schedulable`` condition, the time the
``UnitedDeploymentUpdated`` condition last flipped, and ``now`` — passed in, never read from
a clock, so every timeout is unit-tested to the second. The reconciler turns a
:class:`Decision` into a :class:`~united.uniteddeployment.allocation.SubsetState` for ``allocate()``, pod label
patches, Events, status conditions and the requeue delay.

Two modes, as in OpenKruise:

* **default**: a pod Pending with ``PodScheduled=False/Unschedulable`` for longer than
  ``rescheduleCriticalSeconds`` marks its subset unschedulable for ``unschedulableDuration``;
  the allocator caps the subset at its ready pods and later subsets take the rest; when the
  window ends the subset is schedulable again (and is marked again if its pods still fail).
* **reservation** (``reserveUnschedulablePods``): such pods are kept and *reserved* (pod label
  ``<group>/united-deployment-reserved-pod: "true"``); the subset keeps its size, substitutes
  run in later subsets, and the substitutes go once the reserved pods have been Ready for
  ``unschedulableDuration``.

Where we deliberately differ from OpenKruise (``docs/reference/differences.md``):
every decision comes with the exact time it must be revisited (:attr:`Decision.deadline`) —
no blind requeues and no requeue only after a failed scale-out; a label
is changed only when it differs; pods are visited in name order; pods a
marked subset should have but that do not exist yet count as reserved, so substitutes are not
removed in the moment between a scale-up and the pods' creation; and old-revision pods held
back on purpose by a partition are never taken for a stuck rollout.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from united.api.document import Json
from united.api.timestamp import format_time, parse_time
from united.uniteddeployment.defaults import DEFAULT_RESCHEDULE_CRITICAL_SECONDS, DEFAULT_UNSCHEDULABLE_DURATION
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import CLONE_SET, DEPLOYMENT, Spec

SCHEDULABLE = "Schedulable"
"""The per-subset condition type (``status.subsetStatuses[].conditions``)."""
RESCHEDULE = "reschedule"
"""Condition reason when a subset is (re)assessed: OpenKruise's spelling, kept for tools."""
RECOVER = "recover"
"""Condition reason when a default-mode window ends."""
CLUSTER_UNREACHABLE = "ClusterUnreachable"
"""Condition reason when a subset is marked because its cluster cannot be seen."""

RESERVED = "true"
NOT_RESERVED = "false"

MARKED_MESSAGE = "pods pending unschedulable for more than {critical:g}s: capped at its ready pods for {window:g}s"
RECOVERED_MESSAGE = "unschedulable subset recovered after {window:g} seconds"
RESERVED_MESSAGE = "reserved pods found: substitutes run in later subsets until they are ready for {window:g}s"
NO_RESERVED_MESSAGE = "no reserved pods"
REGROWN_MESSAGE = "subset just recovered scaled up: its new pods stay reserved until ready for {window:g}s"
CLUSTER_DOWN_MESSAGE = "cluster {cluster} unreachable for more than {critical:g}s: its replicas move to later subsets"


@dataclass(frozen=True, slots=True)
class Settings:
    """The adaptive knobs of one UnitedDeployment, in seconds."""

    critical: float
    """``rescheduleCriticalSeconds``: how long a pod may stay unschedulable; in reservation
    mode also how long old-revision pods may outlive the start of a template update."""
    window: float
    """``unschedulableDuration``: how long a subset stays marked (default mode), or how long a
    reserved pod must be Ready before it is trusted again (reservation mode)."""
    reserve: bool = False

    @classmethod
    def of(cls, spec: Spec) -> Settings | None:
        """The settings of a defaulted spec, or None when scheduling is not Adaptive."""
        schedule = spec.schedule
        if not schedule.is_adaptive:
            return None
        adaptive = schedule.adaptive
        critical = adaptive.reschedule_critical_seconds if adaptive else None
        window = adaptive.unschedulable_duration if adaptive else None
        return cls(
            critical=float(DEFAULT_RESCHEDULE_CRITICAL_SECONDS if critical is None else critical),
            window=float(DEFAULT_UNSCHEDULABLE_DURATION if window is None else window),
            reserve=schedule.reserves,
        )


@dataclass(frozen=True, slots=True)
class Condition:
    """A subset's ``Schedulable`` condition; ``since`` is its lastTransitionTime (epoch seconds)."""

    status: bool
    reason: str
    message: str
    since: float

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None) -> Condition | None:
        if not raw or raw.get("status") not in ("True", "False"):
            return None
        since = parse_time(raw.get("lastTransitionTime"))
        if since is None:
            return None
        return cls(raw["status"] == "True", str(raw.get("reason") or ""), str(raw.get("message") or ""), since)

    def to_dict(self) -> Json:
        return {
            "type": SCHEDULABLE,
            "status": "True" if self.status else "False",
            "lastTransitionTime": format_time(self.since),
            "reason": self.reason,
            "message": self.message,
        }


def schedulable_condition(subset_status: Mapping[str, Any] | None) -> Condition | None:
    """The ``Schedulable`` condition of one ``status.subsetStatuses[]`` entry, if any."""
    for raw in (subset_status or {}).get("conditions") or ():
        if isinstance(raw, Mapping) and raw.get("type") == SCHEDULABLE:
            return Condition.from_dict(raw)
    return None


def set_condition(old: Condition | None, new: Condition) -> Condition:
    """OpenKruise's condition setter: unchanged status and reason keep the old condition,
    time and message included; anything else starts a new one at ``new.since``. Keeping the
    time is what makes a default-mode window last ``unschedulableDuration`` from the first
    mark, however often the pods are found stuck again inside it."""
    if old is not None and old.status == new.status and old.reason == new.reason:
        return old
    return new


@dataclass(frozen=True, slots=True)
class Event:
    type: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class LabelChange:
    """Set the reserved-pod label of pod ``pod`` to ``value`` (``"true"``/``"false"``)."""

    pod: str
    value: str


@dataclass(frozen=True, slots=True)
class Decision:
    """What adaptive scheduling decided for one subset that has a child workload."""

    unschedulable: bool
    """Default mode: marked (inside the window). Reservation mode: has reserved pods."""
    reserved: int = 0
    """Pods that exist and are reserved (``status.reservedPods``; excluded from ``status.replicas``)."""
    missing: int = 0
    """Reservation: pods a marked subset should have but that do not exist yet; the allocator
    counts them as reserved so substitutes stay until the new pods prove healthy."""
    timed_out: tuple[str, ...] = ()
    """Pods found unschedulable past ``critical`` (default mode) or newly reserved this pass."""
    update_timeout_pods: int = 0
    """Reservation: old-revision pods reserved because the template update has taken longer
    than ``critical``; the rollout may make them unavailable (see :func:`max_unavailable`)."""
    labels: tuple[LabelChange, ...] = ()
    condition: Condition | None = None
    deadline: float | None = None
    """The earliest time this decision can change without any watch event: a pending pod's
    timeout, the window's end, a reserved pod's readiness proof, the update timeout."""
    event: Event | None = None

    @property
    def held(self) -> int:
        """Replicas the allocator must treat as reserved (existing and not yet created)."""
        return self.reserved + self.missing


# --- time ----------------------------------------------------------------------------------------


def _earliest(*deadlines: float | None) -> float | None:
    present = [d for d in deadlines if d is not None]
    return min(present) if present else None


# --- pods ----------------------------------------------------------------------------------------


def _meta(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return pod.get("metadata") or {}


def _name(pod: Mapping[str, Any]) -> str:
    return str(_meta(pod).get("name") or "")


def _active(pod: Mapping[str, Any]) -> bool:
    """Not being deleted and not finished: a pod that still counts for its workload."""
    phase = (pod.get("status") or {}).get("phase")
    return not _meta(pod).get("deletionTimestamp") and phase not in ("Succeeded", "Failed")


def _condition(pod: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == kind:
            return c
    return None


def unschedulable_since(pod: Mapping[str, Any]) -> float | None:
    """The creation time of a pod the scheduler could not place, else None.

    OpenKruise's test: not being deleted, phase Pending, not bound to a node, and
    ``PodScheduled=False`` with reason ``Unschedulable``. Other pending pods (not yet seen by the
    scheduler, or failing for another reason) say nothing about the subset's capacity. The
    clock starts at the pod's creation, as in OpenKruise.
    """
    if _meta(pod).get("deletionTimestamp"):
        return None
    if (pod.get("status") or {}).get("phase") != "Pending" or (pod.get("spec") or {}).get("nodeName"):
        return None
    scheduled = _condition(pod, "PodScheduled")
    if scheduled is None or scheduled.get("status") != "False" or scheduled.get("reason") != "Unschedulable":
        return None
    return parse_time(_meta(pod).get("creationTimestamp"))


def ready_since(pod: Mapping[str, Any]) -> float | None:
    """When a Running pod became Ready, else None."""
    if (pod.get("status") or {}).get("phase") != "Running":
        return None
    ready = _condition(pod, "Ready")
    if ready is None or ready.get("status") != "True":
        return None
    return parse_time(ready.get("lastTransitionTime"))


def _pending_timeouts(pods: Iterable[Mapping[str, Any]], critical: float, now: float) -> tuple[list[str], float | None]:
    """Pods unschedulable for longer than ``critical`` (strictly), and the earliest time
    another one will be."""
    out: list[str] = []
    nxt: float | None = None
    for pod in pods:
        created = unschedulable_since(pod)
        if created is None:
            continue
        if created + critical < now:
            out.append(_name(pod))
        else:
            nxt = _earliest(nxt, created + critical)
    return out, nxt


# --- decisions -----------------------------------------------------------------------------------


def decide(
    settings: Settings,
    pods: Sequence[Mapping[str, Any]],
    *,
    subset: str,
    previous: Condition | None,
    now: float,
    keys: Keys,
    updated_revision: str = "",
    updated_since: float | None = None,
    replicas: int = 0,
    partition: int = 0,
) -> Decision:
    """Decide one subset (which has a child workload).

    ``previous`` is the subset's stored ``Schedulable`` condition, ``updated_since`` the
    ``UnitedDeploymentUpdated`` condition's lastTransitionTime (reservation: the start of a
    template update), ``replicas`` the child's ``spec.replicas`` and ``partition`` its
    effective partition (old-revision pods it holds on purpose).
    """
    ordered = sorted(pods, key=_name)
    if settings.reserve:
        return _reservation(
            settings,
            ordered,
            subset=subset,
            previous=previous,
            now=now,
            keys=keys,
            updated_revision=updated_revision,
            updated_since=updated_since,
            replicas=replicas,
            partition=partition,
        )
    return _default(settings, ordered, subset=subset, previous=previous, now=now)


def cluster_down(
    settings: Settings,
    *,
    subset: str,
    cluster: str,
    since: float,
    now: float,
    previous: Condition | None,
    replicas: int = 0,
) -> Decision:
    """Decide a subset whose cluster cannot be seen since ``since`` (unreachable, or refusing
    our credentials: either way nothing there can be checked or fixed).

    Like a pod stuck unschedulable: after ``rescheduleCriticalSeconds`` the subset is marked
    and its replicas move to later subsets. Unlike it, the mark is held while the cluster stays
    unseen (there is no window end to reach); once the cluster is back, :func:`decide` applies
    the usual window from the mark. Reservation mode keeps the subset's last-known
    ``replicas`` as reserved: substitutes run elsewhere until they are back and ready.
    """
    reserved = replicas if settings.reserve else 0
    if previous is not None and not previous.status:
        return Decision(unschedulable=True, reserved=reserved, condition=previous)
    deadline = since + settings.critical
    if now < deadline:
        return Decision(unschedulable=False, condition=previous, deadline=deadline)
    message = CLUSTER_DOWN_MESSAGE.format(cluster=cluster, critical=settings.critical)
    condition = Condition(False, CLUSTER_UNREACHABLE, message, math.floor(now))
    event = Event("Warning", "SubsetUnschedulable", f"subset {subset}: {message}")
    return Decision(unschedulable=True, reserved=reserved, condition=condition, event=event)


def _default(
    settings: Settings, pods: Sequence[Mapping[str, Any]], *, subset: str, previous: Condition | None, now: float
) -> Decision:
    """As OpenKruise: inside the window the subset stays marked; pods stuck past the
    critical time mark it (or, once the window is over, mark it again)."""
    condition = previous
    unschedulable = False
    window_end: float | None = None
    if previous is not None and not previous.status:
        end = previous.since + settings.window
        if now < end:
            unschedulable, window_end = True, end
        else:
            condition = Condition(True, RECOVER, RECOVERED_MESSAGE.format(window=settings.window), math.floor(now))
    timed_out, next_timeout = _pending_timeouts(pods, settings.critical, now)
    if timed_out:
        marked = Condition(
            False,
            RESCHEDULE,
            MARKED_MESSAGE.format(critical=settings.critical, window=settings.window),
            math.floor(now),
        )
        condition = set_condition(condition, marked)
        unschedulable = True
        # A zero window (or one already over) has no end to wait for.
        window_end = condition.since + settings.window if condition.since + settings.window > now else None
    event = _transition(subset, previous, condition, settings, timed_out=len(timed_out))
    return Decision(
        unschedulable=unschedulable,
        timed_out=tuple(timed_out),
        condition=condition,
        deadline=_earliest(window_end, next_timeout),
        event=event,
    )


def _reservation(
    settings: Settings,
    pods: Sequence[Mapping[str, Any]],
    *,
    subset: str,
    previous: Condition | None,
    now: float,
    keys: Keys,
    updated_revision: str,
    updated_since: float | None,
    replicas: int,
    partition: int,
) -> Decision:
    """OpenKruise's reservation steps, pod by pod in name order."""
    marked = previous is not None and not previous.status
    active = [p for p in pods if _active(p)]
    held_back = _held_by_partition(active, keys, updated_revision, partition)
    reserved = 0
    update_timeouts = 0
    newly: list[str] = []
    labels: list[LabelChange] = []
    deadline: float | None = None
    for pod in active:
        name = _name(pod)
        label = (_meta(pod).get("labels") or {}).get(keys.reserved_pod)
        revision = (_meta(pod).get("labels") or {}).get(keys.revision) or ""
        is_reserved = False
        if marked and label is None:
            # A pod new in a marked subset: reserved until it proves itself.
            is_reserved = True
        elif label == RESERVED:
            since = ready_since(pod)
            if revision == updated_revision and since is not None:
                trusted_at = since + settings.window
                if trusted_at < now:
                    is_reserved = False
                else:
                    is_reserved, deadline = True, _earliest(deadline, trusted_at)
            else:
                # Pending, not ready or at an old revision: a pod watch event (or its
                # replacement by the rollout) is what can change this, not time.
                is_reserved = True
        elif revision == updated_revision:
            created = unschedulable_since(pod)
            if created is not None:
                if created + settings.critical < now:
                    is_reserved = True
                else:
                    deadline = _earliest(deadline, created + settings.critical)
        elif name not in held_back and updated_since is not None:
            if updated_since + settings.critical < now:
                is_reserved = True
                update_timeouts += 1
            else:
                deadline = _earliest(deadline, updated_since + settings.critical)
        if is_reserved:
            reserved += 1
            if label != RESERVED:
                newly.append(name)
        want = RESERVED if is_reserved else NOT_RESERVED
        if label != want:
            labels.append(LabelChange(name, want))
    missing = max(0, replicas - len(active)) if marked else 0
    if reserved or missing:
        new = Condition(False, RESCHEDULE, RESERVED_MESSAGE.format(window=settings.window), math.floor(now))
    else:
        new = Condition(True, RESCHEDULE, NO_RESERVED_MESSAGE, math.floor(now))
    condition = set_condition(previous, new)
    return Decision(
        unschedulable=bool(reserved or missing),
        reserved=reserved,
        missing=missing,
        timed_out=tuple(newly),
        update_timeout_pods=update_timeouts,
        labels=tuple(labels),
        condition=condition,
        deadline=deadline,
        event=_transition(subset, previous, condition, settings, timed_out=len(newly), reserved=reserved),
    )


def _held_by_partition(
    pods: Sequence[Mapping[str, Any]], keys: Keys, updated_revision: str, partition: int
) -> set[str]:
    """Old-revision pods a partition keeps on purpose (ready ones first, then by name): a
    canary is not a stuck rollout, so they are never reserved for the update timeout."""
    if partition <= 0:
        return set()
    old = [p for p in pods if ((_meta(p).get("labels") or {}).get(keys.revision) or "") != updated_revision]
    old.sort(key=lambda p: (ready_since(p) is None, _name(p)))
    return {_name(p) for p in old[:partition]}


def _transition(
    subset: str,
    previous: Condition | None,
    condition: Condition | None,
    settings: Settings,
    *,
    timed_out: int,
    reserved: int = 0,
) -> Event | None:
    """The Event for a change of the ``Schedulable`` condition: Warning when a subset is
    marked (or marked again), Normal when it recovers; nothing when nothing changed."""
    if condition is None or condition == previous:
        return None
    was_marked = previous is not None and not previous.status
    if not condition.status:
        if settings.reserve:
            return Event(
                "Warning",
                "SubsetUnschedulable",
                f"subset {subset}: {_pods(reserved)} reserved (unschedulable for more than {settings.critical:g}s); "
                "substitutes run in later subsets",
            )
        again = " again" if was_marked else ""
        return Event(
            "Warning",
            "SubsetUnschedulable",
            f"subset {subset}: {_pods(timed_out)} unschedulable for more than {settings.critical:g}s; "
            f"marked unschedulable{again} for {settings.window:g}s, capped at its ready pods",
        )
    if not was_marked:
        return None
    if settings.reserve:
        return Event("Normal", "SubsetSchedulable", f"subset {subset}: no reserved pods left; substitutes scale in")
    return Event(
        "Normal",
        "SubsetSchedulable",
        f"subset {subset}: schedulable again after {settings.window:g}s; it may receive replicas again",
    )


def _pods(n: int) -> str:
    return f"{n} pod" if n == 1 else f"{n} pods"


def regrow(
    settings: Settings,
    decision: Decision,
    *,
    subset: str,
    previous: Condition | None,
    replicas: int,
    allocated: int,
    now: float,
) -> Decision | None:
    """Reservation post-process, or None when it does not apply.

    A subset that was marked, has no reserved pods now, and is given more replicas than it
    has: its new pods are reserved from the start, so the substitutes in later subsets stay
    until those pods have been Ready for ``window``. The returned decision says so *before*
    allocating again (the reconciler re-runs the allocator with it), so the substitutes are
    never scaled in for the moment between this pass and the next — OpenKruise lets them
    go and brings them back one pass later.
    """
    if not settings.reserve or decision.unschedulable or previous is None or previous.status:
        return None
    if allocated <= replicas:
        return None
    condition = Condition(False, RESCHEDULE, REGROWN_MESSAGE.format(window=settings.window), math.floor(now))
    grown = allocated - replicas
    return replace(
        decision,
        unschedulable=True,
        missing=decision.missing + grown,
        condition=condition,
        event=Event(
            "Normal",
            "SubsetSchedulable",
            f"subset {subset}: reserved pods are ready; it grows to {allocated} replicas and "
            f"keeps its substitutes until the {_pods(grown)} it gains are ready for {settings.window:g}s",
        ),
    )


# --- rolling-update override ---------------------------------------------------------------------


def max_unavailable(replicas: int, ready: int, update_timeout_pods: int) -> int:
    """How many pods a rollout of an unschedulable subset may take down at once (as OpenKruise:
    ``spec.replicas - readyReplicas + updateTimeoutPods``), never negative.

    OpenKruise writes the raw difference, which goes negative when the subset shrinks below
    its ready pods — an invalid workload the API server rejects (openkruise/kruise#2412).
    """
    return max(0, replicas - ready + update_timeout_pods)


def override_max_unavailable(variant: str, spec: Json, value: int, *, exact: bool = False) -> bool:
    """Write ``value`` as the rolling-update ``maxUnavailable`` of a rendered child ``spec``;
    return whether it was written.

    Nothing is written for 0 unless ``exact`` (a rollout holding a Deployment to surge-only
    replacements; its caller checked ``maxSurge``): for a reservation it would only forbid what
    the template allows, and with ``maxSurge: 0`` a Deployment would be invalid. Nor for a
    Deployment with the ``Recreate`` strategy, which takes no ``rollingUpdate`` at all
    (OpenKruise adds one and the API server rejects the object). Only Deployment and
    CloneSet children can reserve pods.
    """
    if value < 0 or (value == 0 and not exact):
        return False
    if variant == DEPLOYMENT:
        strategy = spec.get("strategy") or {}
        if (strategy.get("type") or "RollingUpdate") != "RollingUpdate":
            return False
        rolling = dict(strategy.get("rollingUpdate") or {})
        rolling["maxUnavailable"] = value
        spec["strategy"] = {**strategy, "type": "RollingUpdate", "rollingUpdate": rolling}
        return True
    if variant == CLONE_SET:
        strategy = dict(spec.get("updateStrategy") or {})
        strategy["maxUnavailable"] = value
        spec["updateStrategy"] = strategy
        return True
    return False


__all__ = [
    "SCHEDULABLE",
    "Condition",
    "Decision",
    "Event",
    "LabelChange",
    "Settings",
    "decide",
    "format_time",
    "max_unavailable",
    "override_max_unavailable",
    "parse_time",
    "regrow",
    "schedulable_condition",
    "set_condition",
]
