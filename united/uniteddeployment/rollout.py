"""Progressive rollouts (``updateStrategy.type: Progressive``), decided from plain data.

A template change reaches the subsets wave by wave: subsets of a later wave are held at the
revision they run — StatefulSet, CloneSet and Advanced StatefulSet children through a
partition equal to their replicas, Deployment children by rendering them from the template of
the revision they run (a Deployment has no partition). A wave is over when every subset in it
runs the new revision with all its pods available (ready for the template's
``minReadySeconds``); then its pause, if any, must end (a duration, or the resume annotation
naming the revision and this wave) before the next wave starts.

One budget, ``maxUnavailable`` of ``spec.replicas``, caps the pods that may be unavailable
across all subsets at every moment. Each pass counts what every subset has *committed*: pods
missing or not available now, or released for update (below the partition, or within a
swapped Deployment's ``maxUnavailable``) and not yet available at the new revision — the
workload may take those down any time, whether or not the cache shows it yet. Only the rest
of the budget is handed out, in topology order, to the subsets of the current wave: a lower
partition, or a Deployment's swap to the new template with ``maxUnavailable`` set to its share
(its ``maxSurge`` stays the template's: surge pods add capacity, they take none away).

A Deployment's template is swapped only once its own status counts the pods the cache shows
(as many, as many at its revision, no more available): the Deployment controller sizes what it
takes down from its ReplicaSets' statuses, and a ReplicaSet that still counts a deleted pod (an
undo swaps back to one scaled to zero a moment ago) makes it take down every old pod at once,
whatever ``maxUnavailable`` says (seen on Kubernetes 1.20: a subset of 3 at 0 ready under a
budget of 2).

No progress (more pods updated or available at the new revision, or a new wave) within
``progressDeadlineSeconds`` makes the rollout ``Stalled``: nothing more is released until a
new template or the resume annotation. ``paused: true`` holds everything where it is.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from united.api.document import Json
from united.api.intstr import IntOrStr, is_percent, resolve, scaled
from united.api.timestamp import parse_time
from united.uniteddeployment.model import Progressive

RESUME_ANNOTATION = "rollout.apps.united.io/resume"
DEFAULT_MAX_UNAVAILABLE: IntOrStr = "25%"
DEFAULT_PROGRESS_DEADLINE = 600
REQUEUE_MARGIN = 0.05
"""Seconds added to a timed requeue: the pass must run just after the moment, not at it."""

PROGRESSING = "Progressing"
PAUSED = "Paused"
COMPLETED = "Completed"
STALLED = "Stalled"
WAVE_PAUSED = "WavePaused"
OPERATOR_PAUSED = "OperatorPaused"
ROLLOUT_STUCK = "RolloutStuck"

PENDING = "Pending"
UPDATING = "Updating"
UPDATED = "Updated"
DRAINING = "Draining"
"""A removed subset's child, kept while the other subsets' new pods become available."""


@dataclass(frozen=True, slots=True)
class Counts:
    """A subset's active pods (not terminal, not deleting), by revision and availability."""

    available: int = 0
    updated: int = 0
    updated_ready: int = 0
    updated_available: int = 0
    stale: int = 0
    """Pods at any other revision."""
    available_at: float | None = None
    """When the next ready pod becomes available (its ``minReadySeconds`` run out)."""
    revisions: Mapping[str, int] = field(default_factory=dict)
    """Pods per revision."""


