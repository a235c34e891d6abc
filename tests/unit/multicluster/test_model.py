"""Parsing ``Cluster`` objects: defaults, every rule, errors as ``field.path: message``."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from united.api.field import ManifestError
from united.multicluster.model import ClusterSpec, Probe, SecretRef

Doc = dict[str, Any]


def cluster(**spec: Any) -> Doc:
    body: Doc = {"kubeconfigSecretRef": {"namespace": "united-clusters", "name": "member-1"}}
    body.update(spec)
    return {
        "apiVersion": "apps.united.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": "member-1", "generation": 3},
        "spec": body,
    }


def errors(doc: Any) -> list[str]:
    with pytest.raises(ManifestError) as caught:
        ClusterSpec.parse(doc)
    return [str(e) for e in caught.value.errors]


def test_defaults() -> None:
    spec = ClusterSpec.parse(cluster())
    assert spec == ClusterSpec(
        name="member-1",
        secret_ref=SecretRef("united-clusters", "member-1", "kubeconfig"),
        probe=Probe(period_seconds=10, timeout_seconds=3),
        generation=3,
    )
    assert str(spec.secret_ref) == "united-clusters/member-1"
    assert (spec.all_namespaces, spec.create_namespaces, spec.allow_proxy) == (False, False, False)


def test_a_cluster_that_names_no_namespace_admits_none() -> None:
    spec = ClusterSpec.parse(cluster())
    assert not spec.allows("anything") and not spec.allows("default")


def test_all_namespaces_must_be_said() -> None:
    spec = ClusterSpec.parse(cluster(allNamespaces=True, createNamespaces=True, allowProxy=True))
    assert spec.allows("anything") and spec.create_namespaces and spec.allow_proxy
    assert not ClusterSpec.parse(cluster(allNamespaces=False)).allows("anything")


def test_all_namespaces_and_a_list_exclude_each_other() -> None:
    assert errors(cluster(allNamespaces=True, namespaces=["shop"])) == [
        "spec.namespaces: Forbidden: may not be set together with spec.allNamespaces"
    ]


def test_the_flags_are_booleans() -> None:
    assert errors(cluster(allNamespaces="true", createNamespaces=1, allowProxy="yes")) == [
        'spec.allNamespaces: Invalid value: "true": must be a boolean',
        "spec.createNamespaces: Invalid value: 1: must be a boolean",
        'spec.allowProxy: Invalid value: "yes": must be a boolean',
    ]


def test_every_field() -> None:
    doc = cluster(probe={"periodSeconds": 30, "timeoutSeconds": 5}, namespaces=["shop", "web"])
    doc["spec"]["kubeconfigSecretRef"]["key"] = "config.yaml"
    before = copy.deepcopy(doc)
    spec = ClusterSpec.parse(doc)
    assert spec.secret_ref.key == "config.yaml"
    assert spec.probe == Probe(30, 5)
    assert spec.namespaces == frozenset({"shop", "web"})
    assert spec.allows("shop") and not spec.allows("other")
    assert doc == before


def test_an_empty_allowlist_allows_nobody() -> None:
    assert not ClusterSpec.parse(cluster(namespaces=[])).allows("shop")


def test_secret_ref_is_required() -> None:
    doc = cluster()
    del doc["spec"]["kubeconfigSecretRef"]
    assert errors(doc) == ["spec.kubeconfigSecretRef: Required value"]
    assert errors({"metadata": {"name": "x"}}) == ["spec: Required value", "spec.kubeconfigSecretRef: Required value"]


def test_secret_ref_fields() -> None:
    doc = cluster()
    doc["spec"]["kubeconfigSecretRef"] = {"namespace": "Team_A", "name": "", "key": "a/b", "extra": 1}
    assert errors(doc) == [
        "spec.kubeconfigSecretRef.extra: Unknown field: the API server would drop it",
        "spec.kubeconfigSecretRef.name: Required value",
        'spec.kubeconfigSecretRef.namespace: Invalid value: "Team_A": a lowercase RFC 1123 label must consist of '
        "lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
        'spec.kubeconfigSecretRef.key: Invalid value: "a/b": a valid config key must consist of alphanumeric '
        "characters, '-', '_' or '.'",
    ]


def test_probe_ranges() -> None:
    assert errors(cluster(probe={"periodSeconds": 0, "timeoutSeconds": 61})) == [
        "spec.probe.periodSeconds: Invalid value: 0: must be between 1 and 300, inclusive",
        "spec.probe.timeoutSeconds: Invalid value: 61: must be between 1 and 60, inclusive",
    ]
    assert errors(cluster(probe={"periodSeconds": 2})) == [
        "spec.probe.timeoutSeconds: Invalid value: 3: must be less than spec.probe.periodSeconds (2)"
    ]
    assert errors(cluster(probe={"periodSeconds": "10"})) == [
        'spec.probe.periodSeconds: Invalid value: "10": must be an integer'
    ]
    assert ClusterSpec.parse(cluster(probe={"periodSeconds": 300, "timeoutSeconds": 60})).probe == Probe(300, 60)


def test_namespaces() -> None:
    assert errors(cluster(namespaces=["shop", "shop", "Web", None])) == [
        'spec.namespaces[1]: Duplicate value: "shop"',
        'spec.namespaces[2]: Invalid value: "Web": a lowercase RFC 1123 label must consist of lower case '
        "alphanumeric characters or '-', and must start and end with an alphanumeric character",
        "spec.namespaces[3]: Required value",
    ]
    assert errors(cluster(namespaces=[f"n{i}" for i in range(1001)])) == [
        "spec.namespaces: Too many: 1001: must have at most 1000 items"
    ]
    assert errors(cluster(namespaces="shop")) == ['spec.namespaces: Invalid value: "shop": must be an array']


def test_not_an_object() -> None:
    assert errors([]) == ["<root>: Invalid value: array: must be an object"]
    assert errors(cluster(probe=5)) == ["spec.probe: Invalid value: 5: must be an object"]
