"""Checks on a kubeconfig before the library loads it, so a broken one is one line.

Why: kubernetes-asyncio reports a missing file as ``Invalid kube-config file. Expected key
current-context`` (it merges *no* file into an empty config and then looks for a key), an
unknown context as a ``ConfigException`` deep in a traceback, and an unusable server URL
not at all (every request then fails, forever). A person starting ``united run`` needs to
know which file, which entry, and what to do. The checks mirror what the loader needs:
a readable YAML mapping, a current (or given) context that exists, naming a cluster with
an http(s) server and a user that exist.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from united.kube.errors import ConfigError

__all__ = ["NO_SUCH_FILE", "check", "where"]

NO_SUCH_FILE = "no such file"


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
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(at, f"not valid YAML{line}: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(config, Mapping):
        raise ConfigError(at, "not a kubeconfig (expected a YAML mapping with clusters, contexts and users)")
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
