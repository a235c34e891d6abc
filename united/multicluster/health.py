"""A member cluster's health: what a probe or a member request said, as the ``Ready`` condition.

Pure on purpose: the probe loop and the member informers (``member.py``) reduce whatever went
wrong to a :class:`Failure` — an HTTP status, or none when there was no answer, and the error's
own words, which the kube client already phrases without credentials — and everything else
(reason, message, since-times, when to write the status) is decided here, tested without a
cluster. The client's exception types are not imported: :mod:`united.kube.errors` imports
aiohttp.

``since`` is when the current ``Ready`` *status* began: a change of reason with the same status
(``Unreachable`` then ``Unauthorized``) keeps it, as ``lastTransitionTime`` does, so "down since"
stays true across the ways of being down. It survives restarts through :meth:`Health.seed`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from united.api.document import Json
from united.api.timestamp import format_time, parse_time

READY = "Ready"
PROBING = "Probing"
REACHABLE = "Reachable"
UNREACHABLE = "Unreachable"
UNAUTHORIZED = "Unauthorized"
FORBIDDEN = "Forbidden"
CREDENTIALS_UNAVAILABLE = "CredentialsUnavailable"
HEARTBEAT = 60.0
"""Seconds after which an unchanged status is written again, only to move ``lastProbeTime``:
at most one write a minute per Cluster in steady state."""
MAX_MESSAGE = 1024
"""Longest message kept: a member's answer body must not bloat the host's status."""


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed contact with a member, reduced to what :func:`classify` needs.

    ``status``: the HTTP status of the answer; 0 when there was none (connection refused or
    reset, TLS, DNS, timeout). ``message``: the error's words (``ApiError.message``,
    ``ConfigError.message``), never a credential. ``request``: what was asked, for a person
    (``get /version``, ``list deployments.apps``). ``credentials``: the Secret or its kubeconfig
    could not be used, so the member was never asked — ``CredentialsUnavailable``, not a verdict
    on the member.
    """

    status: int = 0
    message: str = ""
    request: str = ""
    credentials: bool = False


@dataclass(frozen=True, slots=True)
class Health:
    """The member's state: ``reason`` and ``message`` of the last contact, ``since`` (epoch
    seconds) when the current ``Ready`` status began, ``version`` the last gitVersion seen."""

    reason: str
    message: str
    since: float
    version: str = ""

    @property
    def status(self) -> str:
        """The ``Ready`` condition's status: True, False, or Unknown while probing."""
        return status_of(self.reason)

    @property
    def ready(self) -> bool:
        return self.reason == REACHABLE

    @classmethod
    def seed(cls, status: Mapping[str, Any] | None) -> Health | None:
        """The health a stored ``Cluster`` status says, so ``since`` outlives a restart or a
        change of leader; None when it holds no usable ``Ready`` condition."""
        status = status or {}
        ready = next(
            (c for c in status.get("conditions") or () if isinstance(c, Mapping) and c.get("type") == READY), None
        )
        if ready is None:
            return None
        since = parse_time(ready.get("lastTransitionTime"))
        reason = ready.get("reason")
        if since is None or not isinstance(reason, str) or status_of(reason) != ready.get("status"):
            return None
        message = str(ready.get("message") or "")
        message = message.removesuffix(_since_suffix(since))
        version = status.get("kubernetesVersion")
        return cls(reason, message, since, version if isinstance(version, str) else "")


def status_of(reason: str) -> str:
    if reason == REACHABLE:
        return "True"
    if reason == PROBING:
        return "Unknown"
    return "False"


def classify(failure: Failure | None, version: str | None) -> tuple[str, str]:
    """``(reason, message)`` for the outcome of a contact: ``failure`` None and a ``version``
    is a probe answered; neither is no answer yet."""
    if failure is None:
        if version is None:
            return PROBING, "waiting for the first probe"
        return REACHABLE, f"the API server answered (Kubernetes {version})"
    words = _clip(failure.message) or "no details"
    asked = f"{failure.request}: " if failure.request else ""
    if failure.credentials:
        return CREDENTIALS_UNAVAILABLE, words
    if failure.status == 401:
        return UNAUTHORIZED, f"{asked}the member refused the credentials ({words})"
    if failure.status == 403:
        return FORBIDDEN, f"{asked}{words}"
    return UNREACHABLE, f"{asked}{words}"


