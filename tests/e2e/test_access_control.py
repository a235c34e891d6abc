"""Authentication and RBAC are real: unprivileged identities are refused until a
Role grants them access — so missing rules in the controller's manifests fail tests."""

from __future__ import annotations

import pytest

from united.devcluster.cluster import LocalCluster
from united.devcluster.credentials import StaticUser
from united.devcluster.wait import eventually
from united.kube.client import PODS, ROLE_BINDINGS, ROLES, SERVICE_ACCOUNTS, KubeClient
from united.kube.errors import Forbidden, Unauthorized

pytestmark = pytest.mark.e2e


async def test_a_static_user_without_grants_is_forbidden(
    cluster: LocalCluster, namespace: str, unprivileged_user: StaticUser
) -> None:
    kubeconfig = cluster.kubeconfig_for(unprivileged_user.name)
    async with await KubeClient.from_kubeconfig(kubeconfig) as client:
        with pytest.raises(Forbidden, match=unprivileged_user.name):
            await client.list(PODS, namespace=namespace)


async def test_a_wrong_token_is_unauthorized(cluster: LocalCluster) -> None:
    async with KubeClient.for_server(cluster.server, token="not-a-token",
                                     ca_cert=cluster.ca_cert) as client:
        with pytest.raises(Unauthorized):
            await client.list(PODS, namespace="default")


async def test_a_service_account_gets_exactly_what_its_role_grants(
    cluster: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    await kube.create(SERVICE_ACCOUNTS, {"metadata": {"name": "controller"}}, namespace=namespace)
    kubeconfig = await cluster.service_account_kubeconfig(kube, namespace=namespace,
                                                          name="controller")
    async with await KubeClient.from_kubeconfig(kubeconfig) as client:
        with pytest.raises(Forbidden, match="system:serviceaccount"):
            await client.list(PODS, namespace=namespace)

        await kube.create(ROLES, {
            "metadata": {"name": "read-pods"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
        }, namespace=namespace)
        await kube.create(ROLE_BINDINGS, {
            "metadata": {"name": "controller-reads-pods"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                        "name": "read-pods"},
            "subjects": [{"kind": "ServiceAccount", "name": "controller",
                          "namespace": namespace}],
        }, namespace=namespace)

        async def allowed() -> None:
            await client.list(PODS, namespace=namespace)

        await eventually(allowed, within=30, what="RBAC grant effective", retry_on=(Forbidden,))
        with pytest.raises(Forbidden):
            await client.list(PODS, namespace="default")
