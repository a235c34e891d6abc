"""``Cluster`` objects against a real member: the session's own control plane, reached through a
kubeconfig Secret holding a ServiceAccount token (a member is any API server; using the host
itself keeps this file to one control plane). The controller runs under its shipped
ServiceAccount, with the shipped ``cluster-credentials.yaml`` as its only Secret access.

What it proves: the ``Ready`` reasons (Reachable with the version, Unauthorized, the
CredentialsUnavailable cases, with messages naming fields and grants, never values); a rotated
Secret is used without a restart; wrong member credentials do not stop the host's own
UnitedDeployments; no credential byte reaches the log, Events, statuses, ``/metrics`` or
``/readyz``; and that Kubernetes 1.20 authorizes a field-selected LIST/WATCH of one Secret
against a Role's ``resourceNames`` (what the per-Secret watches rely on outside the shipped
namespace).
"""

from __future__ import annotations

import asyncio
import base64
import secrets
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import KUBE_VERSION
from tests.e2e.controller.helpers import UD, condition, get_ud, patch_ud, ud, wait_ready, wait_shape, zone
from tests.support.controller import Controller
from united import data
from united.devcluster.cluster import LocalCluster
from united.devcluster.installation import documents
from united.kube.apply import apply
from united.kube.client import EVENTS, ROLE_BINDINGS, ROLES, SECRETS, SERVICE_ACCOUNTS, KubeClient, PatchType
from united.kube.errors import Forbidden, NotFound
from united.kube.wait import eventually
from united.multicluster.join import credential_grant, granted_secrets
from united.multicluster.resource import CLUSTERS

pytestmark = pytest.mark.e2e

CREDENTIALS = data.MANIFESTS / "base" / "cluster-credentials.yaml"
HOME = "united-clusters"
PROBE = {"periodSeconds": 2, "timeoutSeconds": 1}
SEEN: set[str] = set()
"""Every credential string this module put into a Secret: none may show up anywhere."""
WRITTEN: list[dict[str, Any]] = []
"""The ``Cluster`` objects as the tests left them (statuses included), before cleanup."""


@pytest.fixture(scope="module")
def clusters_controller(cluster: LocalCluster, controller: Controller) -> Controller:
    """The session's controller (the shipped ServiceAccount and roles, leader election on: one
    process serves every package, so no second one writes Cluster statuses beside it), given
    the shipped ``cluster-credentials.yaml`` as its only Secret access."""

    async def grant() -> None:
        async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as client:
            await apply(client, documents(CREDENTIALS))

    asyncio.run(grant())
    return controller


async def token_of(cluster: LocalCluster, kube: KubeClient, namespace: str, name: str) -> str:
    """A fresh ServiceAccount's token (no bindings: ``/version`` is open to every authenticated user)."""
    await kube.create(SERVICE_ACCOUNTS, {"metadata": {"name": name}}, namespace=namespace)
    path = await cluster.service_account_kubeconfig(kube, namespace=namespace, name=name)
    token = str(yaml.safe_load(path.read_text())["users"][0]["user"]["token"])
    SEEN.add(token)
    return token


def kubeconfig(cluster: LocalCluster, token: str) -> bytes:
    ca = base64.b64encode(cluster.ca_cert.read_bytes()).decode()
    SEEN.add(ca)
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "member", "cluster": {"server": cluster.server, "certificate-authority-data": ca}}],
            "users": [{"name": "united", "user": {"token": token}}],
            "contexts": [{"name": "member", "context": {"cluster": "member", "user": "united"}}],
            "current-context": "member",
        }
    ).encode()


class Members:
    """Secrets and ``Cluster`` objects made by one test, deleted after it."""

    def __init__(self, kube: KubeClient, cluster: LocalCluster) -> None:
        self.kube = kube
        self.cluster = cluster
        self.made: list[tuple[str, str]] = []

    async def secret(self, name: str, data: dict[str, bytes], *, namespace: str = HOME) -> None:
        body = {"metadata": {"name": name}, "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}
        await self.kube.create(SECRETS, body, namespace=namespace)
        self.made.append((namespace, name))
        if namespace == HOME:  # the shipped Role grants the Secrets it names, as united join keeps it
            await apply(self.kube, credential_grant(HOME, {*await granted_secrets(self.kube, HOME), name}))

    async def set_secret(self, name: str, data: dict[str, bytes]) -> None:
        body = {"data": {k: base64.b64encode(v).decode() for k, v in data.items()}}
        await self.kube.patch(SECRETS, name, body, patch_type=PatchType.MERGE, namespace=HOME)

    async def join(self, name: str, *, key: str = "kubeconfig", namespace: str = HOME) -> None:
        ref = {"namespace": namespace, "name": name, "key": key}
        body = {
            "apiVersion": "apps.united.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": name},
            "spec": {"kubeconfigSecretRef": ref, "probe": PROBE, "allNamespaces": True, "createNamespaces": True},
        }
        await self.kube.create(CLUSTERS, body)
        self.made.append(("", name))

    async def ready(self, name: str, reason: str, *, within: float = 30) -> dict[str, Any]:
        async def check() -> dict[str, Any]:
            obj = await self.kube.get(CLUSTERS, name)
            c = condition(obj, "Ready")
            assert c.get("reason") == reason, f"Cluster {name} Ready: {c}"
            return obj

        result: dict[str, Any] = await eventually(check, within=within, what=f"Cluster {name} {reason}")
        return result

    async def clean(self) -> None:
        for namespace, name in self.made:
            if not namespace:
                WRITTEN.append(await self.kube.get(CLUSTERS, name))
        for namespace, name in reversed(self.made):
            try:
                if namespace:
                    await self.kube.delete(SECRETS, name, namespace=namespace)
                else:
                    await self.kube.delete(CLUSTERS, name)
            except NotFound:
                pass


