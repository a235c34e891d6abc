"""``united plan`` and ``united admit`` for a WorkloadSpread (``docs/reference/cli.md``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from united import cli
from united.workloadspread.model import MATCHED_ANNOTATION

REPO = Path(__file__).parents[3]
ERROR_LINE = re.compile(r"^\S[^\n]*?: \S.*$")

SPREAD: dict[str, Any] = {
    "apiVersion": "apps.kruise.io/v1beta1",
    "kind": "WorkloadSpread",
    "metadata": {"name": "spread", "namespace": "default"},
    "spec": {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "subsets": [
            {
                "name": "a",
                "requiredNodeSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                "maxReplicas": "20%",
            },
            {"name": "b", "maxReplicas": "50%", "patch": {"metadata": {"labels": {"pool": "b"}}}},
            {"name": "c"},
        ],
    },
}

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "generateName": "web-abc-",
        "namespace": "default",
        "labels": {"app": "web", "pod-template-hash": "abc"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc", "controller": True}],
    },
    "spec": {"containers": [{"name": "main", "image": "nginx"}]},
}


def write(tmp_path: Path, name: str, value: Any) -> str:
    path = tmp_path / name
    path.write_text(value if isinstance(value, str) else yaml.safe_dump(value))
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def errors(err: str) -> list[str]:
    lines = [line for line in err.splitlines() if not line.startswith("note: ")]
    assert all(ERROR_LINE.match(line) for line in lines), lines
    return lines


def test_plan_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", write(tmp_path, "ws.yaml", SPREAD), "--replicas", "10", "-o", "json")
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {"kind", "name", "replicas", "subsets", "unplaced"}
    assert (doc["kind"], doc["name"], doc["replicas"], doc["unplaced"]) == ("WorkloadSpread", "spread", 10, 0)
    assert [(s["name"], s["replicas"], s["maxReplicas"], s["reason"]) for s in doc["subsets"]] == [
        ("a", 2, 2, "Full"),
        ("b", 5, 5, "Full"),
        ("c", 3, None, "Placed"),
    ]
    assert all(set(s) == {"name", "replicas", "maxReplicas", "reason", "message"} for s in doc["subsets"])


def test_plan_table_and_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = write(tmp_path, "state.yaml", {"subsets": {"a": {"pods": 2}, "b": {"unschedulable": True}}})
    code, out, _ = run(capsys, "plan", write(tmp_path, "ws.yaml", SPREAD), "--replicas", "2", "--state", state)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "WorkloadSpread spread: 2 new pod(s), 0 unplaced"
    assert lines[1].split() == ["SUBSET", "REPLICAS", "MAX", "REASON", "MESSAGE"]
    assert lines[2].split()[:4] == ["a", "0", "1", "Full"]  # 20 % of 2 existing + 2 new, rounded up
    assert lines[3].split()[:4] == ["b", "0", "2", "Unschedulable"]
    assert lines[4].split()[:4] == ["c", "2", "-", "Placed"]


def test_plan_still_plans_a_united_deployment(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", str(REPO / "manifests/samples/zones-percent.yaml"), "-o", "json")
    assert code == 0 and "allocator" in json.loads(out)


@pytest.mark.parametrize(
    ("args", "state", "expected"),
    [
        ((), None, ["--replicas: Required value: the number of new pods to place"]),
        (("--replicas", "-1"), None, ["--replicas: Invalid value: -1: must be at least 0"]),
        (
            ("--replicas", "1"),
            {"subsets": {"zz": {"pods": 1}}},
            ["state.subsets[zz]: Not found: no such subset in spec.subsets"],
        ),
        (
            ("--replicas", "1"),
            {"subsets": {"a": {"pods": -1}}},
            ["state.subsets[a].pods: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            ("--replicas", "1"),
            {"subsets": {"a": {"replicas": 1}}},
            ["state.subsets[a].replicas: Unknown field: supported fields: pods, unschedulable"],
        ),
    ],
)
def test_plan_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], state: Any, expected: list[str]
) -> None:
    extra = ("--state", write(tmp_path, "s.yaml", state)) if state is not None else ()
    code, _, err = run(capsys, "plan", write(tmp_path, "ws.yaml", SPREAD), *args, *extra)
    assert code == 2
    assert errors(err) == expected


def test_bad_spread_is_a_field_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = {**SPREAD, "spec": {**SPREAD["spec"], "subsets": [{"name": "a", "maxReplicas": [1]}]}}
    code, _, err = run(capsys, "plan", write(tmp_path, "ws.yaml", bad), "--replicas", "1")
    assert code == 2 and errors(err) and errors(err)[0].startswith("spec.subsets[0].maxReplicas: ")
    no_target = {**SPREAD, "spec": {"subsets": [{"name": "a"}]}}
    code, _, err = run(capsys, "admit", write(tmp_path, "ws.yaml", no_target), write(tmp_path, "p.yaml", POD))
    assert code == 2 and errors(err) == ["spec.targetRef: Required value: no targetRef defined in WorkloadSpread"]


def test_admit_create_books_and_injects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "admit", write(tmp_path, "ws.yaml", SPREAD), write(tmp_path, "p.yaml", POD), "--replicas", "4"
    )
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {"allowed", "subset", "pod", "status"}
    assert doc["subset"] == "a"
    ann = json.loads(doc["pod"]["metadata"]["annotations"][MATCHED_ANNOTATION])
    assert ann["name"] == "spread" and ann["subset"] == "a" and ann["uid"]
    terms = doc["pod"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"][0]["matchExpressions"][0]["key"] == "zone"
    versioned = doc["status"]["versionedSubsetStatuses"]["abc"]
    assert versioned[0]["missingReplicas"] == 0 and list(versioned[0]["creatingPods"]) == [ann["uid"]]
    assert versioned[1]["missingReplicas"] == 2  # 50 % of 4; a: 20 % of 4 is 1 once rounded up


def test_admit_uses_the_status_in_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = {
        "versionedSubsetStatuses": {
            "abc": [
                {"name": "a", "replicas": 2, "missingReplicas": 0},
                {"name": "b", "replicas": 0, "missingReplicas": 2},
                {"name": "c", "replicas": 0, "missingReplicas": -1},
            ]
        }
    }
    ws = write(tmp_path, "ws.yaml", {**SPREAD, "status": status})
    code, out, _ = run(capsys, "admit", ws, write(tmp_path, "p.yaml", POD), "--replicas", "4", "-o", "yaml")
    assert code == 0
    doc = yaml.safe_load(out)
    assert doc["subset"] == "b" and doc["pod"]["metadata"]["labels"]["pool"] == "b"


def test_admit_percentages_need_replicas(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "admit", write(tmp_path, "ws.yaml", SPREAD), write(tmp_path, "p.yaml", POD))
    assert code == 2 and errors(err) == ["--replicas: Required value: a subset's replicas are a percentage"]


@pytest.mark.parametrize("operation", ["DELETE", "EVICT"])
def test_admit_delete_notes_the_pod(tmp_path: Path, capsys: pytest.CaptureFixture[str], operation: str) -> None:
    status = {"versionedSubsetStatuses": {"abc": [{"name": "a", "replicas": 2, "missingReplicas": 0}]}}
    running = {**POD, "metadata": {**POD["metadata"], "name": "web-abc-1"}}
    running["metadata"]["annotations"] = {MATCHED_ANNOTATION: '{"name":"spread","subset":"a"}'}
    ws, p = write(tmp_path, "ws.yaml", {**SPREAD, "status": status}), write(tmp_path, "p.yaml", running)
    code, out, _ = run(capsys, "admit", ws, p, "--operation", operation, "--replicas", "4")
    doc = json.loads(out)
    assert code == 0 and doc["subset"] == "a" and doc["pod"] == running
    entry = doc["status"]["versionedSubsetStatuses"]["abc"][0]
    assert list(entry["deletingPods"]) == ["web-abc-1"] and entry["missingReplicas"] == 0


def test_admit_leaves_pods_without_a_controller_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bare = {**POD, "metadata": {"name": "bare", "namespace": "default"}}
    code, out, err = run(
        capsys, "admit", write(tmp_path, "ws.yaml", SPREAD), write(tmp_path, "p.yaml", bare), "--replicas", "1"
    )
    doc = json.loads(out)
    assert code == 0 and doc["subset"] is None and doc["pod"] == bare
    assert err.startswith("note: ")


def test_admit_places_nowhere_a_pod_the_patch_cannot_apply_to(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A valid patch may still not apply to a given pod (here a container without a name,
    which the API server would refuse anyway): like the webhook, admitted unplaced, untouched."""
    patch = {"spec": {"containers": [{"name": "main", "image": "nginx:2"}]}}
    ws = {**SPREAD, "spec": {**SPREAD["spec"], "subsets": [{"name": "a", "maxReplicas": 1, "patch": patch}]}}
    nameless = {**POD, "spec": {"containers": [{"image": "nginx"}]}}
    code, out, err = run(capsys, "admit", write(tmp_path, "ws.yaml", ws), write(tmp_path, "p.yaml", nameless))
    doc = json.loads(out)
    assert code == 0 and doc["allowed"] is True and doc["subset"] is None and doc["pod"] == nameless
    assert "admitted unplaced" in err and "every element needs the merge key 'name'" in err


def test_admit_pod_must_be_a_pod(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pod_file = write(tmp_path, "p.yaml", "- 1\n")
    code, _, err = run(capsys, "admit", write(tmp_path, "ws.yaml", SPREAD), pod_file, "--replicas", "1")
    assert code == 2 and errors(err) == [f"{pod_file}: must be a Pod object"]


def test_plan_reads_stdin_once(tmp_path: Path) -> None:
    """Through a process: the kind is detected from stdin and the same text planned, no traceback."""
    proc = subprocess.run(
        [sys.executable, "-m", "united", "plan", "-", "--replicas", "3", "-o", "json"],
        input=yaml.safe_dump(SPREAD),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert [s["replicas"] for s in json.loads(proc.stdout)["subsets"]] == [1, 2, 0]
