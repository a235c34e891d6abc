"""``python -m bench.limits``: how long a reconcile pass at the limits holds the event loop, in
CPU time, without a cluster.

The worst UnitedDeployments the limits (:mod:`united.api.limits`) allow are reconciled against
in-memory caches while a monitor wakes up at every turn of the loop: the longest stretch
between two of its turns is the longest anything held the loop (what a Lease renewal or a
health probe would wait). Two cases cover the worst: the most subsets filling the spec (the
parts that grow with the spec, its subsets and pods: parsing, allocation, status) and the
largest template, patch and placement (one subset's share: a merge, a render). Each case is
a first pass (creates every child) and a steady pass (after the informers saw them).

The unit test ``tests/unit/uniteddeployment/test_worst_case.py`` bounds the same stretches in
function calls, which no machine changes; this measures them in milliseconds, which the
machine does. A full garbage collection would scan every object of the process, not the
pass's: the heap the passes inherit is frozen.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from united.api.document import Json
from united.api.limits import (
    MAX_PATCH_BYTES,
    MAX_PLACEMENT_BYTES,
    MAX_SPEC_BYTES,
    MAX_SUBSETS,
    MAX_TEMPLATE_BYTES,
    size,
)
from united.kube.client import ObjectList, Resource
from united.log import configure_logging
from united.runtime.informer import Store
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.reconciler import Caches, Reconciler
from united.uniteddeployment.sites import Store as ChildStore

UD = Resource("apps.united.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")
PODS_PER_SUBSET = 20
Writes = list[tuple[str, Any]]
"""(name, body) of the writes of one verb on one resource."""
CASES: dict[str, dict[str, int]] = {
    "most subsets": {"subsets": MAX_SUBSETS, "template_bytes": 4096, "patch_bytes": 512, "placement_bytes": 1024},
    "largest template": {
        "subsets": 3,
        "template_bytes": MAX_TEMPLATE_BYTES - 1024,
        "patch_bytes": MAX_PATCH_BYTES,
        "placement_bytes": MAX_PLACEMENT_BYTES,
    },
}


def _filled(limit: int, make: Callable[[int], Any], wrap: Callable[[list[Any]], Any]) -> Any:
    """``wrap(items)`` with as many ``make(i)`` items as fit in ``limit`` bytes: doubling, then
    a binary search between the last two counts (a size costs the whole result: popping one
    item at a time took seconds at the largest template)."""
    fits, items = 0, [make(0)]
    while size(wrap(items)) <= limit:
        fits = len(items)
        items = [make(i) for i in range(2 * len(items))]
    over = len(items)
    while over - fits > 1:
        middle = (fits + over) // 2
        fits, over = (middle, over) if size(wrap(items[:middle])) <= limit else (fits, middle)
    return wrap(items[:fits])


def _env(prefix: str) -> Callable[[int], Json]:
    return lambda i: {"name": f"{prefix}{i}", "value": "v" * 24}


def manifest(*, subsets: int, template_bytes: int, patch_bytes: int, placement_bytes: int) -> Json:
    """``subsets`` subsets, each with a patch of about ``patch_bytes`` and a node selector
    term and tolerations of about ``placement_bytes`` each, and a template of about
    ``template_bytes``. The patch merges into the template's env
    (same names) and adds as much again: both halves of the merge are as large as allowed."""
    containers: list[Json] = [{"name": "main", "image": "x", "env": []}]
    pod_template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}}
    template = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": pod_template},
    }
    containers[0]["env"] = _filled(template_bytes - size(template), _env("E"), lambda env: env)
    assert size(template) <= MAX_TEMPLATE_BYTES

    def patch(env: list[Json]) -> Json:
        return {"spec": {"containers": [{"name": "main", "env": env}]}}

    term = _filled(
        placement_bytes,
        lambda i: {"key": f"k{i}", "operator": "In", "values": ["z"]},
        lambda expressions: {"matchExpressions": expressions},
    )
    tolerations = _filled(
        placement_bytes, lambda i: {"key": f"t{i}", "operator": "Exists", "effect": "NoSchedule"}, list
    )
    obj = {
        "apiVersion": "apps.united.io/v1alpha1",
        "kind": "UnitedDeployment",
        "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "generation": 1, "resourceVersion": "1"},
        "spec": {
            "replicas": subsets * PODS_PER_SUBSET,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"deploymentTemplate": template},
            "topology": {
                "subsets": [
                    {
                        "name": f"s{i}",
                        "nodeSelectorTerm": term,
                        "tolerations": tolerations,
                        "patch": _filled(patch_bytes, _env("E" if i % 2 else f"P{i}-"), patch),
                    }
                    for i in range(subsets)
                ]
            },
        },
    }
    assert size(obj["spec"]) <= MAX_SPEC_BYTES
    return obj


class MemoryClient:
    """Records writes and answers them as the API server would, minimally: what it creates
    gets a name (``generateName``), a uid and a resourceVersion. Nothing is read back from
    it: the pass reads the caches."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str, Any]] = []
        self.created: list[Json] = []

    async def list(self, resource: Resource, *, namespace: str, label_selector: str | None = None) -> ObjectList:
        return ObjectList([], "1", ())

    async def create(self, resource: Resource, body: Any, *, namespace: str) -> Json:
        self.calls.append(("create", resource.plural, "", body))
        obj: Json = json.loads(body if isinstance(body, bytes) else json.dumps(body))  # revisions come as bytes
        meta = obj["metadata"]
        meta.setdefault("name", meta.get("generateName", "") + "x")
        meta.update(uid=f"uid-{len(self.created)}", resourceVersion=str(100 + len(self.created)))
        self.created.append(obj)
        return obj

    async def patch(self, resource: Resource, name: str, body: Any, **kw: Any) -> Json:
        what = f"{resource.plural}/{kw['subresource']}" if kw.get("subresource") else resource.plural
        self.calls.append(("patch", what, name, body))
        return {"metadata": {"resourceVersion": "99"}}

    async def delete(self, resource: Resource, name: str, **kw: Any) -> None:
        self.calls.append(("delete", resource.plural, name, None))

    def writes(self, verb: str, what: str) -> Writes:
        return [(n, b) for v, w, n, b in self.calls if (v, w) == (verb, what)]


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        self.events.append((event_type, reason, message))


