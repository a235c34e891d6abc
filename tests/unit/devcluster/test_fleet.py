"""The multi-cluster part of ``united demo`` that needs no cluster: which member planes a
sample asks for, which subsets' nodes go where, the packaged sample found by name, and the
table's CLUSTER column."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from united import data
from united.devcluster import fleet
from united.devcluster.demo import demo_nodes, render_table, sample_path, split_sample
from united.devcluster.nodes import subset_nodes

SAMPLE = "multicluster"


def _doc() -> dict[str, Any]:
    _, doc = split_sample(list(yaml.safe_load_all(data.sample(SAMPLE).read_text())))
    return doc


def test_the_sample_spreads_over_the_host_and_two_members() -> None:
    doc = _doc()
    assert fleet.clusters(doc) == ["member-1", "member-2"]
    assert [s["name"] for s in fleet.part(doc, None)["spec"]["topology"]["subsets"]] == ["home"]
    assert [s["name"] for s in fleet.part(doc, "member-2")["spec"]["topology"]["subsets"]] == ["west"]
    assert doc["spec"]["topology"]["subsets"][1]["cluster"] == "member-1", "part() must not change the sample"


def test_clusters_in_order_of_appearance_once_each() -> None:
    subsets = [
        {"name": "a", "cluster": "m2"},
        {"name": "b"},
        {"name": "c", "cluster": "m1"},
        {"name": "d", "cluster": "m2"},
    ]
    assert fleet.clusters({"spec": {"topology": {"subsets": subsets}}}) == ["m2", "m1"]
    assert fleet.clusters({"spec": {"topology": {"subsets": [{"name": "a", "cluster": ""}]}}}) == []


def test_the_host_gets_nodes_for_its_own_subsets_only() -> None:
    doc = _doc()
    fit = [n for n in demo_nodes(doc) if n.name.startswith("fit-")]
    assert [(n.name, n.zone) for n in fit] == [("fit-0-0", "zone-a"), ("fit-0-1", "zone-a")]
    member = subset_nodes(fleet.part(doc, "member-1"), prefix="member-1", per_subset=2)
    assert [n.name for n in member] == ["member-1-0-0", "member-1-0-1"]


def test_a_packaged_sample_is_found_by_name(tmp_path: Path) -> None:
    assert sample_path("multicluster") == data.sample("multicluster")
    assert sample_path(None) == data.sample("zones-percent")
    mine = tmp_path / "multicluster"
    mine.write_text("kind: UnitedDeployment\n")
    assert sample_path(str(mine)) == mine, "a file wins over a sample of the same name"
    with pytest.raises(LookupError, match=r"no sample 'nope'"):
        sample_path("nope")


def test_the_table_has_a_cluster_column_when_a_subset_is_remote() -> None:
    status = {
        "readyReplicas": 6,
        "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "ok"}],
        "subsetStatuses": [
            {"name": "home", "desired": 2, "replicas": 2, "readyReplicas": 2, "updatedReplicas": 2},
            {
                "name": "east",
                "cluster": "member-1",
                "desired": 2,
                "replicas": 2,
                "readyReplicas": 2,
                "updatedReplicas": 2,
            },
            {
                "name": "west",
                "cluster": "member-2",
                "desired": 2,
                "replicas": 2,
                "readyReplicas": 1,
                "updatedReplicas": 2,
            },
        ],
    }
    assert render_table({**_doc(), "status": status}).splitlines() == [
        "",
        "web-everywhere: 6/6 ready, Ready=True (Ready: ok)",
        "SUBSET  CLUSTER   DESIRED  REPLICAS  READY  UPDATED  REASON",
        "home    -         2        2         2      2",
        "east    member-1  2        2         2      2",
        "west    member-2  2        2         1      2",
    ]
