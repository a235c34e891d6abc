"""The build from Go modules, step by step, with a stand-in ``go`` (``UNITED_GO``): what it
is asked to do, in which directory and environment, what ends up in the cache, and the one
paragraph a failure gives. The stand-in serves the two go.mods as the module proxy would and
"builds" scripts that print the version the ldflags name, so the version check is real."""

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from tests.unit.devcluster.test_gomodules import KUBE_GO_MOD
from united.devcluster.build import KUBE_BINARIES, Layout, ProvisionError, is_provisioned, provision
from united.devcluster.versions import NEWEST

ETCD_GO_MOD = "module go.etcd.io/etcd/server/v3\n\ngo 1.26.0\n\nrequire go.etcd.io/bbolt v1.4.3\n"

FAKE_GO = """\
import json, os, pathlib, sys

args = sys.argv[1:]
here = pathlib.Path(os.environ["FAKE_GO_DIR"])
with (here / "calls.jsonl").open("a") as calls:
    env = {k: os.environ.get(k, "") for k in ("GOPATH", "GOMODCACHE", "GOCACHE", "GOTOOLCHAIN", "GOFLAGS")}
    calls.write(json.dumps({"args": args, "cwd": os.getcwd(), "env": env}) + "\\n")
if args[:2] == ["env", "GOVERSION"]:
    print(os.environ.get("FAKE_GO_VERSION", "go1.26.8"))
elif args[:3] == ["mod", "download", "-json"]:
    if os.environ.get("FAKE_GO_OFFLINE"):
        sys.exit("go: k8s.io/kubernetes@v1.37.2: dial tcp: lookup proxy.golang.org: no such host")
    for spec in args[3:]:
        path, version = spec.split("@")
        where = pathlib.Path(os.environ["GOMODCACHE"], "cache", "download", path, "@v")
        where.mkdir(parents=True, exist_ok=True)
        served = here / ("kube.mod" if path == "k8s.io/kubernetes" else "etcd.mod")
        (where / f"{version}.mod").write_text(served.read_text())
        (where / f"{version}.info").write_text(json.dumps({"Version": version, "Time": "2026-10-27T12:01:04Z"}))
        print(json.dumps({"Path": path, "Version": version, "GoMod": str(where / f"{version}.mod"),
                          "Info": str(where / f"{version}.info")}, indent="\\t"))
elif args[0] == "build":
    out = args[args.index("-o") + 1]
    flags = args[args.index("-ldflags") + 1].split()
    said = [f.split("=", 1)[1] for f in flags if f.startswith("k8s.io/component-base/version.gitVersion=")]
    pathlib.Path(os.environ["GOCACHE"]).mkdir(parents=True, exist_ok=True)
    if out.endswith("/"):
        targets = [(out + pkg.rsplit("/", 1)[1], "Kubernetes " + said[0]) for pkg in args[args.index("-o") + 2:]]
    else:
        targets = [(out, "etcd Version: 3.6.16")]
    for target, version in targets:
        pathlib.Path(target).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(target).write_text(f"#!/bin/sh\\necho '{version}'\\n")
        os.chmod(target, 0o755)
else:
    sys.exit(f"fake go: unexpected {args}")
"""


