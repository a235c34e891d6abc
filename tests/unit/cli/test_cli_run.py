"""``united run``'s start-up problems, through a subprocess each: one line naming what is wrong
and where, exit 2, never a traceback (the same contract as ``validate``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from tests.support.unprivileged import nobody_argv
from united.runtime.certificates import issue

CONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "current-context": "ctx",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}],
    "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
    "users": [{"name": "u", "user": {"token": "t"}}],
}


def united_run(*args: str, env: dict[str, str] | None = None, argv: list[str] | None = None) -> list[str]:
    """Run ``united run ARGS`` (``argv``: how to start the interpreter); assert exit 2 without a
    traceback; return stderr's lines."""
    clean = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    result = subprocess.run(
        [*(argv or [sys.executable]), "-m", "united", "run", *args],
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, result.stderr
    return result.stderr.splitlines()


def kubeconfig(path: Path, **changes: object) -> Path:
    config = {**CONFIG, **changes}
    path.write_text(yaml.safe_dump({k: v for k, v in config.items() if v is not None}))
    return path


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"current-context": None}, "no current-context is set; choose one with `kubectl config use-context NAME`"),
        ({"current-context": "prod"}, "context 'prod' is not among its contexts ('ctx')"),
        (
            {"contexts": [{"name": "ctx", "context": {"cluster": "gone", "user": "u"}}]},
            "context 'ctx': cluster 'gone' is not among its clusters ('c')",
        ),
        (
            {"contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "who"}}]},
            "context 'ctx': user 'who' is not among its users ('u')",
        ),
        (
            {"clusters": [{"name": "c", "cluster": {"server": "127.0.0.1:6443"}}]},
            "cluster 'c': server '127.0.0.1:6443' is not an http(s) URL",
        ),
        ({"clusters": None, "contexts": None, "users": None}, "context 'ctx' is not among its contexts (none)"),
    ],
)
def test_broken_kubeconfig(tmp_path: Path, changes: dict[str, object], expected: str) -> None:
    path = kubeconfig(tmp_path / "config", **changes)
    assert united_run("--kubeconfig", str(path)) == [f"kubeconfig {path}: {expected}"]


def test_missing_kubeconfig(tmp_path: Path) -> None:
    assert united_run("--kubeconfig", str(tmp_path / "nope")) == [f"kubeconfig {tmp_path / 'nope'}: no such file"]


def test_kubeconfig_variable_names_a_missing_file(tmp_path: Path) -> None:
    lines = united_run(env={"KUBECONFIG": str(tmp_path / "nope")})
    assert lines == [f"kubeconfig {tmp_path / 'nope'}: no such file"]


def test_no_configuration_at_all(tmp_path: Path) -> None:
    """Not in a pod, no $KUBECONFIG, no ~/.kube/config: say all three and what to pass."""
    lines = united_run(env={"HOME": str(tmp_path)})
    assert lines == [
        f"kubeconfig {tmp_path}/.kube/config: no such file, $KUBECONFIG is unset and this is not a pod "
        "(KUBERNETES_SERVICE_HOST is unset): pass --kubeconfig FILE"
    ]


def test_kubeconfig_is_a_directory(tmp_path: Path) -> None:
    assert united_run("--kubeconfig", str(tmp_path)) == [f"kubeconfig {tmp_path}: is a directory, not a file"]


