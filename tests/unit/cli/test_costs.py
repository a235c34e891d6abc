"""``united costs WS.yaml PODS.yaml``: the JSON contract, the workload in the file, bad input exits 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.workloadspread.factories import deployment, pod, replicaset, spread
from united import cli


def write(tmp_path: Path, name: str, *docs: Any) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(list(docs)))
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = cli.main(["costs", *argv])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else None, err


def test_costs_of_a_list_of_pods(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = write(tmp_path, "ws.yaml", spread(1, 1, 1).raw)
    pods = [
        pod("a0", "a"),
        pod("a1", "a"),
        pod("b0", "b"),
        pod("c0", "c"),
        pod("lost"),
        pod("gone", "a", deleting=True),
    ]
    listed = write(tmp_path, "pods.yaml", {"apiVersion": "v1", "kind": "List", "items": pods})
    code, out, _ = run(capsys, ws, listed, "-o", "json")
    assert code == 0
    assert out == {"a0": -100, "a1": 300, "b0": 200, "c0": 100, "lost": -400}


def test_several_documents_with_the_workload_and_old_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = write(tmp_path, "ws.yaml", spread(None, None).raw)
    docs = [
        deployment(2, template_hash="v2"),
        replicaset("v1"),
        replicaset("v2"),
        pod("new", "a", version="v2", owner="uid-rs-v2"),
        pod("old", "a"),
        pod("stranger", "a", owner="nobody"),
    ]
    code, out, _ = run(capsys, ws, write(tmp_path, "pods.yaml", *docs))
    assert code == 0
    assert out == {"new": 200, "old": 100}


def test_without_workload_the_newest_pods_version_is_latest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = write(tmp_path, "ws.yaml", spread(None, None).raw)
    docs = [pod("new", "a", version="v2", created="2026-01-02T00:00:00Z"), pod("old", "a")]
    _, out, _ = run(capsys, ws, write(tmp_path, "pods.yaml", *docs))
    assert out == {"new": 200, "old": 100}


def test_percentages_keep_the_split(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = write(tmp_path, "ws.yaml", spread("34%", "33%", "33%").raw)
    pods = [pod(f"{s}{i}", s) for s, n in (("a", 4), ("b", 3), ("c", 3)) for i in range(n)]
    code, out, _ = run(capsys, ws, write(tmp_path, "pods.yaml", *pods), "--replicas", "10")
    assert code == 0
    top6 = sorted(out, key=out.__getitem__, reverse=True)[:6]
    assert sorted(n[0] for n in top6) == ["a", "a", "b", "b", "c", "c"]


def test_kind_without_costs_prints_empty_with_a_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = write(tmp_path, "ws.yaml", spread(1, kind="Job", api_version="batch/v1").raw)
    code, out, err = run(capsys, ws, write(tmp_path, "pods.yaml", pod("a0", "a")))
    assert (code, out) == (0, {})
    assert err == "note: Job ignores pod-deletion-cost; the controller writes none\n"


@pytest.mark.parametrize(
    ("docs", "extra", "message"),
    [
        (
            [{"kind": "Service", "metadata": {"name": "svc"}}],
            [],
            '{pods}[0].kind: Invalid value: "Service": must be a Pod, the target Deployment web or a ReplicaSet',
        ),
        ([{"kind": "Pod", "metadata": {}}], [], "{pods}[0].metadata.name: Required value"),
        ([pod("a0", "a")], ["--replicas", "-1"], "--replicas: Invalid value: -1: must be greater than or equal to 0"),
        (
            [deployment(2), replicaset("other", owner="someone")],
            [],
            "{pods}: the latest version of Deployment web cannot be told yet (its current ReplicaSet or revision is "
            "not among the objects)",
        ),
    ],
)
def test_bad_input_exits_2_with_field_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], docs: list[Any], extra: list[str], message: str
) -> None:
    ws = write(tmp_path, "ws.yaml", spread(1).raw)
    pods = write(tmp_path, "pods.yaml", *docs)
    code, out, err = run(capsys, ws, pods, *extra)
    expected = message.format(pods=pods)
    assert code == 2 and err.splitlines() == [expected]
    field, text = expected.split(": ", 1)
    assert out == {"valid": False, "errors": [{"field": field, "message": text}]}


def test_bad_spread_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = spread(1).raw | {"spec": {"subsets": [{"name": "a"}]}}
    code, _, err = run(capsys, write(tmp_path, "ws.yaml", bad), write(tmp_path, "pods.yaml", pod("a0", "a")))
    assert code == 2 and err == "spec.targetRef: Required value: no targetRef defined in WorkloadSpread\n"


def test_bad_replicas_path_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = write(tmp_path, "ws.yaml", spread("50%", None, extra_spec={"targetFilter": {"replicasPathList": ["x"]}}).raw)
    code, _, err = run(capsys, ws, write(tmp_path, "pods.yaml", deployment(2), replicaset("v1"), pod("a0", "a")))
    assert code == 2
    assert (
        err
        == "spec.targetFilter.replicasPathList[0]: Invalid value: \"x\": the workload has no field 'x' on this path\n"
    )
