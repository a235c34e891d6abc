"""Adopting pods created before the WorkloadSpread."""

from __future__ import annotations

import json

import pytest

from tests.unit.workloadspread.factories import pod, spread
from united.api.document import Json
from united.workloadspread.adoption import adopt, adopted_subset, term_matches, tolerates
from united.workloadspread.model import MATCHED_ANNOTATION, parse


def node(name: str, *, labels: dict[str, str] | None = None, taints: list[Json] | None = None) -> Json:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": taints or []}}


def zone(z: str) -> Json:
    return {"matchExpressions": [{"key": "zone", "operator": "In", "values": [z]}]}


ZONES = [
    {"name": "a", "requiredNodeSelector": zone("a"), "maxReplicas": 1},
    {"name": "b", "requiredNodeSelector": zone("b")},
]
NODES = {
    "na": node("na", labels={"zone": "a"}),
    "nb": node("nb", labels={"zone": "b"}),
    "nc": node("nc", labels={"zone": "c"}),
}


def subsets_of(result: dict[str, Json]) -> dict[str, str]:
    return {name: adopted_subset(patch) for name, patch in result.items()}


def test_pods_go_to_the_subset_their_node_matches() -> None:
    ws = spread(subsets=ZONES)
    pods = [
        pod("p1", node="nb"),
        pod("p2", node="na"),
        pod("p3", node="nc"),
        pod("p4", node=None),
        pod("p5", node="unknown"),
    ]
    assert subsets_of(adopt(ws, pods, nodes=NODES, replicas=3)) == {"p1": "b", "p2": "a"}


def test_already_placed_and_inactive_pods_are_left_alone() -> None:
    ws = spread(subsets=ZONES)
    pods = [
        pod("placed", "a", node="na"),
        pod("gone", node="na", deleting=True),
        pod("done", node="na", phase="Succeeded"),
    ]
    assert adopt(ws, pods, nodes=NODES, replicas=3) == {}


def test_foreign_annotation_is_adopted() -> None:
    ws = spread(subsets=ZONES)
    assert subsets_of(adopt(ws, [pod("p", "x", ws="other", node="na")], nodes=NODES, replicas=3)) == {"p": "a"}


def test_quota_breaks_ties_and_adopted_pods_use_it() -> None:
    ws = spread(subsets=[{"name": "a", "maxReplicas": 1}, {"name": "b", "maxReplicas": 5}])
    pods = [pod("p1", node="na"), pod("p2", node="na")]
    assert subsets_of(adopt(ws, pods, nodes=NODES, replicas=3)) == {"p1": "a", "p2": "b"}
    full = [pod("old", "a", node="na"), pod("p1", node="na")]
    assert subsets_of(adopt(ws, full, nodes=NODES, replicas=3)) == {"p1": "b"}


def test_quota_is_per_version() -> None:
    ws = spread(subsets=[{"name": "a", "maxReplicas": 1}, {"name": "b", "maxReplicas": 5}])
    pods = [pod("old", "a", node="na", version="v1"), pod("new", node="na", version="v2")]
    assert subsets_of(adopt(ws, pods, nodes=NODES, replicas=3)) == {"new": "a"}


def test_taints_must_be_tolerated_by_pod_or_subset() -> None:
    taint = {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}
    nodes = {"n": node("n", taints=[taint])}
    tol = {"key": "spot", "operator": "Equal", "value": "true"}
    ws = spread(subsets=[{"name": "a"}, {"name": "b", "tolerations": [tol]}])
    assert subsets_of(adopt(ws, [pod("p", node="n")], nodes=nodes, replicas=1)) == {"p": "b"}
    tolerant = pod("q", node="n")
    tolerant["spec"]["tolerations"] = [{"operator": "Exists"}]
    assert subsets_of(adopt(ws, [tolerant], nodes=nodes, replicas=1)) == {"q": "a"}


def test_required_term_is_anded_into_the_pods_terms() -> None:
    ws = spread(subsets=ZONES)
    p = pod("p", node="na")
    p["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]
            }
        }
    }
    assert adopt(ws, [p], nodes=NODES, replicas=3) == {}
    nodes = {"na": node("na", labels={"zone": "a", "disk": "ssd"})}
    assert subsets_of(adopt(ws, [p], nodes=nodes, replicas=3)) == {"p": "a"}


def test_preferred_weights_outscore_patch_and_quota() -> None:
    prefer = [{"weight": 5, "preference": zone("a")}]
    ws = spread(
        subsets=[{"name": "x", "maxReplicas": 5}, {"name": "y", "maxReplicas": 1, "preferredNodeSelector": prefer}]
    )
    assert subsets_of(adopt(ws, [pod("p", node="na")], nodes=NODES, replicas=3)) == {"p": "y"}


