"""The wheel is the product: built from this checkout (sdist, then the wheel from the sdist),
installed into a fresh virtual environment outside the checkout, and used from there as a
person who ran ``pip install united`` would — offline tools, ``united install --print`` through
``kubectl apply --dry-run=server``, ``united install``, and a short ``united demo``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import KUBE_VERSION
from tests.e2e.console import interrupt, read_until, run_until
from tests.support.controller import webhook_configurations_set_aside
from united import __version__, data, kustomization
from united.api.groups import GROUP, KRUISE_GROUP
from united.devcluster.cluster import LocalCluster
from united.devcluster.demo import READY_LINE
from united.kube.apply import SYSTEM
from united.kube.client import (
    DEPLOYMENTS,
    NAMESPACES,
    SERVICES,
    KubeClient,
)
from united.kube.errors import AlreadyExists, NotFound
from united.kustomization import CLUSTER_SCOPED

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
SHIPPED = ("crds", "manifests")


@dataclass(frozen=True)
class Installed:
    """The built distributions and a virtual environment with the wheel installed."""

    wheel: Path
    sdist: Path
    venv: Path
    home: Path
    """The working directory of every command: empty, outside the checkout."""

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """``united ARGS`` from the virtual environment."""
        return subprocess.run(
            [str(self.venv / "bin" / "united"), *args],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=self.home,
            env=self.env(),
            timeout=120,
        )

    def env(self) -> dict[str, str]:
        """The caller's environment without anything that points Python at the checkout."""
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "COV_CORE"))}
        return {**keep, "PATH": f"{self.venv / 'bin'}{os.pathsep}{keep.get('PATH', '')}"}


def snapshot(to: Path) -> Path:
    """The checkout's files (tracked, and new ones not ignored) copied to ``to``, symlinks as
    symlinks: setuptools builds in the source tree (its egg-info, its staging directory), where
    the other test workers write meanwhile (byte code, caches). Outside a git checkout, the
    checkout itself."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, timeout=60,
    )  # fmt: skip
    if listed.returncode != 0:
        return REPO
    for name in sorted(set(listed.stdout.decode().split("\0")) - {""}):
        source, target = REPO / name, to / name
        if source.is_symlink() or source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)
    return to


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("packaging")
    assert not root.resolve().is_relative_to(REPO), "the virtual environment must live outside the checkout"
    started = time.monotonic()
    build = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(root / "dist"), str(snapshot(root / "source"))],
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = build.stdout + build.stderr
    assert build.returncode == 0, output
    warnings = [
        line
        for line in output.splitlines()
        if "warning" in line.lower() and "byte-compiling is disabled" not in line and "Location 'file:" not in line
    ]
    assert not warnings, output
    built = time.monotonic()
    (wheel,) = (root / "dist").glob("*.whl")
    (sdist,) = (root / "dist").glob("*.tar.gz")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert pip.returncode == 0, pip.stdout + pip.stderr
    home = root / "home"
    home.mkdir()
    print(f"\npackaging: build {built - started:.1f}s, venv + pip install {time.monotonic() - built:.1f}s")
    yield Installed(wheel, sdist, venv, home)


def _repo_files() -> dict[str, bytes]:
    return {
        p.relative_to(REPO).as_posix(): p.read_bytes()
        for d in SHIPPED
        for p in sorted((REPO / d).rglob("*"))
        if p.is_file()
    }


def test_the_distributions_carry_the_repository_files(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as wheel:
        shipped = {
            name.removeprefix("united/data/"): wheel.read(name)
            for name in wheel.namelist()
            if name.startswith(tuple(f"united/data/{d}/" for d in SHIPPED))
        }
        metadata = wheel.read(f"united-{__version__}.dist-info/METADATA").decode()
        assert f"united-{__version__}.dist-info/licenses/LICENSE" in wheel.namelist()
    assert shipped == _repo_files()
    assert "License-Expression: Apache-2.0" in metadata
    assert f"Version: {__version__}" in metadata
    with tarfile.open(installed.sdist) as sdist:
        members = {m.name: m for m in sdist.getmembers()}
    prefix = f"united-{__version__}/united/data/"
    assert {name.removeprefix(prefix) for name, m in members.items() if name.startswith(prefix) and m.isfile()} == {
        "__init__.py",
        *_repo_files(),
    }


def test_the_installed_package_is_not_the_checkout(installed: Installed) -> None:
    probe = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c", "import united.data; print(united.data.ROOT)"],
        capture_output=True,
        text=True,
        cwd=installed.home,
        env=installed.env(),
        check=True,
    )
    assert Path(probe.stdout.strip()).is_relative_to(installed.venv), probe.stdout
    assert installed.run("--version").stdout == f"united {__version__}\n"


def test_validate_and_plan_a_packaged_sample(installed: Installed) -> None:
    sample = installed.run("samples", "zones-percent")
    assert sample.returncode == 0, sample.stderr
    assert sample.stdout == (REPO / "manifests" / "samples" / "zones-percent.yaml").read_text()
    assert installed.run("validate", "-", stdin=sample.stdout).stdout == "valid\n"
    plan = installed.run("plan", "-", stdin=sample.stdout)
    assert plan.returncode == 0, plan.stderr
    assert re.search(r"^zone-c\s+6\s", plan.stdout, re.MULTILINE), plan.stdout


async def _system_namespace(cluster: LocalCluster) -> None:
    async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as client:
        with contextlib.suppress(AlreadyExists):
            await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM}})


@pytest.mark.parametrize("group", [GROUP, KRUISE_GROUP])
def test_install_print_passes_the_api_servers_dry_run(installed: Installed, cluster: LocalCluster, group: str) -> None:
    """``united install --print | kubectl apply --dry-run=server -f -``: the API server
    validates every object (a dry run of the namespaced ones needs their namespace)."""
    asyncio.run(_system_namespace(cluster))
    printed = installed.run("install", "--api-group", group, "--print", "--kube-version", str(KUBE_VERSION))
    assert printed.returncode == 0, printed.stderr
    with webhook_configurations_set_aside(cluster.admin_kubeconfig):  # the session controller's call a URL
        kubectl = subprocess.run(
            [str(cluster.binaries.kubectl), "--kubeconfig", str(cluster.admin_kubeconfig),
             "apply", "--dry-run=server", "-f", "-"],
            input=printed.stdout, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert kubectl.returncode == 0, kubectl.stderr
    objects = [line for line in kubectl.stdout.splitlines() if line.endswith("(server dry run)")]
    assert len(objects) == len(data.controller(group)), kubectl.stdout


def unnamespaced(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without the namespace kubectl 1.20's kustomize put on cluster-scoped webhook
    configurations (newer ones put none, as the API server ignores it)."""
    if obj["kind"] in CLUSTER_SCOPED:
        obj["metadata"].pop("namespace", None)
    return obj


