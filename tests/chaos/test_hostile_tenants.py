"""One tenant cannot hurt another: the hostile manifests against the chaos
controller, while a victim tenant's UnitedDeployments are scaled.

In its own namespace the hostile tenant stores a UnitedDeployment nested 1,500 levels deep
(arrays: see ``tests/e2e/controller/test_undecodable.py``), the two worst ones the limits of
``united.api.limits`` allow (the most subsets filling the spec's limit; the largest template
with maximal patches and placements), Deployments and ControllerRevisions named like the
victim's children and revisions whose controller ownerReference forges the victim's uid
(an unknown subset, a colliding subset, one off the selector), and it relabels a child of its
own UnitedDeployment. The controller is restarted once in the middle.

The victim must converge after every ``/scale`` write (``invariants.violations``), keep its
children (same uids), and receive no controller write but its own children's, its own status
and Events (the proxy's request log); ``/readyz`` never fails but during the restart, which
becomes ready despite the deep object; the deep UnitedDeployment is ``Stalled``
(``Undecodable``) with a Warning Event; the relabelled child gets its label back and no
sibling goes; the forged objects are never written. The deep object is sent and never read
by the test's own client (which bounds depth as the controller does), so only the controller's
bound is on trial.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bench.limits import manifest
from tests.chaos.figures import record
from tests.chaos.invariants import KEYS, scale, storm_doc, wait_converged
from tests.chaos.support import proxied_controller, proxy_for, raw_create
from tests.e2e.controller.helpers import DEPLOYMENTS, UD, children, condition, get_ud, subset_of, wait_ready
from tests.e2e.controller.test_ownership import deployment, forged_owner
from tests.e2e.controller.test_undecodable import DEEP, deep_ud, reported
from tests.support.controller import Controller
from tests.support.namespace import fresh_namespace
from united.api.limits import MAX_PATCH_BYTES, MAX_PLACEMENT_BYTES, MAX_SUBSETS, MAX_TEMPLATE_BYTES, size
from united.devcluster.cluster import LocalCluster
from united.devcluster.simulation import Simulation
from united.kube.client import CONTROLLER_REVISIONS, JSON, KubeClient, PatchType
from united.kube.wait import eventually

ROUNDS = [{"web": 5, "api": 4}, {"web": 2, "api": 1}, {"web": 6, "api": 3}, {"web": 4, "api": 5}, {"web": 3, "api": 2}]
"""The victim's ``/scale`` writes, one round between two hostile moves."""
RESTART_AFTER = 3
"""The round after which the controller is restarted."""


@pytest.fixture
async def hostile(kube: KubeClient, namespace: str) -> AsyncIterator[str]:
    """The hostile tenant's namespace."""
    async with fresh_namespace(kube, f"{namespace[:50]}-evil") as name:
        yield name


def at_the_limit(name: str, **limits: int) -> JSON:
    """The worst-case manifest (``bench/limits.py``, the worst-case unit test's) as a new
    object ``name`` with no replicas (its subsets select no node: pods would never schedule)."""
    doc: JSON = json.loads(json.dumps(manifest(**limits)).replace('"web"', f'"{name}"'))
    doc["metadata"] = {"name": name}
    doc["spec"]["replicas"] = 0
    return doc


class Readiness:
    """Polls the controller's ``/readyz`` in the background; counts the failures outside
    the planned restart."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.samples = 0
        self.failures: list[str] = []
        self.restarting = False
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
            while True:
                restarting, port = self.restarting, self.controller.port
                try:
                    async with session.get(f"http://127.0.0.1:{port}/readyz") as answer:
                        outcome = f"{answer.status} {await answer.text()}"
                except (aiohttp.ClientError, TimeoutError) as exc:
                    outcome = repr(exc)
                if not restarting and not self.restarting:
                    self.samples += 1
                    if not outcome.startswith("200"):
                        self.failures.append(outcome)
                await asyncio.sleep(0.25)

    async def __aenter__(self) -> Readiness:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


async def forge(kube: KubeClient, victim: str, hostile: str, victims: list[JSON]) -> set[tuple[str, str]]:
    """In ``hostile``, Deployments and ControllerRevisions named like the victims' children
    and revisions, claiming the victims' uids; return their ``(resource, name)``."""
    forged: set[tuple[str, str]] = set()
    for doc in victims:
        name = doc["metadata"]["name"]
        owner = {**forged_owner((await get_ud(kube, victim, doc))["metadata"]["uid"]), "name": name}
        for i, child in enumerate(sorted(await children(kube, victim, doc), key=subset_of)):
            labels = [
                {"app": name, KEYS.subset_name: "zzz"},  # a removed subset: deleted
                {KEYS.subset_name: subset_of(child)},  # off the selector: released
                {"app": name, KEYS.subset_name: subset_of(child)},  # a second child of the subset
            ][i % 3]
            body = deployment(child["metadata"]["name"], labels, [owner])
            await kube.create(DEPLOYMENTS, body, namespace=hostile)
            forged.add(("deployments", child["metadata"]["name"]))
        revisions = (await kube.list(CONTROLLER_REVISIONS, namespace=victim, label_selector=f"app={name}")).items
        for revision in [*revisions, {"metadata": {"name": f"{name}-forged", "labels": {"app": name}}}]:
            meta = revision["metadata"]
            body = {
                "apiVersion": "apps/v1",
                "kind": "ControllerRevision",
                "metadata": {"name": meta["name"], "labels": meta["labels"], "ownerReferences": [owner]},
                "data": {},
                "revision": 100,
            }
            await kube.create(CONTROLLER_REVISIONS, body, namespace=hostile)
            forged.add(("controllerrevisions", meta["name"]))
    return forged


