"""``united demo --kubeconfig`` on a cluster it did not start: a second local control plane
with its own simulated nodes (``own_cluster``), playing someone's cluster. The demo's table
converges there, and afterwards the cluster holds exactly the cluster-wide objects it held
before (same names, same uids): CRDs, namespaces, Nodes, cluster RBAC, webhook
configurations, volumes. A CRD it found is kept; a namespace it did not create is refused."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator

import pytest

from tests.e2e.console import interrupt, read_until, run_until
from united import data
from united.api.groups import KRUISE_GROUP
from united.devcluster.cluster import LocalCluster
from united.devcluster.existing import READY_LINE, RUN_LABEL, TAINT
from united.devcluster.volumes import PERSISTENT_VOLUMES
from united.kube.apply import install_crds
from united.kube.client import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CONFIG_MAPS,
    CRDS,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    NODES,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    KubeClient,
    Resource,
)
from united.kube.errors import NotFound
from united.kube.wait import eventually
from united.workloadspread.webhookconfig import NAME as WEBHOOK_CONFIGURATIONS

pytestmark = pytest.mark.e2e

CLUSTER_WIDE = (
    CRDS,
    NAMESPACES,
    NODES,
    CLUSTER_ROLES,
    CLUSTER_ROLE_BINDINGS,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    PERSISTENT_VOLUMES,
)
UD_CRD = "uniteddeployments.apps.united.io"
KRUISE_SPREADS = "workloadspreads.apps.kruise.io"


async def snapshot(kube: KubeClient) -> dict[str, list[tuple[str, str]]]:
    """Every cluster-wide object of those kinds, as ``(name, uid)``."""
    return {
        kind.plural: sorted((o["metadata"]["name"], o["metadata"]["uid"]) for o in (await kube.list(kind)).items)
        for kind in CLUSTER_WIDE
    }


@pytest.fixture
async def someones(own_cluster: LocalCluster) -> AsyncIterator[KubeClient]:
    """An admin client of the cluster, which already has the UnitedDeployment CRD (as an
    earlier install left it) and a WorkloadSpread CRD of apps.kruise.io (as OpenKruise's); both
    are removed afterwards, leaving ``own_cluster`` as found."""
    async with await KubeClient.from_kubeconfig(own_cluster.admin_kubeconfig) as kube:
        await install_crds(kube, data.documents(data.crd(), data.crd(KRUISE_GROUP, "workloadspreads")))
        try:
            yield kube
        finally:
            for name in (UD_CRD, KRUISE_SPREADS):
                await _delete(kube, CRDS, name)


async def _delete(kube: KubeClient, kind: Resource, name: str) -> None:
    """Delete and wait until it is gone, so the next test's snapshot is a settled one."""
    with contextlib.suppress(NotFound):
        await kube.delete(kind, name)

    async def gone() -> None:
        with contextlib.suppress(NotFound):
            await kube.get(kind, name)
            raise AssertionError(f"{kind.kind} {name} still there")

    await eventually(gone, within=120, what=f"{kind.kind} {name} deleted")


def _demo(cluster: LocalCluster, *extra: str) -> list[str]:
    return [sys.executable, "-m", "united", "demo", "--kubeconfig", str(cluster.admin_kubeconfig), *extra]


async def test_demo_converges_on_an_existing_cluster_and_leaves_it_as_it_was(
    own_cluster: LocalCluster, someones: KubeClient
) -> None:
    kube = someones
    before = await snapshot(kube)
    found = await kube.get(CRDS, UD_CRD)
    kruise = await kube.get(CRDS, KRUISE_SPREADS)
    proc, lines = await run_until(_demo(own_cluster), READY_LINE, within=180)
    try:
        await read_until(proc, lines, "api-zones: 10/10 ready", within=180)
        for name in ("demo", "demo-controller"):
            assert RUN_LABEL in (await kube.get(NAMESPACES, name))["metadata"]["labels"]
        ours = [n for n in (await kube.list(NODES)).items if RUN_LABEL in n["metadata"]["labels"]]
        assert ours and all(TAINT.to_json() in n["spec"]["taints"] for n in ours)
        hook = await kube.get(MUTATING_WEBHOOK_CONFIGURATIONS, WEBHOOK_CONFIGURATIONS)
        assert all(RUN_LABEL in w["namespaceSelector"]["matchLabels"] for w in hook["webhooks"]), hook
        spread_crd = await kube.get(CRDS, "workloadspreads.apps.united.io")
        assert RUN_LABEL in spread_crd["metadata"]["labels"], "created by the demo, so labelled"
    finally:
        output = await interrupt(proc)
    assert proc.returncode == 0, output
    assert "removed everything the demo created" in output, output
    assert "Traceback" not in output
    assert await snapshot(kube) == before
    kept = await kube.get(CRDS, UD_CRD)
    assert kept["metadata"]["uid"] == found["metadata"]["uid"]
    assert RUN_LABEL not in (kept["metadata"].get("labels") or {}), "a CRD it found is not changed"
    assert (await kube.get(CRDS, KRUISE_SPREADS))["metadata"]["resourceVersion"] == kruise["metadata"][
        "resourceVersion"
    ], "no conversion webhook is set on OpenKruise's CRD"
    print("\n".join(lines))


async def test_sigterm_while_setting_up_removes_what_was_created(
    own_cluster: LocalCluster, someones: KubeClient
) -> None:
    """SIGTERM as soon as the demo's namespace exists (the CRDs are in, the nodes, the
    controller not yet): what it recorded so far is removed all the same."""
    kube = someones
    before = await snapshot(kube)
    proc = await asyncio.create_subprocess_exec(
        *_demo(own_cluster, "--namespace", "early"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )

    async def created() -> None:
        await kube.get(NAMESPACES, "early")

    try:
        await eventually(created, within=120, interval=0.1, what="the demo's namespace", retry_on=(NotFound,))
    finally:
        proc.send_signal(signal.SIGTERM)
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=180)
    output = out.decode()
    assert proc.returncode in (0, 130), output
    assert "removed everything the demo created" in output, output
    assert "Traceback" not in output
    assert await snapshot(kube) == before


async def test_a_namespace_it_did_not_create_is_refused_and_left_alone(
    own_cluster: LocalCluster, someones: KubeClient
) -> None:
    kube = someones
    await kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "theirs"}})
    try:
        await kube.create(CONFIG_MAPS, {"metadata": {"name": "keep-me"}, "data": {"a": "b"}}, namespace="theirs")
        before = await snapshot(kube)
        proc = await asyncio.create_subprocess_exec(
            *_demo(own_cluster, "--namespace", "theirs"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
        assert proc.returncode == 2, err.decode()
        assert out.decode() == ""
        (line,) = err.decode().splitlines()
        assert line.startswith("--namespace: namespace theirs already exists and the demo did not create it"), line
        assert await snapshot(kube) == before
        assert (await kube.get(CONFIG_MAPS, "keep-me", namespace="theirs"))["data"] == {"a": "b"}
    finally:
        await _delete(kube, NAMESPACES, "theirs")


async def test_a_cluster_running_united_is_refused(own_cluster: LocalCluster, someones: KubeClient) -> None:
    """united's webhook configurations exist there: the demo's controller would take them over."""
    kube = someones
    body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": WEBHOOK_CONFIGURATIONS}, "webhooks": []}  # fmt: skip
    await kube.create(MUTATING_WEBHOOK_CONFIGURATIONS, body)
    try:
        before = await snapshot(kube)
        done = await asyncio.create_subprocess_exec(
            *_demo(own_cluster), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await asyncio.wait_for(done.communicate(), timeout=120)
        assert (done.returncode, out) == (2, b""), err.decode()
        (line,) = err.decode().splitlines()
        assert line.startswith(f"--kubeconfig: MutatingWebhookConfiguration {WEBHOOK_CONFIGURATIONS} exists"), line
        assert await snapshot(kube) == before
    finally:
        await _delete(kube, MUTATING_WEBHOOK_CONFIGURATIONS, WEBHOOK_CONFIGURATIONS)
