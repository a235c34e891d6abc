"""How ``kubectl united`` reaches a cluster: kubectl's rules for the kubeconfig, the context's
namespace and durations, so the plugin behaves as the kubectl that runs it.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping
from pathlib import Path as FilePath
from typing import Any

import yaml

from united import __version__
from united.api import yamlload
from united.api.field import ManifestError, Path, invalid
from united.kube.client import KubeClient

_IN_CLUSTER_NAMESPACE = FilePath("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def duration(text: str, flag: str) -> float:
    """Seconds in a Go duration (``90s``, ``5m``, ``1h30m``, ``0``) or a bare number of seconds."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ManifestError([invalid(Path(flag), text, "must be a duration such as 30s, 5m or 1h30m")])
    return sum(float(n) * units[u] for n, u in parts)


def kubeconfig_path(flag: str | None) -> str | None:
    """The kubeconfig kubectl would read: the flag, the first of ``$KUBECONFIG``, ``~/.kube/config``;
    None inside a pod without any (in-cluster credentials)."""
    if flag:
        return flag
    first = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    if first:
        return first
    home = FilePath.home() / ".kube" / "config"
    return str(home) if home.exists() or not os.environ.get("KUBERNETES_SERVICE_HOST") else None


def context_namespace(path: str | None, context: str | None) -> str:
    """The namespace of the kubeconfig's (current or given) context, else ``default``;
    in a pod, its own namespace."""
    if path is None:
        try:
            return _IN_CLUSTER_NAMESPACE.read_text().strip() or "default"
        except OSError:
            return "default"
    try:
        config = yamlload.load(FilePath(path).expanduser().read_text())
    except (OSError, yaml.YAMLError):
        return "default"  # connecting reports the broken file, with the reason
    if not isinstance(config, Mapping):
        return "default"
    name = context or config.get("current-context")
    for entry in config.get("contexts") or ():
        if isinstance(entry, Mapping) and entry.get("name") == name:
            namespace = (entry.get("context") or {}).get("namespace")
            return str(namespace) if namespace else "default"
    return "default"


async def connect(args: argparse.Namespace) -> KubeClient:
    timeout = duration(args.request_timeout, "--request-timeout") if args.request_timeout else 0.0
    options: dict[str, Any] = {"user_agent": f"kubectl-united/{__version__}"}
    if timeout > 0:
        options["request_timeout"] = timeout
    path = kubeconfig_path(args.kubeconfig)
    if path is None:
        return await KubeClient.from_config(**options)
    return await KubeClient.from_kubeconfig(path, context=args.context, **options)
