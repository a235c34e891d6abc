"""``united demo`` where it cannot provision: one paragraph (what failed, what to do, the build
log), exit 1, no traceback. Each case is a real failure of the first provisioning step in a
fresh, unprovisioned cache: run as an unprivileged user (``setpriv``) on a system whose
package database lacks the packages, on a system without dpkg, or with an unwritable cache."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.unprivileged import nobody_argv
from united.devcluster.versions import DEFAULT


def _demo(
    env: dict[str, str], *, nobody_site: Path | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``united demo``; as the unprivileged user when given the site it imports from."""
    args = ("-m", "united", "demo")
    argv = [sys.executable, *args] if nobody_site is None else nobody_argv(*args)
    if nobody_site is not None:
        env = {**env, "PYTHONPATH": str(nobody_site)}
    result = subprocess.run(
        argv,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd or Path(__file__).parents[3],
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


def _paragraph(stderr: str) -> list[str]:
    """The error paragraph: the lines from ``united demo cannot start`` on."""
    lines = stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("united demo cannot start"))
    return lines[start:]


def _world_writable(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o777)
    return path


@pytest.fixture
def home() -> Iterator[Path]:
    """A directory the unprivileged user can reach (pytest's own lives under a 0700 one)."""
    with tempfile.TemporaryDirectory(prefix="united-demo-") as name:
        path = Path(name)
        path.chmod(0o755)
        yield path


@pytest.fixture
def cache(home: Path) -> Path:
    return _world_writable(home / "cache")


@pytest.mark.as_nobody
def test_not_root_and_packages_missing(home: Path, cache: Path, nobody_site: Path) -> None:
    """A user without root on a system lacking the packages (an empty dpkg database, read by
    the real dpkg-query): the paragraph names the packages and says how to install them."""
    if os.geteuid() != 0:
        pytest.fail("this test switches to an unprivileged user, so it must start as root")
    dpkg = _world_writable(home / "dpkg")
    (dpkg / "status").write_text("")
    env = {"XDG_CACHE_HOME": str(cache), "DPKG_ADMINDIR": str(dpkg), "UNITED_KUBE_VERSION": "floor"}
    result = _demo(env, nobody_site=nobody_site, cwd=home)
    assert result.returncode == 1, result.stderr
    paragraph = _paragraph(result.stderr)
    build_log = cache / "united" / "kube-1.20.2" / "build.log"
    assert paragraph == [
        "united demo cannot start: building the local Kubernetes control plane failed: missing Debian packages: "
        "etcd-server golang-go golang-github-modern-go-reflect2-dev dpkg-dev rsync openssl "
        "(installing them needs root).",
        "What to do: run it once as root (it installs them), or first: sudo apt-get install -y etcd-server "
        "golang-go golang-github-modern-go-reflect2-dev dpkg-dev rsync openssl.",
        f"Build log: {build_log}",
    ]
    assert "missing Debian packages" in build_log.read_text()


def test_no_dpkg(tmp_path: Path, cache: Path) -> None:
    """A system without Debian's tools (no dpkg-query on the PATH), asked for the floor (the
    release built from Debian's sources)."""
    empty = tmp_path / "bin"
    empty.mkdir()
    result = _demo({"XDG_CACHE_HOME": str(cache), "PATH": str(empty), "UNITED_KUBE_VERSION": "floor"})
    assert result.returncode == 1, result.stderr
    first, todo, log = _paragraph(result.stderr)
    assert first.endswith("this is not a Debian or Ubuntu system: dpkg-query was not found.")
    assert todo.startswith("What to do: run it on Debian bookworm")
    assert log == f"Build log: {cache / 'united' / 'kube-1.20.2' / 'build.log'}"


@pytest.mark.as_nobody
def test_cache_not_writable(home: Path, nobody_site: Path) -> None:
    """An unprivileged user whose cache directory belongs to someone else."""
    if os.geteuid() != 0:
        pytest.fail("this test switches to an unprivileged user, so it must start as root")
    locked = home / "locked"
    locked.mkdir(mode=0o755)
    result = _demo({"XDG_CACHE_HOME": str(locked)}, nobody_site=nobody_site, cwd=home)
    assert result.returncode == 1, result.stderr
    first, todo, _ = _paragraph(result.stderr)
    assert first.endswith(f"cannot provision into {locked / 'united' / f'kube-{DEFAULT}'}: Permission denied.")
    assert "XDG_CACHE_HOME" in todo
