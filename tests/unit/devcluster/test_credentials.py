"""Static token file and kubeconfig rendering."""

import os
from pathlib import Path

import pytest
import yaml

from united.devcluster.credentials import MASTERS_GROUP, StaticUser, admin_user, render_token_file, write_kubeconfig
from united.kube.kubeconfig import render_kubeconfig


def test_token_file_rows_quote_the_group_list() -> None:
    users = [
        StaticUser("alice", token="t1", groups=("g1", "g2"), uid="u1"),
        StaticUser("bob", token="t2"),
    ]
    assert render_token_file(users) == 't1,alice,u1,"g1,g2"\nt2,bob,bob\n'


def test_admin_is_a_master_with_a_fresh_token() -> None:
    one, two = admin_user(), admin_user()
    assert MASTERS_GROUP in one.groups
    assert one.token != two.token and len(one.token) >= 32


@pytest.mark.parametrize(
    "users",
    [
        [StaticUser("a", token="x"), StaticUser("a", token="y")],
        [StaticUser("a", token="has,comma")],
        [StaticUser("a", token="")],
    ],
)
def test_bad_token_files_are_refused(users: list[StaticUser]) -> None:
    with pytest.raises(ValueError):
        render_token_file(users)


def test_kubeconfig_round_trips_and_is_private(tmp_path: Path) -> None:
    config = render_kubeconfig(
        server="https://127.0.0.1:6443",
        ca_cert=tmp_path / "ca.crt",
        user="u",
        token="tok",
        namespace="ns",
    )
    path = write_kubeconfig(tmp_path / "k" / "config", config)
    loaded = yaml.safe_load(path.read_text())
    assert loaded["clusters"][0]["cluster"] == {
        "server": "https://127.0.0.1:6443",
        "certificate-authority": str(tmp_path / "ca.crt"),
    }
    assert loaded["users"] == [{"name": "u", "user": {"token": "tok"}}]
    context = loaded["contexts"][0]
    assert loaded["current-context"] == context["name"]
    assert context["context"]["namespace"] == "ns"
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_kubeconfig_is_never_readable_by_others_not_even_while_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a permissive umask, over an existing world-readable file, and with no chmod to
    fall back on: whenever the token is on disk it is in a 0600 file."""
    seen: list[tuple[str, int, bool]] = []
    replace = os.replace

    def watched(source: str, target: str) -> None:
        seen.append((Path(source).read_text(), os.stat(source).st_mode & 0o777, Path(target).read_text() == "old"))
        replace(source, target)

    def no_chmod(*args: object, **kwargs: object) -> None:
        raise AssertionError("chmod after writing leaves a window")

    path = tmp_path / "config"
    path.write_text("old")
    path.chmod(0o644)
    monkeypatch.setattr(os, "replace", watched)
    monkeypatch.setattr(Path, "chmod", no_chmod)
    monkeypatch.setattr(os, "chmod", no_chmod)
    previous = os.umask(0o022)
    try:
        write_kubeconfig(path, render_kubeconfig(server="https://h:6443", ca_cert=None, user="u", token="secret"))
    finally:
        os.umask(previous)
    [(text, mode, untouched)] = seen
    assert "secret" in text and mode == 0o600 and untouched, "written whole to a private file, then moved"
    assert path.stat().st_mode & 0o777 == 0o600
    assert "secret" in path.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["config"], "no temporary file left behind"


def test_an_embedded_ca_makes_the_kubeconfig_name_no_file(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_bytes(b"-----BEGIN CERTIFICATE-----\nX\n")
    config = render_kubeconfig(
        server="https://127.0.0.1:6443", ca_cert=tmp_path / "ca.crt", user="u", token="tok", embed_ca=True
    )
    assert config["clusters"][0]["cluster"] == {
        "server": "https://127.0.0.1:6443",
        "certificate-authority-data": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tClgK",
    }


def test_without_a_ca_the_systems_cas_are_trusted() -> None:
    config = render_kubeconfig(server="https://example.com", ca_cert=None, user="u", token="tok")
    assert config["clusters"][0]["cluster"] == {"server": "https://example.com"}
