"""Last-known counts of a subset in an unreachable member: store, then status, then nothing."""

from __future__ import annotations

from typing import Any

from united.uniteddeployment.allocation import SubsetState
from united.uniteddeployment.lastknown import STATUS, STORE, LastKnown, last_known
from united.uniteddeployment.status import ChildView

PREVIOUS: dict[str, Any] = {
    "subsetStatuses": [
        {"name": "a", "replicas": 3, "readyReplicas": 3},
        {
            "name": "b",
            "cluster": "member-1",
            "replicas": 2,
            "readyReplicas": 2,
            "updatedReplicas": 1,
            "updatedReadyReplicas": 1,
            "reservedPods": 0,
        },
    ]
}
STORED = ChildView(name="web-b-x7k2", spec_replicas=4, replicas=4, ready=3, updated=4, updated_ready=3)


def test_a_synced_store_wins() -> None:
    known = last_known(PREVIOUS, "b", "member-1", store=STORED, synced=True)
    assert known == LastKnown(STORED, STORE)
    assert known.state() == SubsetState(replicas=4, ready_replicas=3)
    assert known.view() is STORED


def test_a_synced_store_without_the_child_knows_there_is_none() -> None:
    assert last_known(PREVIOUS, "b", "member-1", store=None, synced=True) is None


def test_an_unsynced_store_is_never_read() -> None:
    """An empty, never-synced cache is not "0 replicas": the previous status speaks instead."""
    for store in (None, ChildView(name="stale")):
        known = last_known(PREVIOUS, "b", "member-1", store=store, synced=False)
        assert known is not None and known.source == STATUS
        assert known.state() == SubsetState(replicas=2, ready_replicas=2)
        assert known.view() == ChildView(
            name="", spec_replicas=2, replicas=2, ready=2, updated=1, updated_ready=1, reserved=0, current=False
        )


def test_the_status_entry_must_name_the_same_cluster() -> None:
    assert last_known(PREVIOUS, "b", "member-2") is None
    assert last_known(PREVIOUS, "a", "member-1") is None
    assert last_known(PREVIOUS, "c", "member-1") is None


def test_nothing_known() -> None:
    assert last_known(None, "b", "member-1") is None
    assert last_known({"subsetStatuses": "junk"}, "b", "member-1") is None


def test_bad_counts_read_as_zero() -> None:
    previous = {"subsetStatuses": [{"name": "b", "cluster": "m", "replicas": -1, "readyReplicas": True}]}
    known = last_known(previous, "b", "m")
    assert known is not None and known.state() == SubsetState()
