"""The pure parts of joining a member (:mod:`united.multicluster.join`): argument checks, the
member's endpoint read from a kubeconfig, the self-contained kubeconfig and the host's objects
built from it, the member role, the TokenRequest expiry note, and ``united join``'s bad input
and ``--dry-run`` as a person sees them (exit 2 with ``field: message``, never a traceback)."""

from __future__ import annotations

import base64
import datetime
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from tests.unit.cli.test_cli import _closed_port, assert_field_errors, united
from united import data
from united.kube.client import KubeClient
from united.kube.errors import ConfigError, error_from_status
from united.kube.kubeconfig import check_inline
from united.multicluster import join
from united.multicluster.join import Endpoint, Membership, Token

CA = b"-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
TOKEN = "eyJhbGciOiJSUzI1NiJ9.secret-part.signature"


def member_kubeconfig(tmp_path: Path, *, cluster: dict[str, Any]) -> Path:
    path = tmp_path / "config"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "host",
        "clusters": [
            {"name": "host", "cluster": {"server": "https://host.example:6443"}},
            {"name": "m1", "cluster": cluster},
        ],
        "users": [{"name": "admin", "user": {"token": "admin-token"}}],
        "contexts": [
            {"name": "host", "context": {"cluster": "host", "user": "admin"}},
            {"name": "member", "context": {"cluster": "m1", "user": "admin"}},
        ],
    }
    path.write_text(yaml.safe_dump(config))
    return path


def test_good_arguments_have_no_problems() -> None:
    assert join.problems("member-1", secret_namespace="united-clusters", server=None, wait=60) == []
    assert join.problems("eu.member-2", secret_namespace="x", server="https://10.0.0.7:6443", wait=0) == []


def test_bad_arguments_are_field_errors() -> None:
    errors = join.problems("Member_1", secret_namespace="Not.A.Label", server="http://m:6443", wait=-1)
    assert [e.field for e in errors] == ["NAME", "--secret-namespace", "--server", "--wait"]
    assert str(errors[0]).startswith('NAME: Invalid value: "Member_1": a lowercase RFC 1123 subdomain')
    assert str(errors[2]) == (
        '--server: Invalid value: "http://m:6443": must be an https:// URL of the member\'s API server'
    )
    assert str(errors[3]) == "--wait: Invalid value: -1: must be a number of seconds, 0 or more"


@pytest.mark.parametrize(
    ("server", "problem"),
    [
        ("https://m.example:6443", None),
        ("https://m.example", None),
        ("m.example:6443", "must be an https:// URL of the member's API server"),
        ("https://", "must be an https:// URL of the member's API server"),
        ("https://u:p@m.example:6443", "must not hold a user or password (the token authenticates)"),
        ("https://m.example:99999", "not a URL (Port out of range 0-65535)"),
    ],
)
def test_server_problem(server: str, problem: str | None) -> None:
    assert join.server_problem(server) == problem


def test_endpoint_inlines_the_contexts_ca_data(tmp_path: Path) -> None:
    data = base64.b64encode(CA).decode()
    path = member_kubeconfig(tmp_path, cluster={"server": "https://m1:6443", "certificate-authority-data": data})
    assert join.endpoint(path, context="member") == Endpoint("https://m1:6443", CA)
    assert join.endpoint(path, context="member", server="https://m1.public:443") == Endpoint(
        "https://m1.public:443", CA
    )
    assert join.endpoint(path, context=None) == Endpoint("https://host.example:6443", None)


def test_endpoint_reads_the_ca_file_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "ca.crt").write_bytes(CA)
    path = member_kubeconfig(tmp_path, cluster={"server": "https://m1:6443", "certificate-authority": "pki/ca.crt"})
    assert join.endpoint(path, context="member").ca == CA


