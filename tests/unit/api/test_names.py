"""Kubernetes name and label rules, and the names derived for children and revisions."""

from __future__ import annotations

import pytest

from united.api.field import Path
from united.api.names import (
    STATEFULSET_NAME_MAX,
    child_prefix,
    dns_label_errors,
    dns_subdomain_errors,
    label_key_errors,
    label_value_errors,
    revision_name,
)

P = Path("f")


def msgs(errors: list[object]) -> list[str]:
    return [str(e) for e in errors]


@pytest.mark.parametrize("value", ["a", "web", "a-b", "0", "a1", "x" * 63])
def test_dns_label_valid(value: str) -> None:
    assert dns_label_errors(value, P) == []


@pytest.mark.parametrize("value", ["", "A", "-a", "a-", "a.b", "a_b", "é"])
def test_dns_label_invalid(value: str) -> None:
    assert msgs(dns_label_errors(value, P)) == [
        f'f: Invalid value: "{value}": a lowercase RFC 1123 label must consist of lower case alphanumeric '
        "characters or '-', and must start and end with an alphanumeric character"
    ]


def test_dns_label_too_long() -> None:
    assert msgs(dns_label_errors("x" * 64, P)) == [
        f'f: Invalid value: "{"x" * 64}": must be no more than 63 characters'
    ]


@pytest.mark.parametrize("value", ["a", "a.b", "a-b.c-d", "x" * 253, ".".join(["x" * 63] * 3)])
def test_dns_subdomain_valid(value: str) -> None:
    assert dns_subdomain_errors(value, P) == []


@pytest.mark.parametrize("value", ["", "A.b", "a..b", ".a", "a.", "a_b", "-a.b"])
def test_dns_subdomain_invalid(value: str) -> None:
    (message,) = msgs(dns_subdomain_errors(value, P))
    assert message.endswith(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
        "'.', and must start and end with an alphanumeric character"
    )


def test_dns_subdomain_too_long() -> None:
    assert msgs(dns_subdomain_errors("x" * 254, P)) == [
        f'f: Invalid value: "{"x" * 254}": must be no more than 253 characters'
    ]


@pytest.mark.parametrize(
    "key", ["app", "App_1.x", "example.com/app", "a.b.c/x-y", "x" * 63, "k8s.io/" + "n" * 63, "a/B"]
)
def test_label_key_valid(key: str) -> None:
    assert label_key_errors(key, P) == []


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("/app", ['f: Invalid value: "/app": prefix part must be non-empty']),
        (
            "Example.com/app",
            ['f: Invalid value: "Example.com/app": prefix part must be a lowercase RFC 1123 subdomain'],
        ),
        ("example.com/", ['f: Invalid value: "example.com/": name part must be non-empty']),
        ("", ['f: Invalid value: "": name part must be non-empty']),
        ("x" * 64, [f'f: Invalid value: "{"x" * 64}": name part must be no more than 63 characters']),
        (
            "-app",
            [
                "f: Invalid value: \"-app\": name part must consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character"
            ],
        ),
        (
            "/",
            [
                'f: Invalid value: "/": prefix part must be non-empty',
                'f: Invalid value: "/": name part must be non-empty',
            ],
        ),
        ("a/b/c", ['f: Invalid value: "a/b/c": prefix part must be a lowercase RFC 1123 subdomain']),
    ],
)
def test_label_key_invalid(key: str, expected: list[str]) -> None:
    assert msgs(label_key_errors(key, P)) == expected


@pytest.mark.parametrize("value", ["", "a", "A-b_c.d", "0", "x" * 63])
def test_label_value_valid(value: str) -> None:
    assert label_value_errors(value, P) == []


@pytest.mark.parametrize("value", ["-a", "a-", "a b", "a/b", "é"])
def test_label_value_invalid(value: str) -> None:
    assert msgs(label_value_errors(value, P)) == [
        f'f: Invalid value: "{value}": a valid label must be an empty string or consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character"
    ]


def test_label_value_too_long() -> None:
    assert msgs(label_value_errors("x" * 64, P)) == [
        f'f: Invalid value: "{"x" * 64}": must be no more than 63 characters'
    ]


def test_child_prefix() -> None:
    assert child_prefix("web", "zone-a") == "web-zone-a-"
    assert child_prefix("w" * 200, "s" * 51) == "w" * 200 + "-" + "s" * 51 + "-"  # exactly 253
    assert child_prefix("w" * 200, "s" * 52) == "w" * 200 + "-"


def test_revision_name() -> None:
    assert revision_name("web", "6cb4bff794") == "web-6cb4bff794"
    assert revision_name("w" * 300, "h") == "w" * 223 + "-h"


def test_statefulset_name_limit_leaves_room_for_the_pod_revision_label() -> None:
    # <child name>-<hash up to 10 chars> must be a label value of at most 63 characters.
    assert STATEFULSET_NAME_MAX + 1 + 10 == 63
