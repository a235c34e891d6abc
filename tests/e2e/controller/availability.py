"""The rollout budget, watched: unavailable pods of a UnitedDeployment after every pod event.

:class:`Availability` is pure: fed every pod event in order, it keeps each active pod's subset,
revision and readiness, and after *every* event counts the unavailable pods — per subset, its
fixed replicas minus its ready pods (surge pods above the replicas make up for nothing
elsewhere) — so a moment over the budget between two polls cannot go unseen. It also keeps a
timeline: each change of (unavailable, pods at the new revision per subset), with the time."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field

from united.api.document import Json
from united.kube.client import PODS, KubeClient
from united.uniteddeployment.status import pod_ready

SUBSET = "apps.united.io/subset-name"
REVISION = "apps.united.io/controller-revision-hash"


@dataclass
class Availability:
    replicas: Mapping[str, int]
    """Fixed replicas per subset."""
    revision: str = ""
    """The revision whose pods the timeline counts (set once the template changed)."""
    events: int = 0
    peak: int = 0
    lowest_ready: int | None = None
    """The fewest Ready pods over all subsets at any moment."""
    timeline: list[tuple[float, int, dict[str, int]]] = field(default_factory=list)
    first_updated: dict[str, float] = field(default_factory=dict)
    """When each subset's first pod at :attr:`revision` appeared."""
    all_ready: dict[str, float] = field(default_factory=dict)
    """When each subset last became fully ready at :attr:`revision`."""
    readiness: list[tuple[float, dict[str, int]]] = field(default_factory=list)
    """Each change of the Ready pods per subset, with the time."""
    _pods: dict[str, tuple[str, str, bool]] = field(default_factory=dict)

    def observe(self, kind: str, pod: Json) -> None:
        meta = pod.get("metadata") or {}
        key = str(meta.get("uid"))
        self.events += 1
        active = not meta.get("deletionTimestamp") and (pod.get("status") or {}).get("phase") not in (
            "Succeeded",
            "Failed",
        )
        if kind == "DELETED" or not active:
            self._pods.pop(key, None)
        else:
            labels = meta.get("labels") or {}
            self._pods[key] = (str(labels.get(SUBSET)), str(labels.get(REVISION)), pod_ready(pod))
        now = time.monotonic()
        unavailable = self.unavailable()
        self.peak = max(self.peak, unavailable)
        by_subset = self.ready()
        if not self.readiness or self.readiness[-1][1] != by_subset:
            self.readiness.append((now, by_subset))
        ready = sum(by_subset.values())
        self.lowest_ready = ready if self.lowest_ready is None else min(self.lowest_ready, ready)
        updated = self.updated()
        for subset, n in updated.items():
            if n:
                self.first_updated.setdefault(subset, now)
            if self.updated(ready=True).get(subset) == self.replicas[subset]:
                self.all_ready.setdefault(subset, now)
        if not self.timeline or self.timeline[-1][1:] != (unavailable, updated):
            self.timeline.append((now, unavailable, updated))

    def unavailable(self) -> int:
        ready: dict[str, int] = {}
        for subset, _, is_ready in self._pods.values():
            ready[subset] = ready.get(subset, 0) + is_ready
        return sum(max(0, want - ready.get(subset, 0)) for subset, want in self.replicas.items())

    def ready(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for subset, _, is_ready in self._pods.values():
            out[subset] = out.get(subset, 0) + is_ready
        return dict(sorted(out.items()))

    def updated(self, *, ready: bool = False) -> dict[str, int]:
        out = dict.fromkeys(self.replicas, 0)
        for subset, revision, is_ready in self._pods.values():
            if revision == self.revision and subset in out and (is_ready or not ready):
                out[subset] += 1
        return out

    def since(self, start: float) -> list[tuple[float, str]]:
        """The timeline from ``start``: when, and a line of seconds, unavailable pods and pods at
        the new revision per subset."""
        return [
            (at, f"+{at - start:6.1f}s unavailable={n} updated={dict(sorted(u.items()))}")
            for at, n, u in self.timeline
            if at >= start
        ]


async def _feed(kube: KubeClient, watched: Availability, namespace: str, selector: str, listed: asyncio.Event) -> None:
    listing = await kube.list(PODS, namespace=namespace, label_selector=selector)
    for pod in listing.items:
        watched.observe("ADDED", pod)
    # The LIST is one moment, not a sequence of events: count from its whole state.
    watched.peak = watched.unavailable()
    watched.lowest_ready = sum(watched.ready().values())
    del watched.readiness[:-1]
    del watched.timeline[:-1]
    listed.set()
    version = listing.resource_version
    while True:
        async with kube.watch(
            PODS, namespace=namespace, label_selector=selector, resource_version=version, timeout_seconds=60
        ) as events:
            async for event in events:
                if event.type != "BOOKMARK":
                    watched.observe(event.type, event.object)
            version = events.resource_version


@contextlib.asynccontextmanager
async def watching(kube: KubeClient, watched: Availability, *, namespace: str, selector: str) -> AsyncIterator[None]:
    """Feed ``watched`` the pods matching ``selector`` for the duration of the block (entered once
    the LIST is in); a failed watch fails the block: the budget was not watched throughout."""
    listed = asyncio.Event()
    task = asyncio.create_task(_feed(kube, watched, namespace, selector, listed), name="availability-watch")
    waiter = asyncio.create_task(listed.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        waiter.cancel()
        task.result()
    try:
        yield
    finally:
        if task.done():
            task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