def test_endpoint_problems_name_the_file_and_what_is_wrong(tmp_path: Path) -> None:
    path = member_kubeconfig(tmp_path, cluster={"server": "https://m1:6443", "certificate-authority": "gone.crt"})
    with pytest.raises(ConfigError, match=r"context 'member': cannot read certificate-authority .*gone.crt"):
        join.endpoint(path, context="member")
    with pytest.raises(ConfigError, match=r"context 'nope' is not among its contexts \('host', 'member'\)"):
        join.endpoint(path, context="nope")
    bad = member_kubeconfig(tmp_path, cluster={"server": "https://m1:6443", "certificate-authority-data": "%%"})
    with pytest.raises(ConfigError, match="certificate-authority-data is not base64"):
        join.endpoint(bad, context="member")


def test_the_kubeconfig_is_self_contained_with_the_ca_inline() -> None:
    membership = Membership("member-1", Endpoint("https://m1:6443", CA))
    config = yaml.safe_load(join.kubeconfig(membership, TOKEN))
    check_inline(config, "test")  # what the controller demands of a member's Secret
    assert config["clusters"] == [
        {
            "name": "member-1",
            "cluster": {"server": "https://m1:6443", "certificate-authority-data": base64.b64encode(CA).decode()},
        }
    ]
    assert config["users"] == [{"name": "united-member", "user": {"token": TOKEN}}]
    context = next(c for c in config["contexts"] if c["name"] == config["current-context"])
    assert context["context"] == {"cluster": "member-1", "user": "united-member"}


def test_without_a_ca_the_system_cas_are_trusted() -> None:
    config = yaml.safe_load(join.kubeconfig(Membership("m", Endpoint("https://m.example")), TOKEN))
    assert config["clusters"][0]["cluster"] == {"server": "https://m.example"}


def test_host_objects() -> None:
    membership = Membership(
        "member-1", Endpoint("https://m1:6443", CA), secret_namespace="fleet", probe={"periodSeconds": 2}
    )
    secret, cluster = join.host_objects(membership, TOKEN)
    assert secret["metadata"] == {
        "name": "member-1",
        "namespace": "fleet",
        "labels": {"app.kubernetes.io/name": "united"},
    }
    assert (secret["type"], list(secret["stringData"])) == ("Opaque", ["kubeconfig"])
    assert secret["stringData"]["kubeconfig"] == join.kubeconfig(membership, TOKEN)
    assert cluster == {
        "apiVersion": "apps.united.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": "member-1"},
        "spec": {
            "kubeconfigSecretRef": {"namespace": "fleet", "name": "member-1"},
            "namespaces": [],
            "createNamespaces": False,
            "probe": {"periodSeconds": 2},
        },
    }
    _, default = join.host_objects(Membership("member-1", Endpoint("https://m1:6443")), TOKEN)
    assert "probe" not in default["spec"]


def test_the_cluster_says_which_namespaces_it_admits() -> None:
    listed = Membership("m", Endpoint("https://m1:6443"), namespaces=("web", "shop"), create_namespaces=True)
    spec = join.host_objects(listed, TOKEN)[1]["spec"]
    assert (spec["namespaces"], spec["createNamespaces"]) == (["shop", "web"], True)
    assert "allNamespaces" not in spec
    spec = join.host_objects(Membership("m", Endpoint("https://m1:6443"), all_namespaces=True), TOKEN)[1]["spec"]
    assert (spec["allNamespaces"], spec["createNamespaces"]) == (True, False)
    assert "namespaces" not in spec


def test_dry_run_redacts_the_token() -> None:
    secret, cluster = yaml.safe_load_all(join.dry_run(Membership("member-1", Endpoint("https://m1:6443", CA))))
    assert yaml.safe_load(secret["stringData"]["kubeconfig"])["users"][0]["user"] == {"token": "REDACTED"}
    assert cluster["kind"] == "Cluster"


