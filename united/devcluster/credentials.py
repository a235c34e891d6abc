"""Who may talk to the local API server: static token users and their kubeconfigs.

The API server authenticates bearer tokens from a static CSV file (read once at
start, so every static user must be known before the cluster starts), and RBAC
decides what each identity may do. The admin is in ``system:masters``; tests add
unprivileged users (or use real ServiceAccount tokens, see
:meth:`united.devcluster.cluster.LocalCluster.service_account_kubeconfig`) to run
the controller with exactly the permissions its manifests grant.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import secrets
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from united.kube.client import KubeClient, Resource
from united.kube.kubeconfig import render_kubeconfig

ADMIN_USER = "united-admin"
MASTERS_GROUP = "system:masters"
TOKEN_SECONDS = 24 * 3600
"""Lifetime of a requested ServiceAccount token: longer than any test session."""


def new_token() -> str:
    """A random bearer token."""
    return secrets.token_hex(24)


@dataclass(frozen=True)
class StaticUser:
    """A user of the static token file: ``token`` authenticates as ``name``."""

    name: str
    token: str = field(default_factory=new_token, repr=False)
    groups: tuple[str, ...] = ()
    uid: str = ""


def admin_user() -> StaticUser:
    """A fresh cluster admin (group ``system:masters``, which RBAC always allows)."""
    return StaticUser(name=ADMIN_USER, groups=(MASTERS_GROUP,), uid=ADMIN_USER)


def render_token_file(users: Iterable[StaticUser]) -> str:
    """The ``--token-auth-file`` CSV: ``token,user,uid,"group1,group2"``."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    seen: set[str] = set()
    for user in users:
        if user.name in seen:
            raise ValueError(f"duplicate static user {user.name!r}")
        seen.add(user.name)
        if not user.token or "," in user.token:
            raise ValueError(f"bad token for {user.name!r}")
        row = [user.token, user.name, user.uid or user.name]
        if user.groups:
            row.append(",".join(user.groups))
        writer.writerow(row)
    return out.getvalue()


def write_kubeconfig(path: Path, config: dict[str, Any]) -> Path:
    """Write a kubeconfig readable by its owner only (it holds a token)."""
    return write_private(path, yaml.safe_dump(config, sort_keys=False))


def write_private(path: Path, text: str) -> Path:
    """Write ``text`` to ``path``, readable by its owner only from the first byte.

    Writing and then ``chmod 0600`` leaves the credentials readable by anyone (under the usual
    umask) in between, and rewriting an existing file keeps its mode; so the text goes to a new
    file that ``mkstemp`` creates 0600 in the same directory, renamed over ``path`` at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return path


def user_kubeconfig(
    directory: Path, *, server: str, ca_cert: Path | None, user: StaticUser, namespace: str | None = None
) -> Path:
    """Write a kubeconfig for ``user`` to ``directory/<name>[.<namespace>].kubeconfig`` (a ``:``
    of a ServiceAccount's user name becomes ``-``: kubeconfig loaders split paths at it)."""
    base = user.name.replace(":", "-")
    name = f"{base}.{namespace}.kubeconfig" if namespace else f"{base}.kubeconfig"
    config = render_kubeconfig(server=server, ca_cert=ca_cert, user=user.name, token=user.token, namespace=namespace)
    return write_kubeconfig(directory / name, config)


async def request_token(client: KubeClient, *, namespace: str, name: str, seconds: int = TOKEN_SECONDS) -> str:
    """A token of ServiceAccount ``namespace/name`` from the TokenRequest API (GA since 1.20):
    unlike a token Secret, which clusters since 1.24 no longer create, it works everywhere."""
    token, _ = await token_request(client, namespace=namespace, name=name, seconds=seconds)
    return token


async def token_request(client: KubeClient, *, namespace: str, name: str, seconds: int) -> tuple[str, str]:
    """:func:`request_token`'s token and when it expires (RFC 3339: the server may shorten the
    ``seconds`` asked for)."""
    token_requests = Resource("", "v1", f"serviceaccounts/{name}/token", True, "TokenRequest")
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": seconds},
    }
    answer = await client.create(token_requests, body, namespace=namespace)
    return str(answer["status"]["token"]), str(answer["status"]["expirationTimestamp"])
