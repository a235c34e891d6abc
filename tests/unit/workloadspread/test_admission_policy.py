"""The ValidatingAdmissionPolicies of ``manifests/admission-policy``: the controller's
ServiceAccount may change only ``clientConfig.caBundle`` and ``failurePolicy`` of its two
webhook configurations.

The local control plane (Kubernetes 1.20) cannot serve ValidatingAdmissionPolicy (GA in
1.30), so the policies' CEL is evaluated here with cel-python against the shipped
configurations, the way the API server evaluates it on an UPDATE: ``matchConditions`` first,
then ``variables``, then each validation.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import celpy
import pytest

from united import data, kustomization
from united.api.document import Json
from united.workloadspread import webhookconfig

CONTROLLER = "system:serviceaccount:united-system:united-controller"
ALLOWED = {("clientConfig", "caBundle"), ("failurePolicy",)}
"""The webhook fields the controller writes (certificate rotation, ``--webhook-failure-policy``)."""

_ENV = celpy.Environment()


def rendered() -> list[Json]:
    return kustomization.build(data.MANIFESTS, "admission-policy")


def policies() -> dict[str, Json]:
    """Each policy by the kind of webhook configuration it guards."""
    found = {}
    for doc in rendered():
        if doc["kind"] == "ValidatingAdmissionPolicy":
            [rule] = doc["spec"]["matchConstraints"]["resourceRules"]
            [plural] = rule["resources"]
            found[plural] = doc
    return found


def shipped() -> dict[str, Json]:
    """The base's two webhook configurations by plural, as the API server stores them (with a CA)."""
    configurations = {}
    for doc in kustomization.build(data.MANIFESTS, "base"):
        if doc["kind"].endswith("WebhookConfiguration"):
            stored = copy.deepcopy(doc)
            stored["metadata"].pop("namespace", None)
            for webhook in stored["webhooks"]:
                webhook["clientConfig"]["caBundle"] = "b2xkLWNh"
            configurations[doc["kind"].lower() + "s"] = stored
    return configurations


def _evaluate(expression: str, activation: dict[str, Any]) -> Any:
    return _ENV.program(_ENV.compile(expression)).evaluate(activation)


def admitted(policy: Json, old: Json, new: Json, username: str = CONTROLLER) -> bool:
    """Whether the API server would let ``username`` replace ``old`` with ``new``: an
    expression that cannot be evaluated (a field missing) refuses, as ``failurePolicy: Fail``
    does."""
    try:
        return _admitted(policy, old, new, username)
    except celpy.CELEvalError:
        assert policy["spec"]["failurePolicy"] == "Fail"
        return False


def _admitted(policy: Json, old: Json, new: Json, username: str) -> bool:
    activation: dict[str, Any] = {
        "object": celpy.json_to_cel(new),
        "oldObject": celpy.json_to_cel(old),
        "request": celpy.json_to_cel({"userInfo": {"username": username}, "operation": "UPDATE"}),
    }
    spec = policy["spec"]
    if not all(_evaluate(c["expression"], activation) for c in spec["matchConditions"]):
        return True
    variables: dict[str, Any] = {}
    for variable in spec["variables"]:
        activation["variables"] = celpy.json_to_cel(variables)
        variables[variable["name"]] = _evaluate(variable["expression"], activation)
    activation["variables"] = celpy.json_to_cel(variables)
    results = [_evaluate(v["expression"], activation) for v in spec["validations"]]
    for result in results:
        if isinstance(result, celpy.CELEvalError):
            raise result
    return all(bool(result) for result in results)