def test_the_credential_grant_moves_to_the_namespace_asked_for() -> None:
    docs = join.credential_grant("fleet", ["member-1"])
    assert [(d["kind"], d["metadata"]["name"], d["metadata"].get("namespace")) for d in docs] == [
        ("Namespace", "fleet", None),
        ("Role", "united-cluster-credentials", "fleet"),
        ("RoleBinding", "united-cluster-credentials", "fleet"),
    ]
    assert [d["metadata"].get("namespace") for d in join.credential_grant("united-clusters", ["m"])[1:]] == [
        "united-clusters"
    ] * 2


def test_the_credential_grant_names_its_secrets() -> None:
    """Never every Secret of the namespace: ``resourceNames`` exactly the Clusters' Secrets."""
    role = join.credential_grant("fleet", ["b", "a", "b"])[1]
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a", "b"], "verbs": ["get", "list", "watch"]}
    ]
    with pytest.raises(ValueError, match="none would grant them all"):
        join.credential_grant("fleet", [])
    shipped = next(d for d in data.documents(join.CREDENTIALS) if d["kind"] == "Role")
    assert all(rule.get("resourceNames") for rule in shipped["rules"]), "the shipped Role grants every Secret"


@pytest.mark.parametrize("namespace", ["kube-system", "kube-public", "kube-node-lease", "default", "united-system"])
def test_system_namespaces_and_the_controllers_own_are_refused(namespace: str) -> None:
    errors = join.problems("m", secret_namespace=namespace, server=None, wait=1)
    assert [str(e) for e in errors] == [
        "--secret-namespace: Forbidden: a system namespace or the controller's own: the controller would be "
        "granted its Secrets"
    ]


def test_the_member_role_with_or_without_namespace_creation() -> None:
    def rules(docs: list[dict[str, Any]]) -> list[list[str]]:
        role = next(d for d in docs if d["kind"] == "ClusterRole")
        return [r["resources"] for r in role["rules"]]

    assert ["namespaces"] in rules(join.member_manifests())
    assert ["namespaces"] not in rules(join.member_manifests(create_namespaces=False))
    kinds = [d["kind"] for d in join.member_manifests()]
    assert kinds == ["Namespace", "ServiceAccount", "Secret", "ClusterRole", "ClusterRoleBinding"]
    joined = [d["kind"] for d in join.member_manifests(by_hand=False)]
    assert joined == ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding"], "no legacy token"


def test_each_join_binds_its_token_to_a_secret_of_its_own() -> None:
    """An Opaque Secret (no token controller fills it), labelled with the host: deleting it (the
    next join does) revokes the TokenRequest token bound to it."""
    anchor = join.token_secret("member-1", "uid-of-host")
    assert anchor == {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "generateName": "united-member-token-",
            "namespace": "united-system",
            "labels": {
                "app.kubernetes.io/name": "united",
                "apps.united.io/joined-as": "member-1",
                "apps.united.io/joined-by": "uid-of-host",
            },
        },
    }
    made = {"metadata": {"name": "united-member-token-x1", "uid": "u-1"}}
    assert join.token_request(made, 86400) == {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {
            "expirationSeconds": 86400,
            "boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "united-member-token-x1", "uid": "u-1"},
        },
    }


def test_the_token_expiry_note() -> None:
    now = datetime.datetime(2026, 11, 25, tzinfo=datetime.UTC)
    assert join.token_note(Token(TOKEN), now=now) is None
    note = join.token_note(Token(TOKEN, expires=now + datetime.timedelta(days=365)), now=now)
    assert note == (
        "the member's token expires at 2027-11-25T00:00:00Z (in 365 days): run united join again before then "
        "(it rotates the token)"
    )
    assert TOKEN not in repr(Token(TOKEN))


def test_ready_line() -> None:
    ready = {
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Reachable", "message": "v1.20.2"}]}
    }
    assert join.ready_line("m", ready) == "Cluster m: Ready=True (Reachable: v1.20.2)"
    assert join.is_ready(ready)
    assert join.ready_line("m", {}) == "Cluster m: Ready=Unknown (no status yet: is the controller running?)"
    assert not join.is_ready({})