@pytest.fixture
def fake_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    here = tmp_path / "fake-go"
    here.mkdir()
    (here / "kube.mod").write_text(KUBE_GO_MOD)
    (here / "etcd.mod").write_text(ETCD_GO_MOD)
    go = here / "go"
    go.write_text(f"#!{sys.executable}\n{FAKE_GO}")
    go.chmod(go.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("UNITED_GO", str(go))
    monkeypatch.setenv("FAKE_GO_DIR", str(here))
    monkeypatch.delenv("GOTOOLCHAIN", raising=False)
    return here


def _calls(fake_go: Path) -> list[dict[str, object]]:
    lines = (fake_go / "calls.jsonl").read_text().splitlines() if (fake_go / "calls.jsonl").exists() else []
    return [json.loads(line) for line in lines]


def _builds(fake_go: Path) -> list[dict[str, object]]:
    return [c for c in _calls(fake_go) if c["args"][0] == "build"]  # type: ignore[index]


def test_a_module_build_fills_the_cache_and_leaves_only_the_binaries(tmp_path: Path, fake_go: Path) -> None:
    layout = Layout(tmp_path / "kube", NEWEST)
    said: list[str] = []

    binaries = provision(NEWEST, layout=layout, progress=said.append)

    assert is_provisioned(layout)
    assert binaries.etcd == layout.bin_dir / "etcd" and binaries.version == NEWEST
    assert sorted(p.name for p in layout.bin_dir.iterdir()) == sorted([*KUBE_BINARIES, "etcd"])
    assert [line.split(" ", 1)[0] for line in said if line.startswith("[")] == [f"[{i}/5]" for i in range(1, 6)]
    kube, etcd = _builds(fake_go)
    assert kube["cwd"] == str(layout.modules_dir / "kube") and etcd["cwd"] == str(layout.modules_dir / "etcd")
    assert kube["args"][kube["args"].index("-p") + 1] == "2"  # type: ignore[attr-defined,index]
    assert kube["args"][-4:] == [f"k8s.io/kubernetes/cmd/{name}" for name in KUBE_BINARIES]  # type: ignore[index]
    assert etcd["args"][-1] == "go.etcd.io/etcd/server/v3"  # type: ignore[index]
    env = kube["env"]
    assert env == {  # the build's own module and build caches, no toolchain download
        "GOPATH": str(layout.gopath),
        "GOMODCACHE": str(layout.gopath / "pkg" / "mod"),
        "GOCACHE": str(layout.go_cache),
        "GOTOOLCHAIN": "local",
        "GOFLAGS": "-mod=mod -modcacherw -buildvcs=false",
    }
    wrapper = (layout.modules_dir / "kube" / "go.mod").read_text()
    assert "k8s.io/client-go => k8s.io/client-go v0.37.2" in wrapper
    assert "require (\n\tk8s.io/kubernetes v1.37.2" in wrapper
    assert "go.etcd.io/etcd/server/v3 v3.6.16" in (layout.modules_dir / "etcd" / "go.mod").read_text()
    assert not layout.gopath.exists() and not layout.go_cache.exists() and not (layout.root / "built").exists()
    assert sorted(p.name for p in layout.root.iterdir()) == [".lock", "bin", "build.log", "modules", "stamp.json"]
    assert json.loads(layout.stamp.read_text())["version"] == str(NEWEST)

    calls = len(_calls(fake_go))
    provision(NEWEST, layout=layout, progress=said.append)
    assert len(_calls(fake_go)) == calls, "a complete cache builds nothing"


def test_binaries_that_do_not_say_the_version_are_not_stamped(tmp_path: Path, fake_go: Path) -> None:
    """The ldflags must take: a build whose kube-apiserver says another version fails."""
    text = (fake_go / "go").read_text().replace('"Kubernetes " + said[0]', '"Kubernetes v0.0.0-master"')
    (fake_go / "go").write_text(text)
    layout = Layout(tmp_path / "kube", NEWEST)
    error = _failed(layout)
    assert "--version says 'Kubernetes v0.0.0-master', not 'Kubernetes v1.37.2'" in error.message
    assert not layout.stamp.exists()


def _failed(layout: Layout) -> ProvisionError:
    with pytest.raises(ProvisionError) as caught:
        provision(NEWEST, layout=layout, progress=lambda _: None)
    return caught.value


def test_an_unreachable_module_proxy_is_one_paragraph_naming_it(
    tmp_path: Path, fake_go: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_GO_OFFLINE", "1")
    monkeypatch.setenv("GOPROXY", "https://mirror.example")
    layout = Layout(tmp_path / "kube", NEWEST)
    error = _failed(layout)
    assert error.message == "step 'go mod download' failed with exit code 1"
    assert "the Go module proxy (https://mirror.example) could not be reached" in error.hint
    assert "no such host" in layout.build_log.read_text()
    assert not layout.stamp.exists() and not layout.bin_dir.exists()


def test_a_go_older_than_the_release_needs_is_named_with_what_to_do(
    tmp_path: Path, fake_go: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_GO_VERSION", "go1.19.8")
    error = _failed(Layout(tmp_path / "kube", NEWEST))
    assert error.message == f"kube needs Go 1.26.0 or newer; {fake_go / 'go'} is go1.19.8"
    assert "GOTOOLCHAIN=go1.26.0" in error.hint
    assert _builds(fake_go) == []


def test_a_named_toolchain_is_fetched_instead_of_refusing_an_old_go(
    tmp_path: Path, fake_go: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_GO_VERSION", "go1.19.8")
    monkeypatch.setenv("GOTOOLCHAIN", "go1.27.3")
    layout = Layout(tmp_path / "kube", NEWEST)
    said: list[str] = []
    provision(NEWEST, layout=layout, progress=said.append)
    assert all(build["env"]["GOTOOLCHAIN"] == "go1.27.3" for build in _builds(fake_go))  # type: ignore[index]
    assert any("GOTOOLCHAIN=go1.27.3 (fetched from the module proxy)" in line for line in said)


def test_no_go_at_all_says_how_to_get_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNITED_GO", str(tmp_path / "missing" / "go"))
    error = _failed(Layout(tmp_path / "kube", NEWEST))
    assert error.message.startswith("no Go found to build with")
    assert "UNITED_GO=/path/to/bin/go" in error.hint and "go.dev/dl" in error.hint
    assert os.environ["UNITED_GO"] in error.message