class World:
    """The UnitedDeployment, its children and pods in the informers' own stores, and a
    reconciler over them."""

    def __init__(self, obj: Json) -> None:
        self.obj = obj
        self.client = MemoryClient()
        self.children, self.revisions = Store(), Store()
        self.pods = Store(label=Keys().subset_name)
        uds = Store()
        uds.upsert(obj)
        children: dict[str, ChildStore] = {"deploymentTemplate": self.children}
        caches = Caches(uniteddeployments=uds, revisions=self.revisions, pods=self.pods, children=children)
        self.reconciler = Reconciler(client=self.client, caches=caches, recorder=Recorder(), ud_resource=UD)  # type: ignore[arg-type]

    async def reconcile(self) -> None:
        await self.reconciler.reconcile("ns/web")

    def settle(self) -> None:
        """Store what the last pass created, as the informers would, with pods for each child."""
        for obj in self.client.created:
            if obj["kind"] == "ControllerRevision":
                self.revisions.upsert(obj)
                continue
            self.children.upsert(obj)
            name, labels = obj["metadata"]["name"], obj["spec"]["template"]["metadata"]["labels"]
            for j in range(PODS_PER_SUBSET):
                self.pods.upsert({"metadata": {"name": f"{name}-{j}", "namespace": "ns", "labels": labels}})
        self.client.calls.clear()


class LoopMonitor:
    """Wakes up at every turn of the loop and records, for each meter (a running count: CPU
    seconds, calls...), the most it grew between two of its turns: the most work anything did
    while holding the loop."""

    def __init__(self, **meters: Callable[[], float]) -> None:
        self.meters = meters
        self.most = dict.fromkeys(meters, 0.0)
        self.turns = 0
        self._task: asyncio.Task[None] | None = None

    def _read(self) -> dict[str, float]:
        return {name: meter() for name, meter in self.meters.items()}

    async def _run(self) -> None:
        last = self._read()
        while True:
            await asyncio.sleep(0)
            current = self._read()
            for name, value in current.items():
                self.most[name] = max(self.most[name], value - last[name])
            self.turns += 1
            last = current

    async def stretches(self, what: Callable[[], Awaitable[Any]]) -> dict[str, float]:
        """Run ``what``; return the most each meter grew in one of its stretches."""
        self.most = dict.fromkeys(self.meters, 0.0)
        await what()
        await asyncio.sleep(0)  # this monitor, queued since its last turn, measures the last stretch
        return dict(self.most)

    async def __aenter__(self) -> LoopMonitor:
        self._task = asyncio.create_task(self._run())
        await asyncio.sleep(0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


async def both_passes(world: World, monitor: LoopMonitor) -> tuple[dict[str, float], dict[str, float]]:
    """The first pass (creates every child), then a steady one (after the informers saw them):
    the most each of the monitor's meters grew in one stretch of each."""
    first = await monitor.stretches(world.reconcile)
    subsets = len(world.obj["spec"]["topology"]["subsets"])
    assert len(world.client.writes("create", "deployments")) == subsets, "the first pass creates every child"
    world.settle()
    steady = await monitor.stretches(world.reconcile)
    return first, steady


def measure(case: Mapping[str, int]) -> Json:
    """One case's figures: the longest CPU stretch of each pass, and both passes' CPU and
    turns of the loop in all."""
    world = World(manifest(**case))

    async def main() -> Json:
        async with LoopMonitor(cpu=time.process_time) as monitor:
            start, turns = time.process_time(), monitor.turns
            first, steady = await both_passes(world, monitor)
            return {
                "first_longest_ms": 1000 * first["cpu"],
                "steady_longest_ms": 1000 * steady["cpu"],
                "cpu_ms": 1000 * (time.process_time() - start),
                "turns": monitor.turns - turns,
            }

    gc.collect()
    gc.freeze()
    try:
        return {**case, **asyncio.run(main())}
    finally:
        gc.unfreeze()


def limits_bench(cases: Mapping[str, Mapping[str, int]] | None = None) -> Json:
    """Every case's figures (default: :data:`CASES`), by case name."""
    return {name: measure(case) for name, case in (CASES if cases is None else cases).items()}


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(prog="python -m bench.limits", description=__doc__.splitlines()[0]).parse_args(argv)
    configure_logging(level="WARNING", log_format="console")
    for name, f in limits_bench().items():
        print(
            f"{name}: longest stretch {f['first_longest_ms']:.1f} ms CPU (first pass), "
            f"{f['steady_longest_ms']:.1f} ms (steady pass); both passes {f['cpu_ms']:.0f} ms, {f['turns']} turns"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
