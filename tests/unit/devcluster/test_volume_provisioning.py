"""What the simulated provisioner creates, without a cluster."""

from typing import Any

from united.devcluster.volumes import (
    PROVISIONED_BY,
    PROVISIONER,
    is_released,
    volume_for,
    wants_volume,
)


def claim(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "data-db-0", "namespace": "ns", "uid": "u-1"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}}, **spec},
        "status": {"phase": "Pending"},
    }


def test_only_pending_unbound_live_claims_want_a_volume() -> None:
    assert wants_volume(claim())
    assert not wants_volume(claim(volumeName="pv-1"))
    bound = claim()
    bound["status"]["phase"] = "Bound"
    assert not wants_volume(bound)
    deleting = claim()
    deleting["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    assert not wants_volume(deleting)


def test_volume_matches_the_claim_and_is_pre_bound_to_it() -> None:
    volume = volume_for(claim(storageClassName="fast", volumeMode="Block"))
    assert volume["metadata"]["name"] == "pvc-u-1"
    assert volume["metadata"]["annotations"] == {PROVISIONED_BY: PROVISIONER}
    spec = volume["spec"]
    assert spec["capacity"] == {"storage": "20Gi"}
    assert spec["accessModes"] == ["ReadWriteOnce"]
    assert spec["storageClassName"] == "fast" and spec["volumeMode"] == "Block"
    assert spec["claimRef"] == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "namespace": "ns",
        "name": "data-db-0",
        "uid": "u-1",
    }
    assert spec["persistentVolumeReclaimPolicy"] == "Retain"


def test_a_claim_without_class_gets_a_classless_volume() -> None:
    assert volume_for(claim())["spec"]["storageClassName"] == ""


def test_only_our_released_volumes_are_cleaned_up() -> None:
    ours = volume_for(claim())
    assert not is_released(ours)
    ours["status"] = {"phase": "Released"}
    assert is_released(ours)
    foreign = {"metadata": {"name": "static"}, "status": {"phase": "Released"}}
    assert not is_released(foreign)