def test_the_overlays_render_as_kubectl_kustomize_does(cluster: LocalCluster) -> None:
    """The kustomize subset behind ``united install`` against kubectl 1.20's own kustomize."""
    for overlay, group in (("base", GROUP), ("kruise", KRUISE_GROUP)):
        kustomized = subprocess.run(
            [str(cluster.binaries.kubectl), "kustomize", str(REPO / "manifests" / overlay)],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
        theirs = [unnamespaced(d) for d in yaml.safe_load_all(kustomized) if d]
        ours = [d for d in data.controller(group) if d["kind"] != "CustomResourceDefinition"]

        def key(obj: dict[str, object]) -> str:
            return yaml.safe_dump(obj, sort_keys=True)

        assert sorted(ours, key=key) == sorted(theirs, key=key), overlay


def test_the_admission_policies_render_as_kubectl_kustomize_does(cluster: LocalCluster) -> None:
    """``manifests/admission-policy`` (Kubernetes 1.30+, so only rendered here, not applied)."""
    kustomized = subprocess.run(
        [str(cluster.binaries.kubectl), "kustomize", str(REPO / "manifests" / "admission-policy")],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    theirs = [d for d in yaml.safe_load_all(kustomized) if d]
    ours = kustomization.build(data.MANIFESTS, "admission-policy")
    assert sorted(ours, key=yaml.safe_dump) == sorted(theirs, key=yaml.safe_dump)


def test_install_applies_and_reapplies(installed: Installed, cluster: LocalCluster) -> None:
    """``united install`` from the wheel: everything is created, then a second run patches
    what exists. The Deployment and the Services are removed afterwards (the suite runs its own
    controllers), and the webhook configurations are put back as they were: the session's
    controller serves them at a URL, the shipped ones call a Service nothing routes to. The
    CRD, namespace and RBAC are what the suite's fixtures install anyway."""
    with webhook_configurations_set_aside(cluster.admin_kubeconfig):
        try:
            for _ in range(2):
                result = installed.run("install", "--kubeconfig", str(cluster.admin_kubeconfig))
                assert result.returncode == 0, result.stderr
                assert result.stdout.splitlines() == [
                    f"{d['kind']}/{d['metadata']['name']} applied" for d in data.controller(GROUP)
                ]
            deployment = asyncio.run(_controller_deployment(cluster))
            assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == f"united:{__version__}"
        finally:
            asyncio.run(_remove_controller(cluster))


async def _controller_deployment(cluster: LocalCluster) -> dict[str, Any]:
    async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as client:
        return await client.get(DEPLOYMENTS, "united-controller", namespace=SYSTEM)


async def _remove_controller(cluster: LocalCluster) -> None:
    async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as client:
        for resource, name in (
            (DEPLOYMENTS, "united-controller"),
            (SERVICES, "united-controller-metrics"),
            (SERVICES, "united-webhook"),
        ):
            with contextlib.suppress(NotFound):
                await client.delete(resource, name, namespace=SYSTEM if resource.namespaced else None)


async def test_demo_converges_and_stops_on_ctrl_c(installed: Installed) -> None:
    """A short ``united demo`` from the wheel (its own control plane): the packaged sample
    becomes Ready, Ctrl-C stops it cleanly."""
    united = str(installed.venv / "bin" / "united")
    proc, lines = await run_until([united, "demo"], READY_LINE, within=300, env=installed.env(), cwd=installed.home)
    try:
        await read_until(proc, lines, "Ready=True", within=240)
    finally:
        output = await interrupt(proc)
    assert proc.returncode == 0, "\n".join(lines) + output
    assert "zones-percent.yaml is applied" in "\n".join(lines)
