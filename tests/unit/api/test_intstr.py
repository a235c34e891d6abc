"""Int-or-percent parsers: the strict and the lenient one, as WorkloadSpread's reference uses them."""

from __future__ import annotations

import pytest

from united.api.intstr import int_value, legacy_scaled, scaled


@pytest.mark.parametrize(
    ("value", "total", "expected"),
    [(3, 10, 3), ("34%", 10, 4), ("33%", 10, 4), ("0%", 10, 0), ("100%", 7, 7), ("50%", 3, 2), ("-10%", 10, -1)],
)
def test_scaled_rounds_percentages_up(value: int | str, total: int, expected: int) -> None:
    assert scaled(value, total) == expected


@pytest.mark.parametrize(
    ("value", "total", "expected"), [(3, 10, 3), ("34%", 10, 3), ("39%", 10, 3), ("25%", 3, 0), ("100%", 7, 7)]
)
def test_scaled_rounds_down_when_asked(value: int | str, total: int, expected: int) -> None:
    """A Deployment's ``maxUnavailable`` rounds down (its ``maxSurge`` up)."""
    assert scaled(value, total, round_up=False) == expected


@pytest.mark.parametrize("value", ["50", "5%%", "0.2%", "50.2%", " 5%", "%", "abc%"])
def test_scaled_refuses_anything_but_an_integer_percentage(value: str) -> None:
    with pytest.raises(ValueError):
        scaled(value, 10)


@pytest.mark.parametrize(("value", "expected"), [("50", 5), ("5%%", 1), ("34%", 4), (2, 2), ("-1%", 0)])
def test_legacy_scaled_reads_any_string_as_a_percentage(value: int | str, expected: int) -> None:
    assert legacy_scaled(value, 10) == expected


@pytest.mark.parametrize("value", ["0.2%", "50.2%", "x", ""])
def test_legacy_scaled_refuses_non_integers(value: str) -> None:
    with pytest.raises(ValueError):
        legacy_scaled(value, 10)


@pytest.mark.parametrize(("value", "expected"), [(5, 5), ("7", 7), ("50%", 0), ("x", 0)])
def test_int_value(value: int | str, expected: int) -> None:
    assert int_value(value) == expected
