"""The WorkloadSpread samples: each file holds the target workload and its
WorkloadSpread, parses, and is what ``united samples`` lists and ``united demo --sample`` runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from united import data
from united.api.groups import GROUP
from united.devcluster.demo import split_sample
from united.workloadspread.model import VERSION, parse

REPO = Path(__file__).resolve().parents[3]
DIRECTORY = REPO / "manifests" / "samples" / "workloadspread"
PATHS = sorted(DIRECTORY.glob("*.yaml"))


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def _terms(subset: dict[str, Any]) -> list[dict[str, Any]]:
    return (subset.get("requiredNodeSelector") or {}).get("matchExpressions") or []


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_a_sample_is_its_target_then_a_workloadspread_that_parses(path: Path) -> None:
    target, spread = _docs(path)
    ws = parse(spread)
    assert spread["apiVersion"] == f"{GROUP}/{VERSION}"
    ref = ws.spec.target_ref
    assert ref is not None
    assert (ref.api_version, ref.kind, ref.name) == (target["apiVersion"], target["kind"], target["metadata"]["name"])
    selector = target["spec"]["selector"]["matchLabels"]
    labels = target["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= labels.items(), "the target's template must match its selector"
    assert "namespace" not in target["metadata"] and "namespace" not in spread["metadata"]
    assert len({s.name for s in ws.spec.subsets}) == len(ws.spec.subsets) >= 2
    for subset in spread["spec"]["subsets"]:
        assert {"name", "requiredNodeSelector"} <= subset.keys(), "v1beta1 field names"
        assert not {"requiredNodeSelectorTerm", "preferredNodeSelectorTerms"} & subset.keys()
        # In with values: the demo creates simulated nodes that satisfy every subset.
        assert [t["operator"] for t in _terms(subset)] == ["In"] and _terms(subset)[0]["values"]
        patch_meta = (subset.get("patch") or {}).get("metadata") or {}
        assert not {"name", "namespace", "ownerReferences"} & patch_meta.keys()
    assert split_sample(_docs(path)) == (target, spread)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_a_sample_says_what_it_shows_and_how_to_run_it(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# ")
    assert f"united demo --sample manifests/samples/workloadspread/{path.name}" in text


def test_united_samples_lists_them() -> None:
    names = {f"workloadspread/{p.stem}" for p in PATHS}
    assert names <= set(data.samples())
    for name in names:
        assert data.sample(name).read_bytes() == (DIRECTORY / f"{name.split('/')[1]}.yaml").read_bytes()


def test_the_samples_cover_the_issue() -> None:
    """Zones with a maximum each for a Deployment; an on-demand base then spot with a patch and
    tolerations; a CPU-architecture split with per-arch resources; a CloneSet target."""
    spreads = {p.stem: _docs(p)[1]["spec"] for p in PATHS}
    keys = {stem: {t["key"] for s in spec["subsets"] for t in _terms(s)} for stem, spec in spreads.items()}

    zones = spreads["zones-max"]
    assert keys["zones-max"] == {"topology.kubernetes.io/zone"}
    assert all(isinstance(s.get("maxReplicas"), int) for s in zones["subsets"])

    spot = spreads["spot-overflow"]["subsets"]
    assert [s["name"] for s in spot] == ["on-demand", "spot"]
    assert "maxReplicas" in spot[0] and "maxReplicas" not in spot[-1], "a fixed base, then the rest"
    assert spot[-1]["tolerations"] and spot[-1]["patch"]["metadata"].keys() == {"labels", "annotations"}

    arch = spreads["arch-resources"]["subsets"]
    assert keys["arch-resources"] == {"kubernetes.io/arch"}
    assert any(c.get("resources") for s in arch for c in (s.get("patch") or {}).get("spec", {}).get("containers", []))

    assert _docs(DIRECTORY / "cloneset.yaml")[0]["kind"] == "CloneSet"
    assert spreads["cloneset"]["targetRef"]["apiVersion"].startswith("apps.kruise.io/")
    assert spreads["cloneset"]["scheduleStrategy"]["type"] == "Adaptive"