def leaves(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    if isinstance(value, dict):
        for key, child in value.items():
            yield from leaves(child, (*path, key))
    elif isinstance(value, list) and value:
        for index, child in enumerate(value):
            yield from leaves(child, (*path, index))
    else:
        yield path


def changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value + "-x"
    return ["x"]


def set_at(obj: Any, path: tuple[str | int, ...], value: Any) -> None:
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


KINDS = ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"]


def test_one_policy_and_binding_per_shipped_configuration_named_as_the_rbac_grant() -> None:
    docs = rendered()
    assert (
        sorted(d["kind"] for d in docs) == ["ValidatingAdmissionPolicy"] * 2 + ["ValidatingAdmissionPolicyBinding"] * 2
    )
    assert all(d["apiVersion"] == "admissionregistration.k8s.io/v1" for d in docs)
    assert all("namespace" not in d["metadata"] for d in docs)
    found = policies()
    assert sorted(found) == sorted(shipped()) == KINDS
    [grant] = [
        rule
        for doc in kustomization.build(data.MANIFESTS, "base")
        if doc["kind"] == "ClusterRole"
        for rule in doc["rules"]
        if "admissionregistration.k8s.io" in rule["apiGroups"]
    ]
    assert sorted(grant["resources"]) == KINDS
    for policy in found.values():
        [rule] = policy["spec"]["matchConstraints"]["resourceRules"]
        assert rule["resourceNames"] == grant["resourceNames"] == [webhookconfig.NAME]
        assert rule["operations"] == ["UPDATE"] and rule["apiGroups"] == ["admissionregistration.k8s.io"]
        assert policy["spec"]["failurePolicy"] == "Fail"
        [binding] = [
            d
            for d in docs
            if d["kind"] == "ValidatingAdmissionPolicyBinding" and d["spec"]["policyName"] == policy["metadata"]["name"]
        ]
        assert binding["spec"]["validationActions"] == ["Deny"]
        assert "matchResources" not in binding["spec"]


def test_the_policies_are_not_part_of_the_base_that_1_20_installs() -> None:
    assert not any(d["kind"].startswith("ValidatingAdmissionPolicy") for d in data.controller())


def test_the_match_condition_names_the_controllers_service_account() -> None:
    base = kustomization.build(data.MANIFESTS, "base")
    [account] = [d for d in base if d["kind"] == "ServiceAccount"]
    username = f"system:serviceaccount:{account['metadata']['namespace']}:{account['metadata']['name']}"
    assert username == CONTROLLER
    for binding in (
        d for d in base if d["kind"] == "ClusterRoleBinding" and d["metadata"]["name"] == webhookconfig.NAME
    ):
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": "united-system"}
        ]
    for plural, policy in policies().items():
        old = shipped()[plural]
        widened = copy.deepcopy(old)
        widened["webhooks"][0]["rules"][0]["resources"] = ["*"]
        assert not admitted(policy, old, widened, CONTROLLER)
        assert not admitted(policy, old, widened, "system:serviceaccount:elsewhere:united-controller")
        assert admitted(policy, old, widened, "kubernetes-admin"), "cluster admins may still change them"
        assert admitted(policy, old, widened, "system:serviceaccount:united-system:united-controller-x")


@pytest.mark.parametrize("plural", KINDS)
def test_the_controller_may_rotate_the_ca_and_set_the_failure_policy(plural: str) -> None:
    policy, old = policies()[plural], shipped()[plural]
    new = copy.deepcopy(old)
    for webhook in new["webhooks"]:
        webhook["clientConfig"]["caBundle"] = "bmV3LWNh"
        webhook["failurePolicy"] = "Fail"
    assert admitted(policy, old, new)
    assert admitted(policy, old, copy.deepcopy(old)), "a no-op update"


@pytest.mark.parametrize("plural", KINDS)
def test_every_other_field_of_a_webhook_is_frozen(plural: str) -> None:
    """Each leaf of each shipped webhook, changed or removed, is refused (but the two allowed)."""
    policy, old = policies()[plural], shipped()[plural]
    paths = list(leaves(old["webhooks"][0]))
    assert ("rules", 0, "resources", 0) in paths and ("namespaceSelector", "matchExpressions", 0, "key") in paths
    for path in paths:
        new = copy.deepcopy(old)
        set_at(new["webhooks"][0], path, changed(_get(old["webhooks"][0], path)))
        assert admitted(policy, old, new) == (path in ALLOWED), path
    for key in old["webhooks"][0]:
        new = copy.deepcopy(old)
        del new["webhooks"][0][key]
        assert admitted(policy, old, new) == ((key,) in ALLOWED), key