# The command line


def test_join_bad_input_is_exit_2(tmp_path: Path) -> None:
    assert_field_errors(
        united(
            "join", "Member_1", "--member-context", "x", "--server", "http://m:1", "--wait", "-2", "--all-namespaces"
        ),
        [
            'NAME: Invalid value: "Member_1": a lowercase RFC 1123 subdomain must consist of lower case '
            "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            '--server: Invalid value: "http://m:1": must be an https:// URL of the member\'s API server',
            "--wait: Invalid value: -2.0: must be a number of seconds, 0 or more",
        ],
    )
    path = member_kubeconfig(tmp_path, cluster={"server": "https://m1:6443"})
    assert_field_errors(
        united("join", "member-1", "--member-context", "nope", "--member-kubeconfig", str(path), "--all-namespaces"),
        [f"--member-context: kubeconfig {path}: context 'nope' is not among its contexts ('host', 'member')"],
    )
    http = member_kubeconfig(tmp_path, cluster={"server": "http://m1:8080"})
    assert_field_errors(
        united("join", "member-1", "--member-context", "member", "--member-kubeconfig", str(http), "--all-namespaces"),
        ["--server: the member context's server 'http://m1:8080' must be an https:// URL of the member's API server"],
    )


def test_join_dry_run_prints_the_host_objects_and_changes_nothing(tmp_path: Path) -> None:
    data = base64.b64encode(CA).decode()
    path = member_kubeconfig(tmp_path, cluster={"server": "https://m1:6443", "certificate-authority-data": data})
    r = united(
        "join", "member-1", "--member-context", "member", "--member-kubeconfig", str(path), "--dry-run",
        "--namespaces", "shop, web",
    )  # fmt: skip
    assert (r.code, r.err) == (0, "")
    secret, cluster = yaml.safe_load_all(r.out)
    assert secret["metadata"]["namespace"] == "united-clusters"
    assert yaml.safe_load(secret["stringData"]["kubeconfig"])["users"][0]["user"] == {"token": "REDACTED"}
    assert cluster["spec"]["kubeconfigSecretRef"] == {"namespace": "united-clusters", "name": "member-1"}
    assert (cluster["spec"]["namespaces"], cluster["spec"]["createNamespaces"]) == (["shop", "web"], False)
    r = united(
        "join", "member-1", "--member-context", "member", "--member-kubeconfig", str(path), "--dry-run",
        "--all-namespaces", "--create-namespaces",
    )  # fmt: skip
    cluster = list(yaml.safe_load_all(r.out))[1]
    assert (cluster["spec"]["allNamespaces"], cluster["spec"]["createNamespaces"]) == (True, True)


def test_join_names_the_namespaces_it_admits_or_says_all(tmp_path: Path) -> None:
    path = member_kubeconfig(tmp_path, cluster={"server": "https://m1:6443"})
    base = ("join", "member-1", "--member-context", "member", "--member-kubeconfig", str(path), "--dry-run")
    assert_field_errors(
        united(*base),
        [
            "--namespaces: Required value: name the host namespaces that may place subsets in this member, "
            "or pass --all-namespaces"
        ],
    )
    assert_field_errors(
        united(*base, "--namespaces", "shop,Web", "--token-days", "0", "--secret-namespace", "kube-system"),
        [
            "--secret-namespace: Forbidden: a system namespace or the controller's own: the controller would be "
            "granted its Secrets",
            '--namespaces[1]: Invalid value: "Web": a lowercase RFC 1123 label must consist of lower case '
            "alphanumeric characters or '-', and must start and end with an alphanumeric character",
            "--token-days: Invalid value: 0: must be between 1 and 3650, inclusive",
        ],
    )


