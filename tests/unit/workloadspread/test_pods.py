"""Which pods a spread manages and its target's replicas."""

from __future__ import annotations

import pytest

from tests.unit.workloadspread.factories import deployment, pod, replicaset, spread
from united.api.field import ManifestError
from united.workloadspread.model import FAKE_SUBSET
from united.workloadspread.pods import group, pods_of, replicas_of, subset_of


def names(pods: list[dict]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_deployment_pods_are_those_of_its_replicasets() -> None:
    ws = spread(2, None)
    mine = [pod("a1", owner="uid-rs-v1"), pod("a2", owner="uid-rs-v2", version="v2")]
    foreign = pod("x", owner="uid-rs-other")
    rss = [replicaset("v1"), replicaset("v2"), replicaset("other", owner="uid-other")]
    assert names(pods_of(ws, workload=deployment(), replicasets=rss, pods=[*mine, foreign])) == ["a1", "a2"]


def test_deleting_replicaset_pods_are_not_the_targets() -> None:
    ws = spread(2, None)
    rss = [replicaset("v1", deleting=True), replicaset("v2")]
    pods = [pod("old", owner="uid-rs-v1"), pod("new", owner="uid-rs-v2", version="v2")]
    assert names(pods_of(ws, workload=deployment(), replicasets=rss, pods=pods)) == ["new"]


def test_deployment_without_replicasets_owns_its_pods_directly() -> None:
    ws = spread(2, None)
    pods = [pod("direct", owner="uid-web"), pod("other", owner="uid-rs-v1")]
    assert names(pods_of(ws, workload=deployment(), replicasets=[], pods=pods)) == ["direct"]


def test_other_kinds_own_their_pods() -> None:
    ws = spread(2, None, kind="CloneSet", api_version="apps.kruise.io/v1alpha1")
    cloneset = {"metadata": {"name": "web", "uid": "uid-cs"}, "spec": {"replicas": 2}}
    pods = [pod("c1", owner="uid-cs"), pod("c2", owner="uid-else")]
    assert names(pods_of(ws, workload=cloneset, replicasets=[], pods=pods)) == ["c1"]


def test_missing_or_deleting_workload_has_no_pods() -> None:
    ws = spread(2, None)
    pods = [pod("a1")]
    assert pods_of(ws, workload=None, replicasets=[replicaset()], pods=pods) == []
    gone = deployment()
    gone["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert pods_of(ws, workload=gone, replicasets=[replicaset()], pods=pods) == []


def test_scaled_to_zero_still_counts_its_pods() -> None:
    """OpenKruise shows no pods when replicas are 0; terminating pods are still real."""
    ws = spread(2, None)
    pods = [pod("leaving", deleting=True), pod("stays")]
    assert names(pods_of(ws, workload=deployment(0), replicasets=[replicaset()], pods=pods)) == ["leaving", "stays"]


def test_inactive_pods_are_included() -> None:
    ws = spread(2, None)
    pods = [pod("done", phase="Succeeded"), pod("failed", phase="Failed")]
    assert names(pods_of(ws, workload=deployment(), replicasets=[replicaset()], pods=pods)) == ["done", "failed"]


def test_target_filter_selector_keeps_matching_pods() -> None:
    ws = spread(2, None, extra_spec={"targetFilter": {"selector": {"matchLabels": {"role": "worker"}}}})
    pods = [pod("w", labels={"role": "worker"}), pod("m", labels={"role": "master"})]
    assert names(pods_of(ws, workload=deployment(), replicasets=[replicaset()], pods=pods)) == ["w"]


def test_target_filter_without_selector_keeps_every_pod() -> None:
    ws = spread(2, None, extra_spec={"targetFilter": {"replicasPathList": ["spec.replicas"]}})
    pods = [pod("w"), pod("m")]
    assert names(pods_of(ws, workload=deployment(), replicasets=[replicaset()], pods=pods)) == ["w", "m"]


def test_pods_of_other_namespaces_are_never_the_targets() -> None:
    ws = spread(2, None)
    elsewhere = pod("x")
    elsewhere["metadata"]["namespace"] = "other"
    assert pods_of(ws, workload=deployment(), replicasets=[replicaset()], pods=[elsewhere]) == []


def test_replicas_of_each_kind() -> None:
    assert replicas_of(spread("50%", None), deployment(7)) == 7
    job = {"spec": {"parallelism": 4, "completions": 9}}
    assert replicas_of(spread("50%", None, kind="Job", api_version="batch/v1"), job) == 4
    assert replicas_of(spread("50%", None), {"spec": {}}) == 1
    assert replicas_of(spread("50%", None), None) == 0


def test_replicas_path_list_sums_the_paths() -> None:
    ws = spread(
        "50%",
        None,
        extra_spec={"targetFilter": {"replicasPathList": ["spec.replicaSpecs.0.replicas", "spec.extra", ""]}},
    )
    workload = {"spec": {"replicaSpecs": [{"replicas": 3}, {"replicas": 100}], "extra": 2}}
    assert replicas_of(ws, workload) == 5


@pytest.mark.parametrize(
    ("paths", "workload", "message"),
    [
        (
            ["spec.missing"],
            {"spec": {}},
            'spec.targetFilter.replicasPathList[0]: Invalid value: "spec.missing": '
            "the workload has no field 'missing' on this path",
        ),
        (
            ["spec.items.3"],
            {"spec": {"items": [1]}},
            "spec.targetFilter.replicasPathList[0]: Invalid value: "
            "\"spec.items.3\": the workload has no field '3' on this path",
        ),
        (
            ["spec.name"],
            {"spec": {"name": "x"}},
            "spec.targetFilter.replicasPathList[0]: Invalid value: "
            "\"spec.name\": the value there is not an integer: 'x'",
        ),
    ],
)
def test_bad_replicas_paths_are_field_errors(paths: list[str], workload: dict, message: str) -> None:
    ws = spread("50%", None, extra_spec={"targetFilter": {"replicasPathList": paths}})
    with pytest.raises(ManifestError) as e:
        replicas_of(ws, workload)
    assert [str(x) for x in e.value.errors] == [message]


def test_bad_replicas_field_is_a_field_error() -> None:
    with pytest.raises(ManifestError) as e:
        replicas_of(spread("50%", None), {"spec": {"replicas": "3"}})
    assert str(e.value) == 'Deployment.spec.replicas: Invalid value: "3": must be a whole number'


def test_subset_of_reads_only_this_spreads_known_subsets() -> None:
    ws = spread(2, None)
    assert subset_of(ws, pod("p", "a")) == "a"
    assert subset_of(ws, pod("p", "gone")) is None
    assert subset_of(ws, pod("p", "a", ws="other")) is None
    assert subset_of(ws, pod("p")) is None


def test_group_by_version_then_subset_with_unplaced_and_adopted() -> None:
    ws = spread(2, None)
    pods = [pod("a1", "a"), pod("b1", "b", version="v2"), pod("gone", "removed"), pod("bare"), pod("old")]
    grouped = group(ws, pods, adopted={"old": "b"})
    assert {v: {s: names(p) for s, p in b.items()} for v, b in grouped.items()} == {
        "v1": {"a": ["a1"], FAKE_SUBSET: ["gone", "bare"], "b": ["old"]},
        "v2": {"b": ["b1"]},
    }


def test_null_replicas_is_the_api_servers_default() -> None:
    assert replicas_of(spread("50%", None), {"spec": {"replicas": None}}) == 1
