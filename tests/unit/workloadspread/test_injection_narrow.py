"""inject copies only along what placement changes: the rest of the placed pod is the admitted
pod's own objects, untouched, so the JSON patch never walks or carries them."""

from __future__ import annotations

import copy
from typing import Any

from tests.unit.workloadspread.test_injection import ZONE_A, pod, spread
from united.runtime.webserver import json_patch
from united.workloadspread.injection import inject


def test_what_placement_leaves_alone_is_shared_and_the_pod_is_not_mutated() -> None:
    tolerations: list[Any] = [{"key": str(i), "operator": "Exists"} for i in range(5000)]
    admitted = pod(tolerations=tolerations, affinity={"podAntiAffinity": {"x": [1]}, "nodeAffinity": {"a": 1}})
    admitted["spec"]["volumes"] = [{"name": str(i)} for i in range(1000)]
    before = copy.deepcopy(admitted)
    ws = spread(
        tolerations=[{"key": "spot", "operator": "Exists"}],
        requiredNodeSelector={"matchExpressions": [ZONE_A]},
        patch={"metadata": {"labels": {"pool": "a"}}},
    )
    out = inject(admitted, ws, "a", uid="u-1")
    assert admitted == before
    assert out["spec"]["volumes"] is admitted["spec"]["volumes"]
    assert out["spec"]["containers"] is admitted["spec"]["containers"]
    assert out["spec"]["affinity"]["podAntiAffinity"] is admitted["spec"]["affinity"]["podAntiAffinity"]
    ops = json_patch(admitted, out)
    assert {op["path"] for op in ops} == {
        "/spec/tolerations/-", "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution",
        "/metadata/labels", "/metadata/annotations",
    }  # fmt: skip
