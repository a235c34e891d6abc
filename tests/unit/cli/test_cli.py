"""The command line contract (``docs/reference/cli.md``), exercised through a subprocess.

Exit codes: 0 success, 2 bad input with one ``field.path: message`` line per error on stderr and
never a traceback. JSON shapes are public.
"""

from __future__ import annotations

import itertools
import json
import re
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from united import __version__, cli, data
from united.api.groups import GROUP, KRUISE_GROUP
from united.cli import manifest as cli_manifest
from united.cli import plan as cli_plan
from united.cli import run as cli_run
from united.devcluster.versions import DEFAULT, NEWEST, KubeVersion
from united.uniteddeployment.allocation import AllocationError

REPO = Path(__file__).parents[3]
SAMPLES = sorted((REPO / "manifests" / "samples").glob("*.yaml"))
ZONES = "manifests/samples/zones-percent.yaml"
ELASTIC = "manifests/samples/elastic-pool.yaml"
ADAPTIVE = "manifests/samples/serverless-adaptive.yaml"
STATEFUL = "manifests/samples/statefulset.yaml"
CANARY = "manifests/samples/canary-partitions.yaml"
#: A ``field.path: message`` line: a path (or file name), a colon and a space, then the message.
ERROR_LINE = re.compile(r"^\S[^\n]*?: \S.*$")
PLAN_KEYS = {"name": str, "replicas": int, "allocator": str, "subsets": list}
PLAN_SUBSET_KEYS: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "replicas": int,
    "partition": int,
    "reason": str,
    "message": str,
    "cluster": (str, type(None)),
}


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def errors(self) -> list[str]:
        """stderr lines that are not notes."""
        return [line for line in self.err.splitlines() if not line.startswith("note: ")]

    @property
    def notes(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.startswith("note: ")]

    def json(self) -> Any:
        return json.loads(self.out)


def _finish(proc: subprocess.Popen[str], stdin: str | None) -> Result:
    out, err = proc.communicate(stdin, timeout=60)
    assert "Traceback" not in err, err
    return Result(proc.returncode, out, err)


def _start(*args: str, stdin: str | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "united", *args],
        cwd=REPO,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )


def united(*args: str, stdin: str | None = None) -> Result:
    """Run ``python -m united ARGS`` in the repository; no invocation may print a traceback."""
    return _finish(_start(*args, stdin=stdin), stdin)


def assert_field_errors(r: Result, expected: list[str]) -> None:
    assert r.code == 2, r
    assert r.errors == expected
    assert all(ERROR_LINE.match(line) for line in r.errors)


def manifest_text(**spec_changes: Any) -> str:
    doc = yaml.safe_load((REPO / ZONES).read_text())
    doc["spec"].update(spec_changes)
    return yaml.safe_dump(doc)


