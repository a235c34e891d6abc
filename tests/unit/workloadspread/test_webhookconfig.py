"""The pod webhooks' configurations: rules, safety settings, exclusions, client configs."""

from __future__ import annotations

import pytest

from united import data, kustomization
from united.workloadspread.webhookconfig import (
    EXCLUDE_LABEL,
    NAME_LABEL,
    NO_NAMESPACE,
    SPREADS_PATH,
    SPREADS_WEBHOOK,
    client_config,
    configurations,
    mutating,
    namespace_selector,
    targets_of,
    url_problem,
    validating,
    with_targets,
)

SELECTOR = namespace_selector("united-system")
URL_CLIENT = client_config(url="https://127.0.0.1:9443/", service=None, path="/mutate-pods", ca_bundle="Q0E=")


def test_mutating_is_pod_create_only_and_safe_by_default() -> None:
    config = mutating(client=URL_CLIENT, selector=SELECTOR)
    assert config["kind"] == "MutatingWebhookConfiguration"
    assert config["metadata"]["name"] == "united-workloadspread"
    [webhook] = config["webhooks"]
    assert webhook["rules"] == [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                 "resources": ["pods"], "scope": "Namespaced"}]  # fmt: skip
    assert webhook["failurePolicy"] == "Ignore"
    assert webhook["timeoutSeconds"] == 3
    assert webhook["sideEffects"] == "NoneOnDryRun"
    assert webhook["admissionReviewVersions"] == ["v1", "v1beta1"]
    assert webhook["reinvocationPolicy"] == "Never"
    assert webhook["matchPolicy"] == "Equivalent"
    assert webhook["clientConfig"] == {"url": "https://127.0.0.1:9443/mutate-pods", "caBundle": "Q0E="}


def test_validating_sees_pod_deletes_and_evictions() -> None:
    client = client_config(url=None, service=("united-system", "united-webhook", 443), path="/validate-pods",
                           ca_bundle="")  # fmt: skip
    [webhook] = validating(client=client, selector=SELECTOR, failure_policy="Fail")["webhooks"]
    assert [(r["operations"], r["resources"]) for r in webhook["rules"]] == [
        (["DELETE"], ["pods"]),
        (["CREATE"], ["pods/eviction"]),
    ]
    assert webhook["failurePolicy"] == "Fail"
    assert "reinvocationPolicy" not in webhook
    assert webhook["clientConfig"] == {
        "service": {"namespace": "united-system", "name": "united-webhook", "path": "/validate-pods", "port": 443}
    }


def test_unknown_failure_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="failurePolicy must be one of Ignore, Fail"):
        mutating(client=URL_CLIENT, selector=SELECTOR, failure_policy="Sometimes")  # type: ignore[arg-type]


def test_client_config_needs_somewhere_to_call() -> None:
    with pytest.raises(ValueError, match="a url or a service"):
        client_config(url=None, service=None, path="/x", ca_bundle="")


def test_kube_system_and_the_controller_namespace_are_excluded_by_name_and_by_label() -> None:
    assert namespace_selector("ops") == {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "ops"]},
            {"key": EXCLUDE_LABEL, "operator": "NotIn", "values": ["disabled"]},
        ]
    }
    narrowed = namespace_selector("kube-system", match_labels={"team": "a"})
    assert narrowed["matchExpressions"][0]["values"] == ["kube-system"]
    assert narrowed["matchLabels"] == {"team": "a"}


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://127.0.0.1:9443", None),
        ("https://webhook.example.com/base", None),
        ("http://127.0.0.1:9443", "must be an https URL"),
        ("https://:9443", "must name a host"),
        ("https://me:pw@host", "must not carry user information"),
        ("https://host/#frag", "must not have a query or a fragment"),
        ("https://host:x", "Port could not be cast to integer value as 'x'"),
    ],
)
def test_url_problems(url: str, problem: str | None) -> None:
    assert url_problem(url) == problem


def test_shipped_configurations_call_the_service_and_managed_ones_the_url() -> None:
    shipped = configurations(namespace="united-system")
    assert [c["kind"] for c in shipped] == ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"]
    assert [c["webhooks"][0]["clientConfig"] for c in shipped] == [
        {"service": {"namespace": "united-system", "name": "united-webhook", "path": path, "port": 443}}
        for path in ("/mutate-pods", "/validate-pods")
    ]
    managed = configurations(namespace="ops", url="https://127.0.0.1:9443", ca_bundle="Q0E=", failure_policy="Fail")
    assert [c["webhooks"][0]["clientConfig"] for c in managed] == [
        {"url": f"https://127.0.0.1:9443{path}", "caBundle": "Q0E="} for path in ("/mutate-pods", "/validate-pods")
    ]
    assert {c["webhooks"][0]["failurePolicy"] for c in managed} == {"Fail"}
    assert managed[0]["webhooks"][0]["namespaceSelector"] == namespace_selector("ops")


def test_targets_only_narrow_and_round_trip() -> None:
    """The ``In`` expression is added after the exclusions, replaced whole, removed on None; an
    empty set selects no namespace (the API server refuses an empty ``In``)."""
    base = namespace_selector("ops")
    narrowed = with_targets(base, {"b", "a"})
    assert narrowed["matchExpressions"][:-1] == base["matchExpressions"]
    assert narrowed["matchExpressions"][-1] == {"key": NAME_LABEL, "operator": "In", "values": ["a", "b"]}
    assert targets_of(narrowed) == ["a", "b"] and targets_of(base) is None
    assert with_targets(with_targets(narrowed, ["c"]), None) == base
    empty = with_targets(base, [])
    assert empty["matchExpressions"][-1]["values"] == [NO_NAMESPACE] and targets_of(empty) == []
    assert namespace_selector("ops", targets=["a"]) == with_targets(base, ["a"])
    assert with_targets(None, None) == {}


def test_the_spreads_webhook_sees_spread_creates_in_both_groups_and_is_never_narrowed() -> None:
    """How a namespace gets into the pod webhooks' selectors: its selector has only the
    exclusions, and a controller outage never refuses a spread, whatever the pods' policy."""
    pods, spreads = configurations(namespace="ops", failure_policy="Fail", targets=["a"])[1]["webhooks"]
    assert spreads["name"] == SPREADS_WEBHOOK
    assert spreads["rules"] == [
        {"operations": ["CREATE"], "apiGroups": ["apps.united.io", "apps.kruise.io"], "apiVersions": ["*"],
         "resources": ["workloadspreads"], "scope": "Namespaced"}
    ]  # fmt: skip
    assert spreads["namespaceSelector"] == namespace_selector("ops")
    assert targets_of(pods["namespaceSelector"]) == ["a"]
    assert (pods["failurePolicy"], spreads["failurePolicy"]) == ("Fail", "Ignore")
    assert spreads["sideEffects"] == "NoneOnDryRun", "a dry run adds no namespace"
    assert spreads["clientConfig"]["service"]["path"] == SPREADS_PATH


def test_the_shipped_manifests_hold_the_configurations_the_controller_writes() -> None:
    shipped = {d["kind"]: d for d in kustomization.build(data.MANIFESTS, "base") if d["kind"].endswith("Configuration")}
    for wanted in configurations(namespace="united-system"):
        assert shipped[wanted["kind"]]["webhooks"] == wanted["webhooks"]