def test_a_subset_without_quota_never_adopts() -> None:
    """OpenKruise adopts into a full subset when it scores best; that over-fills it."""
    prefer = [{"weight": 5, "preference": zone("a")}]
    ws = spread(subsets=[{"name": "y", "maxReplicas": 1, "preferredNodeSelector": prefer}])
    pods = [pod("placed", "y", node="na"), pod("p", node="na")]
    assert adopt(ws, pods, nodes=NODES, replicas=3) == {}


def test_pending_bookings_use_quota() -> None:
    """Pods the webhook booked but the cache has not shown yet will arrive: adoption leaves them room."""
    ws = spread(subsets=[{"name": "a", "maxReplicas": 2}, {"name": "b"}])
    raw = dict(ws.raw)
    booked = {"name": "a", "replicas": 0, "missingReplicas": 0, "creatingPods": {"x": "2026-01-01T00:00:00Z"}}
    raw["status"] = {"versionedSubsetStatuses": {"v1": [booked, {"name": "b", "replicas": 0, "missingReplicas": -1}]}}
    ws = parse(raw)
    pods = [pod("placed", "a", node="na", version="v1"), pod("p", node="na", version="v1")]
    assert subsets_of(adopt(ws, pods, nodes=NODES, replicas=3)) == {"p": "b"}


def test_a_patch_the_pod_already_satisfies_scores() -> None:
    ws = spread(
        subsets=[
            {"name": "x", "patch": {"metadata": {"labels": {"tier": "spot"}}}},
            {"name": "y", "patch": {"metadata": {"labels": {"tier": "ondemand"}}}},
        ]
    )
    p = pod("p", node="na", labels={"tier": "ondemand"})
    assert subsets_of(adopt(ws, [p], nodes=NODES, replicas=1)) == {"p": "y"}


def test_patch_carries_annotation_patch_metadata_uid_and_version() -> None:
    ws = spread(
        subsets=[
            {
                "name": "a",
                "patch": {
                    "metadata": {"labels": {"tier": "spot"}, "annotations": {"x": "1"}},
                    "spec": {"priorityClassName": "low"},
                },
            }
        ]
    )
    p = pod("p", node="na")
    p["metadata"]["uid"] = "u1"
    p["metadata"]["resourceVersion"] = "42"
    patch = adopt(ws, [p], nodes=NODES, replicas=1)["p"]
    assert patch == {
        "metadata": {
            "uid": "u1",
            "resourceVersion": "42",
            "labels": {"tier": "spot"},
            "annotations": {
                "x": "1",
                MATCHED_ANNOTATION: json.dumps({"name": "ws", "subset": "a"}, separators=(",", ":")),
            },
        }
    }


@pytest.mark.parametrize("value", ["true", "TRUE"])
def test_ignore_annotation_skips_the_patch_metadata(value: str) -> None:
    ws = spread(
        subsets=[{"name": "a", "patch": {"metadata": {"labels": {"tier": "spot"}}}}],
        annotations={"workloadspread.kruise.io/ignore-patch-existing-pods-metadata": value},
    )
    patch = adopt(ws, [pod("p", node="na")], nodes=NODES, replicas=1)["p"]
    assert "labels" not in patch["metadata"] and list(patch["metadata"]["annotations"]) == [MATCHED_ANNOTATION]


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        ({"key": "k", "value": "v"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
        ({"key": "k", "value": "w"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, False),
        ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, {"key": "k", "effect": "NoSchedule"}, False),
        ({"operator": "Exists"}, {"key": "any", "effect": "NoExecute"}, True),
        ({"key": "j", "operator": "Exists"}, {"key": "k", "effect": "NoSchedule"}, False),
        ({"key": "k", "operator": "Bogus"}, {"key": "k", "effect": "NoSchedule"}, False),
    ],
)
def test_tolerates(toleration: Json, taint: Json, expected: bool) -> None:
    assert tolerates(toleration, taint) is expected


@pytest.mark.parametrize(
    ("term", "expected"),
    [
        ({}, False),
        ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["b"]}]}, True),
        ({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}, True),
        ({"matchExpressions": [{"key": "cpus", "operator": "Gt", "values": ["8"]}]}, True),
        ({"matchExpressions": [{"key": "cpus", "operator": "Lt", "values": ["8"]}]}, False),
        ({"matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["8"]}]}, False),
        ({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}, True),
        ({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}, False),
    ],
)
def test_term_matches(term: Json, expected: bool) -> None:
    assert term_matches(term, node("n1", labels={"zone": "a", "cpus": "16"})) is expected


def test_a_patch_that_cannot_apply_scores_nothing() -> None:
    ws = spread(subsets=[{"name": "x", "patch": {"spec": {"containers": {"name": "not-a-list"}}}}, {"name": "y"}])
    assert subsets_of(adopt(ws, [pod("p", node="na")], nodes=NODES, replicas=1)) == {"p": "y"}


def test_unknown_operator_matches_nothing() -> None:
    assert not term_matches(
        {"matchExpressions": [{"key": "zone", "operator": "Near", "values": ["a"]}]}, node("n", labels={"zone": "a"})
    )
