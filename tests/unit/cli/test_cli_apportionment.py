"""``united plan`` and ``united validate`` with ``rounding: Monotone`` and weights, through a subprocess."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.unit.cli.test_cli import REPO, ZONES, assert_field_errors, united, write

TOPOLOGY = {
    "rounding": "Monotone",
    "subsets": [
        {"name": "zone-a", "replicas": "15%"},
        {"name": "zone-b", "weight": 3},
        {"name": "zone-c", "weight": 4},
    ],
}


def manifest(tmp_path: Path, topology: dict[str, object]) -> str:
    doc = yaml.safe_load((REPO / ZONES).read_text())
    doc["spec"]["topology"] = topology
    return write(tmp_path, "ud.yaml", yaml.safe_dump(doc))


def test_plan_explains_every_share(tmp_path: Path) -> None:
    r = united("plan", manifest(tmp_path, TOPOLOGY), "--replicas", "20", "-o", "json")
    assert (r.code, r.err) == (0, "")
    assert [(s["name"], s["replicas"], s["reason"], s["message"]) for s in r.json()["subsets"]] == [
        (
            "zone-a",
            3,
            "percent",
            "15% of 20 replicas is 3; Sainte-Laguë with the other percentages and the rest (weight 85): "
            "quotient 15/5 = 3 → 3",
        ),
        (
            "zone-b",
            7,
            "remainder",
            "weight 3 of 7: Sainte-Laguë share of the 17 replicas no subset fixes: quotient 3/0.4118 = 7.286 → 7",
        ),
        (
            "zone-c",
            10,
            "remainder",
            "weight 4 of 7: Sainte-Laguë share of the 17 replicas no subset fixes: quotient 4/0.4118 = 9.714 → 10",
        ),
    ]
    table = united("plan", manifest(tmp_path, TOPOLOGY), "--replicas", "20")
    assert table.code == 0
    assert "weight 3 of 7: Sainte-Laguë share of the 17 replicas" in table.out


def test_validate_reports_weight_errors_as_field_lines(tmp_path: Path) -> None:
    bad = {
        "rounding": "Nearest",
        "subsets": [{"name": "zone-a", "replicas": 2, "weight": 1}, {"name": "zone-b", "weight": -2}],
    }
    assert_field_errors(
        united("validate", manifest(tmp_path, bad)),
        [
            'spec.topology.rounding: Unsupported value: "Nearest": supported values: "HalfUp", "Monotone"',
            "spec.topology.subsets[0].weight: Forbidden: may not be set with replicas: "
            "a weight shares what fixed subsets leave",
            "spec.topology.subsets[1].weight: Invalid value: -2: must be greater than or equal to 0",
        ],
    )