def write(tmp_path: Path, name: str, text: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


# Every sample validates and plans (all processes started at once, to keep this quick)


@pytest.fixture(scope="module")
def sample_runs() -> dict[tuple[str, str], Result]:
    procs = {
        (path.name, command): _start(command, str(path), *(["-o", "json"] if command == "plan" else []))
        for path in SAMPLES
        for command in ("validate", "plan")
    }
    return {key: _finish(proc, None) for key, proc in procs.items()}


@pytest.mark.parametrize("sample", [p.name for p in SAMPLES])
def test_every_sample_validates_and_plans(sample: str, sample_runs: dict[tuple[str, str], Result]) -> None:
    validated = sample_runs[sample, "validate"]
    assert (validated.code, validated.out, validated.err) == (0, "valid\n", "")
    planned = sample_runs[sample, "plan"]
    assert planned.code == 0 and planned.err == ""
    plan = planned.json()
    assert_plan_shape(plan)
    doc = yaml.safe_load((REPO / "manifests" / "samples" / sample).read_text())
    assert plan["name"] == doc["metadata"]["name"]
    assert plan["replicas"] == doc["spec"]["replicas"]
    assert [s["name"] for s in plan["subsets"]] == [s["name"] for s in doc["spec"]["topology"]["subsets"]]
    assert sum(s["replicas"] for s in plan["subsets"]) == plan["replicas"]


def assert_plan_shape(plan: Any) -> None:
    assert isinstance(plan, dict) and list(plan) == list(PLAN_KEYS)
    assert all(type(plan[k]) is t for k, t in PLAN_KEYS.items())
    assert plan["allocator"] in ("specified", "elastic", "adaptive", "reservation")
    for s in plan["subsets"]:
        assert isinstance(s, dict) and list(s) == list(PLAN_SUBSET_KEYS)
        assert all(type(s[k]) in (t if isinstance(t, tuple) else (t,)) for k, t in PLAN_SUBSET_KEYS.items())


# validate


def test_validate_valid_json() -> None:
    r = united("validate", ZONES, "-o", "json")
    assert (r.code, r.err) == (0, "")
    assert r.json() == {"valid": True, "errors": []}


BROKEN = [
    "spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
    'spec.topology.subsets[1].name: Duplicate value: "zone-a"',
]


def broken_manifest() -> str:
    doc = yaml.safe_load((REPO / ZONES).read_text())
    doc["spec"]["revisionHistoryLimit"] = -1
    doc["spec"]["topology"]["subsets"][1]["name"] = "zone-a"
    return yaml.safe_dump(doc)


def test_validate_invalid_prints_one_line_per_error(tmp_path: Path) -> None:
    r = united("validate", write(tmp_path, "bad.yaml", broken_manifest()))
    assert_field_errors(r, BROKEN)
    assert r.out == ""


def test_validate_invalid_json(tmp_path: Path) -> None:
    r = united("validate", write(tmp_path, "bad.yaml", broken_manifest()), "-o", "json")
    assert r.code == 2
    body = r.json()
    assert list(body) == ["valid", "errors"]
    assert body["valid"] is False
    assert all(list(e) == ["field", "message"] for e in body["errors"])
    assert [f"{e['field']}: {e['message']}" for e in body["errors"]] == BROKEN
    assert r.errors == BROKEN


def test_validate_old_applies_update_rules() -> None:
    r = united("validate", CANARY, "--old", STATEFUL)
    assert_field_errors(
        r,
        [
            "spec.template.statefulSetTemplate.spec: Forbidden: updates to statefulsetTemplate spec for fields other "
            "than 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy', 'minReadySeconds' and "
            "'ordinals' are forbidden"
        ],
    )


def test_validate_old_accepts_an_allowed_update(tmp_path: Path) -> None:
    doc = yaml.safe_load((REPO / STATEFUL).read_text())
    doc["spec"]["replicas"] = 9
    doc["spec"]["template"]["statefulSetTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"] = "postgres:17"
    r = united("validate", write(tmp_path, "new.yaml", yaml.safe_dump(doc)), "--old", STATEFUL, "-o", "json")
    assert (r.code, r.json(), r.err) == (0, {"valid": True, "errors": []}, "")


def test_validate_old_that_is_invalid(tmp_path: Path) -> None:
    r = united("validate", ZONES, "--old", write(tmp_path, "old.yaml", broken_manifest()))
    assert_field_errors(r, BROKEN)


# plan


def test_plan_table() -> None:
    r = united("plan", ZONES)
    assert (r.code, r.err) == (0, "")
    lines = r.out.splitlines()
    assert lines[0] == "UnitedDeployment api-zones: 10 replicas, allocator specified"
    header = lines[1]
    assert header.split() == ["SUBSET", "REPLICAS", "PARTITION", "REASON", "MESSAGE"]
    rows = lines[2:]
    assert [row.split()[:4] for row in rows] == [
        ["zone-a", "2", "0", "percent"],
        ["zone-b", "2", "0", "percent"],
        ["zone-c", "6", "0", "percent"],
    ]
    starts = [header.index(col) for col in ("REPLICAS", "PARTITION", "REASON", "MESSAGE")]
    for row in rows:
        assert all(row[s - 2 : s] == "  " and row[s] != " " for s in starts), row
    assert [row[starts[-1] :] for row in rows] == [
        "20% of 10 replicas, rounded half up: 2",
        "20% of 10 replicas, rounded half up: 2",
        "60% of 10 replicas, rounded half up: 6",
    ]


def test_plan_json_exactly_as_readme() -> None:
    r = united("plan", ZONES, "-o", "json")
    assert (r.code, r.err) == (0, "")

    def subset(name: str, replicas: int, percent: int) -> dict[str, Any]:
        message = f"{percent}% of 10 replicas, rounded half up: {replicas}"
        return {
            "name": name,
            "replicas": replicas,
            "partition": 0,
            "reason": "percent",
            "message": message,
            "cluster": None,
        }

    assert r.json() == {
        "name": "api-zones",
        "replicas": 10,
        "allocator": "specified",
        "subsets": [subset("zone-a", 2, 20), subset("zone-b", 2, 20), subset("zone-c", 6, 60)],
    }


def test_plan_partitions() -> None:
    plan = united("plan", CANARY, "-o", "json").json()
    assert [(s["name"], s["replicas"], s["partition"]) for s in plan["subsets"]] == [("zone-a", 3, 0), ("zone-b", 3, 3)]


def test_plan_replicas_what_if() -> None:
    plan = united("plan", ELASTIC, "--replicas", "80", "-o", "json").json()
    assert plan["replicas"] == 80
    assert [(s["name"], s["replicas"], s["reason"]) for s in plan["subsets"]] == [
        ("normal", 80, "overflow"),
        ("elastic", 0, "overflow"),
    ]


STATE_YAML = "subsets:\n  ecs: {replicas: 20, readyReplicas: 12, unschedulable: true}\n"
STATE_JSON = '{"subsets": {"ecs": {"replicas": 20, "readyReplicas": 12, "unschedulable": true}}}'


@pytest.mark.parametrize(("name", "text"), [("state.yaml", STATE_YAML), ("state.json", STATE_JSON)])
def test_plan_state(tmp_path: Path, name: str, text: str) -> None:
    r = united("plan", ADAPTIVE, "--state", write(tmp_path, name, text), "-o", "json")
    assert (r.code, r.err) == (0, "")
    assert [(s["name"], s["replicas"], s["reason"]) for s in r.json()["subsets"]] == [
        ("ecs", 12, "adaptive-ready-capped"),
        ("serverless", 8, "overflow"),
    ]


def test_plan_state_subset_outside_the_topology_is_noted(tmp_path: Path) -> None:
    r = united("plan", ZONES, "--state", write(tmp_path, "s.yaml", "subsets: {zone-x: {replicas: 1}}\n"))
    assert r.code == 0
    assert r.notes == ["note: state subset 'zone-x' is not in the topology; its child would be deleted"]


def test_plan_bad_state_file(tmp_path: Path) -> None:
    state = write(tmp_path, "s.yaml", "subsets:\n  ecs: {replicas: two, ready: 1}\n")
    r = united("plan", ADAPTIVE, "--state", state)
    assert_field_errors(
        r,
        [
            'state.subsets[ecs].replicas: Invalid value: "two": must be an integer',
            "state.subsets[ecs].ready: Unknown field: supported fields: replicas, readyReplicas, unschedulable, "
            "reservedPods, clusterUnreachable, unreachableSeconds",
        ],
    )
    assert r.out == ""


def test_plan_missing_state_file(tmp_path: Path) -> None:
    missing = str(tmp_path / "none.yaml")
    assert_field_errors(
        united("plan", ZONES, "--state", missing), [f"{missing}: cannot read: No such file or directory"]
    )


def test_plan_impossible_allocation() -> None:
    expected = [
        'spec.topology.subsets: Invalid value: "array": sum of indicated subset replicas 4 should not be greater '
        "than UnitedDeployment replicas 3"
    ]
    assert_field_errors(united("plan", STATEFUL, "--replicas", "3"), expected)
    r = united("plan", STATEFUL, "--replicas", "3", "-o", "json")
    assert r.code == 2
    field, message = expected[0].split(": ", 1)
    assert r.json() == {"valid": False, "errors": [{"field": field, "message": message}]}


def test_plan_invalid_manifest_json(tmp_path: Path) -> None:
    r = united("plan", write(tmp_path, "bad.yaml", broken_manifest()), "-o", "json")
    assert r.code == 2
    assert r.json() == {
        "valid": False,
        "errors": [{"field": e.split(": ", 1)[0], "message": e.split(": ", 1)[1]} for e in BROKEN],
    }


# render


def test_render_yaml_equals_json() -> None:
    as_yaml = united("render", STATEFUL)
    as_json = united("render", STATEFUL, "-o", "json")
    assert as_yaml.code == as_json.code == 0
    assert as_yaml.err == as_json.err == ""
    children = as_json.json()
    assert isinstance(children, list) and len(children) == 3
    assert list(yaml.safe_load_all(as_yaml.out)) == children
    assert [c["metadata"]["generateName"] for c in children] == ["db-zone-a-", "db-zone-b-", "db-zone-c-"]
    assert [c["spec"]["replicas"] for c in children] == [2, 2, 1]
    assert {c["kind"] for c in children} == {"StatefulSet"}
    revisions = {c["metadata"]["labels"]["apps.united.io/controller-revision-hash"] for c in children}
    assert len(revisions) == 1 and revisions.pop().startswith("db-")


def test_render_revision_replicas_and_state(tmp_path: Path) -> None:
    state = write(tmp_path, "s.yaml", "subsets: {zone-a: {replicas: 4}}\n")
    r = united("render", ZONES, "--revision", "api-zones-r1", "--replicas", "20", "--state", state, "-o", "json")
    assert (r.code, r.err) == (0, "")
    children = r.json()
    assert [c["spec"]["replicas"] for c in children] == [4, 4, 12]
    for c in children:
        assert c["metadata"]["labels"]["apps.united.io/controller-revision-hash"] == "api-zones-r1"
        assert c["spec"]["template"]["metadata"]["labels"]["apps.united.io/controller-revision-hash"] == "api-zones-r1"


def test_render_kruise_manifest_uses_kruise_keys() -> None:
    r = united("render", "manifests/samples/kruise-v1beta1.yaml", "-o", "json")
    assert r.code == 0
    assert "apps.united.io" not in r.out
    assert all(c["apiVersion"] == "apps.kruise.io/v1beta1" for c in r.json())


def test_render_invalid(tmp_path: Path) -> None:
    assert_field_errors(united("render", write(tmp_path, "bad.yaml", broken_manifest())), BROKEN)


# validate: WorkloadSpread (the bad-input corpus is tests/unit/workloadspread/test_bad_inputs.py)


def spread_text(api_version: str = "apps.kruise.io/v1alpha1", **target: str) -> str:
    required = (
        "requiredNodeSelectorTerm"
        if api_version.endswith("v1alpha1") and "kruise" in api_version
        else "requiredNodeSelector"
    )
    doc = {
        "apiVersion": api_version,
        "kind": "WorkloadSpread",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", **target},
            "subsets": [
                {
                    "name": "a",
                    required: {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                    "maxReplicas": 2,
                },
                {"name": "b"},
            ],
        },
    }
    return yaml.safe_dump(doc)


@pytest.mark.parametrize(
    "api_version", ["apps.united.io/v1alpha1", "apps.kruise.io/v1alpha1", "apps.kruise.io/v1beta1"]
)
def test_validate_detects_a_workload_spread(tmp_path: Path, api_version: str) -> None:
    r = united("validate", write(tmp_path, "ws.yaml", spread_text(api_version)), "-o", "json")
    assert (r.code, r.json(), r.err) == (0, {"valid": True, "errors": []}, "")
    text = spread_text(api_version).replace("maxReplicas: 2", "maxReplicas: '2.5%'")
    r = united("validate", "-", stdin=text)
    assert_field_errors(r, ['spec.subsets[0].maxReplicas: Invalid value: "2.5%": maxReplicas is not valid for subset'])


def test_validate_old_for_a_workload_spread(tmp_path: Path) -> None:
    old = write(tmp_path, "old.yaml", spread_text())
    moved = write(tmp_path, "v2.yaml", spread_text(apiVersion="apps/v1beta2"))
    r = united("validate", moved, "--old", old)
    assert (r.code, r.out, r.err) == (0, "valid\n", "")
    renamed = write(tmp_path, "renamed.yaml", spread_text(name="api"))
    assert_field_errors(
        united("validate", renamed, "--old", old),
        ['spec.targetRef: Invalid value: "object": change TargetReference is not permitted for WorkloadSpread'],
    )
    assert_field_errors(
        united("validate", renamed, "--old", ZONES),
        ['--old: Invalid value: "UnitedDeployment": must be a WorkloadSpread, as FILE is'],
    )
    assert_field_errors(
        united("validate", ZONES, "--old", old),
        ['--old: Invalid value: "WorkloadSpread": must be a UnitedDeployment, as FILE is'],
    )


def test_validate_checks_a_workload_spread_against_the_others_in_the_file(tmp_path: Path) -> None:
    other = spread_text().replace("name: web\n  namespace", "name: web-2\n  namespace")
    path = write(tmp_path, "two.yaml", spread_text() + "---\n" + other)
    r = united("validate", path)
    assert_field_errors(
        r, ['spec.targetRef: Invalid value: "object": ws.spec.targetRef is in conflict with other WorkloadSpread web-2']
    )
    assert r.notes == [
        f"note: {path}: using the WorkloadSpread in document 1; ignoring 1 other document(s)",
        "note: the other WorkloadSpread(s) (1) were read to check for conflicts",
    ]
    elsewhere = other.replace("namespace: shop", "namespace: other")
    r = united("validate", write(tmp_path, "ok.yaml", spread_text() + "---\n" + elsewhere))
    assert (r.code, r.out) == (0, "valid\n")


def test_validate_refuses_a_united_deployment_without_subsets(tmp_path: Path) -> None:
    """OpenKruise's webhook accepts it and its allocator then fails."""
    doc = yaml.safe_load((REPO / ZONES).read_text())
    doc["spec"]["topology"]["subsets"] = []
    assert_field_errors(
        united("validate", write(tmp_path, "empty.yaml", yaml.safe_dump(doc))),
        [
            "spec.topology.subsets: Required value: "
            f"at least one subset is needed to place {doc['spec']['replicas']} replicas"
        ],
    )


# Reading FILE


def test_stdin() -> None:
    text = (REPO / ZONES).read_text()
    r = united("validate", "-", stdin=text)
    assert (r.code, r.out, r.err) == (0, "valid\n", "")
    r = united("render", "-", "-o", "json", stdin=text)
    assert r.code == 0 and len(r.json()) == 3


def test_stdin_errors_name_stdin() -> None:
    assert_field_errors(united("validate", "-", stdin=""), ["<stdin>: no YAML documents found"])


def test_multi_document_file_uses_the_first_united_deployment(tmp_path: Path) -> None:
    other = (REPO / ELASTIC).read_text()
    path = write(
        tmp_path,
        "multi.yaml",
        "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n---\n" + (REPO / ZONES).read_text() + "---\n" + other,
    )
    r = united("plan", path, "-o", "json")
    assert r.code == 0
    assert r.json()["name"] == "api-zones"
    assert r.notes == [f"note: {path}: using the UnitedDeployment in document 2; ignoring 2 other document(s)"]
    assert r.errors == []


def test_multi_document_file_without_a_united_deployment(tmp_path: Path) -> None:
    path = write(tmp_path, "m.yaml", "kind: Service\n---\nkind: ConfigMap\n")
    assert_field_errors(united("validate", path), [f"{path}: no UnitedDeployment or WorkloadSpread among 2 documents"])


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("empty.yaml", "", "{path}: no YAML documents found"),
        (
            "bad.yaml",
            "spec: [\n",
            "{path}: invalid YAML at line 2, column 1: expected the node content, but found '<stream end>'",
        ),
        (
            "tabs.yaml",
            "spec:\n\t- a\n",
            "{path}: invalid YAML at line 2, column 1: found character '\\t' that cannot start any token",
        ),
        ("latin1.yaml", b"metadata:\n  name: caf\xe9\n", "{path}: not UTF-8 text: invalid continuation byte"),
        ("list.yaml", "- apiVersion: apps.united.io/v1alpha1\n", "<root>: Invalid value: array: must be an object"),
        ("scalar.yaml", "hello\n", '<root>: Invalid value: "hello": must be an object'),
        (
            "bomb.yaml",
            "spec: {x: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]}\n"
            + "".join(f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in itertools.pairwise("abcdefghi")),
            "{path}: invalid YAML at line 6, column 20: aliases expand to more than 1048576 bytes",
        ),
        (
            "cycle.yaml",
            "spec: &a [*a]\n",
            "{path}: invalid YAML at line 1, column 11: alias *a refers to its own anchor",
        ),
        (
            "deep.yaml",
            "spec: " + "[" * 5000,
            "{path}: invalid YAML at line 1, column 106: nested deeper than 100 levels",
        ),
    ],
    ids=["empty", "malformed", "tab", "not utf-8", "list", "scalar", "alias bomb", "alias cycle", "too deep"],
)
def test_bad_files(tmp_path: Path, name: str, content: str | bytes, expected: str) -> None:
    path = write(tmp_path, name, content)
    r = united("validate", path)
    assert_field_errors(r, [expected.format(path=path)])


