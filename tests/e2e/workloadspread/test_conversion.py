"""OpenKruise manifests through the compat CRD's conversion webhook, on the local control plane.

The compat CRD ``workloadspreads.apps.kruise.io`` stores ``v1beta1`` and serves ``v1alpha1``
too; the two spell two subset fields differently, so every read and write in the other
version goes through ``conversion.review`` served at ``/convert`` by the webhook server, with
the CRD's ``clientConfig`` (URL and ``caBundle``) written by the certificate loop
(``--webhook-url`` mode). Without the webhook each read below fails: the API server cannot
convert."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.e2e.runtime.test_webhooks_e2e import Setup, setup  # noqa: F401  (the fixture)
from united import data
from united.controller.webhooks import COMPAT_CRD, WebhookService, serve_webhooks
from united.devcluster import crds
from united.devcluster.wait import eventually
from united.kube.client import CRDS, PatchType, Resource
from united.kube.errors import AlreadyExists, ApiError, NotFound
from united.workloadspread import conversion
from united.workloadspread.model import KIND, KRUISE_ALPHA, KRUISE_BETA
from united.workloadspread.webhookconfig import CONVERT_PATH

pytestmark = pytest.mark.e2e

JSON = dict[str, Any]
ALPHA = Resource("apps.kruise.io", "v1alpha1", "workloadspreads", True, KIND)
BETA = Resource("apps.kruise.io", "v1beta1", "workloadspreads", True, KIND)
ZONE = {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}]}
PREFERRED = [{"weight": 10, "preference": ZONE}]


async def convert(review: JSON) -> JSON:
    return conversion.review(review)


def manifest(api_version: str, name: str) -> JSON:
    required, preferred = (
        ("requiredNodeSelectorTerm", "preferredNodeSelectorTerms") if api_version == KRUISE_ALPHA
        else ("requiredNodeSelector", "preferredNodeSelector")
    )  # fmt: skip
    return {
        "apiVersion": api_version,
        "kind": KIND,
        "metadata": {"name": name},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "subsets": [
                {"name": "a", required: ZONE, preferred: PREFERRED, "maxReplicas": 2},
                {"name": "rest"},
            ],
        },
    }


class Compat:
    """The compat CRD served through our webhook in one test's namespace."""

    def __init__(self, served: Setup, service: WebhookService) -> None:
        self.kube = served.kube
        self.namespace = served.pod_ns
        self.service = service

    async def create(self, obj: JSON) -> JSON:
        resource = ALPHA if obj["apiVersion"] == KRUISE_ALPHA else BETA
        return await self.kube.create(resource, obj, namespace=self.namespace)

    async def read(self, resource: Resource, name: str) -> JSON:
        return await self.kube.get(resource, name, namespace=self.namespace)


@pytest.fixture
async def compat(setup: Setup) -> AsyncIterator[Compat]:  # noqa: F811
    """The shipped compat CRD (installed if missing, put back as it was afterwards), its
    conversion webhook pointed at a server serving ``conversion.review``."""
    try:
        before: JSON | None = await setup.kube.get(CRDS, COMPAT_CRD)
    except NotFound:
        before = None
    [crd] = data.documents(data.crd("apps.kruise.io", "workloadspreads"))
    if before is None:
        await crds.install(setup.kube, [crd])
    service = await serve_webhooks(setup.kube, setup.settings(), {CONVERT_PATH: convert},
                                   options=setup.options(conversion_crd=COMPAT_CRD))  # fmt: skip
    try:
        await asyncio.wait_for(service.webhooks.published.wait(), 30)
        yield Compat(setup, service)
        # Storage version objects need no conversion to delete; the namespace's deletion
        # later would otherwise list v1alpha1 with nobody left to convert.
        for item in (await setup.kube.list(BETA, namespace=setup.pod_ns)).items:
            with contextlib.suppress(NotFound):
                await setup.kube.delete(BETA, item["metadata"]["name"], namespace=setup.pod_ns)
    finally:
        await service.stop()
        if before is None:
            with contextlib.suppress(NotFound):
                await setup.kube.delete(CRDS, COMPAT_CRD)
        else:
            op = {"op": "replace", "path": "/spec/conversion", "value": before["spec"]["conversion"]}
            await setup.kube.patch(CRDS, COMPAT_CRD, [op], patch_type=PatchType.JSON)


