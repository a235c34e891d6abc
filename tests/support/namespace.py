"""A fresh namespace per test, on any cluster the suite runs against."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from united.devcluster import versions
from united.devcluster.demo import namespace_usable
from united.kube.client import NAMESPACES, KubeClient
from united.kube.discovery import server_release
from united.kube.errors import NotFound


async def server_version(kube: KubeClient) -> versions.KubeVersion:
    """The server's release as the controller reads it (a managed cluster's suffix ignored);
    the tests ask only for the minor, so the patch is left 0."""
    found = await server_release(kube)
    if found is None:
        raise ValueError("the API server's /version names no release")
    return versions.KubeVersion(*found, 0)


@contextlib.asynccontextmanager
async def fresh_namespace(kube: KubeClient, name: str) -> AsyncIterator[str]:
    """Namespace ``name``, usable (pods can be created in it), deleted on exit."""
    await kube.create(
        NAMESPACES,
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": {"e2e.united.dev/test": "true"}},
        },
    )
    try:
        await namespace_usable(kube, name, await server_version(kube))
        yield name
    finally:
        with contextlib.suppress(NotFound):
            await kube.delete(NAMESPACES, name)
