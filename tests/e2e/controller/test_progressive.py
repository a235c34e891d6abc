"""Progressive rollouts on the local control plane.

Three subsets in zones ``zone-a`` … ``zone-c`` of the node simulator, 3 replicas each, a budget
of 2 unavailable pods. Every pod event is counted (:mod:`tests.e2e.controller.availability`),
so the budget is checked at every moment, not at each poll. StatefulSets run on the real
kube-controller-manager, Deployments too; CloneSets on the simulator. Each test prints its
timeline (``-s``) for the notes.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.e2e.controller.availability import REVISION, Availability, watching
from tests.e2e.controller.helpers import (
    CHILDREN,
    DEPLOYMENTS,
    EVENTS,
    condition,
    get_ud,
    patch_ud,
    pods_of,
    resource_for,
    subset_of,
    ud,
    wait_ready,
    zone,
)
from tests.e2e.controller.test_controller import quiescent
from tests.support.controller import Controller
from united.devcluster.simulation import Simulation
from united.kube.client import JSON, KubeClient
from united.kube.wait import eventually
from united.uniteddeployment import revision
from united.uniteddeployment.adaptive import parse_time
from united.uniteddeployment.model import parse
from united.uniteddeployment.rollout import RESUME_ANNOTATION

pytestmark = pytest.mark.e2e

STEP = 180.0
"""Seconds any one step may take: far above what it needs, on a loaded machine."""
BUDGET = 2
SUBSETS = ("a", "b", "c")


def progressive_ud(name: str, variant: str, waves: list[JSON], **progressive: Any) -> JSON:
    subsets = [zone(s, f"zone-{s}", replicas=3) for s in SUBSETS]
    strategy = {"type": "Progressive", "progressive": {"waves": waves, "maxUnavailable": BUDGET, **progressive}}
    return ud(name, subsets, replicas=9, variant=variant, updateStrategy=strategy)


def pod_spec(obj: JSON) -> JSON:
    variant = next(iter(obj["spec"]["template"]))
    spec: JSON = obj["spec"]["template"][variant]["spec"]["template"]["spec"]
    return spec


async def set_template(kube: KubeClient, namespace: str, doc: JSON, **changes: Any) -> str:
    """Change the pod template; the name of the revision it makes (before the controller acts)."""
    obj = await get_ud(kube, namespace, doc)
    template = obj["spec"]["template"]
    pod_spec(obj).update(changes)
    patched = await patch_ud(kube, namespace, doc, {"spec": {"template": template}})
    parsed = parse(patched).spec.template
    assert parsed is not None
    return revision.name(doc["metadata"]["name"], parsed, int(patched["status"].get("collisionCount") or 0))


def image(tag: str) -> list[JSON]:
    return [{"name": "main", "image": f"registry.invalid/united/app:{tag}"}]


async def rollout_of(kube: KubeClient, namespace: str, doc: JSON, old: str) -> JSON:
    obj = await get_ud(kube, namespace, doc)
    status = obj.get("status") or {}
    assert status.get("updatedRevision") not in (None, old), "new revision not seen yet"
    assert status.get("observedGeneration") == obj["metadata"]["generation"], "status not caught up"
    return obj


async def images_by_subset(kube: KubeClient, namespace: str, doc: JSON) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {s: set() for s in SUBSETS}
    for p in await pods_of(kube, namespace, doc["metadata"]["name"]):
        out[p["metadata"]["labels"]["apps.united.io/subset-name"]].add(p["spec"]["containers"][0]["image"])
    return out


async def start(kube: KubeClient, namespace: str, doc: JSON) -> tuple[str, Availability]:
    await kube.create(resource_for(doc), doc, namespace=namespace)
    await wait_ready(kube, namespace, doc, within=STEP)

    async def completed() -> JSON:
        obj = await get_ud(kube, namespace, doc)
        assert obj["status"]["rollout"]["phase"] == "Completed", obj["status"]["rollout"]
        return obj

    first = await eventually(completed, within=STEP, what="first rollout Completed")
    return first["status"]["updatedRevision"], Availability(dict.fromkeys(SUBSETS, 3))


async def new_template(
    kube: KubeClient, namespace: str, doc: JSON, old: str, watched: Availability, **changes: Any
) -> str:
    """Change the pod template, counting the pods of its revision from before the controller
    acts; return that revision once the controller has seen it."""
    watched.revision = await set_template(kube, namespace, doc, **changes)
    obj = await eventually(lambda: rollout_of(kube, namespace, doc, old), within=STEP, what="new revision")
    assert obj["status"]["updatedRevision"] == watched.revision
    return watched.revision


async def wait_phase(kube: KubeClient, namespace: str, doc: JSON, old: str, *, phase: str, wave: int) -> JSON:
    async def reached() -> JSON:
        obj = await rollout_of(kube, namespace, doc, old)
        r = obj["status"]["rollout"]
        assert (r["phase"], r["wave"]) == (phase, wave), r
        return obj

    return await eventually(reached, within=STEP, what=f"rollout {phase} at wave {wave}")


async def resume(kube: KubeClient, namespace: str, doc: JSON, revision: str, wave: int) -> None:
    await patch_ud(kube, namespace, doc, {"metadata": {"annotations": {RESUME_ANNOTATION: f"{revision}/{wave}"}}})


def report(title: str, watched: Availability, t0: float, marks: list[tuple[float, str]]) -> None:
    print(f"\n== {title}: peak unavailable {watched.peak} (budget {BUDGET}) over {watched.events} pod events")
    lines = watched.since(t0)
    lines += [(at, f"+{at - t0:6.1f}s -- {text}") for at, text in marks]
    lines += [(at, f"+{at - t0:6.1f}s    ready={ready}") for at, ready in watched.readiness if at >= t0]
    for _, line in sorted(lines):
        print(line)


@pytest.mark.parametrize("variant", ["statefulSetTemplate", "deploymentTemplate"])
async def test_waves_in_order_with_pauses_under_the_budget(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str, variant: str
) -> None:
    waves = [{"subsets": ["a"], "pause": {}}, {"subsets": ["b"], "pause": {"duration": "8s"}}]
    doc = progressive_ud("waves", variant, waves)
    old, watched = await start(kube, namespace, doc)
    marks: list[tuple[float, str]] = []
    async with watching(kube, watched, namespace=namespace, selector="app=waves"):
        t0 = time.monotonic()
        new = await new_template(kube, namespace, doc, old, watched, containers=image("2"))
        paused = await wait_phase(kube, namespace, doc, old, phase="Paused", wave=0)
        marks.append((time.monotonic(), "wave 0 done, paused until resumed"))
        assert paused["status"]["rollout"]["reason"] == "WavePaused"
        assert condition(paused, "Reconciling") == {}  # False: absent
        states = {s["name"]: s["rollout"] for s in paused["status"]["subsetStatuses"]}
        assert states == {"a": "Updated", "b": "Pending", "c": "Pending"}
        images = await images_by_subset(kube, namespace, doc)
        assert images == {
            "a": {"registry.invalid/united/app:2"},
            "b": {"registry.invalid/united/app:1"},
            "c": {"registry.invalid/united/app:1"},
        }
        if variant == "deploymentTemplate":
            children = {subset_of(c): c for c in (await kube.list(CHILDREN[variant], namespace=namespace)).items}
            held = {n: c["spec"]["template"]["spec"]["containers"][0]["image"] for n, c in children.items()}
            assert held == {
                "a": "registry.invalid/united/app:2",
                "b": "registry.invalid/united/app:1",
                "c": "registry.invalid/united/app:1",
            }, "Deployments of later waves keep the template of the revision they run"
        else:
            partitions = {s["name"]: s.get("partition", 0) for s in paused["status"]["subsetStatuses"]}
            assert partitions == {"a": 0, "b": 3, "c": 3}
        await resume(kube, namespace, doc, new, 0)
        marks.append((time.monotonic(), "resume annotation for wave 0"))
        done = await wait_phase(kube, namespace, doc, old, phase="Completed", wave=3)
        marks.append((time.monotonic(), "Completed"))
    report(f"{variant}: waves [a] pause {{}}, [b] pause 8s, [c]", watched, t0, marks)
    assert watched.peak <= BUDGET, watched.since(t0)
    assert set().union(*(await images_by_subset(kube, namespace, doc)).values()) == {"registry.invalid/united/app:2"}
    assert watched.first_updated["a"] < watched.first_updated["b"] < watched.first_updated["c"]
    assert watched.all_ready["a"] <= watched.first_updated["b"], "wave 1 started before wave 0 was ready"
    gap = watched.first_updated["c"] - watched.all_ready["b"]
    assert gap >= 6.5, f"wave 2 started {gap:.1f}s after wave 1 was ready; the pause is 8s"
    assert done["status"]["rollout"]["waves"] == 3

    async def ready() -> None:
        # The rollout counts pods from the pod cache; Ready waits for the children's own
        # statuses, which the workload controllers write a moment later.
        c = condition(await rollout_of(kube, namespace, doc, old), "Ready")
        assert c["status"] == "True", c

    await eventually(ready, within=STEP, what="Ready once the rollout completed")


async def test_cloneset_waves_and_a_new_template_mid_rollout(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    doc = progressive_ud("clones", "cloneSetTemplate", [{"subsets": ["a"], "pause": {}}, {"subsets": ["b"]}])
    old, watched = await start(kube, namespace, doc)
    async with watching(kube, watched, namespace=namespace, selector="app=clones"):
        t0 = time.monotonic()
        await set_template(kube, namespace, doc, containers=image("2"))
        first = await wait_phase(kube, namespace, doc, old, phase="Paused", wave=0)
        second_revision = first["status"]["updatedRevision"]
        newest = await new_template(kube, namespace, doc, second_revision, watched, containers=image("3"))
        again = await wait_phase(kube, namespace, doc, second_revision, phase="Paused", wave=0)
        assert again["status"]["rollout"]["revision"] == newest
        images = await images_by_subset(kube, namespace, doc)
        assert images == {
            "a": {"registry.invalid/united/app:3"},
            "b": {"registry.invalid/united/app:1"},
            "c": {"registry.invalid/united/app:1"},
        }
        partitions = {s["name"]: s.get("partition", 0) for s in again["status"]["subsetStatuses"]}
        assert partitions == {"a": 0, "b": 3, "c": 3}
        await resume(kube, namespace, doc, newest, 0)
        await wait_phase(kube, namespace, doc, second_revision, phase="Completed", wave=3)
    report("CloneSet: v2 paused at wave 0, then v3 from wave 0", watched, t0, [])
    assert watched.peak <= BUDGET, watched.since(t0)
    assert watched.all_ready["a"] <= watched.first_updated["b"] and watched.all_ready["b"] <= watched.first_updated["c"]


async def test_a_wave_that_never_becomes_ready_stalls_the_rollout(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    doc = progressive_ud("stuck", "statefulSetTemplate", [{"subsets": ["a"]}], progressDeadlineSeconds=15)
    old, watched = await start(kube, namespace, doc)
    async with watching(kube, watched, namespace=namespace, selector="app=stuck"):
        t0 = time.monotonic()
        await new_template(kube, namespace, doc, old, watched, nodeSelector={"united.dev/nowhere": "true"})
        stalled = await wait_phase(kube, namespace, doc, old, phase="Stalled", wave=0)
    report("StatefulSet: wave 0's new pods never schedule", watched, t0, [])
    assert stalled["status"]["rollout"]["reason"] == "RolloutStuck"
    c = condition(stalled, "Stalled")
    assert (c["status"], c["reason"]) == ("True", "RolloutStuck")

    async def warned() -> None:
        events = (await kube.list(EVENTS, namespace=namespace)).items
        assert any(e["reason"] == "RolloutStuck" and e["type"] == "Warning" for e in events)

    await eventually(warned, within=10, what="a RolloutStuck Warning (Events are posted after the status)")
    per = {s["name"]: (s.get("updatedReplicas", 0), s.get("partition", 0)) for s in stalled["status"]["subsetStatuses"]}
    assert per["b"] == (0, 3) and per["c"] == (0, 3), per
    assert watched.peak <= BUDGET

    async def held() -> None:
        obj = await get_ud(kube, namespace, doc)
        assert obj["status"]["rollout"]["phase"] == "Stalled"
        assert {s["name"]: s.get("updatedReplicas", 0) for s in obj["status"]["subsetStatuses"]}["b"] == 0

    await eventually(held, within=10, what="still stalled")


async def test_an_operator_pause_holds_every_deployment_then_the_rollout_settles(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    doc = progressive_ud("held", "deploymentTemplate", [], paused=True)
    old, watched = await start(kube, namespace, doc)
    async with watching(kube, watched, namespace=namespace, selector="app=held"):
        t0 = time.monotonic()
        await new_template(kube, namespace, doc, old, watched, containers=image("2"))
        paused = await wait_phase(kube, namespace, doc, old, phase="Paused", wave=0)
        assert paused["status"]["rollout"]["reason"] == "OperatorPaused"
        await asyncio.sleep(3)
        children = (await kube.list(DEPLOYMENTS, namespace=namespace)).items
        assert {c["spec"]["template"]["spec"]["containers"][0]["image"] for c in children} == {
            "registry.invalid/united/app:1"
        }
        assert watched.updated() == dict.fromkeys(SUBSETS, 0)
        await patch_ud(kube, namespace, doc, {"spec": {"updateStrategy": {"progressive": {"paused": False}}}})
        await wait_phase(kube, namespace, doc, old, phase="Completed", wave=1)
    report("Deployment: paused by the operator, then resumed (one implicit wave)", watched, t0, [])
    assert watched.peak <= BUDGET, watched.since(t0)
    before = await quiescent(controller)
    await asyncio.sleep(5)
    after = controller.writes_by_resource()
    changed = {r: after.get(r, 0) - n for r, n in before.items() if r != "leases" and after.get(r, 0) != n}
    assert changed == {}, f"a completed rollout kept writing: {changed}"


async def test_removing_a_subset_grows_the_others_first_and_drains_it_last(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    doc = progressive_ud("moving", "deploymentTemplate", [])
    _, watched = await start(kube, namespace, doc)
    async with watching(kube, watched, namespace=namespace, selector="app=moving"):
        t0 = time.monotonic()
        await sim.set_zone_full("zone-a")
        await sim.set_zone_full("zone-b")
        subsets = [zone("a", "zone-a", replicas=5), zone("b", "zone-b", replicas=4)]
        await patch_ud(kube, namespace, doc, {"spec": {"topology": {"subsets": subsets}}})

        async def draining() -> None:
            obj = await get_ud(kube, namespace, doc)
            c = next(s for s in obj["status"]["subsetStatuses"] if s["name"] == "c")
            assert (c["rollout"], c["reason"], c["desired"]) == ("Draining", "draining", 1), c
            children = {
                subset_of(c): c["spec"]["replicas"] for c in (await kube.list(DEPLOYMENTS, namespace=namespace)).items
            }
            assert children == {"a": 5, "b": 4, "c": 1}, children

        # The receivers' new pods cannot schedule: c gives only what the budget allows, and stays.
        await eventually(draining, within=STEP, what="subset c draining, one replica kept")
        await asyncio.sleep(3)
        await draining()
        await sim.set_zone_full("zone-a", False)
        await sim.set_zone_full("zone-b", False)

        async def moved() -> None:
            children = {subset_of(c): c for c in (await kube.list(DEPLOYMENTS, namespace=namespace)).items}
            assert set(children) == {"a", "b"}, sorted(children)
            obj = await get_ud(kube, namespace, doc)
            assert condition(obj, "Ready")["status"] == "True"
            assert {s["name"]: s.get("readyReplicas", 0) for s in obj["status"]["subsetStatuses"]} == {"a": 5, "b": 4}

        await eventually(moved, within=STEP, what="subset c drained and deleted, a and b grown")
    lines = [f"+{at - t0:6.1f}s ready={sum(r.values())} {r}" for at, r in watched.readiness if at >= t0]
    print(
        "\n== Deployment: subset c removed (a 3->5, b 3->4), zones a and b full at first;"
        f" fewest ready pods {watched.lowest_ready}"
    )
    print("\n".join(lines))
    assert watched.lowest_ready is not None and watched.lowest_ready >= 9 - BUDGET, lines
    events = (await kube.list(EVENTS, namespace=namespace)).items
    assert any("of removed subset c: draining from 3 to" in e["message"] for e in events), [
        e["message"] for e in events
    ]


async def test_a_percentage_shift_grows_the_receiver_before_the_donor_shrinks(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    subsets = [zone("a", "zone-a", replicas="75%"), zone("b", "zone-b")]
    strategy = {"type": "Progressive", "progressive": {"maxUnavailable": 1}}
    doc = ud("shifting", subsets, replicas=8, updateStrategy=strategy)
    await kube.create(resource_for(doc), doc, namespace=namespace)
    await wait_ready(kube, namespace, doc, within=STEP)
    watched = Availability({"a": 6, "b": 2})
    async with watching(kube, watched, namespace=namespace, selector="app=shifting"):
        t0 = time.monotonic()
        subsets[0]["replicas"] = "25%"
        await patch_ud(kube, namespace, doc, {"spec": {"topology": {"subsets": subsets}}})

        async def shifted() -> None:
            obj = await get_ud(kube, namespace, doc)
            assert condition(obj, "Ready")["status"] == "True"
            assert {s["name"]: s.get("readyReplicas", 0) for s in obj["status"]["subsetStatuses"]} == {"a": 2, "b": 6}

        await eventually(shifted, within=STEP, what="a 6 -> 2, b 2 -> 6")
    lines = [f"+{at - t0:6.1f}s ready={sum(r.values())} {r}" for at, r in watched.readiness if at >= t0]
    print(f"\n== Deployment: a 75% -> 25% of 8, budget 1; fewest ready pods {watched.lowest_ready}")
    print("\n".join(lines))
    assert watched.lowest_ready is not None and watched.lowest_ready >= 8 - 1, lines


async def test_a_wave_waits_for_min_ready_seconds(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    doc = progressive_ud("slow", "deploymentTemplate", [{"subsets": ["a"]}])
    doc["spec"]["template"]["deploymentTemplate"]["spec"]["minReadySeconds"] = 4
    old, watched = await start(kube, namespace, doc)
    async with watching(kube, watched, namespace=namespace, selector="app=slow"):
        t0 = time.monotonic()
        new = await new_template(kube, namespace, doc, old, watched, containers=image("2"))
        await wait_phase(kube, namespace, doc, old, phase="Completed", wave=2)
    report("Deployment: minReadySeconds 4, waves [a], [b, c]", watched, t0, [])
    seen = min(watched.first_updated["b"], watched.first_updated["c"]) - watched.all_ready["a"]
    # Judged by the stamps the kubelet and the API server wrote (whole seconds), not by when this
    # test's watch saw the events: a loaded machine delays those, and not all alike.
    pods = [p for p in await pods_of(kube, namespace, "slow") if p["metadata"]["labels"].get(REVISION) == new]
    ready_a = max(stamp(p, "Ready") for p in pods if subset_of(p) == "a")
    gap = min(stamp(p, "created") for p in pods if subset_of(p) != "a") - ready_a
    print(f"wave 1's first pod created {gap:.0f}s after wave 0's last pod was Ready ({seen:.1f}s as watched)")
    assert gap >= 3, f"wave 1 started {gap:.0f}s after wave 0 was Ready; minReadySeconds is 4"
    assert watched.peak <= BUDGET, watched.since(t0)


def stamp(pod: JSON, what: str) -> float:
    """When ``pod`` was ``created``, or last became ``Ready`` (epoch seconds, whole)."""
    if what == "created":
        value = pod["metadata"]["creationTimestamp"]
    else:
        ready = next(c for c in pod["status"]["conditions"] if c["type"] == what)
        assert ready["status"] == "True", pod["status"]
        value = ready["lastTransitionTime"]
    at = parse_time(value)
    assert at is not None, value
    return at


async def test_a_scale_down_is_not_held_back_by_unavailable_pods(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    subsets = [zone(s, f"zone-{s}") for s in SUBSETS]
    doc = ud("shrinking", subsets, replicas=9, updateStrategy={"type": "Progressive"})
    await kube.create(resource_for(doc), doc, namespace=namespace)
    await wait_ready(kube, namespace, doc, within=STEP)
    await sim.set_zone_pods_ready("zone-a", False)
    await sim.set_zone_pods_ready("zone-b", False)
    await patch_ud(kube, namespace, doc, {"spec": {"replicas": 3}})

    async def scaled() -> None:
        children = (await kube.list(DEPLOYMENTS, namespace=namespace)).items
        assert {subset_of(c): c["spec"]["replicas"] for c in children} == dict.fromkeys(SUBSETS, 1)

    # 6 of 9 pods unavailable: a shift would wait; the HPA's scale-down does not.
    await eventually(scaled, within=30, what="every subset scaled to 1 at once")


async def test_undo_mid_rollout_rolls_back_only_what_had_moved(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    doc = progressive_ud("undo", "deploymentTemplate", [{"subsets": ["a"], "pause": {}}])
    first, watched = await start(kube, namespace, doc)
    async with watching(kube, watched, namespace=namespace, selector="app=undo"):
        t0 = time.monotonic()
        second = await new_template(kube, namespace, doc, first, watched, containers=image("2"))
        await wait_phase(kube, namespace, doc, first, phase="Paused", wave=0)
        # What `kubectl united rollout undo` does: the previous revision's template back in spec.
        back = await new_template(kube, namespace, doc, second, watched, containers=image("1"))
        assert back == first, "the old revision is reused, not a new one made"
        done = await wait_phase(kube, namespace, doc, second, phase="Completed", wave=2)
    report("Deployment: undo while paused after wave 0", watched, t0, [])
    assert done["status"]["rollout"]["revision"] == first
    assert set().union(*(await images_by_subset(kube, namespace, doc)).values()) == {"registry.invalid/united/app:1"}
    assert watched.peak <= BUDGET, watched.since(t0)


async def test_a_deployment_overtaken_mid_roll_stays_within_the_budget(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    """Subset c is rolling to image 2 (its new pods cannot schedule) when image 3 arrives and
    the rollout starts again from wave 0: c is held at image 2, and its template's own
    ``maxUnavailable: 100%`` must not take its last old pod down."""
    doc = progressive_ud("overtaken", "deploymentTemplate", [{"subsets": ["a"]}, {"subsets": ["c"]}])
    doc["spec"]["template"]["deploymentTemplate"]["spec"]["strategy"] = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "100%", "maxSurge": 1},
    }
    old, watched = await start(kube, namespace, doc)
    async with watching(kube, watched, namespace=namespace, selector="app=overtaken"):
        t0 = time.monotonic()
        zone_a = {"topology.kubernetes.io/zone": "zone-a"}  # a's new pods run, c's never schedule
        second = await new_template(kube, namespace, doc, old, watched, containers=image("2"), nodeSelector=zone_a)

        async def c_rolling() -> None:
            obj = await rollout_of(kube, namespace, doc, old)
            assert obj["status"]["rollout"]["wave"] == 1, obj["status"]["rollout"]
            assert watched.updated()["c"] >= 1 and watched.ready().get("c") == 1, watched.ready()

        await eventually(c_rolling, within=STEP, what="c rolling to image 2, one old pod left")
        newest = await new_template(kube, namespace, doc, second, watched, containers=image("3"), nodeSelector={})

        async def c_held() -> JSON:
            obj = await rollout_of(kube, namespace, doc, second)
            assert obj["status"]["rollout"]["revision"] == newest
            [child] = [c for c in (await kube.list(DEPLOYMENTS, namespace=namespace)).items if subset_of(c) == "c"]
            assert child["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":2")
            assert child["status"].get("observedGeneration") == child["metadata"]["generation"]
            return child

        child = await eventually(c_held, within=STEP, what="c held at image 2")
        await asyncio.sleep(3)  # what the Deployment controller would do with 100 %, it has done by now
    report("Deployment: overtaken mid-roll outside its wave", watched, t0, [])
    assert watched.peak <= BUDGET, watched.since(t0)
    assert watched.ready().get("c") == 1
    assert child["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0, "surge only"
