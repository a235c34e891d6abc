"""Checks on a kubeconfig before the library loads it, so a broken one is one line.

Why: kubernetes-asyncio reports a missing file as ``Invalid kube-config file. Expected key
current-context`` (it merges *no* file into an empty config and then looks for a key), an
unknown context as a ``ConfigException`` deep in a traceback, and an unusable server URL
not at all (every request then fails, forever). A person starting ``united run`` needs to
know which file, which entry, and what to do. The checks mirror what the loader needs:
a readable YAML mapping, a current (or given) context that exists, naming a cluster with
an http(s) server and a user that exist.

A member cluster's kubeconfig comes from a Secret (:func:`check_inline`): it must also be
self-contained, because whatever it names is done *by the controller*: a file path would
make the controller read its own files (its ServiceAccount token, its serving key) for
whoever may write that Secret, and an ``exec`` or ``auth-provider`` would run a program.
Its messages name fields, never values: the bytes are credentials.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from united.api import yamlload
from united.kube.errors import ConfigError

__all__ = ["NO_SUCH_FILE", "SELF_CONTAINED", "check", "check_inline", "parse", "where"]

NO_SUCH_FILE = "no such file"
SELF_CONTAINED = "Forbidden: a member kubeconfig must be self-contained (token or client-certificate-data)"
_USER_REFUSED = ("exec", "auth-provider", "tokenFile", "client-certificate", "client-key")
_CLUSTER_REFUSED = ("certificate-authority",)


def where(path: str | os.PathLike[str]) -> str:
    """How a message names the file: ``kubeconfig <path>``."""
    return f"kubeconfig {os.fspath(path)}"


def check(path: str | os.PathLike[str], *, context: str | None = None) -> None:
    """Raise :class:`ConfigError` naming the first problem that would stop ``path`` from
    configuring a client for ``context`` (default: its current context)."""
    at = where(path)
    file = Path(path).expanduser()
    try:
        text = file.read_text()
    except FileNotFoundError:
        raise ConfigError(at, NO_SUCH_FILE) from None
    except IsADirectoryError:
        raise ConfigError(at, "is a directory, not a file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(at, f"cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    config = parse(text, at)
    if not isinstance(config, Mapping):
        raise ConfigError(at, "not a kubeconfig (expected a YAML mapping with clusters, contexts and users)")
    _check_config(config, at, context=context)


def parse(text: str, at: str) -> Any:
    """The YAML in ``text``; a syntax error names the line and the problem, not the text."""
    try:
        return yamlload.load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(at, f"not valid YAML{line}: {getattr(exc, 'problem', None) or 'syntax error'}") from None


def check_inline(config: object, where: str, *, allow_proxy: bool = False) -> None:
    """Raise :class:`ConfigError` (at ``where``) unless ``config``, a parsed kubeconfig, is one
    :func:`check` accepts *and* self-contained: no ``exec``, ``auth-provider``, ``tokenFile``
    or file path (``certificate-authority``, ``client-certificate``, ``client-key``; their
    ``-data`` forms are fine), no user or password in a server URL. And safe to send a token
    with: an ``https://`` server, verified (``insecure-skip-tls-verify`` may only be the boolean
    ``false``: the library reads ``'true'``, ``1``, even ``'false'`` as "skip"), no
    ``proxy-url`` unless ``allow_proxy``. Messages name the field, never a value."""
    if not isinstance(config, Mapping):
        raise ConfigError(where, "not a kubeconfig (expected a YAML mapping with clusters, contexts and users)")
    for index, entry in _entries(config, "users"):
        user = entry.get("user")
        for key in _USER_REFUSED:
            if isinstance(user, Mapping) and key in user:
                raise ConfigError(where, f"users[{index}].user.{key}: {SELF_CONTAINED}")
    for index, entry in _entries(config, "clusters"):
        cluster = entry.get("cluster")
        if not isinstance(cluster, Mapping):
            continue
        for key in _CLUSTER_REFUSED:
            if key in cluster:
                raise ConfigError(where, f"clusters[{index}].cluster.{key}: {SELF_CONTAINED}")
        at = f"clusters[{index}].cluster"
        if cluster.get("insecure-skip-tls-verify", False) is not False:
            raise ConfigError(where, f"{at}.insecure-skip-tls-verify: Forbidden: the server must be verified")
        if "proxy-url" in cluster and not allow_proxy:
            raise ConfigError(where, f"{at}.proxy-url: Forbidden: no proxy unless the Cluster sets allowProxy: true")
        try:
            url = urlparse(str(cluster.get("server") or ""))
            userinfo = url.username is not None or url.password is not None
        except ValueError:
            raise ConfigError(where, f"{at}.server: Invalid value: not a URL") from None
        if userinfo:
            raise ConfigError(where, f"{at}.server: Forbidden: credentials in the URL (use a token)")
        if url.scheme != "https":
            raise ConfigError(where, f"{at}.server: Forbidden: only https:// (the token must not travel in clear)")
    _check_config(config, where, context=None)


def _entries(config: Mapping[str, Any], section: str) -> list[tuple[int, Mapping[str, Any]]]:
    entries = config.get(section)
    if not isinstance(entries, list):
        return []
    return [(index, entry) for index, entry in enumerate(entries) if isinstance(entry, Mapping)]


def _check_config(config: Mapping[str, Any], at: str, *, context: str | None) -> None:
    name = context or config.get("current-context")
    if not name:
        raise ConfigError(at, "no current-context is set; choose one with `kubectl config use-context NAME`")
    found = _named(config, "contexts", str(name), at, what="context")
    details = found.get("context")
    if not isinstance(details, Mapping):
        raise ConfigError(at, f"context {name!r} has no cluster and user")
    cluster = _named(config, "clusters", str(details.get("cluster") or ""), at, what=f"context {name!r}: cluster")
    server = str((cluster.get("cluster") or {}).get("server") or "")
    url = urlparse(server)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ConfigError(at, f"cluster {cluster.get('name')!r}: server {server!r} is not an http(s) URL")
    if details.get("user"):
        _named(config, "users", str(details["user"]), at, what=f"context {name!r}: user")


def _named(config: Mapping[str, Any], section: str, name: str, at: str, *, what: str) -> Mapping[str, Any]:
    entries = [e for e in config.get(section) or () if isinstance(e, Mapping)]
    for entry in entries:
        if entry.get("name") == name:
            return entry
    known = ", ".join(repr(e.get("name")) for e in entries) or "none"
    raise ConfigError(at, f"{what} {name!r} is not among its {section} ({known})")


def render_kubeconfig(
    *,
    server: str,
    ca_cert: Path | None,
    user: str,
    token: str,
    cluster: str = "united-dev",
    namespace: str | None = None,
    embed_ca: bool = False,
    ca_data: bytes | None = None,
) -> dict[str, Any]:
    """A kubeconfig for one user of one cluster, authenticating with a bearer token. With
    ``embed_ca`` (or the CA given as ``ca_data``) it names no file
    (``certificate-authority-data``): self-contained, as a member cluster's kubeconfig in a
    Secret must be. Without a CA the system's CAs are trusted (an existing cluster with a
    public certificate)."""
    context: dict[str, Any] = {"cluster": cluster, "user": user}
    if namespace:
        context["namespace"] = namespace
    trust = {}
    if ca_cert is not None and embed_ca:
        ca_data = ca_cert.read_bytes()
    if ca_data is not None:
        trust = {"certificate-authority-data": base64.b64encode(ca_data).decode()}
    elif ca_cert is not None:
        trust = {"certificate-authority": str(ca_cert)}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": {"server": server, **trust}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": f"{user}@{cluster}", "context": context}],
        "current-context": f"{user}@{cluster}",
        "preferences": {},
    }
