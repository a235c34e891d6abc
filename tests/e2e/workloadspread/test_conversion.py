"""OpenKruise manifests through the compat CRD's conversion webhook, on the local control plane.

The compat CRD ``workloadspreads.apps.kruise.io`` stores ``v1beta1`` and serves ``v1alpha1``
too; the two spell two subset fields differently, so every read and write in the other
version goes through ``united run``'s ``/convert`` (``conversion.review``), with the CRD's
``clientConfig`` (URL and ``caBundle``) written by its certificate loop (``--webhook-url``
mode). Without the webhook each read below fails: the API server cannot convert."""

from __future__ import annotations

import base64
import contextlib
import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.e2e.workloadspread.conftest import Spreading
from united.controller.webhooks import COMPAT_CRD
from united.kube.apply import SYSTEM
from united.kube.client import CRDS, SECRETS, KubeClient, Resource
from united.kube.errors import AlreadyExists, ApiError, NotFound
from united.kube.wait import eventually
from united.runtime.certificates import Bundle
from united.workloadspread.model import KIND, KRUISE_ALPHA, KRUISE_BETA
from united.workloadspread.webhookconfig import CONVERT_PATH

pytestmark = [pytest.mark.e2e, pytest.mark.compat]

JSON = dict[str, Any]
ALPHA = Resource("apps.kruise.io", "v1alpha1", "workloadspreads", True, KIND)
BETA = Resource("apps.kruise.io", "v1beta1", "workloadspreads", True, KIND)
ZONE = {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}]}
PREFERRED = [{"weight": 10, "preference": ZONE}]


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
    """WorkloadSpreads of the compat group in one test's namespace."""

    def __init__(self, kube: KubeClient, namespace: str) -> None:
        self.kube = kube
        self.namespace = namespace

    async def create(self, obj: JSON) -> JSON:
        resource = ALPHA if obj["apiVersion"] == KRUISE_ALPHA else BETA
        return await self.kube.create(resource, obj, namespace=self.namespace)

    async def read(self, resource: Resource, name: str) -> JSON:
        return await self.kube.get(resource, name, namespace=self.namespace)


@pytest.fixture
async def compat(kube: KubeClient, namespace: str, spreading: Spreading) -> AsyncIterator[Compat]:
    """The compat CRD (installed with the controller) converted by ``spreading``'s ``/convert``."""
    yield Compat(kube, namespace)
    for item in (await kube.list(BETA, namespace=namespace)).items:
        with contextlib.suppress(NotFound):
            await kube.delete(BETA, item["metadata"]["name"], namespace=namespace)


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


async def test_crd_conversion_points_at_the_served_url_with_our_ca(kube: KubeClient, spreading: Spreading) -> None:
    async def patched() -> None:
        crd = await kube.get(CRDS, COMPAT_CRD)
        webhook = crd["spec"]["conversion"]["webhook"]
        assert crd["spec"]["conversion"]["strategy"] == "Webhook"
        assert webhook["clientConfig"].get("url") == f"https://127.0.0.1:{spreading.webhook_port}{CONVERT_PATH}"
        assert "service" not in webhook["clientConfig"]
        secret = await kube.get(SECRETS, "united-webhook-certs", namespace=SYSTEM)
        bundle = Bundle.from_secret_data(secret["data"])
        assert base64.b64decode(webhook["clientConfig"]["caBundle"]) == bundle.ca_bundle

    await eventually(patched, within=60, what="the compat CRD's conversion webhook points at the controller")


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

    # A v1alpha1 client writing back what it read loses nothing of v1beta1's condition.
    await compat.kube.replace(ALPHA, alpha, namespace=compat.namespace, subresource="status")
    [stored] = (await compat.read(BETA, "status"))["status"]["subsetStatuses"]
    assert stored == subset_status(beta_condition)
