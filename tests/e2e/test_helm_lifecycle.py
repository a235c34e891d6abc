"""``helm install`` / ``helm upgrade`` / ``helm uninstall`` of charts/united on a local control
plane of its own (``own_cluster``: the session's controller owns the same cluster-wide names on
the shared one), with a UnitedDeployment and a WorkloadSpread converging.

How the controller runs: the control plane has simulated kubelets and no container runtime,
so the chart's Deployment is installed with ``replicaCount=0`` and this test plays the kubelet
for it: it starts ``united`` locally with exactly the arguments of the Deployment's container
as installed (read back from the cluster), as the chart's ServiceAccount (a token of
``united-system/united-controller``, so the chart's RBAC is what is tested), with only the
probe port and the listening address (127.0.0.1) changed. The API server cannot reach a
Service's cluster IP here, so the release sets ``webhook.url`` (the chart's value for a
controller outside the cluster): both configurations call that URL and the controller gets
``--webhook-url``. After ``helm upgrade`` the test restarts that process from the new
Deployment, as a rollout would. The image itself is not run here (docs/operations/helm.md says
how to build it).

What Helm keeps on uninstall, by design: the CRDs of the chart's ``crds/`` directory (Helm
never upgrades or deletes them) and the namespace ``--create-namespace`` made; what the
controller wrote itself (its certificate Secret, its Lease) lives in that namespace. The test
asserts exactly that, then removes them to leave the cluster as it found it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_demo_existing_cluster import snapshot
from tests.support.controller import Controller, webhooks_trusted
from tests.support.tools import HELM, ensure_tool
from tests.unit.chart.test_chart import CHART
from united.devcluster.cluster import LocalCluster
from united.devcluster.nodes import is_pod_ready
from united.devcluster.ports import free_ports
from united.kube.apply import SYSTEM
from united.kube.client import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CRDS,
    DEPLOYMENTS,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    PODS,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    KubeClient,
    PatchType,
    Resource,
)
from united.kube.errors import NotFound
from united.kube.wait import eventually
from united.workloadspread.model import MATCHED_ANNOTATION
from united.workloadspread.webhookconfig import NAME as WEBHOOK_CONFIGURATIONS
from united.workloadspread.webhookconfig import SPREADS_WEBHOOK

pytestmark = pytest.mark.e2e

RELEASE = "united"
APPS = "helm-apps"
UDS = Resource("apps.united.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")
SPREADS = Resource("apps.united.io", "v1alpha1", "workloadspreads", True, "WorkloadSpread")
CHART_CRDS = sorted(p.name.removeprefix("apps.united.io_").removesuffix(".yaml") for p in (CHART / "crds").iterdir())
WEBHOOK_PORT = free_ports(1)[0]
LOCAL = [
    "--set", "replicaCount=0",
    "--set", f"webhook.port={WEBHOOK_PORT}",
    "--set", f"webhook.url=https://127.0.0.1:{WEBHOOK_PORT}",
]  # fmt: skip
"""No pod can run here: the controller runs as a local process (see the module docstring)."""


def _zone(zone: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}


def _pod_template(app: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": app, "image": "registry.example.com/app:1"}]},
    }


UNITED = {
    "apiVersion": "apps.united.io/v1alpha1",
    "kind": "UnitedDeployment",
    "metadata": {"name": "api"},
    "spec": {
        "replicas": 6,
        "selector": {"matchLabels": {"app": "api"}},
        "template": {
            "deploymentTemplate": {
                "metadata": {"labels": {"app": "api"}},
                "spec": {"selector": {"matchLabels": {"app": "api"}}, "template": _pod_template("api")},
            }
        },
        "topology": {
            "subsets": [
                {"name": z, "nodeSelectorTerm": _zone(z), "replicas": r}
                for z, r in (("zone-a", 1), ("zone-b", 2), ("zone-c", None))
            ]
        },
    },
}
WEB = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "web"}}, "template": _pod_template("web")},
}
SPREAD = {
    "apiVersion": "apps.united.io/v1alpha1",
    "kind": "WorkloadSpread",
    "metadata": {"name": "web"},
    "spec": {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "subsets": [
            {"name": z, "requiredNodeSelector": _zone(z), "maxReplicas": 2} for z in ("zone-a", "zone-b", "zone-c")
        ],
    },
}


def _clean(spec: dict[str, Any]) -> dict[str, Any]:
    """Drop the ``replicas: None`` of the subset that takes the rest."""
    return json.loads(json.dumps(spec).replace(', "replicas": null', ""))


class Helm:
    def __init__(self, cluster: LocalCluster) -> None:
        self.binary = ensure_tool(HELM)
        self.kubeconfig = cluster.admin_kubeconfig

    def __call__(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(
            [str(self.binary), "--kubeconfig", str(self.kubeconfig), "--namespace", SYSTEM, *args],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0 or not check, f"helm {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done.stdout


@pytest.fixture
async def helm(own_cluster: LocalCluster) -> AsyncIterator[Helm]:
    """Helm for ``own_cluster``; afterwards, whatever happened, the release, the namespaces and
    the CRDs are gone again (the test asserts what uninstall itself removes)."""
    yield Helm(own_cluster)
    Helm(own_cluster)("uninstall", RELEASE, "--wait", check=False)
    async with await KubeClient.from_kubeconfig(own_cluster.admin_kubeconfig) as kube:
        doomed = [(NAMESPACES, APPS), (NAMESPACES, SYSTEM), *((CRDS, f"{c}.apps.united.io") for c in CHART_CRDS)]
        for kind, name in doomed:
            with contextlib.suppress(NotFound):
                await kube.delete(kind, name)

        async def removed() -> None:
            for kind, name in doomed:
                assert await _gone(kube, kind, name), f"{kind.kind} {name} still there"

        await eventually(removed, within=120, what="the release's leftovers removed")


async def _controller(kube: KubeClient, cluster: LocalCluster, name: str) -> tuple[Controller, list[str]]:
    """The chart's controller as a local process, from its Deployment as installed."""
    deployment = await kube.get(DEPLOYMENTS, "united-controller", namespace=SYSTEM)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args = list(container["args"])
    assert args[0] == "run", args
    identity = await cluster.service_account_kubeconfig(kube, namespace=SYSTEM, name="united-controller")
    running = Controller(identity, name=name, extra=(*args[1:], "--webhook-host", "127.0.0.1"), leader_elect=False)
    await asyncio.to_thread(running.start)
    # Ready means serving; the chart's configurations trust it only once its first pass wrote
    # the caBundle. Until then a spread's CREATE (failurePolicy Ignore) would not put its
    # namespace in the pod webhooks' list, and its first pods would be admitted unplaced.
    await webhooks_trusted(kube, f"https://127.0.0.1:{WEBHOOK_PORT}")
    return running, args


