"""Label selectors: parse, match, validate, and the canonical string of apimachinery's ``labels.Selector``."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from united.api.field import Path
from united.api.selector import EQUALS, Requirement, Selector, errors, parse, parse_text, text_errors


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        e["values"] = list(values)
    return e


# The canonical string: labels.Selector.String() of metav1.LabelSelectorAsSelector(selector)


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ({}, ""),
        ({"matchLabels": {"app": "web"}}, "app=web"),
        ({"matchLabels": {"tier": "a", "app": "web", "b": "x"}}, "app=web,b=x,tier=a"),
        ({"matchExpressions": [expr("zone", "In", "b", "a", "c")]}, "zone in (a,b,c)"),
        ({"matchExpressions": [expr("zone", "In", "a")]}, "zone in (a)"),
        ({"matchExpressions": [expr("zone", "NotIn", "b", "a")]}, "zone notin (a,b)"),
        ({"matchExpressions": [expr("zone", "NotIn", "a")]}, "zone notin (a)"),
        ({"matchExpressions": [expr("gpu", "Exists")]}, "gpu"),
        ({"matchExpressions": [expr("spot", "DoesNotExist")]}, "!spot"),
        (
            {
                "matchLabels": {"z": "1", "app": "web"},
                "matchExpressions": [
                    expr("tier", "In", "front", "back"),
                    expr("b", "Exists"),
                    expr("c", "DoesNotExist"),
                ],
            },
            "app=web,b,!c,tier in (back,front),z=1",
        ),
        # Same key twice: the (stable) sort keeps matchLabels before matchExpressions.
        (
            {"matchLabels": {"app": "web"}, "matchExpressions": [expr("app", "In", "web", "api")]},
            "app=web,app in (api,web)",
        ),
        # Values sort by bytes, like Go's sort.Strings.
        ({"matchExpressions": [expr("k", "In", "b", "B", "a", "10", "9")]}, "k in (10,9,B,a,b)"),
    ],
)
def test_canonical_string(selector: dict[str, Any], expected: str) -> None:
    assert str(parse(selector)) == expected


def test_string_does_not_reorder_the_selector() -> None:
    sel = parse({"matchExpressions": [expr("z", "In", "b", "a"), expr("a", "Exists")]})
    str(sel)
    assert [r.key for r in sel.requirements] == ["z", "a"]
    assert sel.requirements[0].values == ("b", "a")


def test_parse_requirements() -> None:
    sel = parse({"matchLabels": {"app": "web"}, "matchExpressions": [expr("k", "NotIn", "x"), expr("e", "Exists")]})
    assert sel == Selector(
        (Requirement("app", EQUALS, ("web",)), Requirement("k", "NotIn", ("x",)), Requirement("e", "Exists"))
    )


# Matching


@pytest.mark.parametrize(
    ("requirement", "labels", "expected"),
    [
        (Requirement("app", EQUALS, ("web",)), {"app": "web"}, True),
        (Requirement("app", EQUALS, ("web",)), {"app": "api"}, False),
        (Requirement("app", EQUALS, ("web",)), {}, False),
        (Requirement("app", "In", ("web", "api")), {"app": "api"}, True),
        (Requirement("app", "In", ("web", "api")), {"app": "db"}, False),
        (Requirement("app", "In", ("web",)), {}, False),
        (Requirement("app", "NotIn", ("web",)), {"app": "api"}, True),
        (Requirement("app", "NotIn", ("web",)), {"app": "web"}, False),
        (Requirement("app", "NotIn", ("web",)), {}, True),
        (Requirement("app", "Exists"), {"app": ""}, True),
        (Requirement("app", "Exists"), {"other": "x"}, False),
        (Requirement("app", "DoesNotExist"), {}, True),
        (Requirement("app", "DoesNotExist"), {"app": "x"}, False),
        (Requirement("app", EQUALS, ("",)), {"app": ""}, True),
        (Requirement("app", EQUALS, ("",)), {}, False),
    ],
)
def test_requirement_matches(requirement: Requirement, labels: dict[str, str], expected: bool) -> None:
    assert requirement.matches(labels) is expected


def test_selector_matches_all_requirements() -> None:
    sel = parse({"matchLabels": {"app": "web"}, "matchExpressions": [expr("tier", "NotIn", "db")]})
    assert sel.matches({"app": "web", "tier": "front", "extra": "x"})
    assert not sel.matches({"app": "web", "tier": "db"})
    assert not sel.matches({"tier": "front"})


def test_empty_selector_matches_everything() -> None:
    assert parse({}).matches({}) and parse({}).matches({"a": "b"})
    assert parse({"matchLabels": None, "matchExpressions": None}).matches({"x": "y"})


_LABEL = st.sampled_from(["a", "b", "c"])


@settings(max_examples=200, derandomize=True, database=None)
@given(
    match_labels=st.dictionaries(_LABEL, _LABEL, max_size=2),
    in_values=st.lists(_LABEL, min_size=1, max_size=3),
    labels=st.dictionaries(_LABEL, _LABEL, max_size=3),
)
def test_match_labels_equal_single_value_in(
    match_labels: dict[str, str], in_values: list[str], labels: dict[str, str]
) -> None:
    """``matchLabels {k: v}`` selects exactly what ``k In (v)`` selects, and ``NotIn`` is its complement."""
    as_labels = parse({"matchLabels": match_labels})
    as_in = parse({"matchExpressions": [expr(k, "In", v) for k, v in match_labels.items()]})
    assert as_labels.matches(labels) == as_in.matches(labels)
    yes = parse({"matchExpressions": [expr("a", "In", *in_values)]}).matches(labels)
    no = parse({"matchExpressions": [expr("a", "NotIn", *in_values)]}).matches(labels)
    assert yes != no


# Validation, like apimachinery's ValidateLabelSelector

P = Path("spec.selector")


def messages(selector: dict[str, Any]) -> list[str]:
    return [str(e) for e in errors(selector, P)]


def test_valid_selectors_have_no_errors() -> None:
    assert messages({}) == []
    assert messages({"matchLabels": {"app": "web", "example.com/tier": ""}}) == []
    assert messages({"matchExpressions": [expr("k", "In", "a"), expr("k", "NotIn", "b"), expr("e", "Exists")]}) == []


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (
            {"matchExpressions": [expr("k", "Equals", "a")]},
            'spec.selector.matchExpressions[0].operator: Unsupported value: "Equals": '
            'supported values: "In", "NotIn", "Exists", "DoesNotExist"',
        ),
        (
            {"matchExpressions": [{"key": "k"}]},
            "spec.selector.matchExpressions[0].operator: Unsupported value: null: "
            'supported values: "In", "NotIn", "Exists", "DoesNotExist"',
        ),
        (
            {"matchExpressions": [expr("k", "NotIn")]},
            "spec.selector.matchExpressions[0].values: Required value: "
            "must be specified when `operator` is 'In' or 'NotIn'",
        ),
        (
            {"matchExpressions": [expr("k", "Exists", "a")]},
            "spec.selector.matchExpressions[0].values: Invalid value: array: "
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        ),
        (
            {"matchExpressions": [expr("k", "DoesNotExist", "a")]},
            "spec.selector.matchExpressions[0].values: Invalid value: array: "
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        ),
        ({"matchExpressions": [{"operator": "Exists"}]}, "spec.selector.matchExpressions[0].key: Required value"),
        (
            {"matchExpressions": [expr("bad key!", "Exists")]},
            'spec.selector.matchExpressions[0].key: Invalid value: "bad key!": name part must consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        ),
        (
            {"matchExpressions": [expr("k", "In", "ok", "-bad")]},
            'spec.selector.matchExpressions[0].values[1]: Invalid value: "-bad": a valid label must be an empty '
            "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character",
        ),
        (
            {"matchLabels": {"/app": "web"}},
            'spec.selector.matchLabels: Invalid value: "/app": prefix part must be non-empty',
        ),
        (
            {"matchLabels": {"Bad_Prefix/app": "web"}},
            'spec.selector.matchLabels: Invalid value: "Bad_Prefix/app": prefix part must be a lowercase RFC 1123 '
            "subdomain",
        ),
        (
            {"matchLabels": {"app": "v" * 64}},
            f'spec.selector.matchLabels[app]: Invalid value: "{"v" * 64}": must be no more than 63 characters',
        ),
    ],
)
def test_errors(selector: dict[str, Any], expected: str) -> None:
    assert messages(selector) == [expected]


def test_errors_are_all_reported() -> None:
    found = messages(
        {"matchLabels": {"a": "-x"}, "matchExpressions": [expr("", "Maybe"), expr("k", "In", "-y"), expr("e", "In")]}
    )
    assert [m.split(":")[0] for m in found] == [
        "spec.selector.matchLabels[a]",
        "spec.selector.matchExpressions[0].key",
        "spec.selector.matchExpressions[0].operator",
        "spec.selector.matchExpressions[1].values[0]",
        "spec.selector.matchExpressions[2].values",
    ]


# The string form (--selector): what apimachinery's parser accepts


@pytest.mark.parametrize(
    "text", ["a=b", "a==b", "a!=b", "a", "!a", "tier in (x, y)", "tier notin (x)", "a=b,c in (d,e),!f", "x>5", "a="]
)
def test_text_selectors_that_parse(text: str) -> None:
    assert text_errors(text, Path("--selector")) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a b", 'Invalid value: "a b": unable to parse requirement at character 1'),
        ("a=b,!!c", 'Invalid value: "a=b,!!c": unable to parse requirement at character 5'),
        ("a=(b", 'Invalid value: "a=(b": unable to parse requirement at character 1'),
        ("x<y", 'Invalid value: "x<y": x: < needs an integer value'),
        ("a=b;c", 'Invalid value: "b;c": a valid label must be'),
        ("-a=b", 'Invalid value: "-a": name part must consist'),
    ],
)
def test_text_selectors_that_do_not(text: str, message: str) -> None:
    found = [str(e) for e in text_errors(text, Path("--selector"))]
    assert found and found[0].startswith(f"--selector: {message}"), found


def test_a_selector_string_matches_locally_as_the_api_server_selects() -> None:
    labels = {"app": "web", "tier": "front"}
    cases = {
        "app": True,
        "!app": False,
        "!missing": True,
        "app=web": True,
        "app==web": True,
        "app!=web": False,
        "missing!=web": True,
        "tier in (back, front)": True,
        "tier notin (front)": False,
        "missing notin (x)": True,
        "app=web,tier=back": False,
        "": True,
    }
    assert {text: parse_text(text).matches(labels) for text in cases} == cases
    for bad in ("n>3", "a=b,,", "in (x"):
        with pytest.raises(ValueError):
            parse_text(bad)
