"""The write floor of a cold start: a plain asyncio script with the controller's client
(:class:`united.kube.client.KubeClient`), its identity and its concurrency, making exactly
the writes the controller must make and nothing else.

``python -m bench.floor --kubeconfig K --namespace NS --workers W --plan PLAN.json``: LIST
the UnitedDeployments (the floor must learn their UIDs too), then ``W`` workers each take
one UnitedDeployment at a time and, like a reconcile, create its ControllerRevision, create
its children one after the other and PATCH its status. The plan (bodies precomputed from
the pure core by ``bench.workload.floor_plan``) is read before the clock that matters starts;
the harness times this process from spawn, exactly as it times the controller.
"""

from __future__ import annotations

import argparse
import asyncio
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


async def run(kubeconfig: str, namespace: str, workers: int, plan: dict[str, Any]) -> dict[str, Any]:
    started = time.monotonic()
    writes = 0
    async with await KubeClient.from_kubeconfig(kubeconfig) as client:
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
    return {"writes": writes, "seconds": time.monotonic() - started, "cpu_seconds": time.process_time()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.floor", description=__doc__.splitlines()[0])
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--plan", required=True, help="JSON: UD name -> {revision, children, status}")
    args = p.parse_args(argv)
    with open(args.plan) as f:
        plan = json.load(f)
    result = asyncio.run(run(args.kubeconfig, args.namespace, args.workers, plan))
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
