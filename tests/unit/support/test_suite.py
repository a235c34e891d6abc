"""How the suite marks its tests (tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import UNIT_TIMEOUT, group


def test_a_unit_test_has_a_time_limit(request: pytest.FixtureRequest) -> None:
    marker = request.node.get_closest_marker("timeout")
    assert marker is not None and marker.args == (UNIT_TIMEOUT,)


@pytest.mark.timeout(7)
def test_a_unit_test_keeps_a_limit_of_its_own(request: pytest.FixtureRequest) -> None:
    marker = request.node.get_closest_marker("timeout")
    assert marker is not None and marker.args == (7,)


def test_e2e_tests_sharing_a_package_run_in_one_group_and_unit_tests_in_none() -> None:
    assert group(Path("unit/runtime/test_informer.py")) is None
    assert group(Path("e2e/workloadspread/test_targeting.py")) == "e2e/workloadspread"
    assert group(Path("e2e/test_demo.py")) == "e2e/test_demo.py"
