"""Joining a member cluster to a host: what ``united join``, ``united demo`` and the e2e suite
do, one code path for all three (the kubectl recipe in ``docs/concepts/multicluster.md`` is the same steps by hand).

In the member: ``manifests/member`` (or ``member-no-namespaces``) applied *without* its legacy
token Secret (that one is for joining by hand: a token that never expires and that nothing
rotates), then a TokenRequest token of its ServiceAccount ``united-member`` *bound* to an Opaque
Secret this join creates (``united-member-token-<random>``): it expires (``token_days``, a year by
default) and it stops working as soon as that Secret is deleted. In the host: the credentials
namespace and its Role (``manifests/base/cluster-credentials.yaml``, moved to the namespace asked
for, its ``resourceNames`` the Secrets the ``Cluster`` objects there name), the Secret with a
self-contained kubeconfig (CA inline, token), the ``Cluster`` (which says which host namespaces
it admits: fail closed); then its ``Ready`` condition, as the controller reports it. Last, the
anchor Secrets earlier joins of this member by this host made are deleted: a re-join *rotates*
the token, and the old one keeps working until the host holds the new one.

The token lives in memory and in the host's Secret only: it is never printed or logged, and
:class:`Token` hides it from ``repr``. Problems raise :class:`JoinError` naming the side
(member or host) that failed, worded for a person.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

import yaml

from united import data, kustomization
from united.api.field import FieldError, forbidden, invalid
from united.api.field import Path as FieldPath
from united.api.names import dns_label_errors, dns_subdomain_errors
from united.kube.apply import apply
from united.kube.client import JSON, NAMESPACES, ROLES, SECRETS, KubeClient, PatchType, Resource
from united.kube.errors import AlreadyExists, ApiError, ConfigError, NotFound
from united.kube.kubeconfig import check, parse, render_kubeconfig, where
from united.kube.wait import WaitTimeoutError, eventually
from united.multicluster.model import API_VERSION, DEFAULT_KEY, KIND
from united.multicluster.resource import CLUSTERS

SECRET_NAMESPACE = "united-clusters"
"""Where the host keeps member kubeconfigs (the shipped Role grants the controller this one)."""
MEMBER_NAMESPACE = "united-system"
MEMBER_ACCOUNT = "united-member"
TOKEN_SECRET = "united-member-token"
JOINED_AS = "apps.united.io/joined-as"
"""Label of a token Secret ``united join`` made: the ``Cluster`` name the host gave the member."""
JOINED_BY = "apps.united.io/joined-by"
"""Label of a token Secret ``united join`` made: the host's identity (its ``kube-system`` uid)."""
TOKEN_DAYS = 365
"""Default lifetime of a join's token; ``united join`` again before it ends rotates it."""
TOKEN_DAYS_RANGE = (1, 3650)
SYSTEM_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease", "default"})
CONTROLLER_NAMESPACE = "united-system"
"""The controller's own namespace in the host (``manifests/base``): its Secrets (the webhook's
serving key) must never be granted to it as member credentials."""
CREDENTIALS_ROLE = "united-cluster-credentials"
REDACTED = "REDACTED"
CREDENTIALS = data.MANIFESTS / "base" / "cluster-credentials.yaml"

Side = Literal["member", "host"]


class JoinError(Exception):
    """A step failed on one ``side``; ``message`` says what and, where it can, what to do."""

    def __init__(self, side: Side, message: str) -> None:
        super().__init__(f"{side}: {message}")
        self.side = side
        self.message = message


@dataclass(frozen=True)
class Endpoint:
    """How the host's controller reaches the member: its API server's URL, and the CA that
    signed its serving certificate (``None``: the system's CAs, e.g. a public certificate)."""

    server: str
    ca: bytes | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Membership:
    """What joining one member makes: ``Cluster`` ``name``, reaching ``endpoint``, its Secret
    in ``secret_namespace``; ``create_namespaces`` picks the member role with the namespaces rule
    and sets the ``Cluster``'s ``createNamespaces`` (off unless asked: fail closed); ``probe``
    goes into the ``Cluster`` as is (``None``: the defaults)."""

    name: str
    endpoint: Endpoint
    secret_namespace: str = SECRET_NAMESPACE
    create_namespaces: bool = False
    probe: JSON | None = None
    namespaces: tuple[str, ...] = ()
    """The host namespaces the ``Cluster`` admits (``spec.namespaces``)."""
    all_namespaces: bool = False
    """``spec.allNamespaces: true`` instead of a list."""
    token_days: int = TOKEN_DAYS


