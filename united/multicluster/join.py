"""Joining a member cluster to a host: what ``united join``, ``united demo`` and the e2e suite
do, one code path for all three (the kubectl recipe in ``docs/concepts/multicluster.md`` is the same steps by hand).

In the member: ``manifests/member`` (or ``member-no-namespaces``) applied, then a fresh token of
its ServiceAccount ``united-member`` in a token Secret of its own (a legacy token is a function of
the Secret's name, so re-creating one under the same name would not change it), or, where the
member's token controller does not fill such Secrets, a TokenRequest token (which expires; said
so). In the host: the credentials namespace and its Role (``manifests/base/cluster-credentials.yaml``,
moved to the namespace asked for), the Secret with a self-contained kubeconfig (CA inline, token),
the ``Cluster``; then its ``Ready`` condition, as the controller reports it. Last, the token
Secrets earlier joins of this member by this host made are deleted: a re-join *rotates* the
token, and the old one keeps working until the host holds the new one.

The token lives in memory and in the two Secrets only: it is never printed or logged, and
:class:`Token` hides it from ``repr``. Problems raise :class:`JoinError` naming the side
(member or host) that failed, worded for a person.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

import yaml

from united import data, kustomization
from united.api.field import FieldError, invalid
from united.api.field import Path as FieldPath
from united.api.names import dns_label_errors, dns_subdomain_errors
from united.devcluster.credentials import render_kubeconfig, token_request
from united.devcluster.installation import apply
from united.devcluster.wait import WaitTimeoutError, eventually
from united.kube.client import JSON, NAMESPACES, SECRETS, KubeClient, PatchType, Resource
from united.kube.errors import AlreadyExists, ApiError, ConfigError, NotFound
from united.kube.kubeconfig import check, parse, where
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
FILL_SECONDS = 20.0
"""How long the member's token controller gets to fill the token Secret before TokenRequest."""
TOKEN_REQUEST_SECONDS = 365 * 24 * 3600
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
    in ``secret_namespace``; ``create_namespaces`` picks the member role with or without the
    namespaces rule (``united run --no-create-member-namespaces``); ``probe`` goes into the
    ``Cluster`` as is (``None``: the defaults)."""

    name: str
    endpoint: Endpoint
    secret_namespace: str = SECRET_NAMESPACE
    create_namespaces: bool = True
    probe: JSON | None = None


@dataclass(frozen=True)
class Token:
    """A bearer token of ``united-member``; ``expires`` is set for a TokenRequest token."""

    value: str = field(repr=False)
    expires: datetime.datetime | None = None
    secret: str | None = None
    """The token Secret in the member holding it (none for a TokenRequest token)."""


def problems(name: str, *, secret_namespace: str, server: str | None, wait: float) -> list[FieldError]:
    """What is wrong with ``united join``'s arguments, found before any request."""
    errors = dns_subdomain_errors(name, FieldPath("NAME"))
    errors += dns_label_errors(secret_namespace, FieldPath("--secret-namespace"))
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


def member_manifests(*, create_namespaces: bool = True) -> list[JSON]:
    """The shipped member role: ``manifests/member``, or without the namespaces rule."""
    return kustomization.build(data.MANIFESTS, "member" if create_namespaces else "member-no-namespaces")


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
    if membership.probe is not None:
        spec["probe"] = membership.probe
    return secret, {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name}, "spec": spec}


def dry_run(membership: Membership) -> str:
    """``united join --dry-run``: what the host would get, as YAML, the token redacted."""
    return yaml.safe_dump_all(host_objects(membership, REDACTED), sort_keys=False)


def credential_grant(namespace: str) -> list[JSON]:
    """``cluster-credentials.yaml`` (the namespace, and the Role and RoleBinding letting the
    controller read Secrets there) moved to ``namespace``."""
    docs = data.documents(CREDENTIALS)
    for doc in docs:
        if doc["kind"] == "Namespace":
            doc["metadata"]["name"] = namespace
        else:
            doc["metadata"]["namespace"] = namespace
    return docs


