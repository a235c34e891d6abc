"""The e2e suite against an existing cluster: ``UNITED_E2E_KUBECONFIG=/path`` (and optionally
``UNITED_E2E_CONTEXT``) makes the ``cluster`` fixture an :class:`ExternalCluster` instead of
starting a local control plane.

Tests create their own namespaces and delete them; CRDs and ``manifests/base`` are applied
(idempotently) and left in place. What only the local control plane can offer — simulated
nodes and their knobs, component restarts, fault proxies and webhooks on 127.0.0.1, the
kubectl built with it, member planes — is skipped at collection, with the
reason, by :func:`local_only_reason`. Without the variable nothing here is used.
"""

from __future__ import annotations

import base64
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from united.api import yamlload
from united.devcluster.credentials import StaticUser, request_token, user_kubeconfig, write_kubeconfig
from united.kube.client import SERVICE_ACCOUNTS, KubeClient
from united.kube.errors import NotFound
from united.kube.kubeconfig import render_kubeconfig
from united.kube.wait import eventually

KUBECONFIG_VARIABLE = "UNITED_E2E_KUBECONFIG"
CONTEXT_VARIABLE = "UNITED_E2E_CONTEXT"
LOCAL_ONLY = f"needs the local control plane ({KUBECONFIG_VARIABLE} is set)"

LOCAL_FIXTURES = {
    "sim": "drives the node simulator",
    "members": "starts member control planes",
    "member_kube": "starts member control planes",
    "joined": "starts member control planes",
    "spreading": "the API server calls a webhook on 127.0.0.1",
    "proxy": "a fault proxy on 127.0.0.1",
    "proxied": "a fault proxy on 127.0.0.1",
    "pkube": "a fault proxy on 127.0.0.1",
    "threaded_proxy": "a fault proxy on 127.0.0.1",
    "proxy_certs": "a fault proxy on 127.0.0.1",
    "own_cluster": "starts a second local control plane",
}
"""Fixtures (anywhere in a test's closure) that exist only with the local control plane."""

KUBECTL = "the kubectl built with the local control plane"
LOCAL_TESTS = {
    "tests/chaos/": "restarts, kills and fault proxies on its own control plane",
    "tests/e2e/test_cluster_lifecycle.py": "starts and stops local control planes",
    "tests/e2e/test_entry_points.py": "starts local control planes",
    "tests/e2e/test_bench_smoke.py": "the bench starts its own control plane",
    "tests/e2e/test_packaging.py": KUBECTL,
    "tests/e2e/controller/test_kubectl_plugin.py": KUBECTL,
    "tests/e2e/controller/test_controller.py::test_kubectl_scale": KUBECTL,
    "tests/e2e/controller/test_controller.py::test_shipped_manifests_pass_server_side_dry_run": KUBECTL,
    "tests/e2e/runtime/test_webhooks_e2e.py": "the API server calls webhooks on 127.0.0.1",
    "tests/e2e/runtime/test_leader_e2e.py::test_a_leader_that_sees_another_live_holder_steps_down": (
        "a fault proxy on 127.0.0.1"
    ),
    "tests/e2e/runtime/test_informer_e2e.py::test_bookmarks_move_the_resume_point_without_events": (
        "a fault proxy on 127.0.0.1"
    ),
}
"""Tests (node id prefixes) that reach for local components in their body."""


@dataclass(frozen=True)
class Target:
    """The existing cluster to test: a kubeconfig and, optionally, one of its contexts."""

    kubeconfig: Path
    context: str | None = None


def target(environ: Mapping[str, str]) -> Target | None:
    """The cluster named by the environment, or None: start a local control plane."""
    path = environ.get(KUBECONFIG_VARIABLE, "").strip()
    if not path:
        return None
    return Target(Path(path).expanduser(), environ.get(CONTEXT_VARIABLE, "").strip() or None)


def local_only_reason(nodeid: str, fixturenames: Iterable[str]) -> str | None:
    """Why the test ``nodeid`` (using ``fixturenames``) cannot run against an existing
    cluster, or None if it can."""
    for prefix, why in LOCAL_TESTS.items():
        if nodeid == prefix or nodeid.startswith(prefix if prefix.endswith("/") else (f"{prefix}::", f"{prefix}[")):
            return f"{LOCAL_ONLY}: {why}"
    for name in fixturenames:
        if name in LOCAL_FIXTURES:
            return f"{LOCAL_ONLY}: {LOCAL_FIXTURES[name]} (fixture {name})"
    return None


@dataclass(frozen=True)
class Resolved:
    """What the suite needs from a kubeconfig: a copy of it that stands alone (the chosen
    context current, file paths absolute), the API server's URL and its CA."""

    config: dict[str, Any]
    server: str
    ca_file: Path | None
    ca_data: bytes | None


_PATH_FIELDS = {
    "clusters": ("cluster", ("certificate-authority",)),
    "users": ("user", ("client-certificate", "client-key", "tokenFile")),
}