def test_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "nope.yaml")
    r = united("plan", path, "-o", "json")
    assert r.code == 2
    assert r.json() == {
        "valid": False,
        "errors": [{"field": path, "message": "cannot read: No such file or directory"}],
    }


def test_wrong_types_everywhere(tmp_path: Path) -> None:
    doc = yaml.safe_load((REPO / ZONES).read_text())
    doc["metadata"]["labels"] = ["x"]
    doc["spec"]["replicas"] = "ten"
    doc["spec"]["selector"]["matchLabels"]["app"] = 1
    doc["spec"]["topology"]["subsets"][0]["tolerations"] = {"key": "x"}
    doc["spec"]["topology"]["subsets"][1] = "zone-b"
    doc["spec"]["topology"]["subsets"][2]["replicas"] = [60]
    r = united("validate", write(tmp_path, "types.yaml", yaml.safe_dump(doc)))
    assert_field_errors(
        r,
        [
            "metadata.labels: Invalid value: array: must be an object",
            'spec.replicas: Invalid value: "ten": must be an integer',
            "spec.selector.matchLabels[app]: Invalid value: 1: must be a string",
            "spec.topology.subsets[0].tolerations: Invalid value: object: must be an array",
            'spec.topology.subsets[1]: Invalid value: "zone-b": must be an object',
            "spec.topology.subsets[2].replicas: Invalid value: array: must be an integer or a percentage string "
            'such as "20%"',
        ],
    )


