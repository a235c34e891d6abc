"""The wrapper modules, version ldflags and environment of a build from Go modules."""

import os
from pathlib import Path

import pytest

from united.devcluster.gomodules import (
    KUBERNETES_MODULE,
    etcd_wrapper_go_mod,
    go_version_at_least,
    json_stream,
    kube_wrapper_go_mod,
    module_go_env,
    names_release,
    parse_go_mod,
    replace_block,
    staging_modules,
    version_ldflags,
)
from united.devcluster.versions import KubeVersion

V = KubeVersion(1, 37, 2)

# Shaped like k8s.io/kubernetes's go.mod: staging modules required at v0.0.0 in a block and
# one on a line of its own, replaced by ./staging paths (one replaced but not required), a
# third-party replacement by a released version, comments everywhere.
KUBE_GO_MOD = """\
// This is a generated file. Do not edit directly.

module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require (
\tgithub.com/blang/semver/v4 v4.0.0
\tk8s.io/api v0.0.0
\tk8s.io/apimachinery v0.0.0 // the core
\tk8s.io/client-go v0.0.0
\tk8s.io/klog/v2 v2.140.0
\tk8s.io/utils v0.0.0-20260626114624-be93311217bd
)

require k8s.io/cri-streaming v0.0.0

require (
\tgithub.com/pmezard/go-difflib v1.0.0 // indirect
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/apimachinery => ./staging/src/k8s.io/apimachinery
\tk8s.io/client-go => ./staging/src/k8s.io/client-go
\tk8s.io/sample-controller => ./staging/src/k8s.io/sample-controller
)

replace k8s.io/cri-streaming => ./staging/src/k8s.io/cri-streaming

replace github.com/pmezard/go-difflib => github.com/pmezard/go-difflib v1.0.1-fork
"""


def test_the_go_mod_is_read_in_both_forms() -> None:
    mod = parse_go_mod(KUBE_GO_MOD)
    assert mod.go == "1.26.0"
    assert mod.godebug == ("default=go1.26",)
    assert mod.requires["k8s.io/apimachinery"] == "v0.0.0"
    assert mod.requires["k8s.io/cri-streaming"] == "v0.0.0"
    assert mod.requires["github.com/pmezard/go-difflib"] == "v1.0.0"
    assert mod.replaces["k8s.io/cri-streaming"] == "./staging/src/k8s.io/cri-streaming"
    assert mod.replaces["github.com/pmezard/go-difflib"] == "github.com/pmezard/go-difflib v1.0.1-fork"


def test_staging_modules_are_the_required_ones_replaced_by_staging_paths() -> None:
    assert staging_modules(parse_go_mod(KUBE_GO_MOD)) == [
        "k8s.io/api",
        "k8s.io/apimachinery",
        "k8s.io/client-go",
        "k8s.io/cri-streaming",
    ]


def test_the_replace_block_pins_each_staging_module_to_the_release_and_keeps_versioned_replacements() -> None:
    assert replace_block(parse_go_mod(KUBE_GO_MOD), V) == [
        "k8s.io/api => k8s.io/api v0.37.2",
        "k8s.io/apimachinery => k8s.io/apimachinery v0.37.2",
        "k8s.io/client-go => k8s.io/client-go v0.37.2",
        "k8s.io/cri-streaming => k8s.io/cri-streaming v0.37.2",
        "github.com/pmezard/go-difflib => github.com/pmezard/go-difflib v1.0.1-fork",
    ]


def test_a_staging_module_added_by_a_later_release_is_pinned_too() -> None:
    later = KUBE_GO_MOD.replace("require k8s.io/cri-streaming v0.0.0", "require k8s.io/streaming v0.0.0").replace(
        "replace k8s.io/cri-streaming => ./staging/src/k8s.io/cri-streaming",
        "replace k8s.io/streaming => ./staging/src/k8s.io/streaming",
    )
    block = replace_block(parse_go_mod(later), KubeVersion(1, 38, 0))
    assert "k8s.io/streaming => k8s.io/streaming v0.38.0" in block
    assert not any("cri-streaming" in line for line in block)


def test_a_go_mod_without_staging_modules_or_with_another_local_replacement_is_refused() -> None:
    with pytest.raises(ValueError, match="no staging modules"):
        replace_block(parse_go_mod("module m\n\ngo 1.26\n\nrequire k8s.io/api v0.37.2\n"), V)
    odd = KUBE_GO_MOD + "replace github.com/x/y => ../y\n"
    with pytest.raises(ValueError, match=r"replaces github.com/x/y by a directory: \.\./y"):
        replace_block(parse_go_mod(odd), V)
    with pytest.raises(ValueError, match="no 'go' directive"):
        parse_go_mod("module m\n")