def test_kubeconfig_is_not_yaml(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text("clusters: [a\n")
    [line] = united_run("--kubeconfig", str(path))
    assert line.startswith(f"kubeconfig {path}: not valid YAML (line 2): expected ',' or ']'")


def test_kubeconfig_is_not_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text("- just a list\n")
    [line] = united_run("--kubeconfig", str(path))
    assert line == f"kubeconfig {path}: not a kubeconfig (expected a YAML mapping with clusters, contexts and users)"


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory an unprivileged user can reach (pytest's own lives under a 0700 one)."""
    with tempfile.TemporaryDirectory(prefix="united-run-") as name:
        Path(name).chmod(0o755)
        yield Path(name)


@pytest.mark.as_nobody
def test_kubeconfig_not_readable(shared_dir: Path, nobody_site: Path) -> None:
    """Run as an unprivileged user (setpriv) on root's 0600 kubeconfig."""
    path = kubeconfig(shared_dir / "config")
    path.chmod(0o600)
    env = {"PYTHONPATH": str(nobody_site)}
    lines = united_run("--kubeconfig", str(path), env=env, argv=nobody_argv())
    assert lines == [f"kubeconfig {path}: cannot read it: Permission denied"]


def test_in_cluster_without_a_service_account_token() -> None:
    """KUBERNETES_SERVICE_HOST says "pod", but no token is mounted (automountServiceAccountToken: false)."""
    lines = united_run(env={"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"})
    assert lines == [
        "in-cluster configuration: Service token file does not exist (/var/run/secrets/kubernetes.io/serviceaccount): "
        "KUBERNETES_SERVICE_HOST is set, so this should be a pod with a mounted ServiceAccount token; "
        "or pass --kubeconfig FILE"
    ]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (("--workers", "0"), "--workers: Invalid value: 0: must be at least 1"),
        (("--http-port", "70000"), "--http-port: Invalid value: 70000: must be between 0 and 65535"),
        (("--discovery-interval", "0"), "--discovery-interval: Invalid value: 0.0: must be a positive number"),
        (("--discovery-interval", "nan"), "--discovery-interval: Invalid value: nan: must be a positive number"),
        (("--selector", "tier in (a"), '--selector: Invalid value: "tier in (a": unable to parse requirement'),
        (("--namespace", "Team_A"), '--namespace: Invalid value: "Team_A": a lowercase RFC 1123 label must consist'),
        (("--leader-elect", "--leader-election-id", "Lease!"), '--leader-election-id: Invalid value: "Lease!"'),
        (("--webhook-port", "-1"), "--webhook-port: Invalid value: -1: must be between 0 and 65535"),
        (("--webhook-port", "9443", "--webhook-url", "http://127.0.0.1:9443"),
         '--webhook-url: Invalid value: "http://127.0.0.1:9443": must be an https URL'),
        (("--webhook-port", "9443", "--webhook-url", "https://127.0.0.1:9443/?a=b"),
         '--webhook-url: Invalid value: "https://127.0.0.1:9443/?a=b": must not have a query or a fragment'),
        (("--webhook-port", "9443", "--webhook-url", "https://127.0.0.1:99999"),
         '--webhook-url: Invalid value: "https://127.0.0.1:99999": Port out of range 0-65535'),
        (("--webhook-url", "https://127.0.0.1:9443"), "--webhook-url: needs --webhook-port"),
        (("--controller-namespace", "Sys"), '--controller-namespace: Invalid value: "Sys"'),
        (("--webhook-port", "9443", "--webhook-client-ca", "/nonexistent/ca.pem"),
         '--webhook-client-ca: Invalid value: "/nonexistent/ca.pem": cannot read it: No such file or directory'),
    ],
)  # fmt: skip
def test_bad_flag_values(tmp_path: Path, flags: tuple[str, ...], expected: str) -> None:
    [line] = united_run("--kubeconfig", str(kubeconfig(tmp_path / "config")), *flags)
    assert line.startswith(expected), line


def test_a_webhook_client_ca_must_be_a_pem_ca_and_needs_the_webhook_server(tmp_path: Path) -> None:
    config, ca = str(kubeconfig(tmp_path / "config")), tmp_path / "ca.pem"
    ca.write_text("not a certificate\n")
    [line] = united_run("--kubeconfig", config, "--webhook-port", "9443", "--webhook-client-ca", str(ca))
    assert line.startswith(f'--webhook-client-ca: Invalid value: "{ca}": not a PEM CA certificate')
    ca.write_bytes(issue(["127.0.0.1"], now=datetime.now(UTC)).ca_bundle)
    [line] = united_run("--kubeconfig", config, "--webhook-client-ca", str(ca))
    assert line == "--webhook-client-ca: needs --webhook-port (the server it protects)"


def test_http_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        lines = united_run("--kubeconfig", str(kubeconfig(tmp_path / "config")), "--http-port", str(port))
    assert lines == [f"--http-port: cannot listen on 0.0.0.0:{port}: address already in use"]
