"""The burst invariant, watched: no subset of a WorkloadSpread ever holds more active pods
than its ``maxReplicas``.

:class:`Occupancy` is pure: fed every pod event in order, it keeps each pod's subset (the
``matched-workloadspread`` annotation) and whether it is active (not terminating, not
finished — the pods OpenKruise counts), and after *every* event checks the per-subset
counts against the maxima, so a moment of over-fill between two polls cannot go unseen.
:func:`watching` feeds it from the API server: one LIST, then watches continuing from the
list's ``resourceVersion`` (a ``Gone`` ends the run with an error instead of re-listing,
which could skip the very event that over-filled)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from united.kube.client import PODS, KubeClient
from united.workloadspread.injection import matched
from united.workloadspread.matching import is_active

JSON = dict[str, Any]


@dataclass(frozen=True)
class Violation:
    """A subset above its maximum right after event number ``event`` (1-based)."""

    event: int
    subset: str
    count: int
    maximum: int
    pod: str
    version: str = ""


@dataclass
class Occupancy:
    """Active pods per subset of the WorkloadSpread ``spread``, checked against ``maxima``
    (None: no maximum) after every event; pods matched to no subset of it are unplaced.
    With ``by`` (a pod label, e.g. ``pod-template-hash``) the maxima hold per value of it:
    a rolling update's new pods have slots of their own, as the versioned status books them."""

    spread: str
    maxima: Mapping[str, int | None]
    by: str | None = None
    events: int = 0
    peaks: dict[str, int] = field(default_factory=dict)
    unplaced_peak: int = 0
    violations: list[Violation] = field(default_factory=list)
    adopted: set[str] = field(default_factory=set)
    """Pods first seen in no subset and later in one (the controller adopted them)."""
    _pods: dict[str, tuple[str, str | None, bool]] = field(default_factory=dict)

    def observe(self, kind: str, pod: JSON) -> None:
        """One watch event (``ADDED``, ``MODIFIED``, ``DELETED``; bookmarks are not events)."""
        meta = pod.get("metadata") or {}
        key = str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")
        self.events += 1
        if kind == "DELETED":
            self._pods.pop(key, None)
            return
        match = matched(pod)
        subset = match.subset if match is not None and match.name == self.spread and match.subset else None
        version = str((meta.get("labels") or {}).get(self.by, "")) if self.by else ""
        before = self._pods.get(key)
        if before is not None and before[1] is None and subset is not None:
            self.adopted.add(str(meta.get("name")))
        self._pods[key] = (version, subset, is_active(pod))
        counts = self.counts(version if self.by else None)
        for name, count in counts.items():
            self.peaks[name] = max(self.peaks.get(name, 0), count)
            maximum = self.maxima.get(name)
            if maximum is not None and count > maximum:
                self.violations.append(Violation(self.events, name, count, maximum, str(meta.get("name")), version))
        self.unplaced_peak = max(self.unplaced_peak, self.unplaced())

    def counts(self, version: str | None = None) -> dict[str, int]:
        """Active pods per subset now, of every version or of one (subsets without a pod left out)."""
        counts: dict[str, int] = {}
        for pod_version, subset, live in self._pods.values():
            if subset is not None and live and version in (None, pod_version):
                counts[subset] = counts.get(subset, 0) + 1
        return counts

    def unplaced(self) -> int:
        """Active pods in no subset of the spread (admitted while no webhook answered)."""
        return sum(1 for _, subset, live in self._pods.values() if subset is None and live)


async def _feed(kube: KubeClient, occupancy: Occupancy, namespace: str, selector: str, listed: asyncio.Event) -> None:
    listing = await kube.list(PODS, namespace=namespace, label_selector=selector)
    for pod in listing.items:
        occupancy.observe("ADDED", pod)
    listed.set()
    version = listing.resource_version
    while True:
        async with kube.watch(PODS, namespace=namespace, label_selector=selector, resource_version=version,
                              timeout_seconds=60) as events:  # fmt: skip
            async for event in events:
                if event.type != "BOOKMARK":
                    occupancy.observe(event.type, event.object)
            version = events.resource_version


@contextlib.asynccontextmanager
async def watching(kube: KubeClient, occupancy: Occupancy, *, namespace: str, selector: str) -> AsyncIterator[None]:
    """Feed ``occupancy`` the pods matching ``selector`` for the duration of the block (entered
    once the LIST is in); a failed watch fails the block."""
    listed = asyncio.Event()
    task = asyncio.create_task(_feed(kube, occupancy, namespace, selector, listed), name="occupancy-watch")
    waiter = asyncio.create_task(listed.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        waiter.cancel()
        task.result()
    try:
        yield
    finally:
        if task.done():
            task.result()  # the watch broke: the invariant was not watched throughout
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
