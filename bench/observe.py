"""The bench's own eyes: informers on one namespace's Deployments and UnitedDeployments,
every event time-stamped on arrival (``loop.time()``, i.e. ``time.monotonic()``).

A latency is "request sent" to "change delivered through a watch", so it includes the
API server's watch fan-out — for the controller and for the floor alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from bench.workload import KEYS
from united.kube.client import DEPLOYMENTS, JSON, KubeClient, Resource
from united.runtime.informer import DELETED, Informer

UD = Resource("apps.united.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")
KRUISE_UD = Resource("apps.kruise.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")
"""OpenKruise's UnitedDeployments: what the bench measures both sides on when it runs a peer."""


def _owner(obj: Mapping[str, Any]) -> str | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == "UnitedDeployment":
            return str(ref.get("name"))
    return None


def _status_ok(obj: Mapping[str, Any], expected: Mapping[str, int]) -> bool:
    """The status has caught up: this generation, this allocation, every child seen."""
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    if status.get("observedGeneration") != meta.get("generation"):
        return False
    if status.get("subsetReplicas") != dict(expected):
        return False
    return not any("not created yet" in str(c.get("message", "")) for c in status.get("conditions") or ())


class NamespaceView:
    """What one namespace holds now, and when each change arrived.

    ``expect(...)`` sets the allocation every UnitedDeployment should reach; ``converged``
    is then kept up to date incrementally (O(1) per event), and :meth:`wait` re-checks any
    predicate after every event.
    """

    def __init__(
        self, client: KubeClient, namespace: str, *, ud: Resource = UD, subset_key: str = KEYS.subset_name
    ) -> None:
        self.namespace = namespace
        self.subset_key = subset_key
        loop = asyncio.get_running_loop()
        self._time = loop.time
        self.deployments = Informer(client, DEPLOYMENTS, namespace=namespace, handlers=[self._on_deployment])
        self.uds = Informer(client, ud, namespace=namespace, handlers=[self._on_ud])
        self._tasks: list[asyncio.Task[None]] = []
        self._changed = asyncio.Condition()
        self.last_event_at = 0.0
        self.events = 0
        # child name -> (ud, subset); ud -> subset -> live child names
        self._child_of: dict[str, tuple[str, str]] = {}
        self.children: dict[str, dict[str, set[str]]] = {}
        self.replicas_seen: dict[str, list[tuple[float, int]]] = {}
        """Deployment name -> (arrival time, spec.replicas) for every change of spec.replicas."""
        self.ud_replicas_seen: dict[str, list[tuple[float, int]]] = {}
        """UD name -> (arrival time, spec.replicas) for every change of spec.replicas."""
        self.status_seen: dict[str, list[tuple[float, dict[str, int]]]] = {}
        """UD name -> (arrival time, status.subsetReplicas) for every status change."""
        self.expected: dict[str, dict[str, int]] = {}
        self._ok_children: set[str] = set()
        self._ok_status: set[str] = set()

    async def start(self) -> None:
        self._tasks = [asyncio.create_task(i.run()) for i in (self.deployments, self.uds)]
        await asyncio.gather(self.deployments.has_synced.wait(), self.uds.has_synced.wait())

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # -- expectations ------------------------------------------------------------------------

    def expect(self, expected: Mapping[str, Mapping[str, int]]) -> None:
        """Every listed UD should have exactly these children's replicas and this status."""
        self.expected.update({k: dict(v) for k, v in expected.items()})
        for name in expected:
            self._check_children(name)
            obj = self.uds.store.get(f"{self.namespace}/{name}")
            self._check_status(name, obj)

    @property
    def converged(self) -> bool:
        n = len(self.expected)
        return len(self._ok_children) == n and len(self._ok_status) == n

    def progress(self) -> str:
        n = len(self.expected)
        return f"children {len(self._ok_children)}/{n}, statuses {len(self._ok_status)}/{n}"

    def replicas(self, name: str) -> int | None:
        obj = self.deployments.store.get(f"{self.namespace}/{name}")
        return None if obj is None else int((obj.get("spec") or {}).get("replicas") or 0)

    def child_replicas(self, ud: str) -> dict[str, int]:
        """Replicas of each subset's (single) live child."""
        out: dict[str, int] = {}
        for subset, names in self.children.get(ud, {}).items():
            for name in names:
                value = self.replicas(name)
                if value is not None:
                    out[subset] = value
        return out

    def child_name(self, ud: str, subset: str) -> str:
        names = sorted(self.children.get(ud, {}).get(subset, ()))
        if len(names) != 1:
            raise LookupError(f"{ud}/{subset}: {len(names)} live children")
        return names[0]

    def first_seen(self, name: str, replicas: int, *, after: float, ud: bool = False) -> float | None:
        """When a watch first delivered Deployment (or, with ``ud``, UnitedDeployment) ``name``
        with ``spec.replicas == replicas`` after ``after``."""
        for at, value in (self.ud_replicas_seen if ud else self.replicas_seen).get(name, ()):
            if at >= after and value == replicas:
                return at
        return None

    def status_seen_at(self, ud: str, expected: Mapping[str, int], *, after: float) -> float | None:
        for at, value in self.status_seen.get(ud, ()):
            if at >= after and value == dict(expected):
                return at
        return None

    async def wait(self, predicate: Callable[[], bool], *, within: float, what: str) -> None:
        """Until ``predicate()`` holds (checked after every event)."""
        async with asyncio.timeout(within):
            async with self._changed:
                await self._changed.wait_for(predicate)
        if not predicate():  # pragma: no cover - wait_for returned, so it held
            raise AssertionError(what)

    async def wait_quiet(self, predicate: Callable[[], bool], *, quiet: float, within: float, what: str) -> float:
        """Until ``predicate()`` holds and no event arrived for ``quiet`` seconds; return the
        arrival time of the last event (a redundant write after convergence counts)."""
        deadline = self._time() + within
        while True:
            left = deadline - self._time()
            if left <= 0:
                raise TimeoutError(f"{what}: not reached within {within:g} s ({self.progress()})")
            try:
                await self.wait(predicate, within=left, what=what)
            except TimeoutError as exc:
                raise TimeoutError(f"{what}: not reached within {within:g} s ({self.progress()})") from exc
            mark = self.last_event_at
            await asyncio.sleep(max(0.0, mark + quiet - self._time()))
            if self.last_event_at == mark and predicate():
                return mark

    # -- event handlers ------------------------------------------------------------------------

    async def _pulse(self) -> None:
        self.last_event_at = self._time()
        self.events += 1
        async with self._changed:
            self._changed.notify_all()

    async def _on_deployment(self, kind: str, obj: JSON, old: JSON | None) -> None:
        now = self._time()
        meta = obj.get("metadata") or {}
        name = str(meta.get("name"))
        replicas = int((obj.get("spec") or {}).get("replicas") or 0)
        seen = self.replicas_seen.setdefault(name, [])
        if kind != DELETED and (not seen or seen[-1][1] != replicas):
            seen.append((now, replicas))
        ud = _owner(obj)
        subset = (meta.get("labels") or {}).get(self.subset_key)
        if ud is not None and subset:
            self._child_of[name] = (ud, subset)
            live = self.children.setdefault(ud, {}).setdefault(subset, set())
            if kind == DELETED or meta.get("deletionTimestamp"):
                live.discard(name)
            else:
                live.add(name)
            if ud in self.expected:
                self._check_children(ud)
        await self._pulse()

    async def _on_ud(self, kind: str, obj: JSON, old: JSON | None) -> None:
        now = self._time()
        name = str((obj.get("metadata") or {}).get("name"))
        replicas = int((obj.get("spec") or {}).get("replicas") or 0)
        seen = self.ud_replicas_seen.setdefault(name, [])
        if kind != DELETED and (not seen or seen[-1][1] != replicas):
            seen.append((now, replicas))
        status = obj.get("status") or {}
        if old is None or status != (old.get("status") or {}):
            self.status_seen.setdefault(name, []).append((now, dict(status.get("subsetReplicas") or {})))
        if name in self.expected:
            self._check_status(name, None if kind == DELETED else obj)
        await self._pulse()

    def _check_children(self, ud: str) -> None:
        want = self.expected[ud]
        live = self.children.get(ud, {})
        ok = set(live) >= set(want) and all(
            len(live[s]) == 1 and self.replicas(next(iter(live[s]))) == n for s, n in want.items()
        )
        ok = ok and all(not names for s, names in live.items() if s not in want)
        (self._ok_children.add if ok else self._ok_children.discard)(ud)

    def _check_status(self, ud: str, obj: Mapping[str, Any] | None) -> None:
        ok = obj is not None and _status_ok(obj, self.expected[ud])
        (self._ok_status.add if ok else self._ok_status.discard)(ud)
