"""Remote orphan suspects: only this host's children whose owner uid is not live."""

from __future__ import annotations

from typing import Any

from united.multicluster.gc import Sightings, suspects
from united.multicluster.identity import RemoteKeys
from united.uniteddeployment.keys import Keys

REMOTE = RemoteKeys(Keys(), "host-a")


def child(name: str, owner: str | None, host: str = "host-a", **meta: Any) -> dict[str, Any]:
    labels = {"apps.united.io/subset-name": "b", "apps.united.io/owner-cluster": host}
    if owner is not None:
        labels["apps.united.io/owner-uid"] = owner
    return {"metadata": {"name": name, "namespace": "shop", "labels": labels, **meta}}


def test_suspects() -> None:
    live = child("live", "uid-live")
    orphan = child("orphan", "uid-gone")
    foreign = child("foreign", "uid-gone", host="host-b")
    unowned = child("unowned", None)
    going = child("going", "uid-gone", deletionTimestamp="2026-11-24T16:00:00Z")
    found = suspects([live, orphan, foreign, unowned, going], {"uid-live"}, REMOTE)
    assert [c["metadata"]["name"] for c in found] == ["orphan"]


def test_no_live_owner_makes_every_child_of_ours_a_suspect() -> None:
    children = [child("a", "u1"), child("b", "u2")]
    assert suspects(children, frozenset(), REMOTE) == children
    assert suspects(children, {"u1", "u2"}, REMOTE) == []


def uid_child(uid: str) -> dict[str, Any]:
    return child(uid, "gone", uid=uid)


def names(children: list[dict[str, Any]]) -> list[str]:
    return [c["metadata"]["name"] for c in children]


def test_a_suspect_is_due_only_after_the_grace() -> None:
    seen = Sightings(grace=10, retry=60)
    assert seen.due([uid_child("a")], 100.0) == ([], 10.0)
    assert seen.due([uid_child("a"), uid_child("b")], 104.0) == ([], 6.0)
    ready, wait = seen.due([uid_child("a"), uid_child("b")], 110.0)
    assert names(ready) == ["a"] and wait == 4.0


def test_a_child_that_stops_being_a_suspect_starts_over() -> None:
    seen = Sightings(grace=10, retry=60)
    seen.due([uid_child("a")], 100.0)
    assert seen.due([], 105.0) == ([], None), "its owner showed up: forgotten"
    assert seen.due([uid_child("a")], 112.0) == ([], 10.0), "a suspect again: a new grace"


def test_an_attempt_waits_for_the_retry_not_a_tight_loop() -> None:
    seen = Sightings(grace=10, retry=60)
    seen.due([uid_child("a")], 100.0)
    [a], _ = seen.due([uid_child("a")], 110.0)
    seen.tried(a, 110.0)
    assert seen.due([uid_child("a")], 111.0) == ([], 59.0)
    assert names(seen.due([uid_child("a")], 170.0)[0]) == ["a"]


def test_children_without_a_uid_are_never_due() -> None:
    seen = Sightings(grace=0, retry=60)
    assert seen.due([child("x", "gone")], 100.0) == ([], None)
