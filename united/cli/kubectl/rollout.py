"""``kubectl united rollout``'s decisions, from one UnitedDeployment object: when ``rollout status``
is done, and what ``rollout pause``/``resume``/``restart`` write.

Why a pure function: the command watches the object and asks this after every event, so the
rules (which kubectl users rely on in CI pipelines to gate a deploy) are testable without a
cluster. The rules follow ``kubectl rollout status``: wait until the controller has observed
the latest generation, then until every replica runs the updated template and is ready; fail
as soon as the controller says the UnitedDeployment is ``Stalled``. With a Progressive strategy
``status.rollout`` decides: ``Completed`` (and Ready) is done, ``Stalled`` fails, ``Paused`` and
``Progressing`` wait (a paused rollout waits for ``kubectl united rollout resume``, as a paused
Deployment does in kubectl).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from united.api.field import FieldError, Path, invalid
from united.uniteddeployment.model import PROGRESSIVE, TEMPLATE_VARIANTS
from united.uniteddeployment.rollout import COMPLETED, PAUSED, RESUME_ANNOTATION, STALLED

_STRATEGY = Path("spec").child("updateStrategy")


class State(StrEnum):
    WAITING = "waiting"
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Verdict:
    state: State
    message: str


def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    """The status condition of type ``kind``, or an empty mapping."""
    for c in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == kind:
            return c
    return {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def held(status: Mapping[str, Any]) -> int:
    """Pods the subsets' applied partitions keep at the old revision on purpose."""
    return sum(
        _int(s.get("partition"))
        for s in status.get("subsetStatuses") or ()
        if isinstance(s, Mapping) and s.get("partitionApplied", True)
    )


def verdict(obj: Mapping[str, Any]) -> Verdict:
    meta = obj.get("metadata") or {}
    name = f'uniteddeployment "{meta.get("name", "")}"'
    status = obj.get("status") or {}
    generation = _int(meta.get("generation"))
    if _int(status.get("observedGeneration")) < generation:
        return Verdict(State.WAITING, f"Waiting for {name} spec update to be observed...")
    stalled = condition(obj, STALLED)
    rollout = status.get("rollout") if isinstance(status.get("rollout"), Mapping) else None
    if stalled.get("status") == "True" or (rollout is not None and rollout.get("phase") == STALLED):
        why = stalled if stalled.get("status") == "True" else rollout or {}
        return Verdict(
            State.FAILED, f"{name} rollout stalled: {why.get('reason') or 'Stalled'}: {why.get('message', '')}"
        )
    if rollout is not None and rollout.get("phase") != COMPLETED:
        wave = f"wave {_int(rollout.get('wave'))} (of {_int(rollout.get('waves'))})"
        phase = str(rollout.get("phase") or "Progressing")
        reason = f" ({rollout['reason']})" if rollout.get("reason") else ""
        detail = f": {rollout['message']}" if rollout.get("message") else ""
        return Verdict(State.WAITING, f"Waiting for {name} rollout to finish: {phase}{reason}, {wave}{detail}...")
    want = _int((obj.get("spec") or {}).get("replicas", 1))
    updated = _int(status.get("updatedReplicas"))
    if updated < want - held(status):
        return Verdict(
            State.WAITING,
            f"Waiting for {name} rollout to finish: {updated} out of {want} new replicas have been updated...",
        )
    ready = _int(status.get("updatedReadyReplicas", status.get("readyReplicas")))
    if ready < want - held(status) or _int(status.get("readyReplicas")) < want:
        return Verdict(
            State.WAITING, f"Waiting for {name} rollout to finish: {ready} of {want} updated replicas are ready..."
        )
    ready_c = condition(obj, "Ready")
    if ready_c.get("status") != "True":
        why = f"{ready_c.get('reason', 'Ready')}: {ready_c.get('message', '')}" if ready_c else "no Ready condition yet"
        return Verdict(State.WAITING, f"Waiting for {name} rollout to finish: {why}...")
    return Verdict(State.DONE, f"{name} successfully rolled out")


class RolloutError(Exception):
    """The rollout cannot be paused or resumed as asked; the message says why (one line)."""


def _progressive(obj: Mapping[str, Any], verb: str) -> Mapping[str, Any]:
    strategy = (obj.get("spec") or {}).get("updateStrategy") or {}
    kind = strategy.get("type") or "Manual"
    if kind != PROGRESSIVE:
        error: FieldError = invalid(
            _STRATEGY.child("type"), kind, f"rollout {verb} needs the {PROGRESSIVE} update strategy"
        )
        raise RolloutError(str(error))
    progressive = strategy.get("progressive")
    return progressive if isinstance(progressive, Mapping) else {}


def _guarded(obj: Mapping[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """A merge patch that only applies to this version of the object: what it writes was
    decided from this version's status."""
    version = (obj.get("metadata") or {}).get("resourceVersion")
    if version:
        patch.setdefault("metadata", {})["resourceVersion"] = version
    return patch


def pause_patch(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch that pauses the rollout (``spec.updateStrategy.progressive.paused``)."""
    if _progressive(obj, "pause").get("paused") is True:
        raise RolloutError("is already paused")
    return _guarded(obj, {"spec": {"updateStrategy": {"progressive": {"paused": True}}}})


def resume_mark(obj: Mapping[str, Any]) -> str | None:
    """The resume annotation's value for the current revision and wave (None before the
    controller has named an update revision)."""
    status = obj.get("status") or {}
    rollout: Mapping[str, Any] = status["rollout"] if isinstance(status.get("rollout"), Mapping) else {}
    revision = rollout.get("revision") or status.get("updatedRevision")
    return f"{revision}/{_int(rollout.get('wave'))}" if revision else None


def resume_patch(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch that resumes: operator pause off, and the current wave's pause (or the
    pause a stalled wave put the rollout in) over."""
    progressive = _progressive(obj, "resume")
    rollout = (obj.get("status") or {}).get("rollout") or {}
    if progressive.get("paused") is not True and rollout.get("phase") not in (PAUSED, STALLED):
        raise RolloutError("is not paused")
    patch: dict[str, Any] = {"spec": {"updateStrategy": {"progressive": {"paused": False}}}}
    mark = resume_mark(obj)
    if mark is not None:
        patch["metadata"] = {"annotations": {RESUME_ANNOTATION: mark}}
    return _guarded(obj, patch)


def paused(obj: Mapping[str, Any]) -> bool:
    """Whether the object says its rollout is paused by the operator (to check a write took)."""
    strategy = (obj.get("spec") or {}).get("updateStrategy") or {}
    return bool((strategy.get("progressive") or {}).get("paused") is True)


RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
"""The pod template annotation ``kubectl rollout restart`` writes on a Deployment: a new template,
so a new revision, rolled out by the workload's own strategy."""


def restart_patch(obj: Mapping[str, Any], *, now: str) -> dict[str, Any]:
    """The merge patch that restarts every pod: :data:`RESTARTED_AT` set to ``now`` on the pod
    template of the UnitedDeployment's template. The controller sees a new template, makes a new
    revision and rolls it out under the UnitedDeployment's own strategy (partitions, waves and
    their budget), as any template change."""
    template = (obj.get("spec") or {}).get("template") or {}
    variant = next((v for v in TEMPLATE_VARIANTS if isinstance(template.get(v), Mapping)), None)
    if variant is None:
        raise RolloutError(str(invalid(Path("spec").child("template"), "", "has no workload template to restart")))
    pod_metadata = {"metadata": {"annotations": {RESTARTED_AT: now}}}
    return _guarded(obj, {"spec": {"template": {variant: {"spec": {"template": pod_metadata}}}}})
