"""Authentication and RBAC are real: unprivileged identities are refused until a
Role grants them access — so missing rules in the controller's manifests fail tests."""

from __future__ import annotations

import contextlib

import pytest

from united.devcluster.cluster import LocalCluster
from united.devcluster.credentials import StaticUser
from united.devcluster.installation import install_controller
from united.kube.apply import SYSTEM
from united.kube.client import (
    CLUSTER_ROLE_BINDINGS,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    PODS,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    KubeClient,
    PatchType,
    Resource,
)
from united.kube.errors import AlreadyExists, Forbidden, NotFound, Unauthorized
from united.kube.wait import eventually

pytestmark = pytest.mark.e2e


async def test_a_static_user_without_grants_is_forbidden(
    cluster: LocalCluster, namespace: str, unprivileged_user: StaticUser
) -> None:
    kubeconfig = cluster.kubeconfig_for(unprivileged_user.name)
    async with await KubeClient.from_kubeconfig(kubeconfig) as client:
        with pytest.raises(Forbidden, match=unprivileged_user.name):
            await client.list(PODS, namespace=namespace)


async def test_a_wrong_token_is_unauthorized(cluster: LocalCluster) -> None:
    async with KubeClient.for_server(cluster.server, token="not-a-token", ca_cert=cluster.ca_cert) as client:
        with pytest.raises(Unauthorized):
            await client.list(PODS, namespace="default")


