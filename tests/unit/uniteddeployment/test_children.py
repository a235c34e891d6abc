"""Claiming children: keep, adopt, release, de-duplicate (OpenKruise's rules, fixed)."""

from __future__ import annotations

from typing import Any

from united.uniteddeployment.admission import admit
from united.uniteddeployment.children import claim, strays
from united.uniteddeployment.keys import Keys

KEYS = Keys()


def ud(uid: str = "u1", deleting: bool = False) -> Any:
    meta: dict[str, Any] = {"name": "web", "namespace": "ns", "uid": uid}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    pod = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    return admit(
        {
            "apiVersion": "apps.united.io/v1alpha1",
            "kind": "UnitedDeployment",
            "metadata": meta,
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"deploymentTemplate": {"metadata": {"labels": {"app": "web"}}, "spec": {"template": pod}}},
                "topology": {"subsets": [{"name": "a"}, {"name": "b"}]},
            },
        }
    )


def child(
    name: str,
    subset: str | None,
    *,
    owner: str | None = "u1",
    created: str = "2026-01-01T00:00:00Z",
    app: str = "web",
    **meta: Any,
) -> dict[str, Any]:
    labels = {"app": app}
    if subset is not None:
        labels[KEYS.subset_name] = subset
    m: dict[str, Any] = {"name": name, "namespace": "ns", "labels": labels, "creationTimestamp": created, **meta}
    if owner is not None:
        m["ownerReferences"] = [{"uid": owner, "controller": True, "kind": "UnitedDeployment", "name": "web"}]
    return {"metadata": m}


def test_owned_matching_children_are_kept_per_subset() -> None:
    c = claim(ud(), [child("a1", "a"), child("b1", "b")], KEYS)
    assert {k: v["metadata"]["name"] for k, v in c.by_subset.items()} == {"a": "a1", "b": "b1"}
    assert (c.adopt, c.release, c.duplicates) == ([], [], [])


def test_foreign_children_are_never_touched() -> None:
    c = claim(ud(), [child("x", "a", owner="someone-else")], KEYS)
    assert c.by_subset == {} and c.adopt == [] and c.release == []


def test_orphans_that_match_are_adopted() -> None:
    c = claim(
        ud(), [child("o", "a", owner=None), child("p", None, owner=None), child("q", "a", owner=None, app="db")], KEYS
    )
    assert [x["metadata"]["name"] for x in c.adopt] == ["o"]
    assert c.by_subset["a"]["metadata"]["name"] == "o"


def test_no_adoption_while_the_ud_or_the_orphan_is_being_deleted() -> None:
    assert claim(ud(deleting=True), [child("o", "a", owner=None)], KEYS).adopt == []
    orphan = child("o", "a", owner=None, deletionTimestamp="2026-01-01T00:00:00Z")
    assert claim(ud(), [orphan], KEYS).adopt == []


def test_owned_children_that_stop_matching_are_released() -> None:
    c = claim(ud(), [child("a1", "a", app="db"), child("n", None)], KEYS)
    assert sorted(x["metadata"]["name"] for x in c.release) == ["a1", "n"]
    assert claim(ud(deleting=True), [child("a1", "a", app="db")], KEYS).release == []


def test_duplicates_keep_the_oldest_then_by_name() -> None:
    kids = [
        child("a-new", "a", created="2026-02-01T00:00:00Z"),
        child("a-old", "a", created="2026-01-01T00:00:00Z"),
        child("a-old2", "a", created="2026-01-01T00:00:00Z"),
    ]
    c = claim(ud(), kids, KEYS)
    assert c.by_subset["a"]["metadata"]["name"] == "a-old"
    assert sorted(x["metadata"]["name"] for x in c.duplicates) == ["a-new", "a-old2"]


def test_a_subset_whose_only_child_terminates_waits() -> None:
    gone = child("a1", "a", deletionTimestamp="2026-01-01T00:00:00Z")
    c = claim(ud(), [gone, child("b1", "b")], KEYS)
    assert "a" not in c.by_subset and c.terminating["a"]["metadata"]["name"] == "a1"
    live = claim(ud(), [gone, child("a2", "a")], KEYS)
    assert live.by_subset["a"]["metadata"]["name"] == "a2" and live.duplicates == []


def test_objects_in_other_namespaces_are_never_children() -> None:
    """Anyone may write our uid into an ownerReference elsewhere: such an
    object is neither kept (then deleted as a removed subset), released nor adopted."""
    forged = [
        child("x", "zzz", namespace="tenant-b"),
        child("y", "a", app="other", namespace="tenant-b"),
        child("z", "b", owner=None, namespace="tenant-b"),
    ]
    c = claim(ud(), forged, KEYS)
    assert (c.by_subset, c.adopt, c.release, c.duplicates, c.terminating) == ({}, [], [], [], {})


def test_a_relabelled_child_stays_the_child_of_the_subset_its_selector_names() -> None:
    """A user edits a child's subset label to another subset's name: its
    immutable selector still names its subset, so the other subset's child is not a duplicate
    and nothing is deleted; the label is written back by the diff."""
    relabelled = child("web-a", "b", created="2025-01-01T00:00:00Z")
    relabelled["spec"] = {"selector": {"matchLabels": {"app": "web", KEYS.subset_name: "a"}}}
    sibling = child("web-b", "b")
    sibling["spec"] = {"selector": {"matchLabels": {"app": "web", KEYS.subset_name: "b"}}}
    c = claim(ud(), [relabelled, sibling], KEYS)
    assert {k: v["metadata"]["name"] for k, v in c.by_subset.items()} == {"a": "web-a", "b": "web-b"}
    assert (c.duplicates, c.release) == ([], [])


def unlabelled(name: str, subset: str, **kw: Any) -> dict[str, Any]:
    """A child of ``subset`` (its selector says so) whose subset label a user removed."""
    obj = child(name, None, **kw)
    obj["spec"] = {"selector": {"matchLabels": {"app": "web", KEYS.subset_name: subset}}}
    return obj


def test_strays_are_our_unlabelled_children_of_the_subsets_without_one() -> None:
    """A child whose subset label was removed left the informers' view; of
    what a LIST finds, only our own (namespace, uid, selector, alive), oldest first, for a
    subset that has no child, is taken back — never another tenant's or a forged one."""
    elsewhere = unlabelled("x-elsewhere", "a", created="2020-01-01T00:00:00Z")
    elsewhere["metadata"]["namespace"] = "other"
    dying = unlabelled("x-dying", "a", created="2020-01-01T00:00:00Z", deletionTimestamp="2026-01-02T00:00:00Z")
    listed = [
        unlabelled("web-a", "a", created="2025-01-01T00:00:00Z"),
        unlabelled("web-a-copy", "a", created="2025-06-01T00:00:00Z"),
        unlabelled("x-foreign", "a", owner="someone-else", created="2020-01-01T00:00:00Z"),
        unlabelled("x-orphan", "a", owner=None, created="2020-01-01T00:00:00Z"),
        unlabelled("x-not-ours", "a", app="db", created="2020-01-01T00:00:00Z"),
        elsewhere,
        dying,
        child("x-labelled", "a", created="2020-01-01T00:00:00Z"),
        unlabelled("web-b", "b"),
    ]
    found = strays(ud(), listed, KEYS, {"a"})
    assert {k: v["metadata"]["name"] for k, v in found.items()} == {"a": "web-a"}
    assert strays(ud(), listed, KEYS, set()) == {}
