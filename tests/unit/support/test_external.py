"""UNITED_E2E_KUBECONFIG: which cluster the e2e suite uses, and what it skips there."""

from __future__ import annotations

import base64
import re
import stat
from pathlib import Path

import pytest
import yaml

from tests.support.external import (
    LOCAL_FIXTURES,
    LOCAL_ONLY,
    LOCAL_TESTS,
    ExternalCluster,
    Target,
    local_only_reason,
    resolve,
    target,
)
from united.devcluster.credentials import StaticUser
from united.kube.kubeconfig import render_kubeconfig

REPO = Path(__file__).resolve().parents[3]
TOKEN = "s3cr3t-token"


def test_no_variable_means_the_local_control_plane() -> None:
    assert target({}) is None
    assert target({"UNITED_E2E_KUBECONFIG": "  ", "UNITED_E2E_CONTEXT": "prod"}) is None


def test_the_variable_names_the_cluster_and_optionally_a_context() -> None:
    assert target({"UNITED_E2E_KUBECONFIG": "/k/config"}) == Target(Path("/k/config"))
    assert target({"UNITED_E2E_KUBECONFIG": "~/k", "UNITED_E2E_CONTEXT": "kind"}) == Target(
        Path("~/k").expanduser(), "kind"
    )


@pytest.mark.parametrize(
    ("nodeid", "fixtures", "why"),
    [
        ("tests/chaos/test_fault_storm.py::test_storm", ["kube"], "restarts, kills"),
        ("tests/e2e/test_packaging.py::test_install_applies_and_reapplies", [], "kubectl"),
        ("tests/e2e/controller/test_controller.py::test_kubectl_scale[2]", [], "kubectl"),
        ("tests/e2e/test_smoke.py::test_deployment", ["kube", "namespace", "sim", "simulation"], "(fixture sim)"),
        ("tests/e2e/multicluster/test_planes.py::test_x", ["members"], "member control planes"),
        ("tests/e2e/workloadspread/test_spread.py::test_x", ["spreading"], "webhook on 127.0.0.1"),
        ("tests/e2e/test_faultproxy_e2e.py::test_x", ["unprivileged_user", "proxy_certs"], "fault proxy"),
    ],
)
def test_what_needs_local_components_is_skipped_with_the_reason(nodeid: str, fixtures: list[str], why: str) -> None:
    reason = local_only_reason(nodeid, fixtures)
    assert reason is not None and reason.startswith(f"{LOCAL_ONLY}: ") and why in reason


@pytest.mark.parametrize(
    "nodeid",
    [
        "tests/e2e/controller/test_controller.py::test_kubectl_scale_is_not_a_prefix",
        "tests/e2e/controller/test_ownership.py::test_x",
        "tests/e2e/test_access_control.py::test_a_wrong_token_is_unauthorized",
        "tests/e2e/runtime/test_events.py::test_missing_rbac_fails_quietly",
    ],
)
def test_the_rest_runs_against_the_existing_cluster(nodeid: str) -> None:
    """The controller's ``simulation`` is None there (real nodes), and ``unprivileged_user`` a
    ServiceAccount without bindings, so neither counts."""
    fixtures = ["kube", "namespace", "controller", "simulation", "cluster", "unprivileged_user"]
    assert local_only_reason(nodeid, fixtures) is None


def test_every_listed_test_and_fixture_exists() -> None:
    """The lists name real files, tests and fixtures (a rename must not silently un-skip)."""
    sources = "\n".join(p.read_text() for p in (REPO / "tests").rglob("*.py"))
    for prefix in LOCAL_TESTS:
        path, _, name = prefix.partition("::")
        assert (REPO / path).exists(), path
        if name:
            assert re.search(rf"def {name}\(", (REPO / path).read_text()), prefix
    for fixture in set(LOCAL_FIXTURES) - {"joined"}:
        assert re.search(rf"def {fixture}\(", sources), fixture


def _kubeconfig(tmp_path: Path) -> dict[str, object]:
    local = render_kubeconfig(server="https://a:6443", ca_cert=Path("pki/ca.crt"), user="admin", token=TOKEN)
    inline = render_kubeconfig(server="https://b:6443", ca_cert=None, user="robot", token=TOKEN, cluster="b")
    inline["clusters"][0]["cluster"]["certificate-authority-data"] = base64.b64encode(b"CA-B").decode()
    local["clusters"] += inline["clusters"]
    local["users"] += inline["users"]
    local["contexts"] += inline["contexts"]
    local["users"][0]["user"]["client-key"] = "keys/admin.key"
    return local


def test_resolve_picks_the_context_and_makes_paths_absolute(tmp_path: Path) -> None:
    config = _kubeconfig(tmp_path)
    current = resolve(config, base=tmp_path, context=None, where="k")
    assert current.server == "https://a:6443"
    assert current.ca_file == tmp_path / "pki" / "ca.crt" and current.ca_data is None
    assert current.config["users"][0]["user"]["client-key"] == str(tmp_path / "keys" / "admin.key")
    other = resolve(config, base=tmp_path, context="robot@b", where="k")
    assert (other.server, other.ca_file, other.ca_data) == ("https://b:6443", None, b"CA-B")
    assert other.config["current-context"] == "robot@b"
    assert config["current-context"] == "admin@united-dev", "the input is left alone"


@pytest.mark.parametrize(
    ("change", "context", "message"),
    [
        (lambda c: c.pop("current-context"), None, "k: current-context: Required value"),
        (lambda c: None, "nope", "k: contexts: Not found: 'nope'"),
        (lambda c: c["clusters"][0]["cluster"].pop("server"), None, "its cluster has no server"),
    ],
)
def test_resolve_names_what_is_wrong_but_no_credential(
    tmp_path: Path, change: object, context: str | None, message: str
) -> None:
    config = _kubeconfig(tmp_path)
    change(config)  # type: ignore[operator]
    with pytest.raises(ValueError, match=re.escape(message)) as failure:
        resolve(config, base=tmp_path, context=context, where="k")
    assert TOKEN not in str(failure.value)


def test_an_external_cluster_keeps_private_copies_and_removes_them(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(_kubeconfig(tmp_path)))
    existing = ExternalCluster(Target(path, "robot@b"))
    try:
        assert existing.server == "https://b:6443"
        assert existing.ca_cert is not None and existing.ca_cert.read_bytes() == b"CA-B"
        copy = yaml.safe_load(existing.admin_kubeconfig.read_text())
        assert copy["current-context"] == "robot@b"
        assert stat.S_IMODE(existing.admin_kubeconfig.stat().st_mode) == 0o600
        existing.check_alive()
    finally:
        existing.stop()
    assert not existing.workdir.exists()
    assert path.exists(), "the given kubeconfig is not touched"


def test_a_service_account_user_gets_a_kubeconfig_like_a_static_one(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(_kubeconfig(tmp_path)))
    existing = ExternalCluster(Target(path))
    try:
        user = StaticUser("system:serviceaccount:home:nobody", token=TOKEN)
        existing.users[user.name] = user
        written = existing.kubeconfig_for(user.name, namespace="ns")
        assert ":" not in written.name, "kubeconfig loaders split paths at ':'"
        config = yaml.safe_load(written.read_text())
        assert config["users"] == [{"name": user.name, "user": {"token": TOKEN}}]
        assert config["clusters"][0]["cluster"] == {
            "server": "https://a:6443",
            "certificate-authority": str(tmp_path / "pki" / "ca.crt"),
        }
        assert config["contexts"][0]["context"]["namespace"] == "ns"
    finally:
        existing.stop()