async def _converged(kube: KubeClient, web_replicas: int) -> None:
    async def united() -> None:
        ud = await kube.get(UDS, "api", namespace=APPS)
        status = ud.get("status") or {}
        assert status.get("readyReplicas") == 6, status
        subsets = {s["name"]: s.get("readyReplicas") for s in status.get("subsetStatuses") or []}
        assert subsets == {"zone-a": 1, "zone-b": 2, "zone-c": 3}, subsets

    async def spread() -> None:
        pods = (await kube.list(PODS, namespace=APPS, label_selector="app=web")).items
        placed = sorted(
            json.loads(p["metadata"]["annotations"][MATCHED_ANNOTATION])["subset"]
            for p in pods
            if is_pod_ready(p) and MATCHED_ANNOTATION in (p["metadata"].get("annotations") or {})
        )
        want = (["zone-a"] * 2 + ["zone-b"] * 2 + ["zone-c"] * 2)[:web_replicas]
        assert placed == want, placed

    await eventually(united, within=120, what="the UnitedDeployment converged", retry_on=(AssertionError, NotFound))
    await eventually(spread, within=120, what="the WorkloadSpread's pods placed")


async def _gone(kube: KubeClient, kind: Resource, name: str, namespace: str | None = None) -> bool:
    try:
        await kube.get(kind, name, namespace=namespace)
    except NotFound:
        return True
    return False


def _json_lines(path: Path, start: int) -> list[bool]:
    """For each log line after byte ``start``: whether it is a JSON object."""
    out = []
    for line in path.read_bytes()[start:].decode().splitlines():
        if not line.strip() or line.startswith("===="):
            continue
        try:
            out.append(isinstance(json.loads(line), dict))
        except ValueError:
            out.append(False)
    return out