def test_join_an_unreachable_cluster_is_one_line_exit_2(tmp_path: Path) -> None:
    server = f"https://127.0.0.1:{_closed_port()}"
    path = member_kubeconfig(tmp_path, cluster={"server": server})
    r = united(
        "join", "member-1", "--member-context", "member", "--member-kubeconfig", str(path), "--all-namespaces",
        "--host-kubeconfig", str(path), "--host-context", "member",
    )  # fmt: skip
    assert (r.code, r.out) == (2, "")
    assert r.errors == [
        "--host-context: cannot read namespace kube-system (its uid labels this host's tokens in the member): "
        f"cannot reach {server}: connection refused"
    ]


class ScriptedMember:
    """What ``issue_token`` asks of a member, recorded; answers like an API server would."""

    host = "https://m1:6443"

    def __init__(self, *, legacy: bool = False, refuse_token: bool = False) -> None:
        self.calls: list[tuple[str, str, str]] = []
        self.legacy = legacy
        self.refuse_token = refuse_token

    async def create(self, resource: Any, body: dict[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        meta = body.get("metadata") or {}
        name = meta.get("name") or meta.get("generateName", "") + "x1"
        if resource.plural.endswith("/token"):
            name = body["spec"]["boundObjectRef"]["name"]
        self.calls.append(("create", resource.plural, name))
        if resource.plural.endswith("/token"):
            if self.refuse_token:
                raise error_from_status(403, {"kind": "Status", "reason": "Forbidden", "message": "no tokens"})
            spec = body["spec"]
            assert spec["boundObjectRef"] == {"kind": "Secret", "apiVersion": "v1", "name": "united-member-token-x1",
                                              "uid": "uid-x1"}  # fmt: skip
            return {"status": {"token": TOKEN, "expirationTimestamp": "2027-11-25T00:00:00Z"}}
        return {**body, "metadata": {**body["metadata"], "name": name, "uid": f"uid-{name.rsplit('-', 1)[-1]}"}}

    async def patch(self, resource: Any, name: str, body: Any, **kw: Any) -> dict[str, Any]:
        self.calls.append(("patch", resource.plural, name))
        return dict(body)

    async def get_path(self, path: str, **kw: Any) -> str:
        assert path == "/version"
        return '{"gitVersion": "v1.37.2"}'

    async def get(self, resource: Any, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(("get", resource.plural, name))
        if not self.legacy:
            raise error_from_status(404, {"kind": "Status", "reason": "NotFound", "message": "not found"})
        return {"metadata": {"name": name}}

    async def delete(self, resource: Any, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(("delete", resource.plural, name))
        return {}


async def test_issue_token_binds_a_token_request_to_a_new_secret_and_applies_no_legacy_token() -> None:
    member = ScriptedMember()
    said: list[str] = []
    token = await join.issue_token(cast(KubeClient, member), name="m", host_id="h", say=said.append)
    assert (token.value, token.secret) == (TOKEN, "united-member-token-x1")
    assert token.expires == datetime.datetime(2027, 11, 25, tzinfo=datetime.UTC)
    made = [(verb, what, name) for verb, what, name in member.calls if verb == "create"]
    assert ("create", "secrets", "united-member-token") not in made, "the legacy token Secret was applied"
    assert made[-2:] == [
        ("create", "secrets", "united-member-token-x1"),
        ("create", "serviceaccounts/united-member/token", "united-member-token-x1"),
    ]
    assert said == []
    legacy = ScriptedMember(legacy=True)
    await join.issue_token(cast(KubeClient, legacy), name="m", host_id="h", say=said.append)
    assert said == [
        "Secret united-system/united-member-token in the member holds a token that never expires; united join "
        "does not use it: delete it unless a kubeconfig made by hand does"
    ]


async def test_a_refused_token_request_leaves_no_secret_behind() -> None:
    member = ScriptedMember(refuse_token=True)
    with pytest.raises(join.JoinError, match="cannot request a token for ServiceAccount united-system/united-member"):
        await join.issue_token(cast(KubeClient, member), name="m", host_id="h")
    assert member.calls[-1] == ("delete", "secrets", "united-member-token-x1")