@pytest.fixture
async def members(kube: KubeClient, cluster: LocalCluster, clusters_controller: Controller) -> AsyncIterator[Members]:
    made = Members(kube, cluster)
    try:
        yield made
    finally:
        await made.clean()


def readyz(controller: Controller) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{controller.port}/readyz?verbose", timeout=5) as answer:
        return str(answer.read().decode())


def unique(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(3)}"


async def test_ready_reasons(
    members: Members, cluster: LocalCluster, kube: KubeClient, namespace: str, clusters_controller: Controller
) -> None:
    good, no_key, bad, elsewhere = unique("good"), unique("no-key"), unique("bad"), unique("elsewhere")
    token = await token_of(cluster, kube, namespace, "member")
    await members.secret(good, {"kubeconfig": kubeconfig(cluster, token)})
    await members.secret(no_key, {"other": kubeconfig(cluster, token)})
    bad_token = "not-a-token-" + secrets.token_hex(8)
    SEEN.add(bad_token)
    await members.secret(bad, {"kubeconfig": kubeconfig(cluster, bad_token)})
    await members.secret(elsewhere, {"kubeconfig": kubeconfig(cluster, token)}, namespace=namespace)
    await members.join(good)
    await members.join(no_key)
    await members.join(bad)
    await members.join(elsewhere, namespace=namespace)

    obj = await members.ready(good, "Reachable")
    status, ready = obj["status"], condition(obj, "Ready")
    assert status["kubernetesVersion"] == KUBE_VERSION.tag and status["lastProbeTime"]
    assert ready["status"] == "True" and status["observedGeneration"] == obj["metadata"]["generation"]

    ready = condition(await members.ready(no_key, "CredentialsUnavailable"), "Ready")
    assert ready["status"] == "False"
    assert ready["message"].startswith(f"secret {HOME}/{no_key} has no key kubeconfig (since ")

    ready = condition(await members.ready(bad, "Unauthorized"), "Ready")
    assert ready["message"].startswith("get /version: the member refused the credentials (401 Unauthorized")

    ready = condition(await members.ready(elsewhere, "CredentialsUnavailable"), "Ready")
    assert ready["message"].startswith(
        f"cannot watch secret {namespace}/{elsewhere}: 403 Forbidden: grant get, list, watch on secrets in "
        f"{namespace} (see manifests/base/cluster-credentials.yaml)"
    )

    # Settled: probes go on (every 2 s) but the status is written only on a change or the
    # 60 s heartbeat.
    writes = clusters_controller.writes("clusters/status")
    await asyncio.sleep(3 * PROBE["periodSeconds"])
    assert clusters_controller.writes("clusters/status") == writes


async def test_wrong_credentials_leave_the_host_converging(
    members: Members, cluster: LocalCluster, kube: KubeClient, namespace: str, sim: Any
) -> None:
    wrong = unique("wrong")
    bad_token = "wrong-" + secrets.token_hex(12)
    SEEN.add(bad_token)
    await members.secret(wrong, {"kubeconfig": kubeconfig(cluster, bad_token)})
    await members.join(wrong)
    doc = ud("web", [zone("a", "zone-a"), zone("b", "zone-b")], replicas=2)
    await kube.create(UD, doc, namespace=namespace)
    await members.ready(wrong, "Unauthorized")
    await wait_ready(kube, namespace, doc)
    await patch_ud(kube, namespace, doc, {"spec": {"replicas": 6}})
    await wait_shape(kube, namespace, doc, {"a": 3, "b": 3})
    await wait_ready(kube, namespace, doc)
    assert condition(await get_ud(kube, namespace, doc), "Ready")["status"] == "True"
    assert condition(await kube.get(CLUSTERS, wrong), "Ready")["reason"] == "Unauthorized"