async def first_conversion(compat: Compat, obj: JSON, other: Resource) -> JSON:
    """Create ``obj`` and read it back in the ``other`` version, once the API server has
    picked up the webhook's new client configuration (its CRD handler lags a moment: until
    then creating a v1alpha1 object fails too, as it must be converted to be stored)."""

    async def created_and_read() -> JSON:
        with contextlib.suppress(AlreadyExists):
            await compat.create(obj)
        return await compat.read(other, obj["metadata"]["name"])

    converted: JSON = await eventually(created_and_read, within=60, retry_on=(ApiError,),
                                       what="the API server converts through the webhook")  # fmt: skip
    return converted


async def test_crd_conversion_points_at_the_served_url_with_our_ca(compat: Compat, setup: Setup) -> None:  # noqa: F811
    crd = await setup.kube.get(CRDS, COMPAT_CRD)
    webhook = crd["spec"]["conversion"]["webhook"]
    assert crd["spec"]["conversion"]["strategy"] == "Webhook"
    assert webhook["clientConfig"]["url"] == f"https://127.0.0.1:{setup.port}{CONVERT_PATH}"
    assert "service" not in webhook["clientConfig"]
    bundle = await setup.secret_bundle()
    assert base64.b64decode(webhook["clientConfig"]["caBundle"]) == bundle.ca_bundle


async def test_v1alpha1_manifest_reads_back_as_v1beta1_and_unchanged_as_v1alpha1(compat: Compat) -> None:
    alpha = manifest(KRUISE_ALPHA, "from-alpha")
    beta = await first_conversion(compat, alpha, BETA)
    assert beta["apiVersion"] == KRUISE_BETA
    subset, rest = beta["spec"]["subsets"]
    assert subset == {"name": "a", "requiredNodeSelector": ZONE, "preferredNodeSelector": PREFERRED,
                      "maxReplicas": 2}  # fmt: skip
    assert rest == {"name": "rest"}
    again = await compat.read(ALPHA, "from-alpha")
    assert again["apiVersion"] == KRUISE_ALPHA
    assert again["spec"] == alpha["spec"]


async def test_v1beta1_manifest_reads_back_as_v1alpha1(compat: Compat) -> None:
    beta = manifest(KRUISE_BETA, "from-beta")
    alpha = await first_conversion(compat, beta, ALPHA)
    assert alpha["apiVersion"] == KRUISE_ALPHA
    assert alpha["spec"]["subsets"][0] == {"name": "a", "requiredNodeSelectorTerm": ZONE,
                                           "preferredNodeSelectorTerms": PREFERRED, "maxReplicas": 2}  # fmt: skip
    stored = await compat.read(BETA, "from-beta")
    assert stored["spec"] == beta["spec"]


def subset_status(condition: JSON) -> JSON:
    return {"name": "a", "replicas": 1, "missingReplicas": 1, "conditions": [condition],
            "creatingPods": {"web-x": "2026-01-02T03:04:05Z"}}  # fmt: skip


async def test_status_written_through_one_version_reads_through_the_other(compat: Compat) -> None:
    await first_conversion(compat, manifest(KRUISE_ALPHA, "status"), BETA)
    # v1alpha1 conditions may lack a reason; metav1.Condition (v1beta1) requires one.
    alpha_condition = {"type": "Schedulable", "status": "True", "lastTransitionTime": "2026-01-02T03:04:05Z"}
    current = await compat.read(ALPHA, "status")
    body = copy.deepcopy(current)
    body["status"] = {"observedGeneration": 1, "subsetStatuses": [subset_status(alpha_condition)]}
    await compat.kube.replace(ALPHA, body, namespace=compat.namespace, subresource="status")
    [beta_subset] = (await compat.read(BETA, "status"))["status"]["subsetStatuses"]
    assert beta_subset == subset_status({**alpha_condition, "reason": "Unknown"})

    # v1beta1 conditions carry observedGeneration, which v1alpha1 conditions do not have.
    beta_condition = {"type": "Schedulable", "status": "False", "reason": "Unschedulable", "message": "full",
                      "lastTransitionTime": "2026-01-02T03:04:06Z", "observedGeneration": 1}  # fmt: skip
    current = await compat.read(BETA, "status")
    body = copy.deepcopy(current)
    body["status"]["subsetStatuses"] = [subset_status(beta_condition)]
    await compat.kube.replace(BETA, body, namespace=compat.namespace, subresource="status")
    alpha = await compat.read(ALPHA, "status")
    assert alpha["apiVersion"] == KRUISE_ALPHA
    [alpha_subset] = alpha["status"]["subsetStatuses"]
    without = {k: v for k, v in beta_condition.items() if k != "observedGeneration"}
    assert alpha_subset == subset_status(without)
    assert alpha["spec"]["subsets"][0]["requiredNodeSelectorTerm"] == ZONE
