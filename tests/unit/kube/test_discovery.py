"""Which version discovery prefers for a kind: the garbage collector's choice, made the same way."""

from __future__ import annotations

import json
from typing import Any

from united.kube.client import Resource
from united.kube.discovery import preferred
from united.kube.errors import error_from_status

UD = Resource("apps.kruise.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")


class Discovery:
    """Answers ``get_path`` from ``paths``; a path it does not know is a 404."""

    def __init__(self, paths: dict[str, Any]) -> None:
        self.paths = paths
        self.asked: list[str] = []

    async def get_path(self, path: str, **_: Any) -> str:
        self.asked.append(path)
        if path not in self.paths:
            raise error_from_status(404, {"kind": "Status", "code": 404, "reason": "NotFound"})
        answer = self.paths[path]
        return answer if isinstance(answer, str) else json.dumps(answer)


def group(*versions: str) -> dict[str, Any]:
    listed = [{"groupVersion": f"apps.kruise.io/{v}", "version": v} for v in versions]
    return {"kind": "APIGroup", "name": "apps.kruise.io", "versions": listed, "preferredVersion": listed[0]}


def resources(*plurals: str) -> dict[str, Any]:
    return {"kind": "APIResourceList", "resources": [{"name": p} for p in plurals]}


async def test_the_first_version_of_the_group_that_serves_the_kind() -> None:
    client = Discovery({
        "/apis/apps.kruise.io": group("v1beta1", "v1alpha1"),
        "/apis/apps.kruise.io/v1beta1": resources("statefulsets", "uniteddeployments"),
        "/apis/apps.kruise.io/v1alpha1": resources("uniteddeployments", "clonesets"),
    })  # fmt: skip
    assert await preferred(client, UD) == "apps.kruise.io/v1beta1"  # type: ignore[arg-type]
    assert client.asked == ["/apis/apps.kruise.io", "/apis/apps.kruise.io/v1beta1"]


async def test_a_preferred_version_without_the_kind_is_passed_over() -> None:
    client = Discovery({
        "/apis/apps.kruise.io": group("v1beta1", "v1alpha1"),
        "/apis/apps.kruise.io/v1beta1": resources("statefulsets"),
        "/apis/apps.kruise.io/v1alpha1": resources("uniteddeployments"),
    })  # fmt: skip
    assert await preferred(client, UD) == "apps.kruise.io/v1alpha1"  # type: ignore[arg-type]


async def test_none_when_discovery_does_not_answer_or_serves_no_version_of_it() -> None:
    assert await preferred(Discovery({}), UD) is None  # type: ignore[arg-type]
    garbled = Discovery({"/apis/apps.kruise.io": "not json"})
    assert await preferred(garbled, UD) is None  # type: ignore[arg-type]
    shapeless = Discovery({"/apis/apps.kruise.io": {"versions": [{"groupVersion": "x"}]}})
    assert await preferred(shapeless, UD) is None  # type: ignore[arg-type]
    elsewhere = Discovery({
        "/apis/apps.kruise.io": group("v1beta1"),
        "/apis/apps.kruise.io/v1beta1": resources("statefulsets"),
    })  # fmt: skip
    assert await preferred(elsewhere, UD) is None  # type: ignore[arg-type]


async def test_an_unanswered_version_is_not_passed_over_for_a_later_one() -> None:
    client = Discovery({
        "/apis/apps.kruise.io": group("v1beta1", "v1alpha1"),
        "/apis/apps.kruise.io/v1alpha1": resources("uniteddeployments"),
    })  # fmt: skip
    assert await preferred(client, UD) is None  # type: ignore[arg-type]