def _get(obj: Any, path: tuple[str | int, ...]) -> Any:
    for key in path:
        obj = obj[key]
    return obj


@pytest.mark.parametrize("plural", KINDS)
@pytest.mark.parametrize(
    "change",
    [
        "url instead of the Service",
        "matchConditions added",
        "webhook added",
        "webhook removed",
        "webhook renamed",
        "label changed",
        "annotation added",
        "finalizer added",
        "owner added",
    ],
)
def test_what_a_stolen_token_would_try_is_refused(plural: str, change: str) -> None:
    policy, old = policies()[plural], shipped()[plural]
    new = copy.deepcopy(old)
    webhook = new["webhooks"][0]
    if change == "url instead of the Service":
        webhook["clientConfig"] = {"url": "https://attacker.example/", "caBundle": webhook["clientConfig"]["caBundle"]}
    elif change == "matchConditions added":
        webhook["matchConditions"] = [{"name": "all", "expression": "true"}]
    elif change == "webhook added":
        new["webhooks"].append({**copy.deepcopy(webhook), "name": "more.example.com"})
    elif change == "webhook removed":
        new["webhooks"] = []
    elif change == "webhook renamed":
        webhook["name"] = "other.workloadspread.united.io"
    elif change == "label changed":
        new["metadata"]["labels"] = {"app.kubernetes.io/name": "other"}
    elif change == "annotation added":
        new["metadata"]["annotations"] = {"a": "b"}
    elif change == "finalizer added":
        new["metadata"]["finalizers"] = ["example.com/keep"]
    else:
        new["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Namespace", "name": "x", "uid": "u"}]
    assert not admitted(policy, old, new)


def _narrowed(old: Json, targets: list[str] | None) -> Json:
    """``old`` with each webhook's namespace-name ``In`` list as the controller writes it."""
    new = copy.deepcopy(old)
    for webhook in new["webhooks"]:
        webhook["namespaceSelector"] = webhookconfig.with_targets(webhook["namespaceSelector"], targets)
    return new


@pytest.mark.parametrize("plural", KINDS)
def test_the_controller_may_name_the_namespaces_that_hold_spreads(plural: str) -> None:
    policy, old = policies()[plural], shipped()[plural]
    narrowed = _narrowed(old, ["team-a", "team-b"])
    assert admitted(policy, old, narrowed), "the In list added"
    assert admitted(policy, narrowed, _narrowed(narrowed, ["team-a", "team-c"])), "the In list changed"
    assert admitted(policy, narrowed, _narrowed(narrowed, [])), "no namespace"
    assert admitted(policy, narrowed, _narrowed(narrowed, None)), "removed: back to the shipped selector"


@pytest.mark.parametrize("plural", KINDS)
@pytest.mark.parametrize(
    "change",
    [
        "exclusion of kube-system removed",
        "kube-system taken out of the exclusion",
        "exclusion turned into an In",
        "opt-out label expression removed",
        "matchLabels added",
        "an In on another key",
        "selector removed",
    ],
)
def test_the_selector_cannot_be_widened(plural: str, change: str) -> None:
    """Whatever the In list names, the exclusions around it stay: kube-system, the controller's
    namespace and opted-out namespaces are never sent, whatever a stolen token writes."""
    policy = policies()[plural]
    old = _narrowed(shipped()[plural], ["team-a"])
    new = copy.deepcopy(old)
    selector = new["webhooks"][0]["namespaceSelector"]
    excluded, label, _ = selector["matchExpressions"]
    if change == "exclusion of kube-system removed":
        selector["matchExpressions"].remove(excluded)
    elif change == "kube-system taken out of the exclusion":
        excluded["values"] = ["united-system"]
    elif change == "exclusion turned into an In":
        excluded["operator"] = "In"
    elif change == "opt-out label expression removed":
        selector["matchExpressions"].remove(label)
    elif change == "matchLabels added":
        selector["matchLabels"] = {"team": "a"}
    elif change == "an In on another key":
        selector["matchExpressions"].append({"key": "team", "operator": "In", "values": ["a"]})
    else:
        del new["webhooks"][0]["namespaceSelector"]
    assert not admitted(policy, old, new)
