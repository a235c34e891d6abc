"""Remote orphan suspects: only this host's children whose owner uid is not live."""

from __future__ import annotations

from typing import Any

from united.multicluster.gc import suspects
from united.multicluster.identity import RemoteKeys
from united.uniteddeployment.keys import Keys

REMOTE = RemoteKeys(Keys(), "host-a")


def child(name: str, uid: str | None, host: str = "host-a", **meta: Any) -> dict[str, Any]:
    labels = {"apps.united.io/subset-name": "b", "apps.united.io/owner-cluster": host}
    if uid is not None:
        labels["apps.united.io/owner-uid"] = uid
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
