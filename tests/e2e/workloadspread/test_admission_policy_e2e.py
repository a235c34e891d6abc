"""``manifests/admission-policy`` on a real API server (ValidatingAdmissionPolicy, 1.30+): the
controller's ServiceAccount may rewrite the webhooks' namespace-name ``In``
list but not drop an exclusion. Servers before 1.30 do not serve the kind: the policies are not
installable there, as ``docs/security.md`` says."""

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
from united.devcluster.wait import eventually
from united.kube.client import KubeClient, PatchType, Resource
from united.kube.discovery import served
from united.kube.errors import ApiError, NotFound
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


async def test_the_controller_may_narrow_its_webhooks_but_not_widen_them(
    kube: KubeClient, spreading: Spreading, cluster: LocalCluster, controller_identity: Path
) -> None:
    if not KUBE_VERSION.at_least(30):
        assert not await served(kube, POLICIES), "ValidatingAdmissionPolicy is GA in 1.30"
        return
    await webhook_ready(kube, spreading)
    applied = await asyncio.to_thread(kubectl, cluster, "apply", "-k", str(REPO / "manifests" / "admission-policy"))
    assert applied.returncode == 0, applied.stderr
    try:

        async with await KubeClient.from_kubeconfig(controller_identity) as controller:

            async def patch(selector: dict[str, Any]) -> None:
                current = await kube.get(MUTATING, NAME)
                ops = [{"op": "test", "path": "/webhooks/0/name", "value": current["webhooks"][0]["name"]},
                       {"op": "add", "path": "/webhooks/0/namespaceSelector", "value": selector}]  # fmt: skip
                await controller.patch(MUTATING, NAME, ops, patch_type=PatchType.JSON)

            async def refused() -> ApiError:
                selector = (await kube.get(MUTATING, NAME))["webhooks"][0]["namespaceSelector"]
                try:
                    await patch({**selector, "matchExpressions": selector["matchExpressions"][1:]})
                except ApiError as exc:
                    return exc
                raise AssertionError("an exclusion dropped: not refused yet (the binding not in force)")

            error = await eventually(refused, within=60, what="the policy refusing to drop an exclusion")
            assert "the controller may change only clientConfig.caBundle, failurePolicy" in str(error)
            selector = (await kube.get(MUTATING, NAME))["webhooks"][0]["namespaceSelector"]
            await patch(with_targets(selector, ["somewhere-else"]))  # accepted: it only narrows
            print(f"\nKubernetes {KUBE_VERSION}: the In list rewritten; dropping an exclusion refused: {error}")
    finally:
        for name in (POLICY, POLICY.replace("mutating", "validating")):
            for resource in (BINDINGS, POLICIES):
                with contextlib.suppress(NotFound):
                    await kube.delete(resource, name)