def test_null_fields_in_the_pod_template_render(tmp_path: Path) -> None:
    doc = yaml.safe_load((REPO / ELASTIC).read_text())
    pod_spec = doc["spec"]["template"]["deploymentTemplate"]["spec"]["template"]["spec"]
    pod_spec["tolerations"] = None
    pod_spec["affinity"] = None
    r = united("render", write(tmp_path, "nulls.yaml", yaml.safe_dump(doc)), "-o", "json")
    assert (r.code, r.err) == (0, "")
    elastic = r.json()[1]["spec"]["template"]["spec"]
    assert elastic["tolerations"] == [{"key": "example.com/elastic", "operator": "Exists", "effect": "NoSchedule"}]


# Usage


def test_version() -> None:
    r = united("--version")
    assert r.code == 0 and re.fullmatch(r"united \d+\.\d+\.\d+\n", r.out)


@pytest.mark.parametrize(
    "args",
    [(), ("validate",), ("plan", ZONES, "--replicas", "many"), ("render", ZONES, "-o", "table"), ("frobnicate",)],
    ids=["no command", "no file", "non-integer replicas", "bad output", "unknown command"],
)
def test_usage_errors_exit_2_without_a_traceback(args: tuple[str, ...]) -> None:
    r = united(*args)
    assert r.code == 2
    assert r.out == ""
    assert r.err.startswith("usage: united")


