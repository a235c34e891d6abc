"""Reading manifests and state files: every failure is a field error, never an exception."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from united.api.field import ManifestError
from united.cli.manifest import State, load, load_documents, load_state, parse_state, read_text
from united.uniteddeployment.allocation import SubsetState

UD = """\
apiVersion: apps.united.io/v1alpha1
kind: UnitedDeployment
metadata:
  name: web
"""


def errors(fn: Any, *args: Any) -> list[str]:
    with pytest.raises(ManifestError) as info:
        fn(*args)
    return [str(e) for e in info.value.errors]


def write(tmp_path: Path, text: str | bytes, name: str = "m.yaml") -> str:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


# YAML as Kubernetes reads it


def test_timestamps_stay_strings() -> None:
    (doc,) = load_documents("a: 2024-01-02\nb: 2024-01-02T03:04:05Z\nc: '2024'\n", name="x")
    assert doc == {"a": "2024-01-02", "b": "2024-01-02T03:04:05Z", "c": "2024"}


def test_other_yaml_scalars_are_typed() -> None:
    (doc,) = load_documents("i: 3\nf: 0.5\nb: true\nn: null\ns: '3'\npct: 20%\n", name="x")
    assert doc == {"i": 3, "f": 0.5, "b": True, "n": None, "s": "3", "pct": "20%"}


def test_multiple_documents_and_empty_ones() -> None:
    assert load_documents("a: 1\n---\n---\nb: 2\n", name="x") == [{"a": 1}, {"b": 2}]
    assert load_documents("", name="x") == []


def test_json_is_yaml() -> None:
    assert load_documents('{"a": [1, "b"]}', name="x") == [{"a": [1, "b"]}]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: [\n", "x: invalid YAML at line 2, column 1: expected the node content, but found '<stream end>'"),
        ("a: b\n c: d\n", "x: invalid YAML at line 2, column 3: mapping values are not allowed here"),
        ("a: !!python/object:os.system x\n", "x: invalid YAML at line 1, column 4: could not determine a constructor"),
    ],
)
def test_malformed_yaml(text: str, expected: str) -> None:
    with pytest.raises(ManifestError) as info:
        load_documents(text, name="x")
    (message,) = (str(e) for e in info.value.errors)
    assert message.startswith(expected)


# Reading files


def test_read_text_file(tmp_path: Path) -> None:
    assert read_text(write(tmp_path, "a: é\n")) == "a: é\n"


def test_read_text_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(UD))
    assert read_text("-") == UD


def test_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "nope.yaml")
    assert errors(read_text, path) == [f"{path}: cannot read: No such file or directory"]


def test_directory(tmp_path: Path) -> None:
    assert errors(read_text, str(tmp_path)) == [f"{tmp_path}: cannot read: Is a directory"]


def test_not_utf8(tmp_path: Path) -> None:
    path = write(tmp_path, b"kind: \xff\xfe\n")
    assert errors(read_text, path) == [f"{path}: not UTF-8 text: invalid start byte"]


# load(): the first UnitedDeployment


def test_load_single(tmp_path: Path) -> None:
    source = load(write(tmp_path, UD))
    assert source.document["metadata"] == {"name": "web"}
    assert source.notes == []


def test_load_first_of_several_with_a_note(tmp_path: Path) -> None:
    text = "kind: Service\n---\n" + UD + "---\n" + UD.replace("web", "second")
    path = write(tmp_path, text)
    source = load(path)
    assert source.document["metadata"]["name"] == "web"
    assert source.notes == [f"{path}: using the UnitedDeployment in document 2; ignoring 2 other document(s)"]


def test_load_stdin_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(UD + "---\nkind: Service\n"))
    source = load("-")
    assert source.notes == ["<stdin>: using the UnitedDeployment in document 1; ignoring 1 other document(s)"]


@pytest.mark.parametrize("text", ["", "---\n", "# only a comment\n", "---\n---\n"])
def test_load_empty(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    assert errors(load, path) == [f"{path}: no YAML documents found"]


def test_load_several_without_a_united_deployment(tmp_path: Path) -> None:
    path = write(tmp_path, "kind: Service\n---\n- a\n")
    assert errors(load, path) == [f"{path}: no UnitedDeployment or WorkloadSpread among 2 documents"]


@pytest.mark.parametrize(
    ("text", "document"), [("- a\n- b\n", ["a", "b"]), ("hello\n", "hello"), ("kind: X\n", {"kind": "X"})]
)
def test_a_single_other_document_is_returned_for_parsing_to_reject(tmp_path: Path, text: str, document: Any) -> None:
    assert load(write(tmp_path, text)).document == document


# State files


def test_load_state_yaml_and_json(tmp_path: Path) -> None:
    yaml_state = "subsets:\n  a: {replicas: 2, readyReplicas: 1}\n  b: {unschedulable: true, reservedPods: 3}\n"
    json_state = (
        '{"subsets": {"a": {"replicas": 2, "readyReplicas": 1}, "b": {"unschedulable": true, "reservedPods": 3}}}'
    )
    expected = {
        "a": SubsetState(replicas=2, ready_replicas=1),
        "b": SubsetState(unschedulable=True, reserved_pods=3),
    }
    assert load_state(write(tmp_path, yaml_state, "s.yaml")) == State(expected)
    assert load_state(write(tmp_path, json_state, "s.json")) == State(expected)


def test_load_state_empty_file_is_no_children(tmp_path: Path) -> None:
    assert load_state(write(tmp_path, "")) == State()


def test_parse_state_unreachable_clusters() -> None:
    state = parse_state(
        {
            "subsets": {
                "a": {"replicas": 2, "readyReplicas": 2, "clusterUnreachable": True, "unreachableSeconds": 45},
                "b": {"replicas": 1, "clusterUnreachable": True},
                "c": {"clusterUnreachable": False},
            }
        }
    )
    assert state.subsets == {
        "a": SubsetState(replicas=2, ready_replicas=2, unreachable=True),
        "b": SubsetState(replicas=1, unreachable=True),
        "c": SubsetState(),
    }
    assert state.unreachable == {"a": 45.0, "b": float("inf")}


def test_unreachable_seconds_need_an_unreachable_cluster() -> None:
    assert errors(parse_state, {"subsets": {"a": {"unreachableSeconds": 5}, "b": {"unreachableSeconds": 1}}}) == [
        "state.subsets[a].unreachableSeconds: Invalid value: 5: needs clusterUnreachable: true",
        "state.subsets[b].unreachableSeconds: Invalid value: 1: needs clusterUnreachable: true",
    ]


def test_load_state_errors_name_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "subsets: [\n")
    (message,) = errors(load_state, path)
    assert message.startswith(f"{path}: invalid YAML at line 2")


def test_parse_state_defaults() -> None:
    assert parse_state({}) == State()
    assert parse_state({"subsets": None}) == State()
    assert parse_state({"subsets": {"a": None, "b": {}}}) == State({"a": SubsetState(), "b": SubsetState()})
    assert parse_state({"subsets": {1: {"replicas": 1}}}) == State({"1": SubsetState(replicas=1)})


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ([], ['state: Invalid value: array: must be an object {"subsets": {<name>: {...}}}']),
        ("x", ['state: Invalid value: "x": must be an object {"subsets": {<name>: {...}}}']),
        ({"subset": {}}, ['state: Invalid value: object: must be an object {"subsets": {<name>: {...}}}']),
        ({"subsets": ["a"]}, ["state.subsets: Invalid value: array: must be an object keyed by subset name"]),
        ({"subsets": {"a": 3}}, ["state.subsets[a]: Invalid value: 3: must be an object"]),
        (
            {"subsets": {"a": {"ready": 1}}},
            [
                "state.subsets[a].ready: Unknown field: supported fields: "
                "replicas, readyReplicas, unschedulable, reservedPods, clusterUnreachable, unreachableSeconds"
            ],
        ),
        ({"subsets": {"a": {"replicas": "2"}}}, ['state.subsets[a].replicas: Invalid value: "2": must be an integer']),
        (
            {"subsets": {"a": {"replicas": True}}},
            ["state.subsets[a].replicas: Invalid value: true: must be an integer"],
        ),
        ({"subsets": {"a": {"replicas": 1.5}}}, ["state.subsets[a].replicas: Invalid value: 1.5: must be an integer"]),
        (
            {"subsets": {"a": {"unschedulable": "yes"}}},
            ['state.subsets[a].unschedulable: Invalid value: "yes": must be a boolean'],
        ),
        (
            {"subsets": {"a": {"reservedPods": -1}}},
            ["state.subsets[a].reservedPods: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            {"subsets": {"a": {"replicas": -1, "readyReplicas": "x"}, "b": 1}},
            [
                "state.subsets[a].replicas: Invalid value: -1: must be greater than or equal to 0",
                'state.subsets[a].readyReplicas: Invalid value: "x": must be an integer',
                "state.subsets[b]: Invalid value: 1: must be an object",
            ],
        ),
    ],
)
def test_parse_state_errors(doc: Any, expected: list[str]) -> None:
    assert errors(parse_state, doc) == expected
