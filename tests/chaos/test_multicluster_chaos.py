"""Subsets in member clusters under faults.

The suite's host plus two member planes (``members``, started once for the package). One
controller subprocess (no leader election, as in ``test_crash_safety``) serves every test of
this module; it talks to the host through a clean fault proxy (its log counts what it writes
where) and to member-1 through a second fault proxy, in front of member-1's API server, that
its kubeconfig Secret names; member-2 is reached directly. The member proxy forwards the
member ServiceAccount's own token, so the shipped member role applies to every request.

* SIGKILL in the middle of a cross-cluster scale and template change, at the moment member-1
  answers (or has just received) the controller's first write to its child, then at seeded
  random moments: every cross-cluster invariant (:mod:`tests.chaos.multicluster`) after the
  restart, the UnitedDeployment, its revisions and its finalizer intact, deletion clean.
* Faults between the controller and member-1 only (5xx, 429 with ``Retry-After``, dropped
  connections, slow answers, watch streams cut or truncated) under a scale storm, then
  member-1 answering nothing at all: the host and member-2 subsets keep converging, the
  requests member-1 sees stay a trickle, and once the proxy is clean everything converges.
* A hostile tenant in member-1 forging children with our labels (``docs/operations/multi-tenancy.md``, "Multi-tenant
  guarantees", "Remote orphans"): another namespace's copy is never counted, adopted or written;
  a second child of a live subset in the UnitedDeployment's own namespace is a duplicate, the
  newer one deleted as a local duplicate is; another host's identity is invisible.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import random
import signal
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml

from tests.chaos.figures import record
from tests.chaos.invariants import scale
from tests.chaos.multicluster import KEYS, wait_converged
from tests.chaos.support import KILLS, SEED, proxied_controller, proxy_for
from tests.e2e.controller.helpers import DEPLOYMENTS, IMAGE, UD, condition
from tests.e2e.multicluster.conftest import namespace
from tests.e2e.multicluster.remote import by_hand, join, leave, remote_children, spread
from tests.support.controller import Controller
from tests.support.faultproxy import DROP, WRITE_METHODS, LogEntry, LogFilter, ThreadedFaultProxy, WatchAction
from united.devcluster.cluster import LocalCluster
from united.devcluster.planes import Plane
from united.devcluster.simulation import Simulation
from united.kube.client import CONTROLLER_REVISIONS, NAMESPACES, KubeClient, PatchType
from united.kube.errors import NotFound
from united.kube.wait import eventually
from united.multicluster.collector import GRACE
from united.multicluster.join import Endpoint
from united.multicluster.resource import CLUSTERS

__all__ = ["namespace"]

pytestmark = [pytest.mark.chaos, pytest.mark.e2e, pytest.mark.timeout(600)]

FAULTY = "member-1"
ME = "controller"
"""The controller's identity in the member proxy's log (the member ServiceAccount's token)."""
KILL_ROUNDS = max(3, KILLS // 5)
"""SIGKILLs in the cross-cluster test: 3 in CI, 20 with ``UNITED_CHAOS_KILLS=100``."""
RECOVERY_BOUND = 90.0
"""Seconds after a restart within which every cross-cluster invariant must hold again."""


@dataclass
class Rig:
    """The module's controller and the two proxies in front of it."""

    controller: Controller
    host: ThreadedFaultProxy
    member: ThreadedFaultProxy


@pytest.fixture(scope="module")
def rig(
    cluster: LocalCluster,
    members: dict[str, Plane],
    controller_identity: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Rig]:
    plane = members[FAULTY]
    member = ThreadedFaultProxy(plane.server, ca_cert=plane.cluster.ca_cert, forward_auth=True, seed=f"{SEED}/{FAULTY}")
    member.start()
    host = proxy_for(cluster, controller_identity, name=ME)
    path = tmp_path_factory.mktemp("multicluster") / "host.kubeconfig"
    controller = proxied_controller(host, controller_identity, path, name="chaos-multicluster")

    def route(name: str, where: Endpoint, token: str) -> Endpoint:
        """member-1's kubeconfig names the proxy (its URL and CA) instead of the API server."""
        if name != FAULTY:
            return where
        member.name_token(token, ME)
        assert member.ca_cert is not None
        return Endpoint(server=member.url, ca=member.ca_cert.read_bytes())

    controller.start()
    try:
        asyncio.run(join(cluster, members, route=route))
        yield Rig(controller, host, member)
    finally:
        member.clear_rules()
        asyncio.run(leave(cluster, members))
        code = controller.stop()
        host.stop()
        member.stop()
    assert code == 0, f"controller exited with {code}; see {controller.log_path}"


async def host_identity(kube: KubeClient) -> str:
    return str((await kube.get(NAMESPACES, "kube-system"))["metadata"]["uid"])


def alive(controller: Controller) -> None:
    assert controller.proc is not None and controller.proc.poll() is None, f"controller died; see {controller.log_path}"


def per_second(entries: list[LogEntry], start: float, end: float) -> tuple[float, int]:
    """Mean requests per second over ``[start, end]`` and the most in any one second."""
    buckets = collections.Counter(int(e.time - start) for e in entries if start <= e.time <= end)
    return sum(buckets.values()) / max(end - start, 1.0), max(buckets.values(), default=0)


def template(name: str, round_: int) -> dict[str, Any]:
    """A merge patch changing the pod template (a new revision in every cluster)."""
    container = {"name": "main", "image": IMAGE, "env": [{"name": "ROUND", "value": str(round_)}]}
    spec = {"containers": [container], "terminationGracePeriodSeconds": 0}
    pod = {"metadata": {"labels": {"app": name}}, "spec": spec}
    return {"spec": {"template": {"deploymentTemplate": {"spec": {"template": pod}}}}}


@pytest.mark.timeout(300 + 120 * KILL_ROUNDS)
async def test_sigkill_mid_cross_cluster_scale_loses_and_duplicates_nothing(
    rig: Rig, sim: Simulation, kube: KubeClient, member_kube: dict[str, KubeClient], namespace: str
) -> None:
    host_id = await host_identity(kube)
    rng = random.Random(f"{SEED}/multicluster-kills")
    doc = spread("kill", 6)
    uid = (await kube.create(UD, doc, namespace=namespace))["metadata"]["uid"]
    await wait_converged(kube, member_kube, namespace, host_id, within=120, what="initial convergence")
    # Round 1 is the issue's: 6 -> 15 and a new template, killed once member-1 has answered the first
    # write to its child; then seeded rounds: random size, killed as that write arrives or after it.
    rounds = [(15, "answered", 0.0)] + [
        (rng.choice([n for n in range(3, 16) if n != 15]), rng.choice(("arrived", "answered")), rng.uniform(0, 0.4))
        for _ in range(KILL_ROUNDS - 1)
    ]
    controller, proxy = rig.controller, rig.member
    recoveries: list[float] = []
    in_flight = 0
    for number, (replicas, moment, delay) in enumerate(rounds, start=1):
        mark = proxy.log.mark()
        slow = proxy.add_rule(methods=WRITE_METHODS, identity=ME, latency=0.5) if moment == "arrived" else None
        change = template("kill", number)
        change["spec"]["replicas"] = replicas
        await kube.patch(UD, "kill", change, patch_type=PatchType.MERGE, namespace=namespace)
        first: LogFilter = {"since": mark, "identity": ME, "method": WRITE_METHODS, "resource": "deployments"}
        if moment == "answered":
            first["status"] = 200
        await proxy.log.wait_for(1, within=60, **first)
        await asyncio.sleep(delay)
        alive(controller)
        killed = time.time()
        assert controller.stop(signal.SIGKILL) == -signal.SIGKILL
        if slow is not None:
            proxy.remove_rule(slow)
        writes = proxy.log.writes(since=mark, identity=ME)
        in_flight += any(e.duration is None or e.time + e.duration >= killed for e in writes)
        restarted = time.monotonic()
        controller.start()
        await wait_converged(
            kube,
            member_kube,
            namespace,
            host_id,
            within=RECOVERY_BOUND,
            what=f"cross-cluster invariants after kill {number} ({replicas} replicas, {moment}; seed {SEED})",
        )
        recoveries.append(time.monotonic() - restarted)
        obj = await kube.get(UD, "kill", namespace=namespace)
        assert obj["metadata"]["uid"] == uid
        assert KEYS.remote_children_finalizer in obj["metadata"]["finalizers"]
        await revisions_intact(kube, namespace, obj)

    await kube.delete(UD, "kill", namespace=namespace)

    async def deleted() -> None:
        with contextlib.suppress(NotFound):
            left = await kube.get(UD, "kill", namespace=namespace)
            raise AssertionError(f"UnitedDeployment still there: finalizers {left['metadata'].get('finalizers')}")
        for name, member in member_kube.items():
            assert not await remote_children(member, namespace), f"children left in {name}"

    await eventually(deleted, within=90, what="the UnitedDeployment and its remote children deleted")
    record(
        "multi-cluster sigkill",
        {
            "clusters": 3,
            "sigkills survived": len(recoveries),
            "kill moments (replicas, moment, delay s)": [(r, m, round(d, 2)) for r, m, d in rounds],
            "kills with a member write in flight": in_flight,
            "recovery seconds (restart to all invariants), median": round(statistics.median(recoveries), 1),
            "recovery seconds, max": round(max(recoveries), 1),
            "bound seconds": RECOVERY_BOUND,
            "lost": 0,
            "duplicated": 0,
        },
    )


async def revisions_intact(kube: KubeClient, namespace: str, obj: dict[str, Any]) -> None:
    """The updated revision is stored and the newest; no template got two revisions."""
    uid = obj["metadata"]["uid"]
    revisions = [
        r
        for r in (await kube.list(CONTROLLER_REVISIONS, namespace=namespace)).items
        if any(ref.get("uid") == uid for ref in r["metadata"].get("ownerReferences") or [])
    ]
    newest = max(revisions, key=lambda r: int(r["revision"]))
    assert newest["metadata"]["name"] == obj["status"]["updatedRevision"], [r["metadata"]["name"] for r in revisions]
    contents = [yaml.safe_dump(r["data"], sort_keys=True) for r in revisions]
    assert len(set(contents)) == len(contents), "two revisions of the same template"
    assert len({int(r["revision"]) for r in revisions}) == len(revisions), "two revisions with the same number"


STORM_UDS = 4
STORM_WRITES = 40
"""Scale writes while member-1 is faulty at least; more until every fault kind has fired."""
STORM_WRITES_MAX = 400
OUTAGE_WRITES = 8
OUTAGE_SECONDS = 40.0
"""How long member-1 answers nothing: long enough for any retry loop to show in the rate."""
FAULT_RATE = 0.15
FAULTS: tuple[int | Literal["drop"], ...] = (500, 503, 429, DROP)
BOUNDS = {"faulty": (10.0, 40), "down": (2.0, 15)}
"""Requests per second the faulty member may see from us at most: (mean over the phase, the
most in any one second). A storm of scale writes costs a few a second; a retry loop, hundreds."""


async def test_faulty_member_storm_converges_without_a_tight_loop(
    rig: Rig, sim: Simulation, kube: KubeClient, member_kube: dict[str, KubeClient], namespace: str
) -> None:
    host_id = await host_identity(kube)
    rng = random.Random(f"{SEED}/multicluster-storm")
    names = [f"storm-{i}" for i in range(STORM_UDS)]
    uids = {}
    for name in names:
        uids[name] = (await kube.create(UD, spread(name, rng.randint(0, 6)), namespace=namespace))["metadata"]["uid"]
    await wait_converged(kube, member_kube, namespace, host_id, within=120, what="initial convergence")
    proxy, controller = rig.member, rig.controller

    # Phase 1: 15 % of member-1's requests fail (5xx, 429 + Retry-After, dropped), 20 % are slow
    # (0.1-0.8 s, within the 1 s probe timeout), its watches are cut; a scale storm over every
    # cluster; converged with the faults still on.
    p = 1 - (1 - FAULT_RATE) ** (1 / len(FAULTS))
    faults = [proxy.add_rule(identity=ME, respond=code, probability=p) for code in FAULTS]
    slow = proxy.add_rule(identity=ME, watch=False, latency=(0.1, 0.8), probability=0.2)
    cuts = [
        proxy.add_watch_rule(WatchAction.CUT, identity=ME, every=3.0, share=0.5, how="reset"),
        proxy.add_watch_rule(WatchAction.CUT, identity=ME, every=5.0, share=0.3, how="truncate"),
    ]
    try:
        start = time.time()
        storm = 0
        while storm < STORM_WRITES or not all(rule.fired for rule in [*faults, slow, *cuts]):
            assert storm < STORM_WRITES_MAX, f"not every fault fired: {[(r.respond, r.fired) for r in faults]}"
            await scale(kube, namespace, rng.choice(names), rng.randint(0, 9))
            await asyncio.sleep(rng.uniform(0.1, 0.4))  # pacing the load, not waiting for anything
            storm += 1
        await wait_converged(
            kube, member_kube, namespace, host_id, within=240, what=f"converged with member-1 faulty (seed {SEED})"
        )
        faulty_end = time.time()
        alive(controller)
        by_kind = {str(rule.respond): rule.fired for rule in faults}
        faulty = proxy.log.requests(identity=ME, where=lambda e: start <= e.time <= faulty_end)
        faulty_rate = per_second(faulty, start, faulty_end)

        # Phase 2: member-1 answers nothing (connections reset or 503) and its watches are cut: the
        # host and member-2 subsets follow more /scale writes; member-1 gets a trickle of requests.
        proxy.clear_rules()
        proxy.add_rule(identity=ME, respond=DROP, probability=0.5)
        proxy.add_rule(identity=ME, respond=503)
        proxy.cut_watches(identity=ME)
        outage = time.time()

        async def down() -> None:
            c = condition(await kube.get(CLUSTERS, FAULTY), "Ready")
            assert c.get("status") == "False", c

        await eventually(down, within=30, what="Cluster member-1 Ready=False")
        before = {n: await member_children(member_kube[FAULTY], namespace, n) for n in names}
        for _ in range(OUTAGE_WRITES):
            await scale(kube, namespace, rng.choice(names), rng.randint(0, 9))
            await asyncio.sleep(rng.uniform(0.1, 0.4))
        await eventually(
            lambda: others_converged(kube, member_kube, namespace, names, before),
            within=120,
            what="host and member-2 subsets converged while member-1 is down",
        )
        await asyncio.sleep(max(0.0, outage + OUTAGE_SECONDS - time.time()))  # a long outage: steady state
        alive(controller)
        outage_end = time.time()
        during = proxy.log.requests(identity=ME, where=lambda e: outage <= e.time <= outage_end)
        outage_rate = per_second(during, outage, outage_end)
        for phase, (mean, peak), seen in (("faulty", faulty_rate, faulty), ("down", outage_rate, during)):
            most, top = BOUNDS[phase]
            kinds = collections.Counter(f"{e.verb} {e.resource} {e.status}" for e in seen).most_common(8)
            assert mean <= most and peak <= top, f"member-1 {phase}: {mean:.1f}/s, {peak} in one second: {kinds}"
    finally:
        proxy.clear_rules()

    # Phase 3: clean again; everything converges, nothing was lost or duplicated.
    clean = time.monotonic()
    await wait_converged(kube, member_kube, namespace, host_id, within=180, what="converged after member-1 is back")
    back = time.monotonic() - clean
    for name in names:
        assert (await kube.get(UD, name, namespace=namespace))["metadata"]["uid"] == uids[name]
    alive(controller)
    record(
        "multi-cluster faulty member",
        {
            "uniteddeployments (host + member-1 + member-2 subsets)": STORM_UDS,
            "scale writes (faulty, outage)": [storm, OUTAGE_WRITES],
            "member-1 requests while faulty (storm to convergence)": len(faulty),
            "member-1 request faults by kind": by_kind,
            "member-1 slow answers": slow.fired,
            "member-1 watch cuts": sum(rule.fired for rule in cuts),
            "converged with faults on after seconds": round(faulty_end - start, 1),
            "member-1 requests per second while faulty (mean, max in one second)": [
                round(faulty_rate[0], 2),
                faulty_rate[1],
            ],
            "member-1 down: seconds, requests, per second (mean, max in one second)": [
                round(outage_end - outage, 1),
                len(during),
                round(outage_rate[0], 2),
                outage_rate[1],
            ],
            "converged after member-1 came back, seconds": round(back, 1),
            "lost": 0,
            "duplicated": 0,
        },
    )


async def member_children(member: KubeClient, namespace: str, owner: str) -> dict[str, Any]:
    """``owner``'s children in a member, by name: their uid and replicas."""
    return {
        c["metadata"]["name"]: (c["metadata"]["uid"], c["spec"]["replicas"])
        for c in await remote_children(member, namespace)
        if (c["metadata"].get("labels") or {}).get(KEYS.owner_name) == owner
    }


async def others_converged(
    kube: KubeClient,
    member_kube: dict[str, KubeClient],
    namespace: str,
    names: list[str],
    before: dict[str, dict[str, Any]],
) -> None:
    """Host and member-2 children at their allocation with their pods Ready, member-1's
    subsets reported unusable with their last-known counts, and member-1 untouched."""
    for name in names:
        obj = await kube.get(UD, name, namespace=namespace)
        entries = {e["name"]: e for e in obj["status"]["subsetStatuses"]}
        assert obj["status"].get("observedGeneration") == obj["metadata"]["generation"], f"{name}: status behind"
        m1 = [c for c in entries["m1"].get("conditions") or [] if c["type"] == "ClusterReady"]
        assert m1 and m1[0]["status"] == "False" and m1[0]["reason"] == "ClusterUnreachable", f"{name}: m1 {m1}"
        for subset, client in (("h", kube), ("m2", member_kube["member-2"])):
            children = [
                c for c in await remote_children(client, namespace) if c["metadata"]["name"].startswith(f"{name}-")
            ]
            want = entries[subset]["desired"]
            got = [(c["spec"]["replicas"], (c.get("status") or {}).get("readyReplicas") or 0) for c in children]
            assert got == [(want, want)], f"{name}/{subset}: children (replicas, ready) {got}, want {want}"
        assert await member_children(member_kube[FAULTY], namespace, name) == before[name], f"{name}: member-1 changed"


async def test_hostile_tenant_in_a_member_cannot_forge_children(
    rig: Rig, sim: Simulation, kube: KubeClient, member_kube: dict[str, KubeClient], namespace: str
) -> None:
    """Forgeries in member-1 of ``victim``'s children: (a) in another namespace with its uid and
    name, (b) in its own namespace, a second child of its subset m1, (c) with another host's
    identity. (a) and (c) are never counted, adopted or written; (b) is a duplicate, deleted like
    a local one (the older child stays); none is a remote orphan while the victim lives. Once
    the victim is deleted, (a) names no live UnitedDeployment: it is collected; (c) stays."""
    host_id = await host_identity(kube)
    member = member_kube[FAULTY]
    elsewhere = f"{namespace[:50]}-x"
    controller, proxy = rig.controller, rig.member
    victim = (await kube.create(UD, spread("victim", 6), namespace=namespace))["metadata"]
    await wait_converged(kube, member_kube, namespace, host_id, within=120, what="victim converged")
    [real] = await remote_children(member, namespace)
    # The older child of a subset stays; creation times have whole seconds, and a tie goes to the
    # name sorting first ("forged-b"): the forgery comes in a later second, as it would in life.
    born = datetime.fromisoformat(real["metadata"]["creationTimestamp"].replace("Z", "+00:00")).timestamp()
    await asyncio.sleep(max(0.0, born + 1.5 - time.time()))
    collected = controller.counter("united_remote_orphans_collected_total", cluster=FAULTY)
    await member.create(NAMESPACES, {"metadata": {"name": elsewhere}})
    forged = {
        "a": (elsewhere, forgery("forged-a", owner_uid=victim["uid"], host_id=host_id, replicas=2)),
        "b": (namespace, forgery("forged-b", owner_uid=victim["uid"], host_id=host_id, replicas=2)),
        "c": (namespace, forgery("forged-c", owner_uid=victim["uid"], host_id="another-host", replicas=2)),
    }
    try:
        mark, host_mark, made_at = proxy.log.mark(), rig.host.log.mark(), time.monotonic()
        made = {k: await member.create(DEPLOYMENTS, body, namespace=ns) for k, (ns, body) in forged.items()}

        async def duplicate_gone() -> None:
            with contextlib.suppress(NotFound):
                left = await member.get(DEPLOYMENTS, "forged-b", namespace=namespace)
                raise AssertionError(f"forged-b still there: {left['metadata'].get('deletionTimestamp')}")

        await eventually(duplicate_gone, within=60, what="the duplicate forged-b deleted")
        await scale(kube, namespace, "victim", 9)
        await wait_converged(kube, member_kube, namespace, host_id, within=120, what="victim scaled to 9")
        # A collector pass has long looked at every forgery (grace, a probe period and a margin).
        await asyncio.sleep(max(0.0, made_at + GRACE + 6 - time.monotonic()))
        for key in ("a", "c"):
            ns, name = forged[key][0], made[key]["metadata"]["name"]
            now, then = (await member.get(DEPLOYMENTS, name, namespace=ns))["metadata"], made[key]["metadata"]
            unchanged = ("uid", "generation", "labels", "ownerReferences", "deletionTimestamp")
            assert {k: now.get(k) for k in unchanged} == {k: then.get(k) for k in unchanged}, f"{name} was changed"
        kept = await member.get(DEPLOYMENTS, real["metadata"]["name"], namespace=namespace)
        assert kept["metadata"]["uid"] == real["metadata"]["uid"], "the older, real child was replaced"
        status = (await kube.get(UD, "victim", namespace=namespace))["status"]
        m1 = next(e for e in status["subsetStatuses"] if e["name"] == "m1")
        counts = (status["replicas"], status["readyReplicas"], m1.get("replicas"), m1.get("readyReplicas"))
        assert counts == (9, 9, 3, 3)
        writes = proxy.log.writes(since=mark, identity=ME)
        on_forged = [e for e in writes if e.name and e.name.startswith("forged-")]
        what = {(e.verb, e.namespace, e.name) for e in on_forged}
        assert what == {("delete", namespace, "forged-b")}, what
        assert len(on_forged) == 1, f"the duplicate deleted more than once: {[(e.time, e.status) for e in on_forged]}"
        assert not [e for e in writes if e.namespace == elsewhere], "a write in the forger's namespace"
        host_writes = rig.host.log.writes(since=host_mark, identity=ME)
        assert {e.namespace for e in host_writes} <= {namespace, None, "united-system"}, host_writes
        assert controller.counter("united_remote_orphans_collected_total", cluster=FAULTY) == collected

        await kube.delete(UD, "victim", namespace=namespace)
        deleted_at = time.monotonic()

        async def orphan_collected() -> None:
            assert not await remote_children(member, elsewhere), "forged-a not collected"

        await eventually(orphan_collected, within=GRACE + 60, what="forged-a collected as a remote orphan")
        collected_after = time.monotonic() - deleted_at
        kept_c = await member.get(DEPLOYMENTS, "forged-c", namespace=namespace)
        assert kept_c["metadata"]["uid"] == made["c"]["metadata"]["uid"] and not kept_c["metadata"].get(
            "deletionTimestamp"
        ), "another host's child was touched"
        lines = [line for line in controller.log_path.read_text().splitlines() if "collected remote orphan" in line]
        assert [line for line in lines if '"forged-a"' in line], "no log line for forged-a"
        assert not [line for line in lines if '"forged-b"' in line or '"forged-c"' in line], lines
    finally:
        with contextlib.suppress(NotFound):
            await member.delete(DEPLOYMENTS, "forged-c", namespace=namespace)
        with contextlib.suppress(NotFound):
            await member.delete(NAMESPACES, elsewhere)
    record(
        "multi-cluster hostile tenant",
        {
            "forgeries": 3,
            "writes to forged children while the victim lived": "1 DELETE (forged-b)",
            "duplicate deleted (the newer)": "forged-b",
            "writes in the forger's namespace": 0,
            "copy in another namespace collected after the victim's deletion, seconds": round(collected_after, 1),
            "another host's child touched": 0,
        },
    )


def forgery(name: str, *, owner_uid: str, host_id: str, replicas: int) -> dict[str, Any]:
    """A Deployment labelled like ``victim``'s child of subset m1, whose pods carry the victim's
    labels too (``app=victim``, subset, host identity): if anything counted them, it would show."""
    doc = by_hand(name, owner="victim", owner_uid=owner_uid, host_id=host_id)
    doc["metadata"]["labels"]["app"] = "victim"  # matches the victim's selector: a claim on subset m1
    pod_labels = {"app": "victim", KEYS.subset_name: "m1", KEYS.owner_cluster: host_id, "forged": name}
    doc["spec"] |= {
        "replicas": replicas,
        "selector": {"matchLabels": {"forged": name, KEYS.subset_name: "m1"}},
        "template": {
            "metadata": {"labels": pod_labels},
            "spec": {"containers": [{"name": "main", "image": IMAGE}], "terminationGracePeriodSeconds": 0},
        },
    }
    return doc
