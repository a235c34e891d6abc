"""A member cluster's kubeconfig comes from a Secret: it must be self-contained (nothing the
controller would read from its own disk or run), and no message may quote a value."""

from __future__ import annotations

import base64
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio.config import kube_config

from united.kube.client import MEMBER_MAX_ANSWER, KubeClient
from united.kube.errors import ConfigError
from united.kube.kubeconfig import check_inline
from united.runtime.certificates import issue

WHERE = "secret united-clusters/member-1 key kubeconfig"
TOKEN = "s3cr3t-token-value"


def config(*, user: dict[str, Any] | None = None, cluster: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "m", "cluster": cluster or {"server": "https://10.0.0.7:6443"}}],
        "users": [{"name": "u", "user": user if user is not None else {"token": TOKEN}}],
        "contexts": [{"name": "c", "context": {"cluster": "m", "user": "u"}}],
        "current-context": "c",
    }


def refusal(cfg: object) -> str:
    with pytest.raises(ConfigError) as raised:
        check_inline(cfg, WHERE)
    assert raised.value.where == WHERE
    return raised.value.message


real_mkdtemp = tempfile.mkdtemp


def b64(pem: bytes) -> str:
    return base64.b64encode(pem).decode()


SELF = "Forbidden: a member kubeconfig must be self-contained (token or client-certificate-data)"


@pytest.mark.parametrize(
    ("user", "field"),
    [
        ({"exec": {"command": "/bin/steal", "apiVersion": "client.authentication.k8s.io/v1beta1"}}, "exec"),
        ({"auth-provider": {"name": "oidc", "config": {"id-token": TOKEN}}}, "auth-provider"),
        ({"tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"}, "tokenFile"),
        ({"client-certificate": "/etc/united/tls.crt", "client-key-data": "eA=="}, "client-certificate"),
        ({"client-certificate-data": "eA==", "client-key": "/etc/united/tls.key"}, "client-key"),
    ],
)
def test_user_fields_that_read_files_or_run_programs_are_refused(user: dict[str, Any], field: str) -> None:
    message = refusal(config(user=user))
    assert message == f"users[0].user.{field}: {SELF}"
    assert "/" not in message.split(":", 1)[0] and TOKEN not in message and "steal" not in message


def test_a_file_path_for_the_ca_is_refused() -> None:
    cluster = {"server": "https://10.0.0.7:6443", "certificate-authority": "/var/run/secrets/ca.crt"}
    assert refusal(config(cluster=cluster)) == f"clusters[0].cluster.certificate-authority: {SELF}"


def test_userinfo_in_the_server_url_is_refused_without_quoting_it() -> None:
    message = refusal(config(cluster={"server": f"https://admin:{TOKEN}@10.0.0.7:6443"}))
    assert message == "clusters[0].cluster.server: Forbidden: credentials in the URL (use a token)"


def test_skipping_tls_verification_is_refused_but_false_is_fine() -> None:
    insecure = {"server": "https://10.0.0.7:6443", "insecure-skip-tls-verify": True}
    assert refusal(config(cluster=insecure)) == (
        "clusters[0].cluster.insecure-skip-tls-verify: Forbidden: the server must be verified"
    )
    check_inline(config(cluster={**insecure, "insecure-skip-tls-verify": False}), WHERE)


@pytest.mark.parametrize("value", [True, "true", 1, "false", "False", 0, None, "", "no"])
def test_verification_can_only_be_on(value: object) -> None:
    """The library reads any non-empty value, even the string ``'false'``, as "skip": only the
    boolean ``false`` (or no key) is accepted."""
    insecure = {"server": "https://10.0.0.7:6443", "insecure-skip-tls-verify": value}
    assert refusal(config(cluster=insecure)) == (
        "clusters[0].cluster.insecure-skip-tls-verify: Forbidden: the server must be verified"
    )


