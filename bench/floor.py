"""The write floor of a cold start: a plain asyncio script with the controller's client
(:class:`united.kube.client.KubeClient`), its identity and its concurrency, making exactly
the writes the controller must make and nothing else.

``python -m bench.floor --kubeconfig K --namespace NS --workers W --plan PLAN.json``: LIST
the UnitedDeployments (the floor must learn their UIDs too), then ``W`` workers each take
one UnitedDeployment at a time and, like a reconcile, create its ControllerRevision, create
its children one after the other and PATCH its status. The plan (bodies precomputed from
the pure core by ``bench.workload.floor_plan``) is read before the clock that matters starts;
the harness times this process from spawn, exactly as it times the controller.

With ``--watch`` it also does what any controller must besides its writes: LIST and WATCH the
UnitedDeployments, Deployments and ControllerRevisions of the namespace, decoding every event
into a dict by name (no compaction, no handlers), and it exits once it has seen its own
writes come back. That floor shows what the API server spends serving a controller's watches
and what decoding them costs a client, apart from anything our controller does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from typing import Any

from united.kube.client import CONTROLLER_REVISIONS, DEPLOYMENTS, KubeClient, PatchType, Resource

UD = Resource("apps.united.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")


def _owned(obj: dict[str, Any], uid: str) -> dict[str, Any]:
    meta = dict(obj["metadata"])
    meta["ownerReferences"] = [{**ref, "uid": uid} for ref in meta.get("ownerReferences") or []]
    return {**obj, "metadata": meta}


WATCHED = (UD, DEPLOYMENTS, CONTROLLER_REVISIONS)
"""What a controller of UnitedDeployments must watch, at the least, in a cold start."""


class Watches:
    """LIST+WATCH of :data:`WATCHED`, each into a dict by name; ``seen`` counts watch events."""

    def __init__(self, client: KubeClient, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self.seen = 0
        self.objects: dict[str, dict[str, Any]] = {r.plural: {} for r in WATCHED}
        self.tasks: list[asyncio.Task[None]] = []
        self.target = 0
        self.reached = asyncio.Event()

    async def start(self) -> None:
        listed = await asyncio.gather(*(self.client.list(r, namespace=self.namespace) for r in WATCHED))
        for resource, answer in zip(WATCHED, listed, strict=True):
            store = self.objects[resource.plural]
            for obj in answer.items:
                store[obj["metadata"]["name"]] = obj
            self.tasks.append(asyncio.create_task(self._watch(resource, answer.resource_version)))

    async def _watch(self, resource: Resource, rv: str) -> None:
        store = self.objects[resource.plural]
        async with self.client.watch(resource, namespace=self.namespace, resource_version=rv) as events:
            async for event in events:
                if event.type == "BOOKMARK":
                    continue
                self.seen += 1
                store[event.object["metadata"]["name"]] = event.object
                if self.target and self.seen >= self.target:
                    self.reached.set()

    async def until(self, count: int, *, within: float = 60.0) -> None:
        """Until ``count`` events have come (one per write), at most ``within`` seconds."""
        self.target = count
        if self.seen >= count:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.reached.wait(), within)

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def run(
    kubeconfig: str, namespace: str, workers: int, plan: dict[str, Any], *, watch: bool = False
) -> dict[str, Any]:
    started = time.monotonic()
    writes = 0
    async with await KubeClient.from_kubeconfig(kubeconfig) as client:
        watches = Watches(client, namespace) if watch else None
        if watches is not None:
            await watches.start()
        listed = await client.list(UD, namespace=namespace)
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        for ud in listed.items:
            if ud["metadata"]["name"] in plan:
                queue.put_nowait(ud)

        async def worker() -> None:
            nonlocal writes
            while not queue.empty():
                ud = queue.get_nowait()
                meta = ud["metadata"]
                todo = plan[meta["name"]]
                await client.create(CONTROLLER_REVISIONS, _owned(todo["revision"], meta["uid"]), namespace=namespace)
                for child in todo["children"]:
                    await client.create(DEPLOYMENTS, _owned(child, meta["uid"]), namespace=namespace)
                await client.patch(
                    UD,
                    meta["name"],
                    {"status": todo["status"]},
                    patch_type=PatchType.MERGE,
                    namespace=namespace,
                    subresource="status",
                )
                writes += 2 + len(todo["children"])

        await asyncio.gather(*(worker() for _ in range(workers)))
        if watches is not None:
            await watches.until(writes)
            await watches.stop()
    return {
        "writes": writes,
        "seconds": time.monotonic() - started,
        "cpu_seconds": time.process_time(),
        "watch_events": watches.seen if watches is not None else 0,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.floor", description=__doc__.splitlines()[0])
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--plan", required=True, help="JSON: UD name -> {revision, children, status}")
    p.add_argument("--watch", action="store_true", help="also LIST+WATCH what a controller must (module docstring)")
    args = p.parse_args(argv)
    with open(args.plan) as f:
        plan = json.load(f)
    result = asyncio.run(run(args.kubeconfig, args.namespace, args.workers, plan, watch=args.watch))
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
