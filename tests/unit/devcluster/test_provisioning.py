"""Cache layout per version and the stamp that decides whether a build is complete."""

import json
import os
from pathlib import Path

import pytest

from united.devcluster.build import (
    ETCD,
    KUBE_BINARIES,
    Binaries,
    Layout,
    built_binaries,
    debian_go_env,
    expected_stamp,
    is_provisioned,
    provision,
    tail,
)
from united.devcluster.versions import DEBIAN, DEFAULT, NEWEST, KubeVersion


def test_layout_honours_xdg_cache_home() -> None:
    layout = Layout.default(env={"XDG_CACHE_HOME": "/c", "HOME": "/h"})
    assert layout.root == Path(f"/c/united/kube-{DEFAULT}")


def test_layout_falls_back_to_home_cache() -> None:
    assert Layout.default(env={"HOME": "/h"}).root == Path(f"/h/.cache/united/kube-{DEFAULT}")


def test_each_version_has_its_own_cache_directory() -> None:
    newest = Layout.default(NEWEST, env={"HOME": "/h"})
    assert newest.root == Path(f"/h/.cache/united/kube-{NEWEST}") and newest.version == NEWEST
    assert Layout.default(env={"HOME": "/h"}).version == DEFAULT == NEWEST


def _complete(tmp_path: Path, version: KubeVersion = DEBIAN) -> tuple[Layout, Path]:
    layout = Layout(tmp_path / "cache", version)
    layout.bin_dir.mkdir(parents=True)
    for name in built_binaries(version):
        binary = layout.bin_dir / name
        binary.write_text("#!/bin/sh\n")
        binary.chmod(0o755)
    etcd = tmp_path / "etcd"
    etcd.write_text("#!/bin/sh\n")
    etcd.chmod(0o755)
    layout.stamp.write_text(json.dumps(expected_stamp(version)))
    return layout, etcd


def test_a_complete_cache_is_provisioned(tmp_path: Path) -> None:
    layout, etcd = _complete(tmp_path)
    assert is_provisioned(layout, etcd=etcd)


def test_missing_stamp_means_half_finished(tmp_path: Path) -> None:
    layout, etcd = _complete(tmp_path)
    layout.stamp.unlink()
    assert not is_provisioned(layout, etcd=etcd)


@pytest.mark.parametrize(
    "stamp",
    [
        "",
        "{not json",
        "[]",
        json.dumps({**expected_stamp(), "version": "1.19.0"}),
        json.dumps({**expected_stamp(), "binaries": ["kubectl"]}),
    ],
)
def test_a_foreign_or_broken_stamp_means_rebuild(tmp_path: Path, stamp: str) -> None:
    layout, etcd = _complete(tmp_path)
    layout.stamp.write_text(stamp)
    assert not is_provisioned(layout, etcd=etcd)


def test_a_missing_or_non_executable_binary_means_rebuild(tmp_path: Path) -> None:
    layout, etcd = _complete(tmp_path)
    (layout.bin_dir / "kube-scheduler").chmod(0o644)
    assert not is_provisioned(layout, etcd=etcd)
    layout, etcd = _complete(tmp_path / "again")
    os.unlink(etcd)
    assert not is_provisioned(layout, etcd=etcd)


def test_tail_returns_the_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    assert tail(log, 2) == "line 98\nline 99"
    assert tail(tmp_path / "missing") == ""


def test_make_runs_debians_go_whatever_go_comes_first(tmp_path: Path) -> None:
    """The 1.20 sources break with a newer Go; the machine may put one first on PATH and
    set GOROOT for it."""
    debian = tmp_path / "usr" / "lib" / "go-1.19" / "bin"
    debian.mkdir(parents=True)
    (debian / "go").write_text("#!/bin/sh\n")
    link = tmp_path / "usr" / "bin" / "go"
    link.parent.mkdir(parents=True)
    link.symlink_to(debian / "go")
    environ = {"PATH": "/usr/local/go/bin:/usr/bin", "GOROOT": "/usr/local/go", "GOTOOLCHAIN": "auto", "HOME": "/h"}

    env = debian_go_env(environ, cache=tmp_path / "cache", go=link)

    assert env["PATH"].split(os.pathsep)[0] == str(debian.resolve())
    assert "GOROOT" not in env
    assert env["GOTOOLCHAIN"] == "local"
    assert env["GOCACHE"] == str(tmp_path / "cache")
    assert env["HOME"] == "/h"
    assert environ["GOROOT"] == "/usr/local/go"


def test_a_module_build_has_its_own_etcd_and_says_which() -> None:
    assert built_binaries(NEWEST) == (*KUBE_BINARIES, "etcd")
    assert built_binaries(DEBIAN) == KUBE_BINARIES
    assert expected_stamp(NEWEST)["etcd"] == "v3.6.16" and "etcd" not in expected_stamp(DEBIAN)
    layout = Layout(Path("/c/kube-new"), NEWEST)
    binaries = Binaries.from_layout(layout)
    assert binaries.etcd == layout.bin_dir / "etcd" and binaries.version == NEWEST
    assert Binaries.from_layout(Layout(Path("/c/kube-old"), DEBIAN)).etcd == ETCD


def test_a_complete_module_build_is_provisioned_and_a_stamp_of_another_version_is_not(tmp_path: Path) -> None:
    layout, _ = _complete(tmp_path, NEWEST)
    assert is_provisioned(layout)
    (layout.bin_dir / "etcd").unlink()
    assert not is_provisioned(layout), "its own etcd is part of it"
    layout, _ = _complete(tmp_path / "again", NEWEST)
    layout.stamp.write_text(json.dumps(expected_stamp(DEBIAN)))
    assert not is_provisioned(layout)
    layout.stamp.write_text(json.dumps({**expected_stamp(NEWEST), "etcd": "v3.6.15"}))
    assert not is_provisioned(layout), "another etcd means a rebuild"


def test_a_complete_module_cache_returns_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No builder runs: there is no go to run."""
    monkeypatch.setenv("UNITED_GO", str(tmp_path / "no-go"))
    layout, _ = _complete(tmp_path, NEWEST)
    said: list[str] = []
    assert provision(NEWEST, layout=layout, progress=said.append) == Binaries.from_layout(layout)
    assert said == []


def test_a_layout_of_another_version_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=f"is for Kubernetes {DEBIAN}, not {NEWEST}"):
        provision(NEWEST, layout=Layout(tmp_path, DEBIAN))