@dataclass(frozen=True)
class Token:
    """A bearer token of ``united-member``, valid until ``expires`` (when known)."""

    value: str = field(repr=False)
    expires: datetime.datetime | None = None
    secret: str | None = None
    """The Secret in the member the token is bound to: deleting it revokes the token."""


def problems(
    name: str, *, secret_namespace: str, server: str | None, wait: float,
    namespaces: list[str] | None = None, token_days: int = TOKEN_DAYS,
) -> list[FieldError]:  # fmt: skip
    """What is wrong with ``united join``'s arguments, found before any request."""
    errors = dns_subdomain_errors(name, FieldPath("NAME"))
    errors += dns_label_errors(secret_namespace, FieldPath("--secret-namespace"))
    if secret_namespace in SYSTEM_NAMESPACES or secret_namespace == CONTROLLER_NAMESPACE:
        detail = "a system namespace or the controller's own: the controller would be granted its Secrets"
        errors.append(forbidden(FieldPath("--secret-namespace"), detail))
    for index, namespace in enumerate(namespaces or ()):
        errors += dns_label_errors(namespace, FieldPath("--namespaces").index(index))
    low, high = TOKEN_DAYS_RANGE
    if not low <= token_days <= high:
        errors.append(invalid(FieldPath("--token-days"), token_days, f"must be between {low} and {high}, inclusive"))
    if server is not None:
        problem = server_problem(server)
        if problem:
            errors.append(invalid(FieldPath("--server"), server, problem))
    if not 0 <= wait < float("inf"):
        errors.append(invalid(FieldPath("--wait"), wait, "must be a number of seconds, 0 or more"))
    return errors


def server_problem(server: str) -> str | None:
    """Why ``server`` cannot be a member's API server URL in a Secret, or ``None``."""
    try:
        url = urlparse(server)
        userinfo = url.username is not None or url.password is not None
        url.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        return f"not a URL ({exc})"
    if url.scheme != "https" or not url.hostname:
        return "must be an https:// URL of the member's API server"
    if userinfo:
        return "must not hold a user or password (the token authenticates)"
    return None


def endpoint(kubeconfig: str | os.PathLike[str], *, context: str | None, server: str | None = None) -> Endpoint:
    """The member's endpoint as ``context`` of ``kubeconfig`` (default: its current context)
    reaches it — its server (``server`` instead, if given) and CA, inlined from
    ``certificate-authority-data`` or read from the file ``certificate-authority`` names.
    :class:`ConfigError` names what is missing."""
    check(kubeconfig, context=context)
    at = where(kubeconfig)
    config = parse(Path(kubeconfig).expanduser().read_text(), at)
    name = context or config["current-context"]
    details = _named(config, "contexts", name)["context"]
    cluster = _named(config, "clusters", details["cluster"]).get("cluster") or {}
    ca: bytes | None = None
    if cluster.get("certificate-authority-data"):
        try:
            ca = base64.b64decode(cluster["certificate-authority-data"], validate=True)
        except ValueError:
            raise ConfigError(at, f"context {name!r}: certificate-authority-data is not base64") from None
    elif cluster.get("certificate-authority"):
        file = Path(kubeconfig).expanduser().parent / Path(cluster["certificate-authority"]).expanduser()
        try:
            ca = file.read_bytes()
        except OSError as exc:
            raise ConfigError(
                at, f"context {name!r}: cannot read certificate-authority {file}: {exc.strerror}"
            ) from None
    return Endpoint(server=server or str(cluster["server"]), ca=ca)