async def test_helm_install_upgrade_uninstall(own_cluster: LocalCluster, helm: Helm) -> None:
    async with await KubeClient.from_kubeconfig(own_cluster.admin_kubeconfig) as kube:
        before = await snapshot(kube)
        helm("install", RELEASE, str(CHART), "--create-namespace", *LOCAL)
        for crd in CHART_CRDS:
            assert not await _gone(kube, CRDS, f"{crd}.apps.united.io")
        controller, args = await _controller(kube, own_cluster, "helm-install")
        try:
            assert "--log-format" in args and args[args.index("--log-format") + 1] == "json"
            await kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": APPS}})
            await kube.create(UDS, _clean(UNITED), namespace=APPS)
            await kube.create(SPREADS, SPREAD, namespace=APPS)
            await kube.create(DEPLOYMENTS, {**WEB, "spec": {**WEB["spec"], "replicas": 3}}, namespace=APPS)
            await _converged(kube, 3)
            assert all(_json_lines(controller.log_path, 0)), "logFormat json"

            # upgrade: console logs, failure policy Fail; the Deployment changes, its "pods" restart
            helm("upgrade", RELEASE, str(CHART), *LOCAL,
                 "--set", "logFormat=console", "--set", "webhook.failurePolicy=Fail")  # fmt: skip
            assert controller.stop() == 0
            offset = controller.log_path.stat().st_size
            controller, args = await _controller(kube, own_cluster, "helm-install")
            assert args[args.index("--log-format") + 1] == "console"
            assert "--webhook-failure-policy=Fail" in args
            for kind in (MUTATING_WEBHOOK_CONFIGURATIONS, VALIDATING_WEBHOOK_CONFIGURATIONS):
                config = await kube.get(kind, WEBHOOK_CONFIGURATIONS)
                policies = {w["name"]: w["failurePolicy"] for w in config["webhooks"]}
                assert {p for n, p in policies.items() if n != SPREADS_WEBHOOK} == {"Fail"}, config
                assert policies.get(SPREADS_WEBHOOK, "Ignore") == "Ignore", "creating a spread never waits on us"
            await kube.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 5}}, namespace=APPS, patch_type=PatchType.MERGE)
            await _converged(kube, 5)
            lines = _json_lines(controller.log_path, offset)
            assert lines and not any(lines), "logFormat console after the upgrade"
        finally:
            code = controller.stop()
        assert code == 0, f"see {controller.log_path}"

        helm("uninstall", RELEASE, "--wait")
        installed = [
            (DEPLOYMENTS, "united-controller", SYSTEM),
            (SERVICE_ACCOUNTS, "united-controller", SYSTEM),
            (SERVICES, "united-webhook", SYSTEM),
            (CLUSTER_ROLES, "united-controller", None),
            (CLUSTER_ROLES, "united-workloadspread", None),
            (CLUSTER_ROLE_BINDINGS, "united-controller", None),
            (MUTATING_WEBHOOK_CONFIGURATIONS, WEBHOOK_CONFIGURATIONS, None),
            (VALIDATING_WEBHOOK_CONFIGURATIONS, WEBHOOK_CONFIGURATIONS, None),
        ]
        for kind, name, namespace in installed:
            assert await _gone(kube, kind, name, namespace), f"{kind.kind} {name} left by helm uninstall"
        releases = (await kube.list(SECRETS, namespace=SYSTEM, label_selector=f"owner=helm,name={RELEASE}")).items
        assert releases == []
        # kept by design: the CRDs (Helm never deletes crds/) and the namespace --create-namespace made
        for crd in CHART_CRDS:
            assert not await _gone(kube, CRDS, f"{crd}.apps.united.io"), f"{crd}: Helm keeps crds/"
        assert not await _gone(kube, NAMESPACES, SYSTEM)
        assert not await _gone(kube, UDS, "api", namespace=APPS), "the CRDs kept, so are their objects"

        after = await snapshot(kube)
        added = {kind: sorted({n for n, _ in after[kind]} - {n for n, _ in before[kind]}) for kind in after}
        removed = {kind: sorted({n for n, _ in before[kind]} - {n for n, _ in after[kind]}) for kind in after}
        assert {kind: names for kind, names in added.items() if names} == {
            "customresourcedefinitions": sorted(f"{c}.apps.united.io" for c in CHART_CRDS),
            "namespaces": sorted([APPS, SYSTEM]),
        }, "cluster-wide, helm uninstall leaves only its CRDs and the namespaces"
        assert not any(removed.values()), removed