async def relabel(kube: KubeClient, namespace: str, doc: JSON) -> tuple[str, dict[str, str]]:
    """Give the child of subset ``a`` of ``doc`` the label of subset ``b``; return its name
    and the uids of all the children before."""
    kids = await children(kube, namespace, doc)
    name = next(c["metadata"]["name"] for c in kids if subset_of(c) == "a")
    patch = {"metadata": {"labels": {KEYS.subset_name: "b"}}}
    await kube.patch(DEPLOYMENTS, name, patch, patch_type=PatchType.MERGE, namespace=namespace)
    return name, {c["metadata"]["name"]: c["metadata"]["uid"] for c in kids}


@pytest.mark.chaos
@pytest.mark.e2e
@pytest.mark.timeout(600)
async def test_a_hostile_tenant_neither_hurts_the_victim_nor_blinds_the_controller(
    cluster: LocalCluster,
    sim: Simulation,
    kube: KubeClient,
    namespace: str,
    hostile: str,
    controller_identity: Path,
    tmp_path: Path,
) -> None:
    victim = namespace
    proxy = proxy_for(cluster, controller_identity, name="hostile")
    controller = proxied_controller(proxy, controller_identity, tmp_path / "proxy.kubeconfig", name="chaos-hostile")
    controller.start()
    try:
        victims = [storm_doc("web", 0, replicas=3), storm_doc("api", 1, replicas=3)]
        for doc in victims:
            await kube.create(UD, doc, namespace=victim)
        own = storm_doc("own", 2, replicas=3)
        await kube.create(UD, own, namespace=hostile)
        await wait_converged(kube, victim, within=90, what="victim converged", controllers=[controller])
        await wait_ready(kube, hostile, own)
        kept = {c["metadata"]["uid"] for doc in victims for c in await children(kube, victim, doc)}
        victim_children = {c["metadata"]["name"] for doc in victims for c in await children(kube, victim, doc)}
        most = at_the_limit("most", subsets=MAX_SUBSETS, template_bytes=4096, patch_bytes=512, placement_bytes=1024)
        largest = at_the_limit(
            "largest",
            subsets=3,
            template_bytes=MAX_TEMPLATE_BYTES - 1024,
            patch_bytes=MAX_PATCH_BYTES,
            placement_bytes=MAX_PLACEMENT_BYTES,
        )
        mark = proxy.log.mark()

        async def deep_and_large() -> None:
            status, text = await raw_create(cluster, UD, hostile, deep_ud("deep"), content_type="application/json")
            assert status == 201, f"{status} {text[:300]}"
            await kube.create(UD, most, namespace=hostile)
            await kube.create(UD, largest, namespace=hostile)

        forged: set[tuple[str, str]] = set()
        relabelled: tuple[str, dict[str, str]] = ("", {})

        async def forgeries() -> None:
            forged.update(await forge(kube, victim, hostile, victims))

        async def relabelling() -> None:
            nonlocal relabelled
            relabelled = await relabel(kube, hostile, own)

        moves = [deep_and_large, forgeries, relabelling]
        converged: list[float] = []
        reacted: list[float] = []  # from a round's first /scale write to the last write of a victim's child
        ready_after = 0.0
        async with Readiness(controller) as readiness:
            for number, replicas in enumerate(ROUNDS, start=1):
                start, since = time.time(), proxy.log.mark()
                for name, count in replicas.items():
                    await scale(kube, victim, name, count)
                if number <= len(moves):
                    await moves[number - 1]()
                await wait_converged(
                    kube, victim, within=120, what=f"victim converged, round {number}", controllers=[controller]
                )
                converged.append(time.time() - start)
                scaled = proxy.log.writes(identity="hostile", since=since, namespace=victim, resource="deployments")
                reacted.append(max((e.time for e in scaled), default=start) - start)
                if number == RESTART_AFTER:
                    readiness.restarting = True
                    start = time.monotonic()
                    await asyncio.to_thread(controller.restart)  # start() waits for /readyz
                    ready_after = time.monotonic() - start
                    readiness.restarting = False
        assert controller.proc is not None and controller.proc.poll() is None and controller.starts == 2
        assert not readiness.failures, f"/readyz failed {len(readiness.failures)} times: {readiness.failures[:3]}"

        # The victim's children are the same objects, and nothing else of the victim's was written.
        now = {c["metadata"]["uid"] for doc in victims for c in await children(kube, victim, doc)}
        assert now == kept, "a child of the victim was deleted or created"
        writes = proxy.log.writes(identity="hostile", since=mark, namespace=victim)
        names = {d["metadata"]["name"] for d in victims}
        foreign = [
            f"{e.method} {e.path}"
            for e in writes
            if not (
                (e.resource == "deployments" and e.method == "PATCH" and e.name in victim_children)
                or (e.resource == "uniteddeployments/status" and e.name in names)
                or e.resource == "events"
            )
        ]
        assert not foreign, f"writes in the victim's namespace beyond its own: {foreign}"
        touched = [
            f"{e.method} {e.path}"
            for e in proxy.log.writes(identity="hostile", since=mark, namespace=hostile)
            if (e.resource, e.name) in forged
        ]
        assert not touched, f"the forged objects were written: {touched}"
        for resource, name in forged:
            obj = await kube.get(
                DEPLOYMENTS if resource == "deployments" else CONTROLLER_REVISIONS, name, namespace=hostile
            )
            assert obj["metadata"]["ownerReferences"][0]["apiVersion"] == "forged.invalid/v1", obj["metadata"]

        # The hostile tenant's own objects: the deep one reported, the large ones served.
        await reported(kube, hostile, "deep")
        for doc in (most, largest):

            async def served(doc: JSON = doc) -> None:
                obj = await get_ud(kube, hostile, doc)
                assert (obj.get("status") or {}).get("observedGeneration") == obj["metadata"]["generation"]
                assert condition(obj, "Stalled").get("status") != "True", condition(obj, "Stalled")

            await eventually(served, within=60, what=f"{doc['metadata']['name']} served", retry_on=(AssertionError,))
        child, before = relabelled

        async def restored() -> None:
            kids = {c["metadata"]["name"]: c for c in await children(kube, hostile, own)}
            assert {n: c["metadata"]["uid"] for n, c in kids.items()} == before, "a child was deleted or created"
            assert subset_of(kids[child]) == "a", "label not restored"

        await eventually(restored, within=60, what="relabelled child restored, siblings kept")
        await wait_ready(kube, hostile, own)
    finally:
        code = controller.stop()
        proxy.stop()
    assert code == 0, f"controller exited with {code}; see {controller.log_path}"
    counts: dict[str, int] = {}
    for e in writes:
        counts[e.resource] = counts.get(e.resource, 0) + 1
    record(
        "hostile tenants",
        {
            "victim scale rounds (2 /scale writes each)": len(ROUNDS),
            "victim's children scaled by the controller after a round's first /scale write, s": [
                round(t, 1) for t in reacted
            ],
            "victim converged (pods ready, status caught up) after it, s": [round(t, 1) for t in converged],
            "hostile: deep UnitedDeployment, levels": DEEP,
            "hostile: most subsets, subsets / spec KiB": [MAX_SUBSETS, size(most["spec"]) // 1024],
            "hostile: largest template, spec KiB": size(largest["spec"]) // 1024,
            "hostile: forged Deployments and ControllerRevisions": len(forged),
            "controller writes in the victim's namespace, by resource": counts,
            "controller writes beyond the victim's own children, status and Events": 0,
            "controller writes to forged objects": 0,
            "restart to /readyz ok, s": round(ready_after, 1),
            "/readyz samples outside the restart, failed": [readiness.samples, 0],
            "unplanned controller restarts": 0,
        },
    )
