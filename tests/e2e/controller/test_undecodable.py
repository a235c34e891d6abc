"""One UnitedDeployment nobody can read must not blind the controller.

Pod templates are schemaless: a tenant can store a UnitedDeployment nested 1,500 levels deep,
which ``json.loads`` cannot decode (RecursionError on CPython 3.11 and 3.12). Before the fix the
whole cluster-wide LIST failed, forever, and a restarted controller never became ready.

The nesting is of arrays: Kubernetes 1.20's API server takes exponential time over nested
*objects* in a schemaless field of a custom resource (20 levels already time out with a 504 and
nothing stored), but stores 1,500 nested arrays at once.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.controller.helpers import EVENTS, UD, children, condition, ud, wait_ready, zone
from tests.support.controller import Controller
from united.devcluster.simulation import Simulation
from united.kube.client import JSON, KubeClient
from united.kube.errors import NotFound
from united.kube.wait import eventually

pytestmark = pytest.mark.e2e

DEEP = 1500
SUBSETS = [zone("a", "zone-a"), zone("b", "zone-b")]


def deep_ud(name: str) -> bytes:
    """A valid UnitedDeployment whose pod spec carries an unknown field nested ``DEEP`` levels
    (kept: the template is schemaless); as text, since ``json.dumps`` cannot encode it either."""
    text = json.dumps(ud(name, SUBSETS, replicas=2))
    nested = "[" * DEEP + '"x"' + "]" * DEEP
    marker = '"terminationGracePeriodSeconds": 0'
    assert marker in text
    return text.replace(marker, f'{marker}, "nested": {nested}').encode()


async def reported(kube: KubeClient, namespace: str, name: str) -> None:
    """Wait for the Warning Event and the ``Stalled`` condition on UnitedDeployment ``name``."""

    async def stalled() -> None:
        obj = await kube.get(UD, name, namespace=namespace)  # the client answers with its stub
        assert "spec" not in obj, "premise: the object is too deep to read"
        c = condition(obj, "Stalled")
        assert c.get("status") == "True" and c.get("reason") == "Undecodable", c
        assert c["message"].startswith("spec: nested deeper than 100 levels")
        assert condition(obj, "Ready").get("status") == "False"
        events = await kube.list(EVENTS, namespace=namespace, field_selector=f"involvedObject.name={name}")
        assert any(e["reason"] == "Undecodable" and e["type"] == "Warning" for e in events.items), events.items

    await eventually(stalled, within=60, what=f"{name} reported as undecodable", retry_on=(AssertionError, NotFound))


async def test_a_restarted_controller_serves_everyone_and_reports_the_unreadable_ud(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    controller.stop()
    try:
        await kube.create(UD, deep_ud("deep"), namespace=namespace)
        good: JSON = ud("good", SUBSETS, replicas=2)
        await kube.create(UD, good, namespace=namespace)
    finally:
        controller.start()  # waits for /readyz: every informer synced despite the deep object
    await wait_ready(kube, namespace, good)
    await reported(kube, namespace, "deep")
    assert await children(kube, namespace, ud("deep", SUBSETS, replicas=2)) == []

    # Through the watch: created while the controller runs.
    await kube.create(UD, deep_ud("late"), namespace=namespace)
    await reported(kube, namespace, "late")
    assert controller.counter("united_undecodable_objects_total", resource="UnitedDeployment") >= 2
