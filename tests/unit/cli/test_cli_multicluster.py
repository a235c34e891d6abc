"""The command line with multi-cluster subsets (``spec.topology.subsets[].cluster``): the
CLUSTER column and JSON key of ``plan``, the comment lines of ``render``, bad input as exit 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.unit.cli.test_cli import ADAPTIVE, REPO, ZONES, assert_field_errors, united


def adaptive_with_remote_ecs() -> str:
    doc: dict[str, Any] = yaml.safe_load((REPO / ADAPTIVE).read_text())
    doc["spec"]["topology"]["subsets"][0]["cluster"] = "member-1"
    return yaml.safe_dump(doc)


def zones(*clusters: str | None, api_version: str = "apps.united.io/v1alpha1") -> str:
    doc: dict[str, Any] = yaml.safe_load((REPO / ZONES).read_text())
    doc["apiVersion"] = api_version
    for subset, cluster in zip(doc["spec"]["topology"]["subsets"], clusters, strict=True):
        if cluster is not None:
            subset["cluster"] = cluster
    return yaml.safe_dump(doc)


def test_plan_table_has_a_cluster_column() -> None:
    r = united("plan", "-", stdin=zones(None, "member-1", "eu.member-2"))
    assert (r.code, r.err) == (0, "")
    header, *rows = r.out.splitlines()[1:]
    assert header.split() == ["SUBSET", "CLUSTER", "REPLICAS", "PARTITION", "REASON", "MESSAGE"]
    assert [row.split()[:3] for row in rows] == [
        ["zone-a", "-", "2"],
        ["zone-b", "member-1", "2"],
        ["zone-c", "eu.member-2", "6"],
    ]


def test_plan_table_without_clusters_has_no_cluster_column() -> None:
    r = united("plan", "-", stdin=zones(None, "", None))
    assert r.code == 0
    assert r.out.splitlines()[1].split() == ["SUBSET", "REPLICAS", "PARTITION", "REASON", "MESSAGE"]


def test_plan_json_names_each_subsets_cluster() -> None:
    r = united("plan", "-", "-o", "json", stdin=zones(None, "member-1", ""))
    assert (r.code, r.err) == (0, "")
    assert [(s["name"], s["cluster"]) for s in r.json()["subsets"]] == [
        ("zone-a", None),
        ("zone-b", "member-1"),
        ("zone-c", None),
    ]


def test_render_says_where_each_remote_child_goes() -> None:
    text = zones(None, "member-1", None)
    as_yaml = united("render", "-", stdin=text)
    as_json = united("render", "-", "-o", "json", stdin=text)
    assert (as_yaml.code, as_yaml.err) == (0, "")
    assert list(yaml.safe_load_all(as_yaml.out)) == as_json.json()
    comments = [line for line in as_yaml.out.splitlines() if line.startswith("#")]
    assert comments == ["# subset zone-b -> cluster member-1"]
    documents = as_yaml.out.split("---\n")
    assert [d.startswith("# subset") for d in documents] == [False, True, False]


def test_render_without_clusters_prints_plain_documents() -> None:
    as_yaml, as_json = united("render", ZONES), united("render", ZONES, "-o", "json")
    assert as_yaml.code == as_json.code == 0
    assert as_yaml.out == yaml.safe_dump_all(as_json.json(), sort_keys=False, default_flow_style=False)


def test_invalid_cluster_name_is_exit_2() -> None:
    for command in ("validate", "plan", "render"):
        assert_field_errors(
            united(command, "-", stdin=zones(None, "Member_1", None)),
            [
                'spec.topology.subsets[1].cluster: Invalid value: "Member_1": a lowercase RFC 1123 subdomain must '
                "consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character"
            ],
        )


def test_the_kruise_group_is_refused_exit_2() -> None:
    assert_field_errors(
        united("validate", "-", stdin=zones("member-1", None, None, api_version="apps.kruise.io/v1beta1")),
        ["spec.topology.subsets[0].cluster: Forbidden: multi-cluster subsets need the apps.united.io group"],
    )


def plan_with_outage(tmp_path: Path, entry: str) -> list[tuple[str, int, str]]:
    """``plan`` of the Adaptive sample (rescheduleCriticalSeconds 30) with subset ecs in member-1."""
    manifest, state = tmp_path / "ud.yaml", tmp_path / "state.yaml"
    manifest.write_text(adaptive_with_remote_ecs())
    state.write_text(f"subsets:\n  ecs: {{replicas: 20, readyReplicas: 20, {entry}}}\n")
    r = united("plan", str(manifest), "--state", str(state), "-o", "json")
    assert (r.code, r.err) == (0, ""), r
    return [(s["name"], s["replicas"], s["reason"]) for s in r.json()["subsets"]]


def test_plan_state_cluster_unreachable_fails_over_after_the_critical_time(tmp_path: Path) -> None:
    assert plan_with_outage(tmp_path, "clusterUnreachable: true, unreachableSeconds: 29") == [
        ("ecs", 20, "adaptive-ready-kept"),
        ("serverless", 0, "overflow"),
    ]
    moved = [("ecs", 0, "cluster-failover"), ("serverless", 20, "overflow")]
    assert plan_with_outage(tmp_path, "clusterUnreachable: true, unreachableSeconds: 30") == moved
    assert plan_with_outage(tmp_path, "clusterUnreachable: true") == moved


def test_plan_state_cluster_unreachable_errors(tmp_path: Path) -> None:
    state = tmp_path / "state.yaml"
    state.write_text("subsets:\n  zone-a: {clusterUnreachable: true}\n  zone-b: {unreachableSeconds: 5}\n")
    assert_field_errors(
        united("plan", ZONES, "--state", str(state)),
        ["state.subsets[zone-b].unreachableSeconds: Invalid value: 5: needs clusterUnreachable: true"],
    )
    state.write_text("subsets:\n  zone-a: {clusterUnreachable: true}\n")
    assert_field_errors(
        united("plan", ZONES, "--state", str(state)),
        [
            "state.subsets[zone-a].clusterUnreachable: Invalid value: true: subset zone-a has no cluster: "
            "it runs where the UnitedDeployment is"
        ],
    )


def test_render_gives_a_remote_child_owner_labels_not_an_owner_reference() -> None:
    """As the controller makes it: an ownerReference cannot cross clusters, so the remote child
    names its owner and the host (``--host-cluster-id``) in labels, its pods the host too."""
    r = united("render", "-", "-o", "json", "--host-cluster-id", "host-uid-1", stdin=zones(None, "member-1", None))
    assert (r.code, r.err) == (0, "")
    local, remote, _ = r.json()
    assert "ownerReferences" not in remote["metadata"]
    labels = remote["metadata"]["labels"]
    assert (labels["apps.united.io/owner-name"], labels["apps.united.io/owner-uid"]) == ("api-zones", "")
    assert labels["apps.united.io/owner-cluster"] == "host-uid-1"
    assert remote["metadata"]["annotations"]["apps.united.io/cluster"] == "member-1"
    assert remote["spec"]["template"]["metadata"]["labels"]["apps.united.io/owner-cluster"] == "host-uid-1"
    assert local["metadata"]["ownerReferences"][0]["kind"] == "UnitedDeployment"
    assert not any(key.startswith("apps.united.io/owner") for key in local["metadata"]["labels"])


def test_render_without_a_host_cluster_id_leaves_it_empty_like_the_owner_uid() -> None:
    r = united("render", "-", "-o", "json", stdin=zones(None, "member-1", None))
    assert r.json()[1]["metadata"]["labels"]["apps.united.io/owner-cluster"] == ""


def test_render_refuses_a_host_cluster_id_that_is_no_label_value() -> None:
    assert_field_errors(
        united("render", ZONES, "--host-cluster-id", "a b"),
        [
            '--host-cluster-id: Invalid value: "a b": a valid label must be an empty string or consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ],
    )
