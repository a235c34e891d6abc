"""What "nothing lost" means, checked against the live cluster with the pure core.

For every UnitedDeployment of a namespace (all of them valid):

* exactly one child per topology subset, none for other subsets, no duplicates;
* every child of ours (it carries the subset label) has a living controller owner;
* each child's ``spec.replicas`` is the allocation that :func:`united.uniteddeployment.allocation.allocate`
  computes from the admitted spec (:func:`united.uniteddeployment.admission.admit`) and the children as they are,
  and the allocations add up to ``spec.replicas``;
* each child reports its replicas ready, and exactly ``spec.replicas`` pods of the
  UnitedDeployment exist and are not terminating;
* the status is correct: ``observedGeneration`` caught up, ``replicas``/``readyReplicas``
  equal ``spec.replicas``, ``subsetStatuses[].desired`` and ``subsetReplicas`` equal the
  allocation, ``Ready`` is True and nothing is ``Stalled``.

:func:`violations` returns what is wrong (empty when all hold); :func:`wait_converged`
polls it with a deadline.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from tests.e2e.controller.helpers import CHILDREN, PODS, UD, condition, ud, zone
from tests.support.controller import Controller
from united.api.selector import parse as parse_selector
from united.kube.client import JSON, KubeClient, PatchType
from united.kube.wait import eventually
from united.uniteddeployment.admission import admit
from united.uniteddeployment.allocation import SubsetState, allocate
from united.uniteddeployment.keys import Keys

KEYS = Keys()


def storm_doc(name: str, index: int, *, replicas: int) -> JSON:
    """A UnitedDeployment over the three zones; the allocator varies with ``index``:
    percentages with a remainder subset, elastic with two capped subsets, even remainder."""
    shape = index % 3
    if shape == 0:
        subsets = [zone("a", "zone-a", replicas="20%"), zone("b", "zone-b", replicas="30%"), zone("c", "zone-c")]
    elif shape == 1:
        subsets = [zone("a", "zone-a", maxReplicas=2), zone("b", "zone-b", maxReplicas=2), zone("c", "zone-c")]
    else:
        subsets = [zone("a", "zone-a"), zone("b", "zone-b"), zone("c", "zone-c")]
    return ud(name, subsets, replicas=replicas)


async def scale(kube: KubeClient, namespace: str, name: str, replicas: int) -> None:
    """A write to the scale subresource, as an HPA or ``kubectl scale`` makes it."""
    await kube.patch(
        UD, name, {"spec": {"replicas": replicas}}, patch_type=PatchType.MERGE, namespace=namespace, subresource="scale"
    )


async def scale_storm(
    kube: KubeClient, namespace: str, names: list[str], rng: random.Random, *, writes: int, top: int = 6
) -> int:
    """``writes`` /scale patches to random UnitedDeployments, random replicas in [0, top]."""
    for _ in range(writes):
        await scale(kube, namespace, rng.choice(names), rng.randint(0, top))
    return writes


def _owner_uid(obj: JSON) -> str | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid"))
    return None


def _pod_ready(pod: JSON) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


async def violations(kube: KubeClient, namespace: str) -> list[str]:
    """Every invariant broken in ``namespace`` right now (see the module docstring)."""
    problems: list[str] = []
    uds = (await kube.list(UD, namespace=namespace)).items
    living = {u["metadata"]["uid"] for u in uds if not u["metadata"].get("deletionTimestamp")}
    children: dict[str, list[JSON]] = {}
    for variant, resource in CHILDREN.items():
        listed = (await kube.list(resource, namespace=namespace, label_selector=KEYS.subset_name)).items
        children[variant] = listed
        for child in listed:
            owner = _owner_uid(child)
            if owner not in living:
                problems.append(f"{resource.kind} {child['metadata']['name']}: no living owner (controller {owner})")
    pods = [
        p
        for p in (await kube.list(PODS, namespace=namespace, label_selector=KEYS.subset_name)).items
        if not p["metadata"].get("deletionTimestamp")
    ]
    for obj in uds:
        name = obj["metadata"]["name"]
        spec = admit(obj).spec
        variant = next(iter(obj["spec"]["template"]))
        mine: dict[str, list[JSON]] = {}
        for child in children[variant]:
            if _owner_uid(child) == obj["metadata"]["uid"]:
                mine.setdefault(child["metadata"]["labels"][KEYS.subset_name], []).append(child)
        topology = [s.name for s in spec.subsets]
        for subset, kids in sorted(mine.items()):
            if subset not in topology:
                problems.append(f"{name}: children of removed subset {subset}: {[k['metadata']['name'] for k in kids]}")
            elif len(kids) > 1:
                problems.append(f"{name}: {len(kids)} children for subset {subset}")
        missing = [s for s in topology if s not in mine]
        if missing:
            problems.append(f"{name}: no child for subsets {missing}")
            continue
        first = {s: mine[s][0] for s in topology}
        state = {
            s: SubsetState(
                replicas=int(c["spec"].get("replicas") or 0),
                ready_replicas=int((c.get("status") or {}).get("readyReplicas") or 0),
            )
            for s, c in first.items()
        }
        plan = allocate(spec, state)
        want = {a.name: a.replicas for a in plan.subsets}
        have = {s: st.replicas for s, st in state.items()}
        if have != want:
            problems.append(f"{name}: children replicas {have}, allocation {want}")
        if sum(want.values()) != spec.replicas:
            problems.append(f"{name}: allocation {want} does not add up to {spec.replicas}")
        for s, c in first.items():
            status = c.get("status") or {}
            if (status.get("replicas") or 0, status.get("readyReplicas") or 0) != (have[s], have[s]):
                problems.append(f"{name}/{s}: child status {status.get('replicas')}/{status.get('readyReplicas')}")
        selector = parse_selector(obj["spec"]["selector"])
        matching = [p for p in pods if selector.matches(p["metadata"].get("labels") or {})]
        ready = [p for p in matching if _pod_ready(p)]
        if len(matching) != spec.replicas or len(ready) != spec.replicas:
            problems.append(f"{name}: {len(matching)} pods, {len(ready)} ready, want {spec.replicas}")
        problems += _status_problems(obj, want)
    return problems


def _status_problems(obj: JSON, want: dict[str, int]) -> list[str]:
    name = obj["metadata"]["name"]
    status: dict[str, Any] = obj.get("status") or {}
    replicas = obj["spec"]["replicas"]
    problems = []
    if status.get("observedGeneration") != obj["metadata"]["generation"]:
        problems.append(f"{name}: observedGeneration {status.get('observedGeneration')}")
    if (status.get("replicas"), status.get("readyReplicas")) != (replicas, replicas):
        problems.append(f"{name}: status replicas {status.get('replicas')}/{status.get('readyReplicas')} of {replicas}")
    desired = {s["name"]: s.get("desired") for s in status.get("subsetStatuses") or []}
    if desired != want or status.get("subsetReplicas") != want:
        problems.append(f"{name}: status desired {desired}, subsetReplicas {status.get('subsetReplicas')}, want {want}")
    if condition(obj, "Ready").get("status") != "True":
        problems.append(f"{name}: not Ready: {condition(obj, 'Ready').get('message')}")
    if condition(obj, "Stalled").get("status") == "True":
        problems.append(f"{name}: Stalled: {condition(obj, 'Stalled').get('message')}")
    return problems


class ControllerDiedError(RuntimeError):
    """The controller under test exited while we waited for it: no use waiting on."""


async def wait_converged(
    kube: KubeClient,
    namespace: str,
    *,
    within: float,
    what: str = "converged",
    controllers: Sequence[Controller] = (),
) -> None:
    """Poll :func:`violations` until there are none; fail with the last list after ``within`` s,
    or at once if one of ``controllers`` (that should be running) has exited."""

    async def clean() -> None:
        for controller in controllers:
            code = controller.proc.poll() if controller.proc is not None else "not started"
            if code is not None:
                raise ControllerDiedError(f"{what}: controller exited with {code}; see {controller.log_path}")
        found = await violations(kube, namespace)
        assert not found, f"{len(found)} violations: " + "; ".join(found[:12])

    await eventually(clean, within=within, interval=0.5, what=what)