# In process: the same entry point, and the paths a subprocess cannot reach


@pytest.mark.parametrize("sample", [p.name for p in SAMPLES])
def test_main_in_process_prints_what_the_subprocess_printed(
    sample: str, sample_runs: dict[tuple[str, str], Result], capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(REPO / "manifests" / "samples" / sample)
    assert cli.main(["validate", path]) == 0
    assert capsys.readouterr().out == sample_runs[sample, "validate"].out
    assert cli.main(["plan", path, "-o", "json"]) == 0
    assert capsys.readouterr().out == sample_runs[sample, "plan"].out
    assert cli.main(["render", path, "-o", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == len(sample_runs[sample, "plan"].json()["subsets"])


def test_main_in_process_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path, "bad.yaml", broken_manifest())
    assert cli.main(["validate", bad, "-o", "json"]) == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out)["valid"] is False
    assert captured.err.splitlines() == BROKEN
    assert cli.main(["render", str(REPO / ZONES), "--state", str(tmp_path / "none.yaml")]) == 2


def test_interrupt_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(path: str) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_manifest, "load", interrupted)
    assert cli.main(["validate", ZONES]) == 130


def test_closed_stdout_exits_0(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(value: Any) -> None:
        raise BrokenPipeError

    monkeypatch.setattr(cli_plan, "print_json", broken)
    assert cli.main(["plan", str(REPO / ZONES), "-o", "json"]) == 0


def test_allocation_error_is_a_field_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Validation rejects every spec the allocators reject; should one slip through, it is still exit 2."""

    def impossible(*args: Any) -> Any:
        raise AllocationError("specified subsets' replica (4) is greater than UnitedDeployment replica (3)")

    monkeypatch.setattr(cli_plan, "allocate", impossible)
    assert cli.main(["plan", str(REPO / ZONES), "-o", "json"]) == 2
    assert json.loads(capsys.readouterr().out) == {
        "valid": False,
        "errors": [
            {
                "field": "spec.topology.subsets",
                "message": "specified subsets' replica (4) is greater than UnitedDeployment replica (3)",
            }
        ],
    }


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What ``united run`` passed on: the logging options, then the controller's settings."""
    from united.controller import manager
    from united.controller.kinds import KINDS

    seen: list[Any] = []

    async def fake_run(settings: Any, kinds: Any) -> int:
        assert kinds is KINDS, "united run serves every kind"
        seen.append(settings)
        return 0

    monkeypatch.setattr(manager, "run", fake_run)
    monkeypatch.setattr(cli_run, "configure_logging", lambda **kw: seen.append(kw))
    return seen


def test_run_flags_become_settings(ran: list[Any]) -> None:
    argv = ["run", "--kubeconfig", "k.yaml", "--api-group", "apps.kruise.io", "--namespace", "a", "--namespace", "b"]
    argv += ["--selector", "shard=1", "--workers", "5", "--leader-elect", "--http-port", "9090"]
    assert cli.main(argv) == 0
    settings = ran[-1]
    assert (settings.kubeconfig, settings.api_group, settings.namespaces, settings.selector) == (
        "k.yaml",
        "apps.kruise.io",
        ("a", "b"),
        "shard=1",
    )
    assert (settings.workers, settings.leader_elect, settings.http_port) == (5, True, 9090)
    assert settings.settle_heap, "a process of its own settles its heap once the caches are full"


def test_run_rejects_zero_workers(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--workers", "0"]) == 2
    assert capsys.readouterr().err == "--workers: Invalid value: 0: must be at least 1\n"


def test_run_takes_the_lease_timings(ran: list[Any]) -> None:
    argv = ["run", "--leader-election-lease-duration", "6", "--leader-election-renew-deadline", "4"]
    assert cli.main([*argv, "--leader-election-retry-period", "0.5"]) == 0
    timings = (
        ran[-1].leader_election_lease_duration,
        ran[-1].leader_election_renew_deadline,
        ran[-1].leader_election_retry_period,
    )
    assert timings == (6.0, 4.0, 0.5)


def test_run_rejects_unsafe_lease_timings(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--leader-election-renew-deadline", "15", "--leader-election-retry-period", "0"]) == 2
    assert capsys.readouterr().err == (
        "--leader-election-renew-deadline: Invalid value: 15: must be less than the lease duration (15)\n"
        "--leader-election-retry-period: Invalid value: 0: must be greater than 0\n"
    )


def test_demo_passes_the_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    from united.devcluster import demo

    seen: list[tuple[str | None, KubeVersion]] = []

    def fake_run(*, sample: str | None = None, version: KubeVersion = DEFAULT) -> int:
        seen.append((sample, version))
        return 0

    monkeypatch.setattr(demo, "run", fake_run)
    monkeypatch.delenv("UNITED_KUBE_VERSION", raising=False)
    assert cli.main(["demo", "--sample", ZONES]) == 0
    assert cli.main(["demo", "--kube-version", "newest"]) == 0
    monkeypatch.setenv("UNITED_KUBE_VERSION", "1.36.3")
    assert cli.main(["demo"]) == 0
    assert seen == [(ZONES, DEFAULT), (None, NEWEST), (None, KubeVersion(1, 36, 3))]


# ------------------------------------------------------------------ samples and install (packaged data)


def test_samples_lists_the_packaged_samples() -> None:
    r = united("samples")
    assert (r.code, r.err) == (0, "")
    assert r.out.splitlines() == data.samples()
    assert {"zones-percent", "hpa/uniteddeployment-hpa"} <= set(r.out.splitlines())


def test_a_printed_sample_is_the_file_and_feeds_validate_and_plan() -> None:
    text = united("samples", "zones-percent").out
    assert text == (REPO / ZONES).read_text()
    assert united("validate", "-", stdin=text).out == "valid\n"
    plan = united("plan", "-", "-o", "json", stdin=text).json()
    assert [s["replicas"] for s in plan["subsets"]] == [2, 2, 6]


def test_an_unknown_sample_is_one_line_exit_2() -> None:
    r = united("samples", "nope")
    assert (r.code, r.out) == (2, "")
    assert len(r.errors) == 1
    assert r.errors[0].startswith("NAME: no sample 'nope'; known: arch-patch, ")


@pytest.mark.parametrize(
    ("group", "crd"),
    [
        (GROUP, "crds/apps.united.io_uniteddeployments.yaml"),
        (KRUISE_GROUP, "crds/compat/apps.kruise.io_uniteddeployments.yaml"),
    ],
)
def test_install_print_is_the_crd_and_the_rendered_overlay(group: str, crd: str) -> None:
    r = united("install", "--api-group", group, "--print")
    assert (r.code, r.err) == (0, "")
    docs = list(yaml.safe_load_all(r.out))
    assert docs == data.controller(group)
    assert docs[0] == yaml.safe_load((REPO / crd).read_text())
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == f"united:{__version__}"


def test_install_serves_the_compat_v1beta1_only_on_request() -> None:
    """OpenKruise's releases serve their UnitedDeployment as v1alpha1 alone; v1beta1 manifests
    (after those releases) need ``--kruise-v1beta1``, which serves it beside v1alpha1."""

    def versions(out: str) -> list[tuple[str, bool]]:
        (crd,) = [d for d in yaml.safe_load_all(out) if d["metadata"]["name"] == "uniteddeployments.apps.kruise.io"]
        return [(v["name"], v["served"]) for v in crd["spec"]["versions"]]

    default = united("install", "--api-group", KRUISE_GROUP, "--print")
    asked = united("install", "--api-group", KRUISE_GROUP, "--kruise-v1beta1", "--print", "--kube-version", "1.20.2")
    assert default.code == asked.code == 0
    assert versions(default.out) == [("v1alpha1", True), ("v1beta1", False)]
    assert versions(asked.out) == [("v1alpha1", True), ("v1beta1", True)]
    wrong = united("install", "--kruise-v1beta1", "--print")
    assert (wrong.code, wrong.out) == (2, "")
    assert wrong.errors == [f"--kruise-v1beta1: needs --api-group {KRUISE_GROUP}"], wrong.err


def test_install_print_for_a_server_before_1_25_leaves_out_the_crds_validation_rules() -> None:
    """kubectl refuses a CRD with ``x-kubernetes-validations`` on such servers (client-side validation)."""
    ours = united("install", "--print")
    old = united("install", "--print", "--kube-version", "1.20.2")
    new = united("install", "--print", "--kube-version", "v1.37.2")
    assert ours.code == old.code == new.code == 0
    assert "x-kubernetes-validations" in ours.out and "x-kubernetes-validations" not in old.out
    assert new.out == ours.out
    assert [d["kind"] for d in yaml.safe_load_all(old.out)] == [d["kind"] for d in yaml.safe_load_all(ours.out)]
    bad = united("install", "--print", "--kube-version", "latest")
    assert (bad.code, bad.out) == (2, "")
    assert bad.errors == ["--kube-version: 'latest' is not a version like 1.29"], bad.err


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_install_without_a_reachable_cluster_is_one_line_exit_2(tmp_path: Path) -> None:
    # The same one-line start-up errors as `united run` (one ConfigError path for both).
    for kubeconfig in (tmp_path / "nope", tmp_path / "empty"):
        if kubeconfig.name == "empty":
            kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
        install = united("install", "--kubeconfig", str(kubeconfig))
        run = united("run", "--kubeconfig", str(kubeconfig))
        assert install.code == run.code == 2
        assert len(install.errors) == 1 and str(kubeconfig) in install.errors[0], install.err
        assert install.errors == run.errors

    kubeconfig = tmp_path / "kubeconfig"
    server = f"https://127.0.0.1:{_closed_port()}"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
            }
        )
    )
    down = united("install", "--kubeconfig", str(kubeconfig))
    assert (down.code, down.out) == (2, "")
    assert len(down.errors) == 1, down.err
    assert down.errors[0].startswith("install: cannot apply to the cluster: Cannot connect to host 127.0.0.1:")
