"""Field paths and errors in the API server's ``field.path: message`` shape."""

from __future__ import annotations

import pytest

from united.api.field import (
    FieldError,
    ManifestError,
    Path,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    show,
)


def test_paths() -> None:
    assert str(Path()) == "<root>"
    assert str(Path().child("spec")) == "spec"
    p = Path("spec").child("topology").child("subsets").index(1).child("name")
    assert str(p) == "spec.topology.subsets[1].name"
    assert str(Path("spec").child("partitions").key("zone-a")) == "spec.partitions[zone-a]"
    assert str(Path().index(0)) == "[0]"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("a", '"a"'),
        ('q"<', '"q\\"<"'),
        ("é", '"é"'),
        (True, "true"),
        (False, "false"),
        (None, "null"),
        (3, "3"),
        (-1.5, "-1.5"),
        ([1], "array"),
        ((1,), "object"),
        ({"a": 1}, "object"),
    ],
)
def test_show(value: object, shown: str) -> None:
    assert show(value) == shown


def test_error_constructors() -> None:
    p = Path("spec").child("x")
    assert str(required(p)) == "spec.x: Required value"
    assert str(required(p, "needed")) == "spec.x: Required value: needed"
    assert str(invalid(p, -1, "must be positive")) == "spec.x: Invalid value: -1: must be positive"
    assert str(duplicate(p, "a")) == 'spec.x: Duplicate value: "a"'
    assert str(forbidden(p, "no")) == "spec.x: Forbidden: no"
    assert str(not_supported(p, "c", ("a", "b"))) == 'spec.x: Unsupported value: "c": supported values: "a", "b"'


def test_field_error_as_dict() -> None:
    assert FieldError("spec.replicas", "Required value").as_dict() == {
        "field": "spec.replicas",
        "message": "Required value",
    }


def test_manifest_error_carries_every_error() -> None:
    errors = [FieldError("a", "x"), FieldError("b", "y")]
    e = ManifestError(iter(errors))
    assert e.errors == errors
    assert str(e) == "a: x; b: y"
