"""Template changes a child cannot take on the local control plane: the
API server refuses a patch touching an immutable field as a whole, so such fields are never
sent — scaling and the rest of the template go through — and the UnitedDeployment reports
``Stalled`` naming the field."""

from __future__ import annotations

import pytest

from tests.e2e.controller.helpers import (
    STATEFULSETS,
    UD,
    children,
    condition,
    get_ud,
    patch_ud,
    ud,
    wait_ready,
    wait_shape,
    zone,
)
from tests.support.controller import Controller
from united.devcluster.simulation import Simulation
from united.kube.client import KubeClient
from united.kube.wait import eventually

pytestmark = pytest.mark.e2e


async def test_a_service_name_change_stalls_but_the_statefulset_still_scales(
    controller: Controller, sim: Simulation, kube: KubeClient, namespace: str
) -> None:
    doc = ud("imm", [zone("a", "zone-a")], replicas=1, variant="statefulSetTemplate")
    await kube.create(UD, doc, namespace=namespace)
    await wait_ready(kube, namespace, doc)
    [child] = await children(kube, namespace, doc)
    await patch_ud(
        kube, namespace, doc, {"spec": {"template": {"statefulSetTemplate": {"spec": {"serviceName": "x"}}}}}
    )
    await patch_ud(kube, namespace, doc, {"spec": {"replicas": 3}})
    await wait_shape(kube, namespace, doc, {"a": 3}, within=90)

    async def stalled() -> None:
        obj = await get_ud(kube, namespace, doc)
        c = condition(obj, "Stalled")
        assert c.get("status") == "True" and c.get("reason") == "ImmutableField", c
        assert "spec.serviceName" in c["message"] and "delete it" in c["message"], c
        assert obj["status"]["observedGeneration"] == obj["metadata"]["generation"]

    await eventually(stalled, within=60, what="Stalled naming spec.serviceName")
    live = await kube.get(STATEFULSETS, child["metadata"]["name"], namespace=namespace)
    assert live["metadata"]["uid"] == child["metadata"]["uid"] and live["spec"]["serviceName"] == "imm"

    # The way out the message names: delete the child; it is recreated with the new value.
    await kube.delete(STATEFULSETS, child["metadata"]["name"], namespace=namespace)

    async def recreated() -> None:
        now = await children(kube, namespace, doc)
        assert len(now) == 1, now
        new = now[0]
        assert new["metadata"]["uid"] != child["metadata"]["uid"] and new["spec"]["serviceName"] == "x"

    await eventually(recreated, within=60, what="child recreated with the new serviceName")
    obj = await wait_ready(kube, namespace, doc, within=90)
    assert condition(obj, "Stalled") == {}  # False: absent
