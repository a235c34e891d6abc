"""A pass at the limits (united.api.limits) must not hold the event loop, nor cost the
leader its Lease: one reconcile of the worst UnitedDeployment the limits allow, against
in-memory caches, with a monitor of the work done between two turns of the loop and a
LeaderElector on the same loop.

Work is counted, not timed: function calls (Python and builtin, ``sys.setprofile``), subset
patches merged and children rendered between two turns of the loop. The loop's clock is a
work clock (:class:`~tests.unit.runtime.virtual_time.WorkClockLoop`): a fixed price per call,
so whether the Lease survives is decided by the work between two turns, not by the machine.
How long the longest stretch takes in CPU time is printed, not asserted: speed is the bench's
business (``python -m bench.limits``, the ``limits`` scenario of ``python -m bench``, which
builds the same worlds).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from bench.limits import CASES, PODS_PER_SUBSET, LoopMonitor, World, both_passes, manifest, measure
from tests.unit.runtime.test_leader import FakeLeases, elector
from tests.unit.runtime.virtual_time import Operations, now, run_work_timed
from tests.unit.uniteddeployment.test_adaptive import KEYS
from tests.unit.uniteddeployment.test_history import Compared
from united.api.document import Json
from united.uniteddeployment.admission import admit
from united.uniteddeployment.sites import Site

MAX_OPERATIONS = 1_000_000
"""The most function calls a pass may make between two turns of the loop. At the limits the
longest stretch is about half of it (one subset's render of the largest template and patch);
at the ~0.1 µs a call measured on the project's machines it is about 0.1 s of CPU."""
SECONDS_PER_OPERATION = 2e-7
"""The work clock's price of a call: a machine two to three times slower than those measured."""
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 1.5, 1.0, 0.05
"""A renewal takes the elector four turns of the loop (its timer, its wake-up, the answer's
timer, its wake-up), each of which may wait behind one stretch of the pass: at this price
four stretches of :data:`MAX_OPERATIONS` and a retry period just fit in the renew deadline.
The retry period is short so that even the largest template's pass, six long stretches,
lasts longer than one renewal."""


class Units:
    """Subset patches merged (validation) and children rendered, counted as they happen: a
    pass should do one subset's share of either between two turns of the loop."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from united.uniteddeployment import intents, validation

        self.merged = self.rendered = 0
        place, render = getattr(validation, "place"), intents.render  # noqa: B009

        def placing(*args: Any, **kw: Any) -> Any:
            self.merged += 1
            return place(*args, **kw)

        def rendering(*args: Any, **kw: Any) -> Any:
            self.rendered += 1
            return render(*args, **kw)

        monkeypatch.setattr(validation, "place", placing)
        monkeypatch.setattr(intents, "render", rendering)


@pytest.mark.parametrize("case", CASES)
def test_a_pass_at_the_limits_neither_holds_the_loop_nor_loses_the_lease(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two manifests cover the worst ones the limits allow: the longest stretch is either one
    subset's share of the pass — largest with the largest template, patch and placement,
    whatever the number of subsets — or a part that grows with the whole spec (parsing) or
    the number of subsets and pods (allocation, status): the most subsets, filling the
    spec's limit, with their pods. The elector must renew while the passes run: it can only
    if it gets the loop between their steps."""
    cpu = measure(CASES[case])
    world, units, operations = World(manifest(**CASES[case])), Units(monkeypatch), Operations()
    leases = FakeLeases()
    leader = elector(
        leases, "me", lease_duration=LEASE_DURATION, renew_deadline=RENEW_DEADLINE, retry_period=RETRY_PERIOD
    )

    async def main() -> tuple[dict[str, float], dict[str, float], float, int, str | None]:
        election = asyncio.create_task(leader.run())
        await leader.elected.wait()
        renewed, started = len(leases.requests), now()
        meters = {"operations": lambda: operations.count, "merged": lambda: units.merged}
        async with LoopMonitor(**meters, rendered=lambda: units.rendered) as monitor:
            first, steady = await both_passes(world, monitor)
        took = now() - started
        renewals = sum(1 for verb, outcome in leases.requests[renewed:] if (verb, outcome) == ("replace", "ok"))
        holder = leases.spec().get("holderIdentity")
        election.cancel()
        await asyncio.gather(election, return_exceptions=True)
        return first, steady, took, renewals, holder

    first, steady, took, renewals, holder = run_work_timed(
        main, operations, seconds_per_operation=SECONDS_PER_OPERATION
    )
    figures = (
        f"{case}: longest stretch {first['operations']:,.0f} calls, {cpu['first_longest_ms']:.0f} ms CPU "
        f"(first pass), {steady['operations']:,.0f} calls, {cpu['steady_longest_ms']:.0f} ms CPU (steady pass); "
        f"both passes {took:.2f} s on the work clock, {renewals} renewals"
    )
    print(figures)
    assert [c for c in world.client.calls if c[1] == "deployments"] == [], "the steady pass changes no child"
    assert max(first["operations"], steady["operations"]) <= MAX_OPERATIONS, figures
    assert first["merged"] == 1 and first["rendered"] == 1, f"one subset's share per stretch: {first}"
    assert steady["merged"] == 0 and steady["rendered"] <= 1, f"one subset's share per stretch: {steady}"
    assert renewals > 0, f"the elector never renewed between the passes' steps: {figures}"
    assert not leader.lost.is_set() and holder == "me", figures


# -- what a pass reads and recomputes --------------------------------------------------------


def settled(subsets: int) -> World:
    world = World(manifest(subsets=subsets, template_bytes=2048, patch_bytes=256, placement_bytes=128))
    asyncio.run(world.reconcile())
    world.settle()
    return world


def test_pods_are_matched_per_subset_from_the_index_with_the_selector_still_applied(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from united.uniteddeployment import read as module

    world = settled(50)
    for i in range(500):  # another UnitedDeployment's pods, with the same subset names
        labels = {"app": "api", KEYS.subset_name: f"s{i % 50}"}
        world.pods.upsert({"metadata": {"name": f"api-{i}", "namespace": "ns", "labels": labels}})
    matched = 0
    parse = getattr(module, "parse_selector")  # noqa: B009

    def counting(raw: Json) -> Any:
        sel = parse(raw)

        class Counting:
            def matches(self, labels: Json) -> bool:
                nonlocal matched
                matched += 1
                return bool(sel.matches(labels))

        return Counting()

    monkeypatch.setattr(module, "parse_selector", counting)
    ud = admit(world.obj)
    host = Site(None, None, None, world.reconciler.caches.pods)
    children = {c["metadata"]["labels"][KEYS.subset_name]: c for c in world.children.list()}
    pods = asyncio.run(module.pods_by_subset(ud, KEYS, children, {}, host))
    assert {s: len(p) for s, p in pods.items()} == {f"s{i}": PODS_PER_SUBSET for i in range(50)}
    assert matched == 50 * PODS_PER_SUBSET + 500, "each child looks at the pods of its subset only"

    # A selector that does not pin the subset label still sees exactly what it selects.
    odd = dict(children["s0"], spec={**children["s0"]["spec"], "selector": {"matchLabels": {"app": "api"}}})
    pods = asyncio.run(module.pods_by_subset(ud, KEYS, {"s0": odd}, {}, host))
    assert sorted(p["metadata"]["name"] for p in pods["s0"]) == sorted(f"api-{i}" for i in range(500))


def test_a_spec_is_validated_once_per_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    from united.uniteddeployment import validation

    world = settled(5)
    merged = 0
    place = getattr(validation, "place")  # noqa: B009

    def counting(*args: Any, **kw: Any) -> Json:
        nonlocal merged
        merged += 1
        return place(*args, **kw)

    monkeypatch.setattr(validation, "place", counting)
    asyncio.run(world.reconcile())
    assert merged == 0, "admitted by the first pass already"
    world.obj["metadata"]["annotations"] = {"note": "x"}  # metadata admit reads
    asyncio.run(world.reconcile())
    assert merged == 5
    world.obj["metadata"]["generation"] = 2
    asyncio.run(world.reconcile())
    asyncio.run(world.reconcile())
    assert merged == 10


# -- what a pass at the limits costs in all ---------------------------------------------------


def first_and_again(obj: Json, meter: Callable[[Callable[[], Any]], float]) -> tuple[float, float]:
    """What ``meter`` makes of the first pass over ``obj`` and of the pass after it."""
    world = World(obj)
    first = meter(lambda: asyncio.run(world.reconcile()))
    world.settle()
    again = meter(lambda: asyncio.run(world.reconcile()))
    assert [c for c in world.client.calls if c[1] == "deployments"] == []
    return first, again


def calls(what: Callable[[], Any]) -> float:
    with Operations() as operations:
        what()
    return operations.count


def cpu_seconds(what: Callable[[], Any]) -> float:
    start = time.process_time()
    what()
    return time.process_time() - start


def test_a_pass_that_changes_nothing_costs_a_small_part_of_the_first() -> None:
    """A pass after a pod event or a resync renders nothing: the children's blueprints are
    kept while the spec and the revision stay (a first pass merges every subset's patch twice,
    to validate and to render). Counted in calls, so neither the machine nor its load matters;
    the CPU times are printed."""
    obj = manifest(subsets=50, template_bytes=32 * 1024, patch_bytes=1024, placement_bytes=256)
    first, again = first_and_again(json.loads(json.dumps(obj)), calls)
    cpu_first, cpu_again = first_and_again(obj, cpu_seconds)
    figures = (
        f"first pass {first:,.0f} calls, {cpu_first * 1000:.0f} ms CPU; "
        f"the next {again:,.0f} calls, {cpu_again * 1000:.0f} ms CPU"
    )
    print(figures)
    assert again < first / 10, figures


def test_a_child_without_our_digest_gets_the_whole_template_from_a_kept_blueprint() -> None:
    world = settled(3)
    child = world.children.list()[0]
    stale = json.loads(json.dumps(child))
    del stale["metadata"]["annotations"][KEYS.spec_hash]
    stale["spec"]["template"]["spec"]["containers"][0]["image"] = "edited"
    world.children.upsert(stale)
    asyncio.run(world.reconcile())
    [(name, patch)] = world.client.writes("patch", "deployments")
    assert name == child["metadata"]["name"]
    containers = child["spec"]["template"]["spec"]["containers"]
    assert patch["spec"]["template"]["spec"]["containers"] == containers, "rendered from the whole template"
    assert patch["metadata"]["annotations"][KEYS.spec_hash] == child["metadata"]["annotations"][KEYS.spec_hash]


def test_a_deleted_uniteddeployment_leaves_nothing_kept() -> None:
    world = settled(3)
    assert len(world.reconciler.blueprints) == 1
    world.reconciler.caches.uniteddeployments.remove("ns/web")  # type: ignore[attr-defined]
    asyncio.run(world.reconcile())
    assert len(world.reconciler.blueprints) == 0


def test_a_pass_that_changes_nothing_compares_no_revision(monkeypatch: pytest.MonkeyPatch) -> None:
    """Comparing a revision's Data with the template costs the template's size: each is
    compared once per template, one per step of the loop, not on every pass."""
    world = settled(3)
    [ours] = world.revisions.list()
    for n in range(5):
        old = json.loads(json.dumps(ours))
        old["metadata"].update(name=f"web-old{n}", uid=f"old-{n}")
        old["revision"] = 0
        old["data"]["spec"]["template"]["deploymentTemplate"]["metadata"]["labels"]["old"] = str(n)
        world.revisions.upsert(old)
    compared = Compared(monkeypatch)
    asyncio.run(world.reconcile())
    assert compared.calls == 6, "the ones not compared yet (ours, created by the first pass, and the old ones), once"
    asyncio.run(world.reconcile())
    assert compared.calls == 6
    assert world.client.writes("delete", "controllerrevisions") == []
