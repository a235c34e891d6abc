"""Monotone rounding on the local control plane: an HPA-like scale-up 10 → 20 through ``/scale``
never shrinks a subset's child.

The spec is one where OpenKruise's half-up rounding does shrink a subset on the way (three
15 % subsets and two others: at 16 → 17 the percentages round up together and the others lose
2); the children are watched for the whole sequence, so a transient shrink is caught too.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy

import pytest

from tests.e2e.controller.helpers import DEPLOYMENTS, UD, get_ud, subset_of, ud, wait_shape
from tests.support.controller import Controller
from united.devcluster.simulation import Simulation
from united.kube.client import JSON, KubeClient, PatchType
from united.kube.wait import eventually
from united.uniteddeployment.admission import admit
from united.uniteddeployment.allocation import allocate

pytestmark = pytest.mark.e2e

NAME = "mono"
SUBSETS: list[JSON] = [
    {"name": "a", "replicas": "15%"},
    {"name": "b", "replicas": "15%"},
    {"name": "c", "replicas": "15%"},
    {"name": "d", "weight": 2},
    {"name": "e", "weight": 1},
]


def expected(doc: JSON, replicas: int) -> dict[str, int]:
    return {a.name: a.replicas for a in allocate(admit(doc, replicas=replicas).spec).subsets}


async def record(kube: KubeClient, namespace: str, seen: dict[str, list[int]]) -> None:
    """Every ``spec.replicas`` each child is seen with, in order, until cancelled."""
    listing = await kube.list(DEPLOYMENTS, namespace=namespace)
    version = listing.resource_version
    while True:
        async with kube.watch(DEPLOYMENTS, namespace=namespace, resource_version=version, timeout_seconds=60) as events:
            async for event in events:
                if event.type in ("ADDED", "MODIFIED"):
                    replicas = seen.setdefault(subset_of(event.object), [])
                    n = event.object["spec"]["replicas"]
                    if not replicas or replicas[-1] != n:
                        replicas.append(n)
            version = events.resource_version


async def test_scale_up_one_by_one_never_shrinks_a_subset(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    doc = ud(NAME, copy.deepcopy(SUBSETS), replicas=10)
    doc["spec"]["topology"]["rounding"] = "Monotone"
    halfup = copy.deepcopy(doc)
    del halfup["spec"]["topology"]["rounding"]
    for s in halfup["spec"]["topology"]["subsets"]:
        s.pop("weight", None)
    assert expected(halfup, 17)["d"] < expected(halfup, 16)["d"], "the spec must be one half up shrinks"

    seen: dict[str, list[int]] = {}
    watcher = asyncio.create_task(record(kube, namespace, seen))
    try:
        await kube.create(UD, doc, namespace=namespace)
        await wait_shape(kube, namespace, doc, expected(doc, 10))
        for replicas in range(11, 21):
            await kube.patch(
                UD,
                NAME,
                {"spec": {"replicas": replicas}},
                patch_type=PatchType.MERGE,
                namespace=namespace,
                subresource="scale",
            )
            await wait_shape(kube, namespace, doc, expected(doc, replicas), within=90)
        final = expected(doc, 20)

        async def watched_to_the_end() -> None:
            assert {subset: history[-1] for subset, history in seen.items()} == final, seen

        await eventually(watched_to_the_end, within=30, what="the watch delivered the last shape")
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    assert set(seen) == {s["name"] for s in SUBSETS}
    for subset, history in seen.items():
        assert history == sorted(history), f"subset {subset} shrank on the way: {history}"
        assert history[-1] == expected(doc, 20)[subset]
    assert sum(h[-1] for h in seen.values()) == 20

    status = (await get_ud(kube, namespace, doc))["status"]
    messages = {s["name"]: (s["reason"], s["message"]) for s in status["subsetStatuses"]}
    assert messages["d"][0] == "remainder"
    assert "weight 2 of 3" in messages["d"][1]
    assert messages["a"][0] == "percent"
    assert "Sainte-Laguë" in messages["a"][1]
