"""Pod versions for every kind, and each workload's latest version."""

from __future__ import annotations

from typing import Any

import pytest

from united.workloadspread.model import VERSION_IGNORED
from united.workloadspread.version import pod_version, workload_version


def pod(**labels: str) -> dict[str, Any]:
    return {"metadata": {"name": "p", "labels": labels}}


@pytest.mark.parametrize(
    ("labels", "version"),
    [
        ({"pod-template-hash": "5d8f"}, "5d8f"),
        ({"controller-revision-hash": "web-7c9f6b"}, "7c9f6b"),  # StatefulSet
        ({"controller-revision-hash": "my-clone-set-6f9b"}, "6f9b"),  # CloneSet: the part after the last "-"
        ({"controller-revision-hash": "abc"}, "abc"),
        ({"pod-template-hash": "5d8f", "controller-revision-hash": "x-1"}, "5d8f"),
        ({"job-name": "j"}, VERSION_IGNORED),
        ({}, VERSION_IGNORED),
    ],
)
def test_pod_version(labels: dict[str, str], version: str) -> None:
    assert pod_version(pod(**labels)) == version


def test_pod_without_metadata_is_unversioned() -> None:
    assert pod_version({}) == VERSION_IGNORED
    assert pod_version({"metadata": None}) == VERSION_IGNORED


def template(image: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "web", **labels}}, "spec": {"containers": [{"name": "m", "image": image}]}}


DEPLOYMENT = {"metadata": {"name": "web", "uid": "d-1"}, "spec": {"template": template("nginx:2")}}


def replicaset(hash_: str, image: str, *, owner: str = "d-1") -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"web-{hash_}",
            "labels": {"app": "web", "pod-template-hash": hash_},
            "ownerReferences": [{"kind": "Deployment", "uid": owner, "controller": True}],
        },
        "spec": {"template": template(image, **{"pod-template-hash": hash_})},
    }


def test_deployment_latest_is_the_owned_replicaset_with_its_template() -> None:
    sets = [replicaset("old", "nginx:1"), replicaset("new", "nginx:2")]
    assert workload_version("Deployment", DEPLOYMENT, replicasets=sets) == "new"


def test_deployment_ignores_replicasets_of_other_owners() -> None:
    assert workload_version("Deployment", DEPLOYMENT, replicasets=[replicaset("x", "nginx:2", owner="other")]) is None


def test_deployment_without_its_replicaset_yet_is_unknown() -> None:
    assert workload_version("Deployment", DEPLOYMENT, replicasets=[replicaset("old", "nginx:1")]) is None
    assert workload_version("Deployment", DEPLOYMENT) is None


def test_replicaset_version_is_its_hash_or_ignored_when_standalone() -> None:
    assert workload_version("ReplicaSet", replicaset("abc", "nginx")) == "abc"
    standalone = {"metadata": {"name": "rs"}, "spec": {"template": template("nginx")}}
    assert workload_version("ReplicaSet", standalone) == VERSION_IGNORED


@pytest.mark.parametrize("kind", ["CloneSet", "StatefulSet"])
def test_revisioned_kinds_use_the_update_revision_once_observed(kind: str) -> None:
    current = {"metadata": {"generation": 3}, "status": {"observedGeneration": 3, "updateRevision": "web-6f9b"}}
    assert workload_version(kind, current) == "6f9b"
    stale = {"metadata": {"generation": 4}, "status": {"observedGeneration": 3, "updateRevision": "web-6f9b"}}
    assert workload_version(kind, stale) is None
    assert workload_version(kind, {"metadata": {"generation": 1}, "status": {"observedGeneration": 1}}) is None


def test_job_pods_are_unversioned_and_unknown_kinds_unknown() -> None:
    assert workload_version("Job", {"spec": {}}) == VERSION_IGNORED
    assert workload_version("GameServerSet", {"spec": {}}) is None


def test_the_pod_of_the_latest_revision_has_the_workload_version() -> None:
    """What deletion cost relies on: a pod of the newest revision compares equal to it."""
    clone = {"metadata": {"generation": 2}, "status": {"observedGeneration": 2, "updateRevision": "cs-77aa"}}
    assert pod_version(pod(**{"controller-revision-hash": "cs-77aa"})) == workload_version("CloneSet", clone)
