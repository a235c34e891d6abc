"""Decoding LIST pages and watch events item by item: a too-deep object is skipped and
described, everything else decodes exactly as ``json.loads`` would (the informer and the
API server's side are in tests/unit/runtime/test_informer.py and tests/e2e/runtime)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from united.api.decode import MAX_DEPTH, Undecodable, bound, document, dumps, list_page, loads, watch_event, within

UNREADABLE = 20_000
"""Deep enough for ``json.loads`` to raise RecursionError on CPython 3.11, 3.12 and 3.13 (which
decodes up to ~9,000 levels, and leaves the recursion to whoever walks the result)."""


def nested(levels: int, leaf: Any = "x") -> Any:
    """``levels`` containers (objects and arrays in turn) around ``leaf``."""
    value = leaf
    for i in range(levels):
        value = {"k": value} if i % 2 else [value]
    return value


def nested_text(levels: int) -> str:
    return '{"k":' * levels + '"x"' + "}" * levels


def item(name: str, spec: Any = None, **extra: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": "7", "generation": 3}
    return {"metadata": meta, "spec": spec if spec is not None else {"replicas": 1}, **extra}


def page_text(*items: str, rv: str = "99") -> str:
    head = json.dumps({"kind": "XList", "apiVersion": "v1", "metadata": {"resourceVersion": rv}}, separators=(",", ":"))
    return head[:-1] + ',"items":[' + ",".join(items) + "]}"


def unreadable_item(name: str) -> str:
    """An item whose ``spec`` json.loads cannot decode; the rest of it is ordinary."""
    text = json.dumps(item(name, status={"replicas": 2, "conditions": [{"type": "Ready"}]}))
    return text.replace('"spec": {"replicas": 1}', '"spec": ' + nested_text(UNREADABLE))


def test_the_unreadable_item_really_breaks_json_loads() -> None:
    with pytest.raises(RecursionError):
        json.loads(unreadable_item("deep"))


def test_within_counts_containers_and_stops_at_the_limit() -> None:
    assert within("scalar", 0)
    assert within({}, 1) and not within({}, 0)
    assert within(nested(5), 5) and not within(nested(5), 4)
    assert within(nested(MAX_DEPTH)) and not within(nested(MAX_DEPTH + 1))
    assert not within(nested(100_000)), "stops descending at the limit: no RecursionError"


def test_the_depth_limit_counts_from_the_object_root() -> None:
    assert bound(item("ok", nested(MAX_DEPTH - 1))) is None
    problem = bound(item("deep", nested(MAX_DEPTH)))
    assert problem is not None
    assert problem.reason == f"spec: nested deeper than {MAX_DEPTH} levels, more than the controller reads"


def test_managed_fields_do_not_count_and_are_dropped_when_they_alone_are_too_deep() -> None:
    obj = item("tracked", nested(MAX_DEPTH - 1))
    obj["metadata"]["managedFields"] = [{"fieldsV1": nested(MAX_DEPTH + 5)}]
    assert bound(obj) is None
    assert "managedFields" not in obj["metadata"]
    assert obj["spec"] == nested(MAX_DEPTH - 1)


def test_a_page_within_the_limit_decodes_as_json_loads_does() -> None:
    items = [item("a"), item("b", {"template": nested(50)})]
    page = list_page(json.dumps({"kind": "XList", "metadata": {"resourceVersion": "5"}, "items": items}).encode())
    assert page.items == items
    assert page.skipped == []
    assert page.fields == {"kind": "XList", "metadata": {"resourceVersion": "5"}}


def test_a_decodable_but_too_deep_item_is_skipped_with_its_stub() -> None:
    deep = item("deep", {"template": nested(MAX_DEPTH + 20)}, status={"replicas": 2})
    deep["apiVersion"], deep["kind"] = "apps.united.io/v1alpha1", "UnitedDeployment"
    deep["metadata"]["managedFields"] = [{"fieldsV1": nested(MAX_DEPTH + 25)}]
    deep["metadata"]["labels"] = {"app": "web"}
    page = list_page(json.dumps({"items": [item("a"), deep, item("c")]}))
    assert [i["metadata"]["name"] for i in page.items] == ["a", "c"]
    [problem] = page.skipped
    assert problem.object == {
        "apiVersion": "apps.united.io/v1alpha1",
        "kind": "UnitedDeployment",
        "metadata": {
            "name": "deep",
            "namespace": "ns",
            "uid": "uid-deep",
            "resourceVersion": "7",
            "generation": 3,
            "labels": {"app": "web"},
        },
        "status": {"replicas": 2},
    }
    assert problem.reason.startswith("spec: nested deeper than 100 levels")


def test_an_unreadable_item_costs_only_itself() -> None:
    tricky = item("tricky", {"text": 'braces } { ] [ and "quotes" \\ in strings', "list": [1, 2.5, None, True]})
    text = page_text(json.dumps(item("a")), unreadable_item("deep"), json.dumps(tricky), rv="42")
    page = list_page(text.encode())
    assert page.items == [item("a"), tricky]
    assert page.fields == {"kind": "XList", "apiVersion": "v1", "metadata": {"resourceVersion": "42"}}
    [problem] = page.skipped
    assert problem.object["metadata"] == {
        "name": "deep",
        "namespace": "ns",
        "uid": "uid-deep",
        "resourceVersion": "7",
        "generation": 3,
    }
    assert problem.object["status"] == {"replicas": 2, "conditions": [{"type": "Ready"}]}
    assert problem.reason.startswith("spec: nested deeper")


def test_an_unreadable_managed_fields_entry_only_loses_the_managed_fields() -> None:
    managed = '"uid-tracked", "managedFields": ' + nested_text(UNREADABLE)
    text = json.dumps(item("tracked")).replace('"uid-tracked"', managed)
    page = list_page(page_text(text, unreadable_item("deep")))
    assert page.items == [item("tracked")]
    assert [p.object["metadata"]["name"] for p in page.skipped] == ["deep"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=5), json_values, max_size=5), max_size=5), st.integers(0, 5))
def test_the_item_by_item_scanner_decodes_every_readable_item_exactly(items: list[dict[str, Any]], where: int) -> None:
    texts = [json.dumps(i, indent=1 if n % 2 else None) for n, i in enumerate(items)]
    texts.insert(min(where, len(texts)), unreadable_item("deep"))
    page = list_page(page_text(*texts))
    assert page.items == items
    assert len(page.skipped) == 1


def test_a_watch_event_of_an_unreadable_object_carries_its_stub() -> None:
    line = ('{"type":"MODIFIED","object":' + unreadable_item("deep") + "}\n").encode()
    event, problem = watch_event(line)
    assert isinstance(problem, Undecodable)
    assert event == {"type": "MODIFIED", "object": problem.object}
    assert problem.object["metadata"]["uid"] == "uid-deep"


def test_a_watch_event_of_a_too_deep_object_carries_its_stub() -> None:
    event, problem = watch_event(json.dumps({"type": "ADDED", "object": item("deep", nested(MAX_DEPTH + 1))}))
    assert problem is not None and event["object"] is problem.object
    assert "spec" not in event["object"]


def test_an_ordinary_watch_event_is_untouched() -> None:
    raw = {"type": "ADDED", "object": item("a", {"template": nested(MAX_DEPTH - 2)})}
    assert watch_event(json.dumps(raw).encode()) == (raw, None)


def test_a_single_answer_too_deep_to_read_is_its_stub() -> None:
    assert document(unreadable_item("deep"))["metadata"]["name"] == "deep"
    assert "spec" not in document(json.dumps(item("deep", nested(MAX_DEPTH + 1))))
    assert document(json.dumps(item("a"))) == item("a")
    assert document("[1, 2]") == [1, 2]


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '"a string"'])
def test_anything_but_an_object_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        list_page(text)
    with pytest.raises(ValueError):
        watch_event(text)


@pytest.mark.parametrize("text", ['{"items": [' + nested_text(UNREADABLE), "[" * UNREADABLE])
def test_broken_unreadable_text_is_refused_not_guessed(text: str) -> None:
    with pytest.raises(ValueError):
        list_page(text)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300)
@given(JSON_VALUES)
def test_loads_and_dumps_agree_with_the_json_module(value: Any) -> None:
    """orjson is the fast path; every value the API server can send round-trips exactly."""
    assert loads(dumps(value)) == value == json.loads(json.dumps(value))
    assert loads(json.dumps(value)) == value


def test_integers_beyond_64_bits_read_as_the_api_server_stores_them_and_are_written_exactly() -> None:
    """Go's unstructured decoding keeps an integer beyond int64 as a float64: so do we."""
    assert loads(b'{"n":-9223372036854775809,"m":123456789012345678901234567890}') == {
        "n": -9.223372036854776e18,
        "m": 1.2345678901234568e29,
    }
    big = {"spec": {"n": 3**50, "m": -(3**45)}}
    assert json.loads(dumps(big)) == big


def test_what_orjson_refuses_goes_to_the_json_module() -> None:
    deep: Any = 1
    for _ in range(300):  # orjson encodes at most 254 levels
        deep = [deep]
    assert json.loads(dumps(deep)) == deep
    with pytest.raises(ValueError):
        loads(b"{not json")


def test_an_object_deeper_than_orjson_reads_is_still_a_stub_not_an_error() -> None:
    text = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"data":' + "[" * 2000 + "]" * 2000 + "}"
    assert document(text) == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "deep"}}
