"""The Helm chart's renderings pass the API server's validation (Kubernetes 1.20, the oldest
supported): ``helm template | kubectl apply --dry-run=server``. A dry run, not an install: the
session's controller owns the same cluster-scoped names (tests/e2e/conftest.py), and the chart's
objects equal manifests/base's, which the e2e suite installs for real. Its webhook configurations
call a URL: they are set aside during the dry run (applying the chart's, which call a Service,
onto them would ask for both)."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import KUBE_VERSION
from tests.support.controller import webhook_configurations_set_aside
from tests.support.tools import HELM, ensure_tool
from tests.unit.chart.test_chart import CHART, VALUE_SETS, objects
from united.api import crdrules
from united.devcluster.cluster import LocalCluster
from united.kube.apply import SYSTEM
from united.kube.client import NAMESPACES, KubeClient
from united.kube.errors import AlreadyExists

pytestmark = pytest.mark.e2e

OPERATOR_ONLY = ["--set", "serviceMonitor.enabled=false", "--set", "prometheusRule.enabled=false"]
"""Their CRDs are the Prometheus Operator's, not installed here."""
NEWER_ONLY = ["--set", "admissionPolicy.enabled=false"]
"""ValidatingAdmissionPolicy is Kubernetes 1.30+."""


async def _namespace(cluster: LocalCluster, name: str) -> None:
    async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as client:
        with contextlib.suppress(AlreadyExists):
            await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


@pytest.mark.parametrize("name", ["default", "kruise", "webhook-disabled", "everything"])
def test_each_rendering_passes_the_api_servers_dry_run(cluster: LocalCluster, name: str) -> None:
    helm: Path = ensure_tool(HELM)
    for namespace in (SYSTEM, "united-clusters"):
        asyncio.run(_namespace(cluster, namespace))
    values = [*VALUE_SETS[name], *OPERATOR_ONLY, *NEWER_ONLY]
    rendered = subprocess.run(
        [str(helm), "template", "united", str(CHART), "--namespace", SYSTEM, "--include-crds", *values],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    # helm install creates the chart's CRDs without client-side validation, and a server before
    # 1.25 drops their CEL rules; kubectl would refuse them there, so it gets them as that server keeps them.
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    rendered = yaml.safe_dump_all(crdrules.for_server(docs, (KUBE_VERSION.major, KUBE_VERSION.minor)), sort_keys=False)
    with webhook_configurations_set_aside(cluster.admin_kubeconfig):  # the session controller's call a URL
        kubectl = subprocess.run(
            [str(cluster.binaries.kubectl), "--kubeconfig", str(cluster.admin_kubeconfig),
             "apply", "--dry-run=server", "-f", "-"],
            input=rendered, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert kubectl.returncode == 0, kubectl.stderr
    accepted = [line for line in kubectl.stdout.splitlines() if line.endswith("(server dry run)")]
    assert len(accepted) == len(objects(rendered)), kubectl.stdout
