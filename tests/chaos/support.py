"""Knobs and fault-proxy plumbing shared by the chaos tests (see ``conftest.py`` for the knobs)."""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import aiohttp
import yaml

from tests.support.controller import Controller
from tests.support.faultproxy import ThreadedFaultProxy
from united.devcluster.cluster import LocalCluster
from united.kube.client import Resource

SEED = int(os.environ.get("UNITED_CHAOS_SEED", "6"))
KILLS = int(os.environ.get("UNITED_CHAOS_KILLS", "10"))


def token_of(kubeconfig: Path) -> str:
    """The bearer token of a kubeconfig's (first) user."""
    config = yaml.safe_load(kubeconfig.read_text())
    return str(config["users"][0]["user"]["token"])


def proxy_for(cluster: LocalCluster, identity: Path, *, name: str, seed: int = SEED) -> ThreadedFaultProxy:
    """A started fault proxy in front of the cluster that forwards the controller's own token
    (so the shipped RBAC applies) and logs its requests under ``name``."""
    token = token_of(identity)
    proxy = ThreadedFaultProxy(
        cluster.server, ca_cert=cluster.ca_cert, forward_auth=True, seed=f"{seed}/{name}", identities={token: name}
    )
    return proxy.start()


def proxied_controller(
    proxy: ThreadedFaultProxy,
    identity: Path,
    path: Path,
    *,
    name: str,
    leader_elect: bool = False,
    extra: tuple[str, ...] = (),
) -> Controller:
    """A (not yet started) controller under its own identity whose every request goes
    through ``proxy``; its kubeconfig is written to ``path``; ``extra``: more flags."""
    kubeconfig = proxy.write_kubeconfig(path, token=token_of(identity), user="united-controller")
    return Controller(kubeconfig, name=name, leader_elect=leader_elect, extra=extra)


async def raw_create(
    cluster: LocalCluster, resource: Resource, namespace: str, body: bytes, *, content_type: str = "application/yaml"
) -> tuple[int, str]:
    """POST ``body`` as it is to ``resource``'s collection, as ``kubectl create --raw`` would,
    as the admin; the answer is not decoded (no client of ours could read some of them)."""
    context = ssl.create_default_context(cafile=str(cluster.ca_cert))
    url = f"{cluster.server}{resource.path(namespace=namespace)}"
    headers = {"Authorization": f"Bearer {cluster.admin.token}", "Content-Type": content_type}
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body, headers=headers, ssl=context) as answer,
    ):
        return answer.status, await answer.text()
