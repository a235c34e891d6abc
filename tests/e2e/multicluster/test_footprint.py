"""What each member cluster costs the controller: memory (the controller
process's ``VmRSS``), the watches it keeps open there (``united_member_watches``) and the
requests it makes to an idle member (``united_member_requests_total``).

A figure, not a goal: printed, and written to ``$UNITED_E2E_LOGS/multicluster-footprint.json``.
The assertions hold what ``docs/concepts/multicluster.md`` promises — exactly one watch for pods and one per child
kind in use per member, none before a UnitedDeployment places a subset there, no tight loop
against an idle member — and loose bounds on memory, so a leak of a member's worth shows.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.controller.helpers import UD
from tests.e2e.multicluster.remote import PROBE, converged, joined, spread
from tests.support.controller import LOG_DIR, Controller
from united.devcluster.planes import Plane, footprint
from united.kube.client import KubeClient

__all__ = ["joined"]

pytestmark = pytest.mark.e2e

MIB = 2**20
IDLE = 30.0


def rss(controller: Controller) -> int:
    assert controller.proc is not None
    return footprint([Path(f"/proc/{controller.proc.pid}")]).rss_bytes


async def settled_rss(controller: Controller, *, within: float = 40.0) -> int:
    """``VmRSS`` once three samples a second apart agree within 1 MiB (caches synced, the
    allocator done growing), or the last sample after ``within`` seconds."""
    samples = [rss(controller)]
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        await asyncio.sleep(1.0)
        samples.append(rss(controller))
        if len(samples) >= 3 and max(samples[-3:]) - min(samples[-3:]) < MIB:
            break
    return samples[-1]


def watches(controller: Controller) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for line in controller.metrics().splitlines():
        if line.startswith("united_member_watches{"):
            head, _, value = line.rpartition(" ")
            labels = dict(part.split("=", 1) for part in head[len("united_member_watches{") : -1].split(","))
            out[(labels["cluster"].strip('"'), labels["resource"].strip('"'))] = int(float(value))
    return out


@pytest.fixture(scope="module")
def baseline(controller: Controller) -> int:
    """The session's controller restarted before any member joins: its memory with no member."""
    controller.restart()
    return asyncio.run(settled_rss(controller))


async def test_what_a_member_costs_the_controller(
    baseline: int,
    joined: dict[str, Plane],
    controller: Controller,
    kube: KubeClient,
    member_kube: dict[str, KubeClient],
    namespace: str,
) -> None:
    members = sorted(joined)
    registered = await settled_rss(controller)
    assert watches(controller) == {}, "no watch in a member before a UnitedDeployment places a subset there"

    doc = spread("footprint", 6)
    await kube.create(UD, doc, namespace=namespace)
    await converged(kube, member_kube, namespace, doc, 2)
    placed = await settled_rss(controller)
    assert watches(controller) == {(m, r): 1 for m in members for r in ("deployments", "pods")}

    before = {m: controller.counter("united_member_requests_total", cluster=m) for m in members}
    await asyncio.sleep(IDLE)
    per_minute = {
        m: round((controller.counter("united_member_requests_total", cluster=m) - before[m]) * 60 / IDLE, 1)
        for m in members
    }
    probes_per_minute = 60 / PROBE["periodSeconds"]
    figures = {
        "members": len(members),
        "rss_mib_no_member": round(baseline / MIB, 1),
        "rss_mib_added_per_member_registered": round((registered - baseline) / len(members) / MIB, 1),
        "rss_mib_added_per_member_with_a_subset": round((placed - baseline) / len(members) / MIB, 1),
        "watches_per_member": len(watches(controller)) // len(members),
        "idle_requests_per_minute": per_minute,
        "probe_period_seconds": PROBE["periodSeconds"],
    }
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    (LOG_DIR / "multicluster-footprint.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(f"\ncontroller per member ({time.strftime('%H:%M:%S')}): {json.dumps(figures)}", file=sys.__stderr__)
    for m in members:
        # probes, plus informers' watch renewals: nothing like a loop
        assert per_minute[m] <= probes_per_minute + 10, figures
    assert (placed - baseline) / len(members) < 64 * MIB, figures
