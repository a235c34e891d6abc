"""Remote ownership by labels: what a remote child carries, and whose objects are ours."""

from __future__ import annotations

from typing import Any

from united.multicluster.identity import RemoteKeys
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import Spec, UnitedDeployment

HOST = "0b7c1c3e-host"
REMOTE = RemoteKeys(Keys(), HOST)
UD = UnitedDeployment(api_version="apps.united.io/v1alpha1", name="web", namespace="shop", spec=Spec(), uid="uid-1")


def child(labels: dict[str, str], namespace: str | None = "shop") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "web-b-x7k2", "labels": labels}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"metadata": meta}


def test_labels() -> None:
    assert REMOTE.labels(UD) == {
        "apps.united.io/owner-uid": "uid-1",
        "apps.united.io/owner-name": "web",
        "apps.united.io/owner-cluster": HOST,
    }
    assert REMOTE.pod_labels() == {"apps.united.io/owner-cluster": HOST}
    assert REMOTE.selector() == f"apps.united.io/subset-name,apps.united.io/owner-cluster={HOST}"


def test_keys_of_the_multi_cluster_objects() -> None:
    keys = Keys()
    assert (keys.cluster, keys.created_by_cluster) == ("apps.united.io/cluster", "apps.united.io/created-by-cluster")
    assert keys.remote_children_finalizer == "apps.united.io/remote-children"
    assert keys.abandon_remote_children == "apps.united.io/abandon-remote-children"


def test_owner_of_our_child() -> None:
    ours = child(REMOTE.labels(UD))
    assert REMOTE.owner_of(ours) == "uid-1"
    assert REMOTE.ud_key(ours) == "shop/web"


def test_another_hosts_child_is_never_ours() -> None:
    theirs = child({**REMOTE.labels(UD), "apps.united.io/owner-cluster": "other-host"})
    assert REMOTE.owner_of(theirs) is None
    assert REMOTE.ud_key(theirs) is None


def test_unlabelled_or_malformed_objects() -> None:
    assert REMOTE.owner_of({}) is None
    assert REMOTE.owner_of(child({"apps.united.io/owner-cluster": HOST})) is None
    assert REMOTE.owner_of({"metadata": {"labels": "x"}}) is None
    assert REMOTE.ud_key(child({"apps.united.io/owner-cluster": HOST})) is None
    assert REMOTE.ud_key(child(REMOTE.labels(UD), namespace=None)) is None


def test_kruise_group_keys() -> None:
    remote = RemoteKeys(Keys("apps.kruise.io"), HOST)
    assert set(remote.labels(UD)) == {
        "apps.kruise.io/owner-uid",
        "apps.kruise.io/owner-name",
        "apps.kruise.io/owner-cluster",
    }
