"""Fixtures every part of the suite may use."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.unprivileged import readable_site


@pytest.fixture(scope="session")
def nobody_site() -> Iterator[Path]:
    """``united`` and its run-time dependencies where an unprivileged user can import them,
    wherever the checkout lives (see tests/support/unprivileged.py)."""
    with tempfile.TemporaryDirectory(prefix="united-nobody-") as name:
        Path(name).chmod(0o755)
        yield readable_site(Path(name))


UNIT_TIMEOUT = 120
"""Seconds a unit test may take (the slowest take about one): a hang fails that test, with its
stack, instead of holding the whole run until CI's limit."""

SHARED_PACKAGES = (("chaos",), ("e2e", "multicluster"), ("e2e", "workloadspread"))
"""Packages whose tests share package-scoped fixtures (their own control plane, member planes,
the spreading controller): each runs whole on one worker."""


def group(relative: Path) -> str | None:
    """The xdist group of the test file at ``relative`` (to ``tests/``), or None for a unit test,
    which any worker may take. Each worker has its own session control plane and controller;
    tests that share a module- or package-scoped fixture run on one, so it is made once."""
    parts = relative.parts
    if parts[0] not in ("e2e", "chaos"):
        return None
    for package in SHARED_PACKAGES:
        if parts[: len(package)] == package:
            return "/".join(package)
    return relative.as_posix()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each e2e and chaos test with its group before pytest-xdist reads the marks, and
    each unit test with its time limit."""
    root = Path(__file__).parent
    for item in items:
        path = Path(item.path)
        if root in path.parents:
            relative = path.relative_to(root)
            if relative.parts[0] == "unit" and item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(UNIT_TIMEOUT))
            name = group(relative)
            if name is not None and "own_cluster" in getattr(item, "fixturenames", ()):
                name = "own_cluster"  # a second control plane, made once
            if name is not None:
                item.add_marker(pytest.mark.xdist_group(name))
