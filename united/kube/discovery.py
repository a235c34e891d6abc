"""What the API server serves: a controller for a custom resource starts only once its CRD is
installed and established, and a child kind is used only where it is served; features that
came with a release (webhook selectors by namespace name, CRD validation rules) are used where
``/version`` says the server has them."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from united.kube.client import KubeClient, Resource
from united.kube.errors import ApiError


async def _plurals(client: KubeClient, group: str, version: str) -> set[str] | None:
    """The resources ``group/version`` serves; None when the API server does not answer it."""
    try:
        text = await client.get_path(f"/apis/{group}/{version}")
    except ApiError:
        return None
    try:
        return {str(r.get("name")) for r in json.loads(text).get("resources", [])}
    except (ValueError, AttributeError):
        return None


async def served(client: KubeClient, resource: Resource) -> bool:
    """The API server serves ``resource`` (its CRD is installed and established)."""
    return resource.plural in (await _plurals(client, resource.group, resource.version) or ())


async def preferred(client: KubeClient, resource: Resource) -> str | None:
    """The ``apiVersion`` discovery prefers for ``resource``'s kind: the first of its group's
    versions (highest priority first) that serves it. The garbage collector watches each kind in
    that version, and takes an owner reference that names another version as possibly dangling:
    it reads the dependent and its owner back before it trusts it, each at its own client's
    rate. None when discovery does not answer (any version it asks) or serves the kind in no
    version."""
    try:
        group = json.loads(await client.get_path(f"/apis/{resource.group}"))
        versions = [str(v["version"]) for v in group["versions"]]
    except (ApiError, ValueError, KeyError, TypeError):
        return None
    for version in versions:
        plurals = await _plurals(client, resource.group, version)
        if plurals is None:
            return None  # unanswered: a later version is not the one preferred
        if resource.plural in plurals:
            return f"{resource.group}/{version}"
    return None


_GIT_VERSION = re.compile(r"^v?(\d+)\.(\d+)")
VERSION_LIMIT = 64 * 1024
"""Bytes of a ``/version`` answer read at most (a hostile member must not make us hold more)."""


def release(answer: Mapping[str, Any]) -> tuple[int, int] | None:
    """(major, minor) of a ``/version`` answer, from ``gitVersion`` (managed clusters' ``minor``
    says ``30+``); None when it names no release."""
    found = _GIT_VERSION.match(str(answer.get("gitVersion") or ""))
    return (int(found[1]), int(found[2])) if found else None


async def server_release(client: KubeClient) -> tuple[int, int] | None:
    """The server's (major, minor), None when its ``/version`` names none; ApiError when unanswered."""
    try:
        answer = json.loads(await client.get_path("/version", limit=VERSION_LIMIT))
    except ValueError:
        return None
    return release(answer) if isinstance(answer, dict) else None
