"""The webhook server and its certificates against the real API server: it calls us over TLS
trusting only the controller's own CA (``--webhook-url https://127.0.0.1:PORT`` mode).

A mutation proves trust: with ``failurePolicy: Ignore`` a call that fails TLS verification
still creates the pod, only without the annotation the handler adds — so every test asserts
the annotation, never merely that a pod exists.

They run on ``own_cluster``: they create, rotate and delete the configurations named
``united-workloadspread``, which on ``cluster`` belong to the session's controller. Each test
waits until what it made is gone, leaving ``own_cluster`` as it found it."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import secrets
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from tests.support.namespace import fresh_namespace
from united.api.document import Json
from united.controller.manager import Settings
from united.controller.webhooks import MUTATING, VALIDATING, Options, Webhooks, WebhookService, serve_webhooks
from united.devcluster.cluster import LocalCluster
from united.devcluster.ports import free_port
from united.kube.client import CRDS, NAMESPACES, PODS, SECRETS, KubeClient, PatchType, Resource
from united.kube.errors import ApiError, NotFound
from united.kube.wait import eventually
from united.runtime.certificates import Bundle, Policy
from united.runtime.webserver import TLS, allow, patched
from united.workloadspread.webhookconfig import NAME, SPREADS_WEBHOOK

pytestmark = pytest.mark.e2e

MUTATED = "e2e.united.dev/mutated"
SELECT = "e2e.united.dev/webhook"


async def mutate(review: Json) -> Json:
    request = review["request"]
    pod = request["object"]
    new = copy.deepcopy(pod)
    new.setdefault("metadata", {}).setdefault("annotations", {})[MUTATED] = "yes"
    return patched(request["uid"], pod, new)


async def record(review: Json) -> Json:
    return allow(review["request"]["uid"])


async def convert(review: Json) -> Json:
    """A trivial converter: only the apiVersion changes between the test CRD's versions."""
    request = review["request"]
    objects = [{**obj, "apiVersion": request["desiredAPIVersion"]} for obj in request["objects"]]
    return {
        "apiVersion": review["apiVersion"],
        "kind": "ConversionReview",
        "response": {"uid": request["uid"], "convertedObjects": objects, "result": {"status": "Success"}},
    }


ROUTES = {"/mutate-pods": mutate, "/validate-pods": record, "/convert": convert}


class Setup:
    """A controller namespace, a pod namespace selected by the test's label, the ports."""

    def __init__(self, kube: KubeClient, controller_ns: str, pod_ns: str, token: str) -> None:
        self.kube = kube
        self.controller_ns = controller_ns
        self.pod_ns = pod_ns
        self.token = token
        self.port = free_port()
        self.count = 0

    def options(self, **changes: Any) -> Options:
        base: Json = {
            "namespace": self.controller_ns,
            "url": f"https://127.0.0.1:{self.port}",
            "match_labels": {SELECT: self.token},
            "conversion_crd": f"widgets.{self.token}.united.dev",
        }
        return Options(**{**base, **changes})

    def settings(self) -> Settings:
        return Settings(controller_namespace=self.controller_ns, webhook_host="127.0.0.1", webhook_port=self.port,
                        webhook_url=f"https://127.0.0.1:{self.port}")  # fmt: skip

    async def serve(self, **changes: Any) -> WebhookService:
        """Serving, once the first pass has also written the configurations (the server itself
        starts as soon as it has a certificate)."""
        service = await serve_webhooks(self.kube, self.settings(), ROUTES, options=self.options(**changes))
        await asyncio.wait_for(service.webhooks.published.wait(), 30)
        return service

    async def pod(self) -> Json:
        self.count += 1
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p-{self.count}"},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.2"}]}}  # fmt: skip
        return await self.kube.create(PODS, body, namespace=self.pod_ns)

    async def secret_bundle(self) -> Bundle:
        secret = await self.kube.get(SECRETS, "united-webhook-certs", namespace=self.controller_ns)
        return Bundle.from_secret_data(secret["data"])


def mutated(pod: Json) -> bool:
    return (pod["metadata"].get("annotations") or {}).get(MUTATED) == "yes"