def _named(config: dict[str, Any], section: str, name: str) -> dict[str, Any]:
    return next(e for e in config[section] if isinstance(e, dict) and e.get("name") == name)


def member_manifests(*, create_namespaces: bool = True, by_hand: bool = True) -> list[JSON]:
    """The shipped member role: ``manifests/member``, or without the namespaces rule; without
    ``by_hand``, without its legacy token Secret (``united join`` does not use it, and a
    token nothing rotates or expires must not be left behind)."""
    docs = kustomization.build(data.MANIFESTS, "member" if create_namespaces else "member-no-namespaces")
    return [d for d in docs if by_hand or (d["kind"], d["metadata"]["name"]) != ("Secret", TOKEN_SECRET)]


def kubeconfig(membership: Membership, token: str) -> str:
    """The self-contained kubeconfig (YAML) the host's Secret holds: CA inline, the token."""
    config = render_kubeconfig(
        server=membership.endpoint.server,
        ca_cert=None,
        ca_data=membership.endpoint.ca,
        user=MEMBER_ACCOUNT,
        token=token,
        cluster=membership.name,
    )
    return yaml.safe_dump(config, sort_keys=False)


def host_objects(membership: Membership, token: str) -> tuple[JSON, JSON]:
    """The host's Secret (its kubeconfig as ``stringData``) and ``Cluster`` for ``membership``."""
    name = membership.name
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": name,
            "namespace": membership.secret_namespace,
            "labels": {"app.kubernetes.io/name": "united"},
        },
        "stringData": {DEFAULT_KEY: kubeconfig(membership, token)},
    }
    spec: JSON = {"kubeconfigSecretRef": {"namespace": membership.secret_namespace, "name": name}}
    if membership.all_namespaces:
        spec["allNamespaces"] = True
    else:
        spec["namespaces"] = sorted(membership.namespaces)
    spec["createNamespaces"] = membership.create_namespaces
    if membership.probe is not None:
        spec["probe"] = membership.probe
    return secret, {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name}, "spec": spec}


def dry_run(membership: Membership) -> str:
    """``united join --dry-run``: what the host would get, as YAML, the token redacted."""
    return yaml.safe_dump_all(host_objects(membership, REDACTED), sort_keys=False)


def credential_grant(namespace: str, secrets: Iterable[str]) -> list[JSON]:
    """``cluster-credentials.yaml`` (the namespace, and the Role and RoleBinding letting the
    controller read Secrets there) moved to ``namespace``, the Role's ``resourceNames`` exactly
    ``secrets``: the controller reads each Secret by name (a field-selected LIST+WATCH, which
    RBAC authorizes against ``resourceNames``), so it needs no other Secret of the namespace."""
    names = sorted(set(secrets))
    if not names:
        raise ValueError("a credentials Role needs at least one Secret name (none would grant them all)")
    docs = data.documents(CREDENTIALS)
    for doc in docs:
        if doc["kind"] == "Namespace":
            doc["metadata"]["name"] = namespace
            continue
        doc["metadata"]["namespace"] = namespace
        if doc["kind"] == "Role":
            for rule in doc["rules"]:
                rule["resourceNames"] = names
    return docs


def token_note(token: Token, *, now: datetime.datetime) -> str | None:
    """When ``token`` expires, for a person: run ``united join`` again before then."""
    if token.expires is None:
        return None
    days = (token.expires - now).total_seconds() / 86400
    return (
        f"the member's token expires at {token.expires.strftime('%Y-%m-%dT%H:%M:%SZ')} (in {days:.0f} days): "
        "run united join again before then (it rotates the token)"
    )


def ready_line(name: str, cluster: JSON) -> str:
    """``Cluster member-1: Ready=True (Reachable: ...)`` from a ``Cluster`` object."""
    ready: JSON = next(
        (c for c in (cluster.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), {}
    )
    reason = ready.get("reason", "no status yet: is the controller running?")
    message = f": {ready['message']}" if ready.get("message") else ""
    return f"Cluster {name}: Ready={ready.get('status', 'Unknown')} ({reason}{message})"


def is_ready(cluster: JSON) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (cluster.get("status") or {}).get("conditions") or []
    )