@dataclass(frozen=True, slots=True)
class SubsetFacts:
    """What one subset is now: its allocation, its child and its pods."""

    replicas: int
    """Replicas allocated to the subset this pass."""
    partitioned: bool
    """The child holds a partition (False: Deployment)."""
    exists: bool = True
    revision: str | None = None
    """The revision the child's template is at (its revision label)."""
    child_replicas: int = 0
    partition: int = 0
    """The live child's partition (partitioned kinds)."""
    max_unavailable: int = 0
    """The live child's rolling-update ``maxUnavailable``, resolved (Deployment)."""
    max_surge: int = 1
    """The live child's rolling-update ``maxSurge``, resolved (Deployment)."""
    settled: bool = True
    """The child's controller has observed the child's latest generation."""
    reported: tuple[int, int, int] | None = None
    """A Deployment's own status: its pods, its pods at its template's revision, its available pods."""
    counts: Counts = Counts()

    def done(self, revision: str) -> bool:
        """Every pod of the subset runs ``revision`` and is available, as its workload says too."""
        return self.replaced(revision) and self.settled if self.exists else self.replicas == 0

    def reported_as_is(self) -> bool:
        """The child's status counts the pods the cache shows: as many in all and at its own
        revision, no more available (see the module docstring on swapping a Deployment)."""
        if self.reported is None:
            return True
        c = self.counts
        pods, own, available = self.reported
        return (
            pods == c.updated + c.stale and own == c.revisions.get(str(self.revision), 0) and available <= c.available
        )

    def rolling_elsewhere(self, revision: str) -> bool:
        """A Deployment child still replacing pods with pods of its own revision, which is not
        ``revision``: a rollout overtaken by a newer template before this subset's wave."""
        c = self.counts
        own = self.revision
        return (
            self.exists
            and not self.partitioned
            and own is not None
            and own != revision
            and c.updated + c.stale > c.revisions.get(own, 0)
        )

    def hold(self) -> int:
        """The ``maxUnavailable`` that lets :meth:`rolling_elsewhere` finish without taking a
        pod down: 0 (surge pods only), or 1 when its ``maxSurge`` is 0 (both 0 is invalid)."""
        return 0 if self.max_surge > 0 else 1

    def replaced(self, revision: str) -> bool:
        """Every pod of the subset runs ``revision`` and is available (whatever its workload has
        observed: a finished Deployment's own strategy coming back must not make it roll again)."""
        c = self.counts
        return self.exists and self.revision == revision and c.stale == 0 and c.updated_available >= self.replicas


@dataclass(frozen=True, slots=True)
class Target:
    """What to render for one subset."""

    revision: str
    """The revision whose template the child gets."""
    partition: int
    max_unavailable: int | None
    """A Deployment's ``maxUnavailable`` while it rolls; None: the template's own."""
    state: str


@dataclass(frozen=True)
class Decision:
    targets: Mapping[str, Target]
    status: Json
    """``status.rollout``."""
    requeue_after: float | None
    events: tuple[tuple[str, str, str], ...] = ()
    """(type, reason, message) to record."""


def counts(
    pods: Sequence[Mapping[str, Any]], *, revision_label: str, updated: str, min_ready_seconds: int, now: float
) -> Counts:
    """Count a subset's pods; a pod is available once Ready for ``min_ready_seconds``."""
    available = updated_n = updated_ready = updated_available = stale = 0
    next_at: float | None = None
    revisions: dict[str, int] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp") or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        at = ready_since(pod)
        is_available = at is not None and at + min_ready_seconds <= now
        if at is not None and not is_available:
            next_at = min(next_at or at + min_ready_seconds, at + min_ready_seconds)
        available += is_available
        at_revision = str((meta.get("labels") or {}).get(revision_label))
        revisions[at_revision] = revisions.get(at_revision, 0) + 1
        if at_revision == updated:
            updated_n += 1
            updated_ready += at is not None
            updated_available += is_available
        else:
            stale += 1
    return Counts(available, updated_n, updated_ready, updated_available, stale, next_at, revisions)


def ready_since(pod: Mapping[str, Any]) -> float | None:
    """When a Ready pod became Ready (epoch seconds; 0 when unknown), None when not Ready."""
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            if c.get("status") != "True":
                return None
            return parse_time(c.get("lastTransitionTime")) or 0.0
    return None


def rolling_max_surge(child: Mapping[str, Any]) -> int:
    """A Deployment child's rolling-update ``maxSurge`` as a pod count (percentages of its
    replicas round up, as the Deployment controller does; 25% when unset)."""
    return _rolling_count(child, "maxSurge", round_up=True)


def rolling_max_unavailable(child: Mapping[str, Any]) -> int:
    """A Deployment child's rolling-update ``maxUnavailable`` as a pod count (percentages of its
    replicas round down, as the Deployment controller does; 25% when unset)."""
    return _rolling_count(child, "maxUnavailable", round_up=False)


def _rolling_count(child: Mapping[str, Any], name: str, *, round_up: bool) -> int:
    spec = child.get("spec") or {}
    value = ((spec.get("strategy") or {}).get("rollingUpdate") or {}).get(name, "25%")
    try:
        return max(scaled(value, int(spec.get("replicas") or 0), round_up=round_up), 0)
    except (TypeError, ValueError):
        return 0


