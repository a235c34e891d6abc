"""Ports, TLS material and the components' flags."""

import subprocess
from pathlib import Path

import pytest

from united.devcluster.certs import generate, serving_extensions, subject_alt_names
from united.devcluster.cluster import (
    DEFAULT_CONTROLLERS,
    SERVICE_ACCOUNT_ISSUER,
    Ports,
    apiserver_args,
    controller_manager_args,
    etcd_args,
    free_ports,
    scheduler_args,
)
from united.devcluster.versions import (
    DEBIAN,
    NEWEST,
    KubeVersion,
    controller_manager_has_port_flag,
    has_insecure_port_flag,
    makes_token_secrets,
    scheduler_has_port_flag,
)

PORTS = Ports(2379, 2380, 6443, 10257, 10259)


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(5)
    assert len(set(ports)) == 5
    assert all(1024 <= p < 65536 for p in ports)


def test_subject_alt_names_split_ips_and_names() -> None:
    assert subject_alt_names(["127.0.0.1", "localhost", "::1"]) == ("IP:127.0.0.1,DNS:localhost,IP:::1")
    assert "extendedKeyUsage=serverAuth" in serving_extensions(["127.0.0.1"])


def test_generated_serving_cert_verifies_against_the_ca(tmp_path: Path) -> None:
    certs = generate(tmp_path)
    # -x509_strict: what Python >= 3.13's default SSL context checks (VERIFY_X509_STRICT).
    verify = subprocess.run(
        ["openssl", "verify", "-x509_strict", "-CAfile", str(certs.ca_cert), str(certs.serving_cert)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verify.returncode == 0, verify.stderr
    text = subprocess.run(
        ["openssl", "x509", "-in", str(certs.serving_cert), "-noout", "-text"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "IP Address:127.0.0.1" in text and "DNS:localhost" in text
    assert certs.service_account_key.stat().st_mode & 0o777 == 0o600
    assert "PUBLIC KEY" in certs.service_account_pub.read_text()


def test_every_component_listens_on_loopback_only(tmp_path: Path) -> None:
    certs = generate(tmp_path)
    flags = [
        *etcd_args(name="n", data_dir=tmp_path, ports=PORTS),
        *apiserver_args(ports=PORTS, certs=certs, token_file=tmp_path / "t", version=DEBIAN),
        *controller_manager_args(
            ports=PORTS, kubeconfig=tmp_path / "k", certs=certs, controllers=DEFAULT_CONTROLLERS, version=DEBIAN
        ),
        *scheduler_args(ports=PORTS, kubeconfig=tmp_path / "k", version=DEBIAN),
    ]
    urls = [f.split("=", 1)[1] for f in flags if "-urls=" in f or "address=" in f]
    assert urls
    for value in urls:
        assert "127.0.0.1" in value, value
    assert "--insecure-port=0" in flags
    assert flags.count("--port=0") == 2


def test_apiserver_uses_rbac_tokens_and_service_accounts(tmp_path: Path) -> None:
    certs = generate(tmp_path)
    flags = apiserver_args(ports=PORTS, certs=certs, token_file=tmp_path / "tokens.csv")
    assert "--authorization-mode=Node,RBAC" in flags
    assert f"--token-auth-file={tmp_path / 'tokens.csv'}" in flags
    assert f"--service-account-signing-key-file={certs.service_account_key}" in flags
    assert "--secure-port=6443" in flags
    assert "--etcd-servers=http://127.0.0.1:2379" in flags


def test_controller_manager_runs_the_token_controller_but_not_node_lifecycle(
    tmp_path: Path,
) -> None:
    certs = generate(tmp_path)
    flags = controller_manager_args(
        ports=PORTS, kubeconfig=tmp_path / "k", certs=certs, controllers=DEFAULT_CONTROLLERS
    )
    controllers = next(f for f in flags if f.startswith("--controllers=")).split("=")[1]
    names = controllers.split(",")
    assert "nodelifecycle" not in names and "*" not in names
    for needed in (
        "garbagecollector",
        "deployment",
        "replicaset",
        "statefulset",
        "namespace",
        "serviceaccount",
        "serviceaccount-token",
        "persistentvolume-binder",
        "pvc-protection",
        "pv-protection",
    ):
        assert needed in names
    assert f"--service-account-private-key-file={certs.service_account_key}" in flags
    assert "--leader-elect=false" in flags


def test_the_apiserver_serves_pprof_only_when_asked(tmp_path: Path) -> None:
    certs = generate(tmp_path)
    assert "--profiling=false" in apiserver_args(ports=PORTS, certs=certs, token_file=tmp_path / "t")
    assert "--profiling=true" in apiserver_args(ports=PORTS, certs=certs, token_file=tmp_path / "t", profiling=True)


def _all_flags(tmp_path: Path, version: KubeVersion) -> dict[str, list[str]]:
    certs = generate(tmp_path)
    return {
        "kube-apiserver": apiserver_args(ports=PORTS, certs=certs, token_file=tmp_path / "t", version=version),
        "kube-controller-manager": controller_manager_args(
            ports=PORTS, kubeconfig=tmp_path / "k", certs=certs, controllers=DEFAULT_CONTROLLERS, version=version
        ),
        "kube-scheduler": scheduler_args(ports=PORTS, kubeconfig=tmp_path / "k", version=version),
    }


def test_1_20_gets_the_insecure_port_flags_it_needs(tmp_path: Path) -> None:
    """Without ``--insecure-port=0`` / ``--port=0`` 1.20 would serve plain HTTP on 8080/10251/10252."""
    flags = _all_flags(tmp_path, DEBIAN)
    assert "--insecure-port=0" in flags["kube-apiserver"]
    assert "--port=0" in flags["kube-controller-manager"]
    assert "--port=0" in flags["kube-scheduler"]


@pytest.mark.parametrize("version", [NEWEST, KubeVersion(1, 30, 0), KubeVersion(1, 24, 0)])
def test_newer_releases_get_no_flag_they_removed(tmp_path: Path, version: KubeVersion) -> None:
    """``--insecure-port`` and the managers' ``--port`` are gone since 1.24: passing them is fatal."""
    flags = _all_flags(tmp_path, version)
    assert not any(f.startswith("--insecure-port") for f in flags["kube-apiserver"])
    assert not any(f.startswith("--port=") for f in flags["kube-controller-manager"] + flags["kube-scheduler"])
    certs = generate(tmp_path / "again")
    same = apiserver_args(ports=PORTS, certs=certs, token_file=tmp_path / "t", version=version)
    assert f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}" in same
    assert f"--service-account-signing-key-file={certs.service_account_key}" in same


def test_the_scheduler_lost_its_port_a_release_before_the_others() -> None:
    v1_23 = KubeVersion(1, 23, 0)
    assert not scheduler_has_port_flag(v1_23)
    assert controller_manager_has_port_flag(v1_23) and has_insecure_port_flag(v1_23)


def test_token_secrets_end_with_1_24() -> None:
    assert makes_token_secrets(DEBIAN) and makes_token_secrets(KubeVersion(1, 23, 17))
    assert not makes_token_secrets(KubeVersion(1, 24, 0)) and not makes_token_secrets(NEWEST)
