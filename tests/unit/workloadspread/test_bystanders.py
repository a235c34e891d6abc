"""The controllers the webhook server may answer for on its own thread: noted whole, forgotten
all at once, bounded."""

from __future__ import annotations

from typing import Any

from united.workloadspread.bystanders import Bystanders


def ref(name: str, uid: str = "", kind: str = "ReplicaSet") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid or f"uid-{name}", "controller": True}


def test_a_noted_controller_is_held_in_its_namespace_only_and_by_its_whole_reference() -> None:
    known = Bystanders()
    known.note("ns", ref("api-1"))
    assert known.holds("ns", ref("api-1"))
    assert known.holds("ns", {**ref("api-1"), "apiVersion": "apps/v1beta2"}), "the version is not the group"
    assert not known.holds("other", ref("api-1"))
    assert not known.holds("ns", ref("web-1", uid="uid-api-1")), "a noted uid under another name"
    assert not known.holds("ns", ref("api-1", uid="uid-web-1")), "a noted name with another uid"
    assert not known.holds("ns", ref("api-1", kind="StatefulSet"))
    assert not known.holds("ns", {**ref("api-1"), "apiVersion": "example.io/v1"})


def test_a_reference_missing_a_part_is_never_noted_nor_held() -> None:
    known = Bystanders()
    for part in ("apiVersion", "kind", "name", "uid"):
        partial = {k: v for k, v in ref("api-1").items() if k != part}
        known.note("ns", partial)
        assert not known.holds("ns", partial)
    known.note("ns", {**ref("api-1"), "uid": 7})
    assert len(known) == 0


def test_forgetting_a_namespace_drops_all_of_it_and_nothing_of_the_others() -> None:
    known = Bystanders()
    known.note("ns", ref("api-1"))
    known.note("ns", ref("db-1"))
    known.note("other", ref("api-1"))
    known.forget("ns")
    known.forget("never-noted")
    assert len(known) == 1 and not known.holds("ns", ref("api-1")) and not known.holds("ns", ref("db-1"))
    assert known.holds("other", ref("api-1"))


def test_past_its_limit_the_oldest_noted_is_forgotten_first_across_namespaces() -> None:
    known = Bystanders(limit=3)
    for namespace, name in [("x", "a"), ("y", "b"), ("y", "c"), ("y", "b"), ("z", "d"), ("z", "e")]:
        known.note(namespace, ref(name))
    assert len(known) == 3
    held = [known.holds(ns, ref(n)) for ns, n in [("x", "a"), ("y", "b"), ("y", "c"), ("z", "d"), ("z", "e")]]
    assert held == [False, False, True, True, True]
    known.forget("y")
    assert len(known) == 2