def test_a_proxy_only_where_the_cluster_allows_it() -> None:
    proxied = config(cluster={"server": "https://10.0.0.7:6443", "proxy-url": "http://proxy:3128"})
    assert refusal(proxied) == (
        "clusters[0].cluster.proxy-url: Forbidden: no proxy unless the Cluster sets allowProxy: true"
    )
    check_inline(proxied, WHERE, allow_proxy=True)


@pytest.mark.parametrize("server", ["http://10.0.0.7:8080", "HTTP://m", "ftp://m", "10.0.0.7:6443"])
def test_only_https(server: str) -> None:
    message = refusal(config(cluster={"server": server}))
    assert message == "clusters[0].cluster.server: Forbidden: only https:// (the token must not travel in clear)"


async def test_a_member_client_is_untrusted_and_bounded() -> None:
    client = await KubeClient.from_kubeconfig_data(yaml.safe_dump(config()).encode(), where=WHERE)
    try:
        assert client.untrusted and client.max_answer == MEMBER_MAX_ANSWER
        assert client._api.configuration.verify_ssl
    finally:
        await client.close()


def test_every_entry_is_checked_not_only_the_current_context() -> None:
    cfg = config()
    cfg["users"].append({"name": "other", "user": {"exec": {"command": "x"}}})
    assert refusal(cfg) == f"users[1].user.exec: {SELF}"


def test_self_contained_configs_pass_and_the_structure_is_checked_too() -> None:
    check_inline(config(), WHERE)
    check_inline(config(user={"client-certificate-data": "eA==", "client-key-data": "eA=="}), WHERE)
    assert refusal(["not", "a", "mapping"]).startswith("not a kubeconfig")
    broken = config()
    broken["current-context"] = "missing"
    assert refusal(broken) == "context 'missing' is not among its contexts ('c')"


async def test_a_client_from_data_talks_to_the_named_server_with_the_token() -> None:
    client = await KubeClient.from_kubeconfig_data(yaml.safe_dump(config()).encode(), where=WHERE, request_timeout=3)
    try:
        assert client.host == "https://10.0.0.7:6443"
        assert client.retry_attempts == 3
        assert client._api.configuration.api_key == {"BearerToken": f"Bearer {TOKEN}"}
    finally:
        await client.close()


async def test_certificate_data_files_are_gone_once_the_client_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    bundle = issue(["member"], now=datetime.now(UTC))
    cfg = config(
        cluster={"server": "https://10.0.0.7:6443", "certificate-authority-data": b64(bundle.ca_bundle)},
        user={"client-certificate-data": b64(bundle.cert_pem), "client-key-data": b64(bundle.key_pem)},
    )
    made: list[str] = []

    def mkdtemp(**kwargs: Any) -> str:
        made.append(real_mkdtemp(**kwargs))
        assert os.stat(made[-1]).st_mode & 0o777 == 0o700
        return made[-1]

    monkeypatch.setattr("united.kube.client.tempfile.mkdtemp", mkdtemp)
    for _ in range(2):  # the second load must not be handed the first one's removed files
        client = await KubeClient.from_kubeconfig_data(
            yaml.safe_dump(config() | cfg).encode(), where=WHERE, request_timeout=3, retry_attempts=1
        )
        await client.close()
    assert len(made) == 2 and not any(os.path.exists(d) for d in made)  # noqa: ASYNC240
    assert list(tmp_path.iterdir()) == []  # noqa: ASYNC240
    assert not any(os.path.dirname(p) in made for p in kube_config._temp_files.values())


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xff" + TOKEN.encode(), "not UTF-8 text"),
        (f"users: [token: {TOKEN}\n  - :".encode(), "not valid YAML"),
        (
            yaml.safe_dump(config(cluster={"server": "https://x", "certificate-authority-data": TOKEN})).encode(),
            "cannot be used",
        ),
    ],
)
async def test_unusable_data_is_one_line_without_the_bytes(data: bytes, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        await KubeClient.from_kubeconfig_data(data, where=WHERE, request_timeout=3)
    assert raised.value.where == WHERE and raised.value.message.startswith(message)
    assert TOKEN not in str(raised.value) and "\n" not in str(raised.value)
