"""URL building for resources."""

import pytest

from united.kube.client import CLONE_SETS, DEPLOYMENTS, NODES, PODS, Resource


def test_core_paths() -> None:
    assert PODS.path() == "/api/v1/pods"
    assert PODS.path(namespace="ns") == "/api/v1/namespaces/ns/pods"
    assert PODS.path(namespace="ns", name="p", subresource="status") == ("/api/v1/namespaces/ns/pods/p/status")
    assert NODES.path(name="n1") == "/api/v1/nodes/n1"


def test_group_paths_and_api_version() -> None:
    assert DEPLOYMENTS.path(namespace="ns", name="d", subresource="scale") == (
        "/apis/apps/v1/namespaces/ns/deployments/d/scale"
    )
    assert CLONE_SETS.api_version == "apps.kruise.io/v1alpha1"
    assert PODS.api_version == "v1"


def test_names_are_escaped() -> None:
    assert Resource("g", "v1", "things", True).path(namespace="ns", name="a/b") == (
        "/apis/g/v1/namespaces/ns/things/a%2Fb"
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"namespace": "ns"},
        {"subresource": "status"},
    ],
)
def test_cluster_scoped_misuse_is_refused(kwargs: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        NODES.path(**kwargs)


def test_namespaced_object_needs_a_namespace() -> None:
    with pytest.raises(ValueError, match="needs a namespace"):
        PODS.path(name="p")
