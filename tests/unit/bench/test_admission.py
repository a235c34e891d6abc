"""The admission scenario's pure parts: its pods are what a ReplicaSet makes and are (or are
not) the spread's as the webhook itself decides, the cases take turns, and the comparison."""

from __future__ import annotations

import datetime
import math
import re
from typing import Any

import pytest

from bench.admission import CASES, Creator, compare, deployment, pod, replica_set, rotated
from bench.webhook import spread
from united.workloadspread import matching
from united.workloadspread.admission import admit
from united.workloadspread.booking import book_create


def created(doc: dict[str, Any], uid: str) -> dict[str, Any]:
    return {**doc, "metadata": {**doc["metadata"], "uid": uid}}


def owners() -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for app in ("web", "other"):
        d = created(deployment(app, "ns", replicas=5), f"uid-d-{app}")
        rs = created(replica_set(d), f"uid-rs-{app}")
        out[("Deployment", app)] = d
        out[("ReplicaSet", rs["metadata"]["name"])] = rs
    return out


def test_pods_are_owned_like_a_replica_sets_and_only_the_targets_book_a_subset() -> None:
    objects = owners()
    ws = admit(created(spread("ws", "ns", target="web", maxima=[2, 2]), "uid-ws"))

    def owner(namespace: str, ref: dict[str, Any]) -> dict[str, Any] | None:
        found = objects.get((ref["kind"], ref["name"]))
        return found if found is not None and found["metadata"]["uid"] == ref["uid"] else None

    web_rs = objects[("ReplicaSet", "web-6b8f9c7d5")]
    target = pod("targeted-00000", web_rs)
    assert target["metadata"]["ownerReferences"][0]["uid"] == "uid-rs-web"
    assert target["metadata"]["labels"] == {"app": "web", "pod-template-hash": "6b8f9c7d5"}
    assert target["spec"]["schedulerName"] == "bench-nobody"
    assert matching.match(target, [ws], owner).spread is ws
    booking = book_create(ws, target, replicas=5, now=datetime.datetime.now(datetime.UTC), new_uid=lambda: "u")
    assert booking.subset == "s0" and booking.status is not None  # a status write: the booking is measured

    other = pod("untargeted-00000", objects[("ReplicaSet", "other-6b8f9c7d5")])
    assert matching.match(other, [ws], owner).spread is None


def test_each_case_goes_first_in_turn() -> None:
    cases = ("floor", "untargeted", "targeted")
    assert [rotated(cases, i) for i in range(4)] == [
        ["floor", "untargeted", "targeted"],
        ["untargeted", "targeted", "floor"],
        ["targeted", "floor", "untargeted"],
        ["floor", "untargeted", "targeted"],
    ]


def test_compare_gives_percentiles_and_ratios_to_the_floor() -> None:
    out = compare({"floor": [1.0, 2.0, 3.0], "targeted": [4.0, 6.0, 8.0, 10.0, 12.0]})
    assert out["floor"] == {"pods": 3, "p50_ms": 2.0, "p99_ms": pytest.approx(2.98), "mean_ms": 2.0,
                            "ratio_p50": 1.0, "ratio_p99": 1.0, "added_p50_ms": 0.0}  # fmt: skip
    t = out["targeted"]
    assert (t["p50_ms"], t["ratio_p50"], t["added_p50_ms"], t["mean_ms"]) == (8.0, 4.0, 6.0, 8.0)
    assert t["p99_ms"] == pytest.approx(11.92) and t["ratio_p99"] == pytest.approx(11.92 / 2.98)
    assert math.isnan(compare({"floor": [1.0], "x": []})["x"]["p50_ms"])


class Pods:
    """Records the pods POSTed."""

    def __init__(self) -> None:
        self.names: list[str] = []

    async def create(self, resource: Any, body: dict[str, Any], *, namespace: str) -> dict[str, Any]:
        self.names.append(body["metadata"]["name"])
        return body


async def test_every_cases_pods_have_names_the_api_server_accepts() -> None:
    client: Any = Pods()
    template = deployment("web", "ns", replicas=1)["spec"]["template"]
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "spec": {"template": template},
             "metadata": {"name": "web-1", "namespace": "ns", "uid": "u"}}  # fmt: skip
    creator = Creator(client, dict.fromkeys(CASES, owner))
    for case in CASES:
        await creator.one(case)
    assert len(client.names) == len(CASES) and "no-spread-00000" in client.names
    assert all(re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name) for name in client.names), client.names