@pytest.fixture
async def kube(own_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    """The admin of ``own_cluster`` (``namespace`` is made there too)."""
    async with await KubeClient.from_kubeconfig(own_cluster.admin_kubeconfig) as client:
        yield client


async def gone(kube: KubeClient, resource: Resource, name: str) -> None:
    """Until ``name`` no longer exists (deleted already, or being deleted)."""

    async def absent() -> None:
        with contextlib.suppress(NotFound):
            await kube.get(resource, name)
            raise AssertionError(f"{resource.plural}/{name} still there")

    await eventually(absent, within=180, what=f"{resource.plural}/{name} deleted")


@pytest.fixture
async def namespace(kube: KubeClient) -> AsyncIterator[str]:
    """A fresh namespace, deleted and gone after the test."""
    async with fresh_namespace(kube, f"webhooks-e2e-{secrets.token_hex(3)}") as name:
        yield name
    await gone(kube, NAMESPACES, name)


@pytest.fixture
async def setup(kube: KubeClient, namespace: str) -> AsyncIterator[Setup]:
    """``namespace`` (usable for pods) is selected by the test's label; the controller's
    namespace only holds Secrets, so it needs no waiting."""
    token = f"t{secrets.token_hex(4)}"
    await kube.patch(NAMESPACES, namespace, {"metadata": {"labels": {SELECT: token}}}, patch_type=PatchType.MERGE)
    controller_ns = f"webhook-controller-{token}"
    await kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": controller_ns}})
    try:
        yield Setup(kube, controller_ns, namespace, token)
    finally:
        for resource in (MUTATING, VALIDATING):
            with contextlib.suppress(NotFound):
                await kube.delete(resource, NAME)
        with contextlib.suppress(NotFound):
            await kube.delete(NAMESPACES, controller_ns)
        await gone(kube, NAMESPACES, controller_ns)


async def test_api_server_calls_the_webhook_over_tls_with_the_controllers_ca(setup: Setup) -> None:
    service = await setup.serve()
    try:
        bundle = await setup.secret_bundle()
        ca_bundle = base64.b64encode(bundle.ca_bundle).decode()
        for resource in (MUTATING, VALIDATING):
            for webhook in (await setup.kube.get(resource, NAME))["webhooks"]:
                assert webhook["clientConfig"]["caBundle"] == ca_bundle
                assert webhook["clientConfig"]["url"].startswith(f"https://127.0.0.1:{setup.port}/")
        assert service.webhooks.tls.loaded == bundle.cert_pem

        async def annotated() -> None:
            pod = await setup.pod()
            assert mutated(pod), f"pod {pod['metadata']['name']} was not mutated (webhook not called or not trusted)"

        await eventually(annotated, within=30, what="the API server calls the webhook")

        # Nothing changed: a second pass writes nothing at all.
        requests: list[str] = []
        setup.kube.observer = lambda verb, resource, code, seconds: requests.append(f"{verb} {resource}")
        await service.webhooks.sync()
        setup.kube.observer = None
        assert requests and all(r.startswith("GET ") for r in requests), requests
        assert service.webhooks.bundle is not None
        assert service.webhooks.bundle.secret_data() == bundle.secret_data()
    finally:
        await service.stop()


async def test_one_secret_when_two_instances_start_together(setup: Setup) -> None:
    """Both race through a whole first pass: the Secret's create and the configurations'
    create; one wins each, and both serve the winner's certificate."""
    for attempt in range(3):
        options = setup.options(secret=f"race-{attempt}")
        first, second = Webhooks(setup.kube, options, TLS()), Webhooks(setup.kube, options, TLS())
        await asyncio.gather(first.sync(), second.sync())
        assert first.bundle is not None and second.bundle is not None
        assert first.bundle.secret_data() == second.bundle.secret_data()
        assert first.tls.loaded == second.tls.loaded == first.bundle.cert_pem
        secret = await setup.kube.get(SECRETS, f"race-{attempt}", namespace=setup.controller_ns)
        assert secret["data"] == first.bundle.secret_data()
        assert secret["type"] == "kubernetes.io/tls"
        ca_bundle = base64.b64encode(first.bundle.ca_bundle).decode()
        [webhook] = (await setup.kube.get(MUTATING, NAME))["webhooks"]
        assert webhook["clientConfig"]["caBundle"] == ca_bundle


async def test_rotation_of_certificate_and_ca_keeps_admission_working(setup: Setup) -> None:
    """Validities shrunk to seconds: the serving certificate is renewed every ~8 s and the CA
    rolls over at ~30 s (the certificate moves to it 10 s later); a pod created every half
    second must be mutated throughout, so the API server never met a certificate it did not
    trust."""
    policy = Policy(ca_validity=timedelta(seconds=45), cert_validity=timedelta(seconds=12),
                    propagation=timedelta(seconds=10), backdate=timedelta(seconds=1))  # fmt: skip
    service = await setup.serve(policy=policy, resync=1.0)
    serials: set[int] = set()
    cas: set[str] = set()
    issuers: set[str] = set()
    unmutated: list[str] = []
    try:

        async def annotated() -> None:
            assert mutated(await setup.pod())

        # The API server sees the new configurations through its informer: a moment's lag.
        await eventually(annotated, within=30, what="the API server calls the webhook")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 55
        while loop.time() < deadline:
            pod = await setup.pod()
            if not mutated(pod):
                unmutated.append(pod["metadata"]["name"])
            bundle = service.webhooks.bundle
            assert bundle is not None
            serials.add(bundle.cert.serial_number)
            cas.update(ca.subject.rfc4514_string() for ca in bundle.cas)
            issuers.add(bundle.cert.issuer.rfc4514_string())
            await asyncio.sleep(0.5)
    finally:
        await service.stop()
    assert len(serials) >= 4, f"the serving certificate was renewed {len(serials) - 1} times"
    assert len(cas) >= 2, "the CA was never rolled over"
    assert len(issuers) >= 2, "the serving certificate never moved to the new CA"
    assert unmutated == [], f"{len(unmutated)} pods were admitted without the webhook: {unmutated}"


async def test_failure_policy_ignore_admits_pods_while_no_replica_serves(setup: Setup) -> None:
    service = await setup.serve()

    async def served() -> None:
        assert mutated(await setup.pod())

    await eventually(served, within=30, what="the API server calls the webhook")
    await service.stop()
    pod = await setup.pod()
    assert not mutated(pod)

    service = await setup.serve(failure_policy="Fail")
    await service.stop()

    async def refused() -> None:
        with pytest.raises(ApiError, match="failed calling webhook"):
            await setup.pod()

    await eventually(refused, within=30, what="failurePolicy Fail refuses pods while the webhook is down")


async def test_conversion_webhook_of_the_crd_is_trusted_and_called(setup: Setup) -> None:
    group = f"{setup.token}.united.dev"
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": schema},
                {"name": "v2", "served": True, "storage": False, "schema": schema},
            ],
            "conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {
                "service": {"namespace": setup.controller_ns, "name": "united-webhook", "path": "/convert"}}}},
        },
    }  # fmt: skip
    await setup.kube.create(CRDS, crd)
    try:
        service = await setup.serve()
        try:
            current = await setup.kube.get(CRDS, f"widgets.{group}")
            config = current["spec"]["conversion"]["webhook"]["clientConfig"]
            assert config["url"] == f"https://127.0.0.1:{setup.port}/convert"
            assert "service" not in config
            v1 = Resource(group, "v1", "widgets", True, "Widget")
            v2 = Resource(group, "v2", "widgets", True, "Widget")

            async def converted() -> None:
                with contextlib.suppress(ApiError):
                    await setup.kube.create(
                        v1, {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"}},
                        namespace=setup.pod_ns,
                    )  # fmt: skip
                widget = await setup.kube.get(v2, "w", namespace=setup.pod_ns)
                assert widget["apiVersion"] == f"{group}/v2"

            await eventually(converted, within=60, what="the API server converts through the webhook",
                             retry_on=(AssertionError, ApiError))  # fmt: skip
        finally:
            await service.stop()
    finally:
        with contextlib.suppress(NotFound):
            await setup.kube.delete(CRDS, f"widgets.{group}")
        await gone(setup.kube, CRDS, f"widgets.{group}")


async def test_shipped_configurations_get_only_their_ca_bundle(setup: Setup) -> None:
    # Installed as the manifests would: a Service reference, no caBundle.
    managed = Webhooks(setup.kube, setup.options(), TLS())
    mutating, validating = managed.configurations("")
    for resource, body in ((MUTATING, mutating), (VALIDATING, validating)):
        for webhook in body["webhooks"]:
            webhook["clientConfig"] = {"service": {"namespace": setup.controller_ns, "name": "united-webhook",
                                                   "path": "/x", "port": 443}}  # fmt: skip
        await setup.kube.create(resource, body)
    shipped = Webhooks(setup.kube, setup.options(url=None, failure_policy="Fail"), TLS())
    await shipped.sync()
    assert shipped.bundle is not None
    ca_bundle = base64.b64encode(shipped.bundle.ca_bundle).decode()
    for resource in (MUTATING, VALIDATING):
        for webhook in (await setup.kube.get(resource, NAME))["webhooks"]:
            assert webhook["clientConfig"]["caBundle"] == ca_bundle
            assert webhook["failurePolicy"] == ("Ignore" if webhook["name"] == SPREADS_WEBHOOK else "Fail")
            assert webhook["clientConfig"]["service"]["name"] == "united-webhook"
            assert "url" not in webhook["clientConfig"]
    assert await shipped.publish(shipped.bundle) == 0
    assert await managed.publish(shipped.bundle) == 2  # --webhook-url mode replaces both with its own