async def test_a_service_account_gets_exactly_what_its_role_grants(
    cluster: LocalCluster, kube: KubeClient, namespace: str
) -> None:
    await kube.create(SERVICE_ACCOUNTS, {"metadata": {"name": "controller"}}, namespace=namespace)
    kubeconfig = await cluster.service_account_kubeconfig(kube, namespace=namespace, name="controller")
    async with await KubeClient.from_kubeconfig(kubeconfig) as client:
        with pytest.raises(Forbidden, match="system:serviceaccount"):
            await client.list(PODS, namespace=namespace)

        await kube.create(
            ROLES,
            {
                "metadata": {"name": "read-pods"},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
            },
            namespace=namespace,
        )
        await kube.create(
            ROLE_BINDINGS,
            {
                "metadata": {"name": "controller-reads-pods"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-pods"},
                "subjects": [{"kind": "ServiceAccount", "name": "controller", "namespace": namespace}],
            },
            namespace=namespace,
        )

        async def allowed() -> None:
            await client.list(PODS, namespace=namespace)

        await eventually(allowed, within=30, what="RBAC grant effective", retry_on=(Forbidden,))
        with pytest.raises(Forbidden):
            await client.list(PODS, namespace="default")


# ---------------------------------------------------------------- the shipped WorkloadSpread roles

ACCESS_REVIEWS = Resource("authorization.k8s.io", "v1", "selfsubjectaccessreviews", False, "SelfSubjectAccessReview")
OTHER = "united-access-other"
"""A namespace that is not the controller's."""

# (verb, group, resource[/subresource], namespace, name): what the ServiceAccount may do.
GRANTED = [
    ("get", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", None, "united-workloadspread"),
    ("patch", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", None, "united-workloadspread"),
    ("patch", "admissionregistration.k8s.io", "validatingwebhookconfigurations", None, "united-workloadspread"),
    ("patch", "apiextensions.k8s.io", "customresourcedefinitions", None, "workloadspreads.apps.kruise.io"),
    ("get", "", "secrets", SYSTEM, "united-webhook-certs"),
    ("update", "", "secrets", SYSTEM, "united-webhook-certs"),
    ("create", "", "secrets", SYSTEM, None),
    ("patch", "", "namespaces", None, "kube-system"),
    ("patch", "", "namespaces", None, SYSTEM),
    ("list", "apps.united.io", "workloadspreads", None, None),
    ("patch", "apps.united.io", "workloadspreads/status", OTHER, "ws"),
    ("get", "apps.united.io", "workloadspreads", OTHER, "ws"),
    ("delete", "", "pods", OTHER, "p"),
    ("patch", "", "pods", OTHER, "p"),
    ("watch", "", "nodes", None, None),
    ("list", "apps", "replicasets", None, None),
    ("get", "batch", "jobs", OTHER, "j"),
    ("watch", "apps.kruise.io", "clonesets", None, None),
]
# ... and what it may not: nothing broader than the rules above.
REFUSED = [
    ("patch", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", None, "someone-elses"),
    ("delete", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", None, "united-workloadspread"),
    ("list", "admissionregistration.k8s.io", "validatingwebhookconfigurations", None, None),
    ("create", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", None, None),
    ("create", "admissionregistration.k8s.io", "validatingwebhookconfigurations", None, None),
    ("patch", "apiextensions.k8s.io", "customresourcedefinitions", None, "uniteddeployments.apps.united.io"),
    ("delete", "apiextensions.k8s.io", "customresourcedefinitions", None, "workloadspreads.apps.kruise.io"),
    ("get", "", "secrets", OTHER, "united-webhook-certs"),
    ("get", "", "secrets", SYSTEM, "another-secret"),
    ("list", "", "secrets", SYSTEM, None),
    ("watch", "", "secrets", SYSTEM, None),
    ("create", "", "secrets", OTHER, None),
    ("delete", "", "secrets", SYSTEM, "united-webhook-certs"),
    ("patch", "", "namespaces", None, OTHER),
    ("delete", "", "namespaces", None, "kube-system"),
    ("patch", "", "nodes", None, "n"),
    ("get", "", "nodes", None, "n"),
    ("get", "", "pods", OTHER, "p"),
    ("update", "apps", "deployments", OTHER, "d"),
    ("delete", "apps", "replicasets", OTHER, "r"),
    ("patch", "batch", "jobs", OTHER, "j"),
    ("update", "apps.kruise.io", "clonesets", OTHER, "c"),
    ("delete", "apps.united.io", "workloadspreads", OTHER, "ws"),
    ("patch", "apps.united.io", "workloadspreads", OTHER, "ws"),
    ("update", "apps.united.io", "workloadspreads/status", OTHER, "ws"),
    ("update", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", None, "united-workloadspread"),
    ("create", "apps.united.io", "workloadspreads", OTHER, None),
    ("create", "", "pods", OTHER, None),
    ("list", "", "configmaps", None, None),
]


async def _allowed(
    client: KubeClient, verb: str, group: str, resource: str, namespace: str | None, name: str | None
) -> bool:
    plural, _, subresource = resource.partition("/")
    attributes = {
        "verb": verb,
        "group": group,
        "resource": plural,
        "subresource": subresource,
        "namespace": namespace or "",
        "name": name or "",
    }
    review = await client.create(ACCESS_REVIEWS, {"spec": {"resourceAttributes": attributes}})
    return bool(review["status"].get("allowed"))


async def test_the_controller_may_do_what_workloadspread_needs_and_nothing_broader(
    cluster: LocalCluster, kube: KubeClient
) -> None:
    """The shipped roles, under the controller's real ServiceAccount token: the API server's
    authorizer answers every case (SelfSubjectAccessReview), and a few real requests too."""
    await install_controller(kube)
    kubeconfig = await cluster.service_account_kubeconfig(kube, namespace=SYSTEM, name="united-controller")
    foreign = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "someone-elses"},
        "webhooks": [],
    }
    with contextlib.suppress(AlreadyExists):
        await kube.create(MUTATING_WEBHOOK_CONFIGURATIONS, foreign)
    try:
        async with await KubeClient.from_kubeconfig(kubeconfig) as client:

            async def granted() -> None:
                answers = {case: await _allowed(client, *case) for case in GRANTED}
                assert all(answers.values()), [case for case, ok in answers.items() if not ok]

            await eventually(granted, within=30, what="the shipped WorkloadSpread roles effective")
            broader = [case for case in REFUSED if await _allowed(client, *case)]
            assert not broader, f"granted more than WorkloadSpread needs: {broader}"

            with pytest.raises(Forbidden):
                await client.patch(
                    MUTATING_WEBHOOK_CONFIGURATIONS,
                    "someone-elses",
                    {"metadata": {"labels": {"x": "y"}}},
                    patch_type=PatchType.MERGE,
                )
            with pytest.raises(Forbidden):
                await client.get(SECRETS, "default-token", namespace="default")
            with contextlib.suppress(NotFound):  # allowed (an earlier controller may have made it)
                await client.get(SECRETS, "united-webhook-certs", namespace=SYSTEM)

            # `united run --webhook-url` (development) creates the configurations: a separate role.
            await install_controller(kube, dev_webhooks=True)

            async def can_create() -> None:
                assert await _allowed(
                    client, "create", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", None, None
                )

            await eventually(can_create, within=30, what="the development role effective")
    finally:
        await kube.delete(MUTATING_WEBHOOK_CONFIGURATIONS, "someone-elses")
        with contextlib.suppress(NotFound):
            await kube.delete(CLUSTER_ROLE_BINDINGS, "united-dev-webhook-configurations")