def advance(old: Health | None, reason: str, message: str, now: float, *, version: str | None = None) -> Health:
    """The health after a contact at ``now``: ``since`` is kept while the ``Ready`` status stays
    the same, whatever the reason; ``version`` (the probe's gitVersion) replaces the last seen."""
    if old is None:
        return Health(reason, message, now, version or "")
    since = old.since if old.status == status_of(reason) else now
    return replace(old, reason=reason, message=message, since=since, version=version or old.version)


def condition(health: Health, *, generation: int) -> Json:
    """The ``Ready`` condition; a False one says since when in its message too (for people
    reading ``kubectl describe``: the time is stable, so it does not churn the status)."""
    message = health.message + (_since_suffix(health.since) if health.status == "False" else "")
    return {
        "type": READY,
        "status": health.status,
        "observedGeneration": generation,
        "lastTransitionTime": format_time(health.since),
        "reason": health.reason,
        "message": message,
    }


def cluster_status(previous: Mapping[str, Any] | None, health: Health, now: float, generation: int) -> Json | None:
    """The ``Cluster`` status to write after a probe at ``now``, or None when nothing needs it.

    Written when the condition, the version or the generation changed, or when the stored
    ``lastProbeTime`` is :data:`HEARTBEAT` seconds old or more. ``Probing`` never replaces a
    stored ``Ready`` condition: it only fills a status that has none yet.
    """
    previous = previous or {}
    if health.reason == PROBING and Health.seed(previous) is not None:
        return None
    status: Json = {"observedGeneration": generation}
    if health.version:
        status["kubernetesVersion"] = health.version
    status["lastProbeTime"] = format_time(now)
    status["conditions"] = [condition(health, generation=generation)]
    same = {k: v for k, v in status.items() if k != "lastProbeTime"} == {
        k: v for k, v in previous.items() if k != "lastProbeTime"
    }
    probed = parse_time(previous.get("lastProbeTime"))
    if same and probed is not None and now - probed < HEARTBEAT:
        return None
    return status


CLUSTER_READY = "ClusterReady"
"""The condition a remote subset gets in ``subsetStatuses[].conditions`` while its cluster
cannot be used."""
CLUSTER_NOT_FOUND = "ClusterNotFound"
NAMESPACE_NOT_ALLOWED = "NamespaceNotAllowed"
CLUSTER_SYNCING = "ClusterSyncing"
_SUBSET_REASONS = {
    UNREACHABLE: "ClusterUnreachable",
    UNAUTHORIZED: "ClusterUnauthorized",
    FORBIDDEN: "ClusterForbidden",
    CREDENTIALS_UNAVAILABLE: "ClusterCredentialsUnavailable",
    PROBING: CLUSTER_SYNCING,
}
_WORDS = {
    "ClusterUnreachable": "unreachable",
    "ClusterUnauthorized": "refuses our credentials",
    "ClusterForbidden": "forbids a request we need",
    "ClusterCredentialsUnavailable": "has no usable credentials",
    CLUSTER_NOT_FOUND: "has no Cluster object",
    NAMESPACE_NOT_ALLOWED: "does not admit this namespace",
    CLUSTER_SYNCING: "not synced yet",
}


def cluster_ready(cluster: str, reason: str, since: float, detail: str = "") -> Json:
    """The ``ClusterReady=False`` condition of a remote subset whose cluster cannot be used now.

    ``reason``: the member's ``Ready`` reason (``Unreachable``…, mapped to ``ClusterUnreachable``…)
    or the subset's own (``ClusterNotFound``, ``NamespaceNotAllowed``, ``ClusterSyncing``);
    ``since``: when that began; ``detail``: the member's message. Nothing in it changes from one
    pass to the next while the cluster stays so: a no-op pass writes nothing.
    """
    subset_reason = _SUBSET_REASONS.get(reason, reason)
    message = f"cluster {cluster} {_WORDS.get(subset_reason, 'unavailable')} since {format_time(since)}"
    message += (f": {detail}" if detail else "") + "; showing the last-known counts"
    return {
        "type": CLUSTER_READY,
        "status": "False",
        "lastTransitionTime": format_time(since),
        "reason": subset_reason,
        "message": message,
    }


def _since_suffix(since: float) -> str:
    return f" (since {format_time(since)})"


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"
