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