async def test_secret_rotation(
    members: Members, cluster: LocalCluster, kube: KubeClient, namespace: str, clusters_controller: Controller
) -> None:
    assert clusters_controller.proc is not None
    pid = clusters_controller.proc.pid
    name = unique("rotated")
    token_a = await token_of(cluster, kube, namespace, "member-a")
    token_b = await token_of(cluster, kube, namespace, "member-b")
    revoked = "revoked-" + secrets.token_hex(12)
    SEEN.add(revoked)
    await members.secret(name, {"kubeconfig": kubeconfig(cluster, token_a)})
    await members.join(name)
    await members.ready(name, "Reachable")
    await members.set_secret(name, {"kubeconfig": kubeconfig(cluster, revoked)})
    await members.ready(name, "Unauthorized", within=2 * PROBE["periodSeconds"] + 10)
    await members.set_secret(name, {"kubeconfig": kubeconfig(cluster, token_b)})
    obj = await members.ready(name, "Reachable", within=2 * PROBE["periodSeconds"] + 10)
    assert clusters_controller.proc is not None and clusters_controller.proc.pid == pid, "no restart"
    assert clusters_controller.proc.poll() is None
    assert obj["status"]["kubernetesVersion"] == KUBE_VERSION.tag
    swaps = clusters_controller.log_path.read_text().count('"member credentials changed; client swapped"')
    assert swaps >= 2, "each new Secret content made a new client"


async def test_resource_names_grant_a_field_selected_list_and_watch(
    cluster: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    """Design risk 2, answered on 1.20: a Role with ``resourceNames: [one]`` lets a LIST and a WATCH
    with ``fieldSelector=metadata.name=one`` through, and refuses the unfiltered LIST."""
    await kube.create(SECRETS, {"metadata": {"name": "one"}, "data": {"k": "eA=="}}, namespace=namespace)
    await kube.create(SECRETS, {"metadata": {"name": "two"}, "data": {"k": "eA=="}}, namespace=namespace)
    role = {
        "metadata": {"name": "one-secret"},
        "rules": [
            {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["one"], "verbs": ["get", "list", "watch"]}
        ],
    }
    await kube.create(ROLES, role, namespace=namespace)
    await kube.create(SERVICE_ACCOUNTS, {"metadata": {"name": "reader"}}, namespace=namespace)
    binding = {
        "metadata": {"name": "one-secret"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "one-secret"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}],
    }
    await kube.create(ROLE_BINDINGS, binding, namespace=namespace)
    path = await cluster.service_account_kubeconfig(kube, namespace=namespace, name="reader")
    async with await KubeClient.from_kubeconfig(path) as reader:

        async def granted() -> None:
            listed = await reader.list(SECRETS, namespace=namespace, field_selector="metadata.name=one")
            assert [s["metadata"]["name"] for s in listed.items] == ["one"]

        await eventually(granted, within=15, what="the Role in effect", retry_on=(AssertionError, Forbidden))
        listed = await reader.list(SECRETS, namespace=namespace, field_selector="metadata.name=one")
        async with reader.watch(
            SECRETS,
            namespace=namespace,
            field_selector="metadata.name=one",
            resource_version=listed.resource_version,
            timeout_seconds=1,
        ) as events:
            async for _ in events:
                pass
        with pytest.raises(Forbidden):
            await reader.list(SECRETS, namespace=namespace)
        with pytest.raises(Forbidden):
            await reader.list(SECRETS, namespace=namespace, field_selector="metadata.name=two")


async def test_no_credentials_leak(
    members: Members, cluster: LocalCluster, kube: KubeClient, clusters_controller: Controller
) -> None:
    """Every token and CA this module used (its own refused one at least, whatever ran before it
    in this process) against everything the controller wrote."""
    refused = unique("refused")
    refused_token = "refused-" + secrets.token_hex(12)
    SEEN.add(refused_token)
    await members.secret(refused, {"kubeconfig": kubeconfig(cluster, refused_token)})
    await members.join(refused)
    await members.ready(refused, "Unauthorized")
    places = {"controller log": clusters_controller.log_path.read_text()}
    events = await kube.list(EVENTS)
    places["events"] = yaml.safe_dump(events.items)
    places["clusters"] = yaml.safe_dump([*WRITTEN, *(await kube.list(CLUSTERS)).items])
    places["metrics"] = clusters_controller.metrics()
    places["readyz"] = await asyncio.to_thread(readyz, clusters_controller)
    for where, text in places.items():
        for value in SEEN:
            assert value not in text, f"a credential is in the {where}"