def test_the_kube_wrapper_is_a_go_mod_that_reads_back() -> None:
    text = kube_wrapper_go_mod(KUBE_GO_MOD, V)
    wrapper = parse_go_mod(text)
    assert wrapper.go == "1.26.0" and wrapper.godebug == ("default=go1.26",)
    assert wrapper.requires == {KUBERNETES_MODULE: "v1.37.2"}
    assert wrapper.replaces["k8s.io/client-go"] == "k8s.io/client-go v0.37.2"
    assert "./staging" not in text


def test_the_etcd_wrapper_requires_the_server_module_at_its_go_line() -> None:
    etcd_go_mod = (
        "module go.etcd.io/etcd/server/v3\n\ngo 1.26.0\n\ntoolchain go1.26.10\n\n"
        "require go.etcd.io/etcd/api/v3 v3.6.16\n\nreplace (\n\tgo.etcd.io/etcd/api/v3 => ../api\n)\n"
    )
    wrapper = parse_go_mod(etcd_wrapper_go_mod(etcd_go_mod, "v3.6.16"))
    assert wrapper.go == "1.26.0"
    assert wrapper.requires == {"go.etcd.io/etcd/server/v3": "v3.6.16"}
    assert wrapper.replaces == {}


def test_version_ldflags_set_both_version_packages() -> None:
    flags = version_ldflags(V, build_date="2026-10-27T12:01:04Z").split(" ")
    assert flags[:2] == ["-s", "-w"]
    settings = dict(flag.split("=", 1) for flag in flags[2:] if flag != "-X")
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        assert settings[f"{package}.gitVersion"] == "v1.37.2"
        assert settings[f"{package}.gitMajor"] == "1"
        assert settings[f"{package}.gitMinor"] == "37"
        assert settings[f"{package}.gitCommit"] == ""
        assert settings[f"{package}.gitTreeState"] == "archive"
        assert settings[f"{package}.buildDate"] == "2026-10-27T12:01:04Z"
    assert flags.count("-X") == 12


def test_an_ldflags_value_with_a_space_is_refused() -> None:
    with pytest.raises(ValueError, match="buildDate"):
        version_ldflags(V, build_date="27 Oct 2026")


@pytest.mark.parametrize(
    ("reported", "required", "enough"),
    [
        ("go1.26.8", "1.26.0", True),
        ("go1.26.8", "1.26", True),
        ("go1.26", "1.26.0", True),
        ("go1.26.8", "1.27.0", False),
        ("go1.19.8", "1.26.0", False),
        ("go1.30.1", "1.26.0", True),
        ("devel go1.27-abc", "1.27.0", True),
    ],
)
def test_go_version_comparison(reported: str, required: str, enough: bool) -> None:
    assert go_version_at_least(reported, required) is enough


@pytest.mark.parametrize(
    ("toolchain", "release"),
    [("go1.27.3", True), ("go1.27", True), ("local", False), ("auto", False), ("go1.27.3+auto", False), ("", False)],
)
def test_only_a_named_release_lets_the_go_command_fetch_a_toolchain(toolchain: str, release: bool) -> None:
    assert names_release(toolchain) is release


def test_json_stream_reads_concatenated_values() -> None:
    assert json_stream('{\n\t"Path": "a"\n}\n{"Path": "b"}\n') == [{"Path": "a"}, {"Path": "b"}]
    assert json_stream("  ") == []


def test_the_build_environment_is_self_contained(tmp_path: Path) -> None:
    environ = {
        "PATH": "/usr/bin",
        "GOROOT": "/usr/lib/go-1.19",
        "GOFLAGS": "-mod=vendor",
        "GOTOOLCHAIN": "auto",
        "GOPATH": "/root/go",
        "GOWORK": "/w/go.work",
        "GOPROXY": "https://mirror.example",
        "HOME": "/h",
    }
    go = Path("/usr/local/go/bin/go")
    env = module_go_env(environ, go=go, gopath=tmp_path / "gopath", cache=tmp_path / "cache")
    assert env["PATH"].split(os.pathsep)[0] == "/usr/local/go/bin"
    assert "GOROOT" not in env
    assert env["GOPATH"] == str(tmp_path / "gopath")
    assert env["GOMODCACHE"] == str(tmp_path / "gopath" / "pkg" / "mod")
    assert env["GOCACHE"] == str(tmp_path / "cache")
    assert env["GOTOOLCHAIN"] == "local"
    assert env["GOWORK"] == "off"
    assert env["CGO_ENABLED"] == "0"
    assert "-mod=mod" in env["GOFLAGS"].split() and "-modcacherw" in env["GOFLAGS"].split()
    assert env["GOPROXY"] == "https://mirror.example"
    fetching = module_go_env(environ, go=go, gopath=tmp_path, cache=tmp_path, toolchain="go1.27.3")
    assert fetching["GOTOOLCHAIN"] == "go1.27.3"