def budget(progressive: Progressive, replicas: int) -> int:
    """``maxUnavailable`` of ``replicas``: percentages round down, at least 1 when replicas > 0."""
    value = progressive.max_unavailable if progressive.max_unavailable is not None else DEFAULT_MAX_UNAVAILABLE
    n = resolve(replicas, value) if not is_percent(value) else scaled(value, replicas, round_up=False)
    return max(n, 1) if replicas > 0 else 0


def waves(progressive: Progressive, subsets: Sequence[str]) -> list[tuple[str, ...]]:
    """The waves' subsets in order; subsets named in no wave form the last one."""
    named = [tuple(n for n in w.subsets if n in subsets) for w in progressive.waves]
    seen = {n for w in named for n in w}
    rest = tuple(n for n in subsets if n not in seen)
    return [*named, rest] if rest else named


def resumed(annotations: Mapping[str, str], revision: str, wave: int) -> bool:
    """Whether the resume annotation ends wave ``wave``'s pause: ``<revision>/<wave>``, this
    wave exactly. A later index must not resume anything: ``<revision>/999`` would otherwise
    skip every pause still to come, which whoever set them meant to be looked at one by one."""
    return annotations.get(RESUME_ANNOTATION) == f"{revision}/{wave}"


def decide(
    progressive: Progressive,
    *,
    replicas: int,
    revision: str,
    facts: Mapping[str, SubsetFacts],
    subsets: Sequence[str],
    previous: Mapping[str, Any],
    progress: tuple[int, int],
    previous_progress: tuple[int, int],
    annotations: Mapping[str, str],
    now: float,
) -> Decision:
    """The targets and ``status.rollout`` for this pass.

    ``previous`` is the last ``status.rollout``; ``progress`` the (updated, updated ready) pod
    counts now and ``previous_progress`` the ones the last status recorded."""
    groups = waves(progressive, subsets)
    total = len(groups)
    same = previous.get("revision") == revision
    last_wave = min(max(int(previous.get("wave") or 0), 0), total) if same else 0
    last = (previous.get("phase"), previous.get("reason") or "") if same else (None, "")
    progressed_at = parse_time(previous.get("lastProgressTime")) if same else None
    events: list[tuple[str, str, str]] = []
    if not same and previous.get("revision"):
        events.append(("Normal", "RolloutStarted", f"rolling out revision {revision} from wave 0 of {total}"))
    if progressed_at is None or any(n > before for n, before in zip(progress, previous_progress, strict=True)):
        progressed_at = now

    def done(name: str) -> bool:
        f = facts.get(name)
        return f is not None and f.done(revision)

    pauses = [(w.pause, w.pause_seconds) for w in progressive.waves]
    pauses += [(False, None)] * (total - len(pauses))
    wave, phase, reason = last_wave, PROGRESSING, ""
    pause_ends: float | None = None
    stalled = last == (STALLED, ROLLOUT_STUCK)
    if stalled and resumed(annotations, revision, wave):
        stalled, progressed_at = False, now
        events.append(("Normal", "RolloutResumed", f"wave {wave} resumed after it stalled"))
    if all(done(n) for n in subsets):
        wave = total
    elif not progressive.paused and not stalled:
        while wave < total and all(done(n) for n in groups[wave]):
            pause, seconds = pauses[wave]
            if pause and wave < total - 1 and not resumed(annotations, revision, wave):
                paused_here = same and last == (PAUSED, WAVE_PAUSED) and wave == last_wave
                start = (parse_time(previous.get("since")) if paused_here else None) or now
                if seconds is None or now < start + seconds:
                    phase, reason = PAUSED, WAVE_PAUSED
                    pause_ends = None if seconds is None else start + seconds
                    break
            wave += 1
            progressed_at = now
            if wave < total:
                events.append(("Normal", "WaveStarted", f"wave {wave} ({', '.join(groups[wave])}) started"))
    deadline = progressive.progress_deadline_seconds or DEFAULT_PROGRESS_DEADLINE
    if wave >= total:
        phase, reason = COMPLETED, ""
    elif progressive.paused:
        phase, reason = PAUSED, OPERATOR_PAUSED
    elif stalled:
        phase, reason = STALLED, ROLLOUT_STUCK
    elif phase == PROGRESSING and last[0] == PAUSED:
        progressed_at = now
    elif phase == PROGRESSING and now - progressed_at >= deadline:
        phase, reason = STALLED, ROLLOUT_STUCK
    unchanged = same and (phase, reason) == last and wave == last_wave
    since = str(previous.get("since") or "") if unchanged else ""
    allowed = budget(progressive, replicas)
    targets, committed = _targets(facts, groups, wave, revision, allowed, holding=phase in (PAUSED, STALLED))
    message = _message(groups, wave, phase, reason, done, pause_ends, committed, allowed)
    if phase == STALLED and last[0] != STALLED:
        events.append(("Warning", ROLLOUT_STUCK, message))
    status: Json = {"revision": revision, "wave": wave, "waves": total, "phase": phase}
    if reason:
        status["reason"] = reason
    status["message"] = message
    status["since"] = since or rfc3339(now)
    status["lastProgressTime"] = rfc3339(progressed_at)
    delays = [f.counts.available_at - now for f in facts.values() if f.counts.available_at is not None]
    if pause_ends is not None:
        delays.append(pause_ends - now)
    if phase == PROGRESSING:
        delays.append(progressed_at + deadline - now)
    requeue = max(0.0, min(delays)) + REQUEUE_MARGIN if delays else None
    return Decision(targets=targets, status=status, requeue_after=requeue, events=tuple(events))


