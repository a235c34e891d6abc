"""One version: ``united.__version__`` is the source; the package metadata, ``united
--version``, the controller image in ``manifests/base`` and the CRDs' annotation follow it."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest

from united import __version__, data
from united.api.groups import GROUP, KRUISE_GROUP


def test_package_metadata() -> None:
    assert importlib.metadata.version("united") == __version__


def test_command_line() -> None:
    out = subprocess.run([sys.executable, "-m", "united", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"united {__version__}"


def test_controller_image_tag() -> None:
    (deployment,) = data.documents(data.MANIFESTS / "base" / "deployment.yaml")
    assert [c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]] == [f"united:{__version__}"]


@pytest.mark.parametrize("group", [GROUP, KRUISE_GROUP])
def test_crd_annotation(group: str) -> None:
    crds = data.documents(*data.crds(group))
    assert [crd["metadata"]["annotations"]["apps.united.io/version"] for crd in crds] == [__version__] * len(crds)
    assert len(crds) == (3 if group == GROUP else 2)
