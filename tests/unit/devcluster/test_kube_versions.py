"""Which Kubernetes version is asked for: releases, aliases, the environment variable."""

from pathlib import Path

import pytest

from united.cli import main as cli_main
from united.devcluster.__main__ import main as devcluster_main
from united.devcluster.versions import (
    DEBIAN,
    DEFAULT,
    NEWEST,
    KubeVersion,
    chosen,
    requested,
    resolve,
)


def test_releases_parse_with_or_without_the_v() -> None:
    assert KubeVersion.parse("1.37.2") == KubeVersion.parse("v1.37.2") == KubeVersion(1, 37, 2)
    assert str(KubeVersion(1, 37, 2)) == "1.37.2" and KubeVersion(1, 37, 2).tag == "v1.37.2"
    assert KubeVersion(1, 37, 2).staging_version == "v0.37.2"
    assert KubeVersion(1, 9, 0) < KubeVersion(1, 20, 2) < KubeVersion(1, 37, 2)


@pytest.mark.parametrize("text", ["", "1.37", "1.38.0-beta.0", "latest", "1.37.2.1", "v"])
def test_anything_else_is_not_a_release(text: str) -> None:
    with pytest.raises(ValueError, match="is not a Kubernetes release"):
        resolve(text)


def test_aliases_and_the_two_kinds_of_build() -> None:
    assert resolve("newest") == NEWEST and resolve("Default") == DEFAULT == NEWEST and resolve("floor") == DEBIAN
    assert resolve("1.20.2").from_debian and not resolve("1.36.3").from_debian
    assert resolve("v1.30.0") == KubeVersion(1, 30, 0)


@pytest.mark.parametrize("text", ["1.20.5", "1.29.9", "1.24.0"])
def test_a_release_that_cannot_be_built_here_says_what_can(text: str) -> None:
    with pytest.raises(ValueError, match=r"cannot be built here: 1\.20\.2 comes from Debian.s sources, 1\.30 and"):
        resolve(text)


def test_the_environment_variable_picks_the_tests_version() -> None:
    assert requested({}) == DEFAULT
    assert requested({"UNITED_KUBE_VERSION": " "}) == DEFAULT
    assert requested({"UNITED_KUBE_VERSION": "newest"}) == NEWEST
    with pytest.raises(ValueError, match=r"^UNITED_KUBE_VERSION: '1\.x' is not"):
        requested({"UNITED_KUBE_VERSION": "1.x"})


def test_an_option_wins_over_the_environment_and_its_errors_name_it() -> None:
    environ = {"UNITED_KUBE_VERSION": "not-a-version"}
    assert chosen("1.20.2", environ) == DEBIAN
    with pytest.raises(ValueError, match=r"^--kube-version: '2' is not"):
        chosen("2", {})
    with pytest.raises(ValueError, match=r"^UNITED_KUBE_VERSION: "):
        chosen(None, environ)


def test_provision_takes_the_version_from_the_option_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("UNITED_KUBE_VERSION", raising=False)
    assert devcluster_main(["provision", "--check"]) == 1
    assert capsys.readouterr().out == f"{tmp_path / 'united' / f'kube-{NEWEST}'}: not provisioned\n"
    assert devcluster_main(["provision", "--check", "--kube-version", "floor"]) == 1
    assert capsys.readouterr().out == f"{tmp_path / 'united' / 'kube-1.20.2'}: not provisioned\n"
    monkeypatch.setenv("UNITED_KUBE_VERSION", "1.36.3")
    assert devcluster_main(["provision", "--check"]) == 1
    assert capsys.readouterr().out == f"{tmp_path / 'united' / 'kube-1.36.3'}: not provisioned\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["provision", "--kube-version", "1.25.0"],
        ["start", "--kube-version", "v2"],
    ],
)
def test_a_bad_version_is_one_line_and_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert devcluster_main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("--kube-version: ") and err.count("\n") == 1


def test_the_demo_refuses_a_bad_version_before_building_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cli_main(["demo", "--kube-version", "1.19.16"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("--kube-version: 1.19.16 cannot be built here") and "Traceback" not in err
    assert not (tmp_path / "united").exists()
