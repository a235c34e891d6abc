"""A kube-apiserver set up as docs/security.md says (an admission configuration whose kubeconfig
gives it a client certificate for our webhook) calls a webhook served with a client CA: the
webhook is answered (its patch applied), so the API server presented a certificate that CA
signed; the same API server without the configuration is refused (401: the pod is created
unpatched, the failure policy being Ignore)."""

from __future__ import annotations

import asyncio
import base64
import copy
import secrets
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from tests.support.namespace import fresh_namespace
from tests.unit.runtime.test_connections import _client_pair
from united.api.document import Json
from united.controller.webhooks import MUTATING
from united.devcluster.cluster import LocalCluster
from united.devcluster.ports import free_port
from united.kube.client import PODS, KubeClient
from united.kube.wait import eventually
from united.runtime.certificates import issue
from united.runtime.metrics import Metrics
from united.runtime.webserver import TLS, WebhookServer, patched
from united.workloadspread.webhookconfig import NAME

pytestmark = pytest.mark.e2e

MUTATED = "e2e.united.dev/client-ca"
SELECT = "e2e.united.dev/client-ca-test"


async def mutate(review: Json) -> Json:
    pod = review["request"]["object"]
    new = copy.deepcopy(pod)
    new.setdefault("metadata", {}).setdefault("annotations", {})[MUTATED] = "yes"
    return patched(review["request"]["uid"], pod, new)


def admission_files(directory: Path, *, port: int, cert: bytes, key: bytes) -> Path:
    """The files docs/security.md describes, for a webhook at ``https://127.0.0.1:PORT``."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    (directory / "client.crt").write_bytes(cert)
    (directory / "client.key").write_bytes(key)
    (directory / "client.key").chmod(0o600)
    user = {"client-certificate": str(directory / "client.crt"), "client-key": str(directory / "client.key")}
    kubeconfig = {"apiVersion": "v1", "kind": "Config", "users": [{"name": f"127.0.0.1:{port}", "user": user}]}
    (directory / "webhook-kubeconfig.yaml").write_text(yaml.safe_dump(kubeconfig))
    plugin = {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "WebhookAdmissionConfiguration",
              "kubeConfigFile": str(directory / "webhook-kubeconfig.yaml")}  # fmt: skip
    config = {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration", "plugins": [
        {"name": "MutatingAdmissionWebhook", "configuration": plugin},
        {"name": "ValidatingAdmissionWebhook", "configuration": plugin}]}  # fmt: skip
    (directory / "admission.yaml").write_text(yaml.safe_dump(config))
    return directory / "admission.yaml"


class Served:
    def __init__(self, server: WebhookServer, metrics: Metrics, ca_bundle: bytes) -> None:
        self.server = server
        self.metrics = metrics
        self.ca_bundle = ca_bundle

    def answered(self, code: int) -> float:
        labels = {"webhook": "/mutate-pods", "code": str(code)}
        return self.metrics.registry.get_sample_value("controller_runtime_webhook_requests_total", labels) or 0.0


async def serve(port: int, client_ca: bytes) -> Served:
    bundle = issue(["127.0.0.1"], now=datetime.now(UTC))
    tls = TLS()
    tls.require_client_certificates(client_ca)
    tls.load(bundle.cert_pem, bundle.key_pem)
    metrics = Metrics(process_metrics=False)
    server = WebhookServer(host="127.0.0.1", port=port, tls=tls, routes={"/mutate-pods": mutate}, metrics=metrics)
    await server.start()
    return Served(server, metrics, bundle.ca_bundle)


async def configure(kube: KubeClient, port: int, ca_bundle: bytes, token: str) -> None:
    webhook = {"name": "client-ca.e2e.united.dev", "admissionReviewVersions": ["v1"], "sideEffects": "None",
               "failurePolicy": "Ignore", "timeoutSeconds": 5,
               "clientConfig": {"url": f"https://127.0.0.1:{port}/mutate-pods",
                                "caBundle": base64.b64encode(ca_bundle).decode()},
               "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
               "objectSelector": {"matchLabels": {SELECT: token}}}  # fmt: skip
    body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": f"{NAME}-client-ca"}, "webhooks": [webhook]}  # fmt: skip
    await kube.create(MUTATING, body)


async def a_pod(kube: KubeClient, namespace: str, token: str) -> Json:
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p-{secrets.token_hex(3)}", "labels": {SELECT: token}},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.2"}]}}  # fmt: skip
    return await kube.create(PODS, body, namespace=namespace)


@pytest.fixture
async def configured(cluster: LocalCluster, tmp_path: Path) -> AsyncIterator[tuple[LocalCluster, int, bytes]]:
    """A second control plane whose API server presents a client certificate to 127.0.0.1:PORT."""
    port = free_port()
    ca, cert, key = _client_pair("apiserver-webhook-client-ca")
    config = admission_files(tmp_path / "admission", port=port, cert=cert, key=key)
    local = LocalCluster(cluster.binaries, name="clientca", admission_config=config)
    await asyncio.to_thread(local.start)
    try:
        yield local, port, ca
    finally:
        await asyncio.to_thread(local.stop)


async def test_an_api_server_with_the_admission_configuration_is_served(
    configured: tuple[LocalCluster, int, bytes], kube: KubeClient
) -> None:
    local, port, ca = configured
    served = await serve(port, ca)
    token = secrets.token_hex(4)
    try:
        async with (
            await KubeClient.from_kubeconfig(local.admin_kubeconfig) as client,
            fresh_namespace(client, "client-ca") as namespace,
        ):
            await configure(client, port, served.ca_bundle, token)

            async def mutated() -> None:
                pod = await a_pod(client, namespace, token)
                assert (pod["metadata"].get("annotations") or {}).get(MUTATED) == "yes", pod["metadata"]

            await eventually(mutated, within=30, what="the API server calls the webhook with its certificate")
            assert served.answered(401) == 0

        # The shared control plane has no admission configuration: it presents no certificate.
        async with fresh_namespace(kube, "no-client-cert") as namespace:
            await configure(kube, port, served.ca_bundle, token)
            try:

                async def refused() -> None:
                    pod = await a_pod(kube, namespace, token)
                    assert served.answered(401) >= 1
                    assert MUTATED not in (pod["metadata"].get("annotations") or {})

                await eventually(refused, within=30, what="a call without a certificate is refused")
            finally:
                await kube.delete(MUTATING, f"{NAME}-client-ca")
    finally:
        await served.server.stop()