@contextlib.contextmanager
def _on(side: Side, doing: str) -> Iterator[None]:
    try:
        yield
    except ApiError as exc:
        raise JoinError(side, f"{doing}: {exc.message}") from None


def token_secret(name: str, host_id: str) -> JSON:
    """The Secret this join's token is bound to (an Opaque one: no token controller fills it,
    nothing in it): labelled with the ``Cluster`` name and the host's identity, so the next join
    of the same member by the same host deletes it, which revokes the token at once."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "generateName": f"{TOKEN_SECRET}-",
            "namespace": MEMBER_NAMESPACE,
            "labels": {"app.kubernetes.io/name": "united", JOINED_AS: name, JOINED_BY: host_id},
        },
    }


def token_request(anchor: JSON, seconds: int) -> JSON:
    """A TokenRequest of ``seconds`` bound to the Secret ``anchor`` (as the API server made it)."""
    meta = anchor["metadata"]
    bound = {"kind": "Secret", "apiVersion": "v1", "name": meta["name"], "uid": meta["uid"]}
    return {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": seconds, "boundObjectRef": bound},
    }


TOKEN_REQUESTS = Resource("", "v1", f"serviceaccounts/{MEMBER_ACCOUNT}/token", True, "TokenRequest")


async def issue_token(
    member: KubeClient, *, name: str, host_id: str, create_namespaces: bool = False,
    token_days: int = TOKEN_DAYS, say: Callable[[str], None] = lambda _: None,
) -> Token:  # fmt: skip
    """Apply the member role in ``member`` (without the legacy token Secret) and return a fresh
    token of ``united-member``: a TokenRequest token of ``token_days`` (the API server may
    shorten it) bound to a new Secret (:func:`token_secret`). Why not a legacy token Secret: its
    token never expires, and the one ``manifests/member`` ships was left behind, never rotated."""
    with _on("member", f"cannot apply manifests/member (as {member.host})"):
        await apply(member, member_manifests(create_namespaces=create_namespaces, by_hand=False))
        anchor = await member.create(SECRETS, token_secret(name, host_id), namespace=MEMBER_NAMESPACE)
    with _on("member", f"cannot request a token for ServiceAccount {MEMBER_NAMESPACE}/{MEMBER_ACCOUNT}"):
        try:
            answer = await member.create(
                TOKEN_REQUESTS, token_request(anchor, token_days * 86400), namespace=MEMBER_NAMESPACE
            )
        except ApiError:
            with contextlib.suppress(ApiError):
                await member.delete(SECRETS, anchor["metadata"]["name"], namespace=MEMBER_NAMESPACE)
            raise
    with _on("member", f"cannot read Secret {MEMBER_NAMESPACE}/{TOKEN_SECRET}"), contextlib.suppress(NotFound):
        await member.get(SECRETS, TOKEN_SECRET, namespace=MEMBER_NAMESPACE)
        say(
            f"Secret {MEMBER_NAMESPACE}/{TOKEN_SECRET} in the member holds a token that never expires; "
            "united join does not use it: delete it unless a kubeconfig made by hand does"
        )
    status = answer.get("status") or {}
    expires = datetime.datetime.strptime(str(status.get("expirationTimestamp")), "%Y-%m-%dT%H:%M:%S%z")
    return Token(str(status.get("token") or ""), expires=expires, secret=anchor["metadata"]["name"])


async def retire(member: KubeClient, *, name: str, host_id: str, keep: str | None) -> None:
    """Delete the Secrets earlier joins of this member by this host made, all but ``keep``: the
    tokens bound to them stop working (legacy token Secrets of older joins: theirs too)."""
    selector = f"{JOINED_AS}={name},{JOINED_BY}={host_id}"
    with _on("member", "cannot retire the previous token"):
        for secret in (await member.list(SECRETS, namespace=MEMBER_NAMESPACE, label_selector=selector)).items:
            if secret["metadata"]["name"] != keep:
                with contextlib.suppress(NotFound):
                    await member.delete(SECRETS, secret["metadata"]["name"], namespace=MEMBER_NAMESPACE)


async def register(host: KubeClient, membership: Membership, token: Token) -> None:
    """In the host: the credentials namespace and Role, then the Secret and the ``Cluster``
    (created, or updated in place: the controller picks a changed Secret up without a restart)."""
    secret, cluster = host_objects(membership, token.value)
    namespace = membership.secret_namespace
    with _on("host", f"cannot grant the controller Secret {namespace}/{membership.name}"):
        names = await granted_secrets(host, namespace)
        await apply(host, credential_grant(namespace, {*names, membership.name}))
    with _on("host", f"cannot write Secret {membership.secret_namespace}/{membership.name}"):
        await _put(host, SECRETS, secret, namespace=membership.secret_namespace)
    try:
        await _put(host, CLUSTERS, cluster, namespace=None)
    except NotFound:
        raise JoinError("host", "the Cluster kind is not installed here: run united install first") from None
    except ApiError as exc:
        raise JoinError("host", f"cannot write Cluster {membership.name}: {exc.message}") from None


async def granted_secrets(host: KubeClient, namespace: str) -> set[str]:
    """The Secrets of ``namespace`` the credentials Role must keep granting: those it names
    already, and those the ``Cluster`` objects name (a Role granting every Secret, as earlier
    versions made, is narrowed to them)."""
    names: set[str] = set()
    with contextlib.suppress(NotFound):
        role = await host.get(ROLES, CREDENTIALS_ROLE, namespace=namespace)
        for rule in role.get("rules") or ():
            names.update(str(n) for n in rule.get("resourceNames") or ())
    with contextlib.suppress(NotFound):  # the Cluster kind not installed: register says so
        for cluster in (await host.list(CLUSTERS)).items:
            ref = (cluster.get("spec") or {}).get("kubeconfigSecretRef") or {}
            if ref.get("namespace") == namespace and ref.get("name"):
                names.add(str(ref["name"]))
    return names


async def _put(client: KubeClient, resource: Resource, body: JSON, *, namespace: str | None) -> None:
    try:
        await client.create(resource, body, namespace=namespace)
    except AlreadyExists:
        await client.patch(resource, body["metadata"]["name"], body, patch_type=PatchType.MERGE, namespace=namespace)


async def wait_ready(host: KubeClient, name: str, *, within: float) -> JSON:
    """The ``Cluster`` once ``Ready``, or as it is after ``within`` seconds."""

    async def ready() -> JSON:
        cluster = await host.get(CLUSTERS, name)
        assert is_ready(cluster), ready_line(name, cluster)
        return cluster

    with _on("host", f"cannot read Cluster {name}"):
        try:
            return await eventually(ready, within=within, interval=0.5, what=f"Cluster {name} Ready")
        except WaitTimeoutError:
            return await host.get(CLUSTERS, name)


async def join(
    host: KubeClient, member: KubeClient, membership: Membership, *, wait: float = 60.0,
    say: Callable[[str], None] = lambda _: None,
) -> JSON:  # fmt: skip
    """Join ``member`` as ``membership`` describes; returns the ``Cluster`` (``Ready`` unless
    ``wait`` seconds ran out first; ``wait=0`` returns it as written)."""
    with _on("host", "cannot read namespace kube-system (its uid labels this host's tokens in the member)"):
        host_id = str((await host.get(NAMESPACES, "kube-system"))["metadata"]["uid"])
    name = membership.name
    token = await issue_token(
        member, name=name, host_id=host_id, create_namespaces=membership.create_namespaces,
        token_days=membership.token_days, say=say,
    )  # fmt: skip
    note = token_note(token, now=datetime.datetime.now(datetime.UTC))
    if note:
        say(note)
    await register(host, membership, token)
    cluster = await wait_ready(host, name, within=wait)
    await retire(member, name=name, host_id=host_id, keep=token.secret)
    return cluster
