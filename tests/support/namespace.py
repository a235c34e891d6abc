"""A fresh namespace per test, on any cluster the suite runs against."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator

from united.devcluster import versions
from united.kube.client import NAMESPACES, SECRETS, SERVICE_ACCOUNTS, KubeClient
from united.kube.discovery import server_release
from united.kube.errors import NotFound
from united.kube.wait import eventually


async def server_version(kube: KubeClient) -> versions.KubeVersion:
    """The server's release as the controller reads it (a managed cluster's suffix ignored);
    the tests ask only for the minor, so the patch is left 0."""
    found = await server_release(kube)
    if found is None:
        raise ValueError("the API server's /version names no release")
    return versions.KubeVersion(*found, 0)


@contextlib.asynccontextmanager
async def fresh_namespace(kube: KubeClient, name: str) -> AsyncIterator[str]:
    """Namespace ``name``, usable (pods can be created in it), deleted on exit. Before 1.24 a
    namespace is usable once its ``default`` ServiceAccount's token Secret is issued."""
    await kube.create(NAMESPACES, {
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": {"e2e.united.dev/test": "true"}},
    })
    token_secrets = versions.makes_token_secrets(await server_version(kube))

    async def usable() -> None:
        account = await kube.get(SERVICE_ACCOUNTS, "default", namespace=name)
        if not token_secrets:
            return
        names = [ref["name"] for ref in account.get("secrets") or []]
        assert names, f"namespace {name}: default ServiceAccount has no token secret yet"
        secret = await kube.get(SECRETS, names[0], namespace=name)
        token = (secret.get("data") or {}).get("token")
        assert token and base64.b64decode(token), f"namespace {name}: token not issued yet"

    try:
        # The namespace's controller-manager makes the account; a member plane started a moment
        # ago on a loaded two-core machine once took over 30 s to.
        await eventually(usable, within=90, what=f"namespace {name} usable",
                         retry_on=(AssertionError, NotFound))
        yield name
    finally:
        with contextlib.suppress(NotFound):
            await kube.delete(NAMESPACES, name)