def _targets(
    facts: Mapping[str, SubsetFacts],
    groups: Sequence[tuple[str, ...]],
    wave: int,
    revision: str,
    allowed: int,
    *,
    holding: bool,
) -> tuple[dict[str, Target], int]:
    """Each subset's target, handing out what the budget leaves to the current wave; and the
    pods committed to be unavailable before this pass's grants."""
    index = {n: i for i, g in enumerate(groups) for n in g}
    released: dict[str, int] = {}
    committed = 0
    for name, f in facts.items():
        c = f.counts
        missing = max(0, f.replicas - c.available)
        if f.partitioned:
            live = f.child_replicas - f.partition if f.revision == revision else 0
            released[name] = min(f.replicas, max(live, c.updated, 0))
            flight = max(0, released[name] - c.updated_available)
        elif f.exists and f.revision == revision:
            flight = min(f.max_unavailable, max(0, f.replicas - c.updated_available))
        else:
            flight = f.hold() if f.rolling_elsewhere(revision) else 0
        committed += max(missing, flight)
    free = allowed - committed
    out = {}
    for name in (n for g in groups for n in g):
        got = facts.get(name)
        if got is None:
            continue
        f, c = got, got.counts
        i = index[name]
        finished = f.replaced(revision)
        state = UPDATED if finished else PENDING if i > wave else UPDATING
        active = i == wave and not holding
        if f.partitioned:
            give = 0 if i < wave else released[name]
            if active:
                grant = max(0, min(free, f.replicas - give))
                free -= grant
                give += grant
            partition = 0 if i < wave or not f.exists else f.replicas - give
            if state == UPDATING and partition >= f.replicas and c.updated == 0:
                state = PENDING
            out[name] = Target(revision, partition, None, state)
            continue
        if not f.exists or finished:
            out[name] = Target(revision, 0, None, state)
            continue
        rolling = f.revision == revision
        flight = min(f.max_unavailable, max(0, f.replicas - c.updated_available)) if rolling else 0
        grant = max(0, min(free, f.replicas - c.updated_available - flight)) if active or i < wave else 0
        if not rolling and not f.reported_as_is():
            grant = 0
        if rolling or grant > 0:
            free -= grant
            share = max(f.max_unavailable if rolling else 0, flight + grant, 1)
            out[name] = Target(revision, 0, share, UPDATING)
        elif f.rolling_elsewhere(revision):
            out[name] = Target(str(f.revision), 0, f.hold(), PENDING)
        else:
            out[name] = Target(f.revision or revision, 0, None, PENDING)
    return out, committed


def _message(
    groups: Sequence[tuple[str, ...]],
    wave: int,
    phase: str,
    reason: str,
    done: Callable[[str], bool],
    pause_ends: float | None,
    committed: int,
    allowed: int,
) -> str:
    if wave >= len(groups):
        return f"all {len(groups)} waves updated"
    group = groups[wave]
    text = (
        f"wave {wave} ({', '.join(group)}): {sum(1 for n in group if done(n))}/{len(group)} subsets updated and ready"
    )
    if reason == WAVE_PAUSED:
        text += f", pause ends at {rfc3339(pause_ends)}" if pause_ends is not None else ", paused until resumed"
    elif reason == OPERATOR_PAUSED:
        text += ", rollout paused by the operator"
    elif phase == STALLED:
        text += ", no progress within the deadline: rollout stopped"
    else:
        text += f"; {committed} of {allowed} unavailable pods allowed"
    return text


def rfc3339(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
