"""``manifests/member`` (what a member cluster applies) and ``manifests/member-no-namespaces``:
the identity, its long-lived token, and a ClusterRole of exactly the requests the controller
makes in a member. (Rendered by kubectl's own kustomize and used as the controller's only member
grant: tests/e2e/multicluster/test_member_privilege.py.)"""

from __future__ import annotations

from typing import Any

from united import data
from united.kustomization import build
from united.uniteddeployment.model import TEMPLATE_VARIANTS
from united.uniteddeployment.resources import resource_of

NAMESPACE = "united-system"
SA = "united-member"
CHILD_VERBS = {"list", "watch", "create", "patch", "delete"}
"""Informers list and watch; the reconciler creates, patches (never updates) and deletes; the
finalizer and the orphan collector delete."""


def rendered(overlay: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"]["name"]): o for o in build(data.MANIFESTS, overlay)}


def grants(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def used(*, namespaces: bool) -> set[tuple[str, str, str]]:
    """What the controller asks of a member: every child kind's resource, its pods, namespaces."""
    children = {(resource_of(v).group, resource_of(v).plural, verb) for v in TEMPLATE_VARIANTS for verb in CHILD_VERBS}
    pods = {("", "pods", verb) for verb in ("list", "watch", "patch")}
    return children | pods | ({("", "namespaces", "create")} if namespaces else set())


def test_identity_token_and_binding() -> None:
    objects = rendered("member")
    assert set(objects) == {
        ("Namespace", NAMESPACE),
        ("ServiceAccount", SA),
        ("Secret", "united-member-token"),
        ("ClusterRole", SA),
        ("ClusterRoleBinding", SA),
    }
    for kind in ("ServiceAccount", "Secret"):
        name = SA if kind == "ServiceAccount" else "united-member-token"
        assert objects[kind, name]["metadata"]["namespace"] == NAMESPACE
    token = objects["Secret", "united-member-token"]
    assert token["type"] == "kubernetes.io/service-account-token"
    assert token["metadata"]["annotations"] == {"kubernetes.io/service-account.name": SA}
    binding = objects["ClusterRoleBinding", SA]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": SA}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": SA, "namespace": NAMESPACE}]


def test_the_role_grants_exactly_what_the_controller_asks_of_a_member() -> None:
    role = rendered("member")["ClusterRole", SA]
    assert grants(role) == used(namespaces=True)
    assert not any("*" in rule[field] for rule in role["rules"] for field in ("apiGroups", "resources", "verbs"))
    assert not any(rule.get("resourceNames") or rule.get("nonResourceURLs") for rule in role["rules"])


def test_without_namespace_creation_only_that_rule_goes() -> None:
    full, lean = rendered("member"), rendered("member-no-namespaces")
    assert grants(lean["ClusterRole", SA]) == used(namespaces=False)
    assert {k: v for k, v in lean.items() if k != ("ClusterRole", SA)} == {
        k: v for k, v in full.items() if k != ("ClusterRole", SA)
    }
