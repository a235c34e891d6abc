"""``manifests/admission-policy`` on a real API server (ValidatingAdmissionPolicy, 1.30+). Servers
before 1.30 do not serve the kind: the policies are not installable there."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import KUBE_VERSION
from tests.e2e.workloadspread.conftest import Spreading
from tests.e2e.workloadspread.test_spread import webhook_ready
from united.controller.webhooks import MUTATING
from united.devcluster.cluster import LocalCluster
from united.kube.client import CONFIG_MAPS, KubeClient, PatchType, Resource
from united.kube.discovery import served
from united.kube.errors import ApiError, NotFound
from united.kube.wait import eventually
from united.workloadspread.webhookconfig import NAME, with_targets

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[3]
POLICIES = Resource("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", False,
                    "ValidatingAdmissionPolicy")  # fmt: skip
BINDINGS = Resource("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings", False,
                    "ValidatingAdmissionPolicyBinding")  # fmt: skip
POLICY = "united-controller-mutating-webhooks"


def kubectl(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(cluster.binaries.kubectl), "--kubeconfig", str(cluster.admin_kubeconfig), *args],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


CONTROL = "united-e2e-no-configmaps"


def control_policy(namespace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A policy that refuses every ConfigMap CREATE in ``namespace``: shows policies are enforced here."""
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": CONTROL},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}
                ]
            },
            "matchConditions": [{"name": "here", "expression": f"request.namespace == '{namespace}'"}],
            "validations": [{"expression": "false", "message": "no ConfigMaps here"}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": CONTROL},
        "spec": {"policyName": CONTROL, "validationActions": ["Deny"]},
    }
    return policy, binding  # fmt: skip


async def test_the_controller_may_narrow_its_webhooks_but_not_widen_them(
    kube: KubeClient, namespace: str, spreading: Spreading, cluster: LocalCluster, controller_identity: Path
) -> None:
    """The policies install (their CEL compiles on a real server); once policies are in force (a
    control policy refuses ConfigMaps), the controller's identity may rewrite the webhooks'
    namespace-name ``In`` list but not drop an exclusion (the API server has no watch-driven
    repair here: a widening let through would stay until the controller's next pass)."""
    if not KUBE_VERSION.at_least(30):
        assert not await served(kube, POLICIES), "ValidatingAdmissionPolicy is GA in 1.30"
        return
    await webhook_ready(kube, spreading)
    applied = await asyncio.to_thread(kubectl, cluster, "apply", "-k", str(REPO / "manifests" / "admission-policy"))
    assert applied.returncode == 0, applied.stderr
    policy, binding = control_policy(namespace)
    await kube.create(POLICIES, policy)
    await kube.create(BINDINGS, binding)
    try:

        async def enforced() -> None:
            with pytest.raises(ApiError, match="no ConfigMaps here"):
                name = f"probe-{asyncio.get_running_loop().time():.0f}"
                await kube.create(CONFIG_MAPS, {"metadata": {"name": name}}, namespace=namespace)

        await eventually(enforced, within=60, what="the control policy refusing ConfigMaps",
                         retry_on=(AssertionError, pytest.fail.Exception))  # fmt: skip
        async with await KubeClient.from_kubeconfig(controller_identity) as controller:
            current = await kube.get(MUTATING, NAME)
            selector = current["webhooks"][0]["namespaceSelector"]

            async def patch(value: dict[str, Any]) -> None:
                ops = [{"op": "test", "path": "/webhooks/0/name", "value": current["webhooks"][0]["name"]},
                       {"op": "add", "path": "/webhooks/0/namespaceSelector", "value": value}]  # fmt: skip
                await controller.patch(MUTATING, NAME, ops, patch_type=PatchType.JSON)

            kept = [e for e in selector.get("matchExpressions") or [] if e["operator"] != "NotIn"]
            with pytest.raises(ApiError) as refused:  # kube-system no longer excluded
                await patch({**selector, "matchExpressions": kept})
            assert "may change only clientConfig.caBundle, failurePolicy and the namespace-name In list" in str(
                refused.value
            )
            await patch(with_targets(selector, ["somewhere-else"]))  # accepted: it only narrows
            narrowed = (await kube.get(MUTATING, NAME))["webhooks"][0]["namespaceSelector"]
            assert narrowed["matchExpressions"][-1]["values"] == ["somewhere-else"]
            print(f"\nKubernetes {KUBE_VERSION}: the In list rewritten; dropping an exclusion refused: {refused.value}")
    finally:
        for name in (CONTROL, POLICY, POLICY.replace("mutating", "validating")):
            for resource in (BINDINGS, POLICIES):
                with contextlib.suppress(NotFound):
                    await kube.delete(resource, name)