def token_note(token: Token, *, now: datetime.datetime) -> str | None:
    """What to tell a person about ``token``'s expiry (nothing for a token Secret's)."""
    if token.expires is None:
        return None
    days = (token.expires - now).total_seconds() / 86400
    return (
        f"the member's token controller did not fill Secret {MEMBER_NAMESPACE}/{TOKEN_SECRET} within "
        f"{FILL_SECONDS:g}s, so the kubeconfig holds a TokenRequest token, which expires at "
        f"{token.expires.strftime('%Y-%m-%dT%H:%M:%SZ')} (in {days:.0f} days): run united join again before then"
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
    """A new token Secret of ``united-member`` for this join (the member's token controller
    fills it): labelled with the ``Cluster`` name and the host's identity, so the next join of
    the same member by the same host retires it, and no other host's."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/service-account-token",
        "metadata": {
            "generateName": f"{TOKEN_SECRET}-",
            "namespace": MEMBER_NAMESPACE,
            "labels": {"app.kubernetes.io/name": "united", JOINED_AS: name, JOINED_BY: host_id},
            "annotations": {"kubernetes.io/service-account.name": MEMBER_ACCOUNT},
        },
    }


async def issue_token(
    member: KubeClient, *, name: str, host_id: str, create_namespaces: bool = True,
    fill_within: float = FILL_SECONDS, say: Callable[[str], None] = lambda _: None,
) -> Token:  # fmt: skip
    """Apply the member role in ``member`` (as shipped: its token Secret is for joining by hand)
    and return a fresh token of ``united-member``: a new token Secret's (:func:`token_secret`),
    read once the token controller filled it, or, when it does not within ``fill_within``
    seconds, a TokenRequest token (valid a year; the unfilled Secret is removed)."""
    with _on("member", f"cannot apply manifests/member (as {member.host})"):
        await apply(member, member_manifests(create_namespaces=create_namespaces))
        made = await member.create(SECRETS, token_secret(name, host_id), namespace=MEMBER_NAMESPACE)
    secret = made["metadata"]["name"]

    async def filled() -> str:
        value = ((await member.get(SECRETS, secret, namespace=MEMBER_NAMESPACE)).get("data") or {}).get("token")
        assert value, "not filled yet"
        return base64.b64decode(value).decode()

    with _on("member", f"cannot read Secret {MEMBER_NAMESPACE}/{secret}"):
        try:
            return Token(await eventually(filled, within=fill_within, what="token"), secret=secret)
        except WaitTimeoutError:
            await member.delete(SECRETS, secret, namespace=MEMBER_NAMESPACE)
    say(f"Secret {MEMBER_NAMESPACE}/{secret} not filled within {fill_within:g}s; asking for a TokenRequest token")
    with _on("member", f"cannot request a token for ServiceAccount {MEMBER_NAMESPACE}/{MEMBER_ACCOUNT}"):
        value, expires = await token_request(
            member, namespace=MEMBER_NAMESPACE, name=MEMBER_ACCOUNT, seconds=TOKEN_REQUEST_SECONDS
        )
    return Token(value, expires=datetime.datetime.strptime(expires, "%Y-%m-%dT%H:%M:%S%z"))


async def retire(member: KubeClient, *, name: str, host_id: str, keep: str | None) -> None:
    """Delete the token Secrets earlier joins of this member by this host made (their tokens
    stop working), all but ``keep``."""
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
    with _on("host", f"cannot grant the controller the Secrets of namespace {membership.secret_namespace}"):
        await apply(host, credential_grant(membership.secret_namespace))
    with _on("host", f"cannot write Secret {membership.secret_namespace}/{membership.name}"):
        await _put(host, SECRETS, secret, namespace=membership.secret_namespace)
    try:
        await _put(host, CLUSTERS, cluster, namespace=None)
    except NotFound:
        raise JoinError("host", "the Cluster kind is not installed here: run united install first") from None
    except ApiError as exc:
        raise JoinError("host", f"cannot write Cluster {membership.name}: {exc.message}") from None


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
    fill_within: float = FILL_SECONDS, say: Callable[[str], None] = lambda _: None,
) -> JSON:  # fmt: skip
    """Join ``member`` as ``membership`` describes; returns the ``Cluster`` (``Ready`` unless
    ``wait`` seconds ran out first; ``wait=0`` returns it as written)."""
    with _on("host", "cannot read namespace kube-system (its uid labels this host's tokens in the member)"):
        host_id = str((await host.get(NAMESPACES, "kube-system"))["metadata"]["uid"])
    name = membership.name
    token = await issue_token(
        member, name=name, host_id=host_id, create_namespaces=membership.create_namespaces,
        fill_within=fill_within, say=say,
    )  # fmt: skip
    note = token_note(token, now=datetime.datetime.now(datetime.UTC))
    if note:
        say(note)
    await register(host, membership, token)
    cluster = await wait_ready(host, name, within=wait)
    await retire(member, name=name, host_id=host_id, keep=token.secret)
    return cluster
