"""Pod deletion cost: which pods the target removes first when it scales in.

The workload controllers (ReplicaSet since Kubernetes 1.21, CloneSet) remove the pods with the
lowest ``controller.kubernetes.io/pod-deletion-cost`` first. Only Deployment, ReplicaSet and
CloneSet targets get costs; other kinds ignore the annotation.

With ``n`` subsets, per pod version, subset ``k`` (its index; reversed, ``n-1-index``, for
every version but the workload's latest, so an update drains the old pods of the first
subsets first while new pods fill them):

* ``100 * (n - k)`` for pods within the subset's ``maxReplicas`` (no maximum: every pod);
* ``-100 * (k + 1)`` for the pods over it: the first ones in Kubernetes' ``ActivePods``
  order (unassigned, pending, not ready, ready for less time, more restarts, newer first);
* ``-100 * (n + 1)`` for pods that belong to no subset (unplaced: admitted while the webhook
  was down, or their subset was removed), the lowest of all, so they go first.

Ours (kruise#877): when ``maxReplicas`` are percentages OpenKruise's rule only marks the
pods over the *current* limits, so scaling 10 pods of a 34/33/33 % spread down to 6 removes
the last subset's pods first and leaves 4/2/0. Here the pods of each version are ranked so
that for *every* count ``m``, the ``m`` pods of highest cost are split as the percentages
say: the ranking adds one pod at a time, always from a subset still below its share of the
pods kept so far (``ceil(p * m / 100)``), the one furthest below it
(smallest ``(kept + 1) / p``), ties to the earlier subset (the later one for an old version);
within a subset the pods the ``ActivePods`` order keeps longest come first. The ``j``-th pod
of ``M`` ranked costs ``M - j + 1``. A subset without a maximum takes the share the
percentages leave (the first such subset; later ones take none). Unplaced pods keep
``-100 * (n + 1)``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction

from united.api.document import Json
from united.api.intstr import legacy_scaled
from united.api.timestamp import parse_time
from united.workloadspread.matching import is_active
from united.workloadspread.model import DELETION_COST_ANNOTATION, FAKE_SUBSET, Subset, WorkloadSpread

#: version -> subset name (or :data:`FAKE_SUBSET`) -> pods.
Buckets = Mapping[str, Mapping[str, Sequence[Json]]]

POSITIVE = 100
NEGATIVE = -100
#: Target kinds whose controllers honour the annotation.
KINDS = frozenset({"Deployment", "ReplicaSet", "CloneSet"})


def costs(ws: WorkloadSpread, buckets: Buckets, *, replicas: int, latest: str | None) -> dict[str, int]:
    """Each active pod's cost, by pod name (empty for kinds that ignore deletion cost)."""
    target = ws.spec.target_ref
    if target is None or target.kind not in KINDS:
        return {}
    subsets = ws.spec.subsets
    n = len(subsets)
    shares = _shares(subsets)
    out: dict[str, int] = {}
    for version, by_subset in buckets.items():
        reverse = version != latest
        if shares is None:
            for index, subset in enumerate(subsets):
                k = n - 1 - index if reverse else index
                out.update(_fixed(subset, k, n, by_subset.get(subset.name, ()), replicas=replicas))
        else:
            out.update(_split(subsets, shares, by_subset, reverse=reverse))
        for pod in by_subset.get(FAKE_SUBSET, ()):
            if is_active(pod):
                out[_name(pod)] = NEGATIVE * (n + 1)
    return out


def changes(values: Mapping[str, int], pods: Sequence[Json]) -> dict[str, str]:
    """The annotation values to write: only where a pod's differs (``"0"`` on a pod without one is no change)."""
    out = {}
    for pod in pods:
        name = _name(pod)
        if name not in values:
            continue
        want = str(values[name])
        have = ((pod.get("metadata") or {}).get("annotations") or {}).get(DELETION_COST_ANNOTATION)
        if have != want and not (have is None and want == "0"):
            out[name] = want
    return out


def delete_order(pods: Sequence[Json]) -> list[Json]:
    """Active pods in Kubernetes' ``ActivePods`` order (the first is removed first); a stable
    sort, so equal pods keep the order given."""
    return sorted((p for p in pods if is_active(p)), key=_delete_key)


def _fixed(subset: Subset, k: int, n: int, pods: Sequence[Json], *, replicas: int) -> dict[str, int]:
    active = delete_order(pods)
    over = 0
    if subset.max_replicas is not None:
        try:
            limit = legacy_scaled(subset.max_replicas, replicas)
        except ValueError:
            return {}
        if limit < 0:
            return {}
        over = max(0, len(active) - limit)
    return {_name(pod): NEGATIVE * (k + 1) if i < over else POSITIVE * (n - k) for i, pod in enumerate(active)}


def _shares(subsets: Sequence[Subset]) -> list[int] | None:
    """Each subset's share in percent when the maxima are percentages, else ``None``."""
    limits = [s.max_replicas for s in subsets if s.max_replicas is not None]
    if not limits or not all(isinstance(v, str) for v in limits):
        return None
    shares = []
    for s in subsets:
        if s.max_replicas is None:
            shares.append(-1)
            continue
        try:
            shares.append(max(0, legacy_scaled(s.max_replicas, 100)))
        except ValueError:
            return None
    rest = max(0, 100 - sum(p for p in shares if p > 0))
    if -1 in shares:
        shares[shares.index(-1)] = rest
    return [max(0, p) for p in shares]


def _split(
    subsets: Sequence[Subset], shares: Sequence[int], by_subset: Mapping[str, Sequence[Json]], *, reverse: bool
) -> dict[str, int]:
    """The percentage ranking (module docstring): cost ``M - j + 1`` for the ``j``-th pod kept."""
    stacks = [delete_order(by_subset.get(s.name, ())) for s in subsets]
    order = list(range(len(subsets)))
    if reverse:
        order.reverse()
    kept = [0] * len(subsets)
    total = sum(len(s) for s in stacks)
    out: dict[str, int] = {}
    for m in range(1, total + 1):
        left = [i for i in order if stacks[i]]
        below = [i for i in left if kept[i] < math.ceil(Fraction(shares[i] * m, 100))]
        i = min(below or left, key=lambda i: (_behind(kept[i], shares[i]), order.index(i)))
        out[_name(stacks[i].pop())] = total - m + 1
        kept[i] += 1
    return out


def _behind(kept: int, share: int) -> Fraction:
    """How far the next pod would take a subset past its share; the smallest is furthest below."""
    return Fraction(kept + 1, share) if share else Fraction(2**63)


_PHASES = {"Pending": 0, "Unknown": 1, "Running": 2}


def _delete_key(pod: Json) -> tuple[bool, int, bool, float, int, float]:
    """``ActivePods.Less`` as a sort key: each field in turn, the pod to remove first sorting first."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    ready = False
    since: float | None = None
    for c in status.get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True":
            ready, since = True, parse_time(c.get("lastTransitionTime"))
    restarts = max((int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or ()), default=0)
    created = parse_time((pod.get("metadata") or {}).get("creationTimestamp"))
    return (
        bool(spec.get("nodeName")),
        _PHASES.get(str(status.get("phase")), 0),
        ready,
        _newest_first(since) if ready else 0.0,
        -restarts,
        _newest_first(created),
    )


def _newest_first(when: float | None) -> float:
    """Later times first; a missing time (Go's zero time) before every other."""
    return -math.inf if when is None else -when


def _name(pod: Json) -> str:
    return str((pod.get("metadata") or {}).get("name") or "")