def resolve(config: Mapping[str, Any], *, base: Path, context: str | None, where: str) -> Resolved:
    """Resolve kubeconfig ``config`` (read from directory ``base``) for ``context`` (default:
    its current context). Raises ``ValueError`` naming the field, never a credential."""
    copy: dict[str, Any] = yaml.safe_load(yaml.safe_dump(dict(config)))
    for section, (key, fields) in _PATH_FIELDS.items():
        for entry in copy.get(section) or []:
            body = entry.get(key) or {}
            for field in fields:
                if body.get(field):
                    body[field] = str((base / str(body[field])).resolve())
    chosen = context or copy.get("current-context")
    if not chosen:
        raise ValueError(f"{where}: current-context: Required value: set it or {CONTEXT_VARIABLE}")
    contexts = {c.get("name"): c.get("context") or {} for c in copy.get("contexts") or []}
    if chosen not in contexts:
        raise ValueError(f"{where}: contexts: Not found: {chosen!r}")
    clusters = {c.get("name"): c.get("cluster") or {} for c in copy.get("clusters") or []}
    cluster = clusters.get(contexts[chosen].get("cluster")) or {}
    if not cluster.get("server"):
        raise ValueError(f"{where}: context {chosen!r}: its cluster has no server")
    copy["current-context"] = chosen
    data = cluster.get("certificate-authority-data")
    authority = cluster.get("certificate-authority")
    return Resolved(
        config=copy,
        server=str(cluster["server"]),
        ca_file=Path(authority) if authority else None,
        ca_data=base64.b64decode(data) if data else None,
    )


class ExternalCluster:
    """An existing cluster in the role of the e2e suite's ``cluster``: ``admin_kubeconfig``,
    ``server``, ``ca_cert`` (None: the system's CAs), ServiceAccount kubeconfigs, and
    ServiceAccounts standing in for static-token users (:meth:`service_account_user`)."""

    def __init__(self, target: Target) -> None:
        self.target = target
        raw = yamlload.load(target.kubeconfig.read_text()) or {}
        resolved = resolve(raw, base=target.kubeconfig.parent, context=target.context, where=str(target.kubeconfig))
        self.workdir = Path(tempfile.mkdtemp(prefix="united-e2e-external-"))
        self.server = resolved.server
        self.ca_cert = resolved.ca_file
        if resolved.ca_data is not None:
            self.ca_cert = self.workdir / "ca.crt"
            self.ca_cert.write_bytes(resolved.ca_data)
        self.admin_kubeconfig = write_kubeconfig(self.workdir / "admin.kubeconfig", resolved.config)
        self.users: dict[str, StaticUser] = {}

    async def service_account_user(self, client: KubeClient, *, namespace: str, name: str) -> StaticUser:
        """ServiceAccount ``namespace/name`` (which must exist) as a user with a token, the
        way a static-token user of the local control plane is one; :meth:`kubeconfig_for`
        knows it by its name, ``system:serviceaccount:<namespace>:<name>``."""
        user = StaticUser(f"system:serviceaccount:{namespace}:{name}", token=await self._token(client, namespace, name))
        self.users[user.name] = user
        return user

    def kubeconfig_for(self, user: str, *, namespace: str | None = None) -> Path:
        """A kubeconfig for a user made by :meth:`service_account_user`."""
        return user_kubeconfig(
            self.workdir, server=self.server, ca_cert=self.ca_cert, user=self.users[user], namespace=namespace
        )

    async def _token(self, client: KubeClient, namespace: str, name: str, within: float = 30.0) -> str:
        await eventually(
            lambda: client.get(SERVICE_ACCOUNTS, name, namespace=namespace),
            within=within,
            what=f"ServiceAccount {namespace}/{name}",
            retry_on=(NotFound,),
        )
        return await request_token(client, namespace=namespace, name=name)

    async def service_account_kubeconfig(
        self, client: KubeClient, *, namespace: str, name: str, within: float = 30.0
    ) -> Path:
        """A kubeconfig with a TokenRequest token of ServiceAccount ``namespace/name`` (as
        :meth:`LocalCluster.service_account_kubeconfig`, which reads the token Secret that
        clusters since 1.24 no longer create)."""
        token = await self._token(client, namespace, name, within)
        config = render_kubeconfig(
            server=self.server,
            ca_cert=self.ca_cert,
            user=f"system:serviceaccount:{namespace}:{name}",
            token=token,
            namespace=namespace,
        )
        return write_kubeconfig(self.workdir / f"sa-{namespace}-{name}.kubeconfig", config)

    def check_alive(self) -> None:
        """Nothing to check: the cluster is not ours."""

    def stop(self) -> None:
        """Remove the copies of credentials made here; the cluster itself is left as it is."""
        shutil.rmtree(self.workdir, ignore_errors=True)
