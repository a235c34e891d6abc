"""Revision history decisions: reuse, rollback bump, create, collisions, trimming."""

from __future__ import annotations

from typing import Any

from united.uniteddeployment import history, revision
from united.uniteddeployment.admission import admit

OWNER = {
    "apiVersion": "apps.united.io/v1alpha1",
    "kind": "UnitedDeployment",
    "name": "web",
    "uid": "u1",
    "controller": True,
}


def ud(image: str, limit: int = 10) -> Any:
    pod = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": image}]}}
    return admit(
        {
            "apiVersion": "apps.united.io/v1alpha1",
            "kind": "UnitedDeployment",
            "metadata": {"name": "web", "namespace": "ns", "uid": "u1"},
            "spec": {
                "replicas": 1,
                "revisionHistoryLimit": limit,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "cloneSetTemplate": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": pod},
                    }
                },
                "topology": {"subsets": [{"name": "a"}]},
            },
        }
    )


def stored(image: str, number: int) -> dict[str, Any]:
    u = ud(image)
    hp = history.plan(u, [], owner_reference=OWNER, current=None)
    assert hp.create is not None
    hp.create["revision"] = number
    return hp.create


def test_first_revision_is_created_labelled_even_for_clonesets() -> None:
    hp = history.plan(ud("i:1"), [], owner_reference=OWNER, current=None)
    assert hp.create is not None and hp.bump is None and hp.delete == []
    assert hp.create["metadata"]["name"] == hp.updated == revision.name("web", ud("i:1").spec.template)
    assert hp.create["metadata"]["labels"]["app"] == "web"
    assert hp.create["metadata"]["labels"]["controller.kubernetes.io/hash"] == hp.updated.rsplit("-", 1)[1]
    assert hp.create["revision"] == 1
    assert hp.create["metadata"]["ownerReferences"] == [OWNER]


def test_newest_equal_revision_is_reused() -> None:
    hp = history.plan(ud("i:1"), [stored("i:1", 1)], owner_reference=OWNER, current=None)
    assert hp.create is None and hp.bump is None


def test_rollback_bumps_the_old_revision() -> None:
    revs = [stored("i:1", 1), stored("i:2", 2)]
    hp = history.plan(ud("i:1"), revs, owner_reference=OWNER, current=None)
    assert hp.create is None
    assert hp.bump == (revs[0]["metadata"]["name"], 3)


def test_collision_probes_the_next_count() -> None:
    taken = stored("i:9", 1)
    taken["metadata"]["name"] = revision.name("web", ud("i:1").spec.template)
    hp = history.plan(ud("i:1"), [taken], owner_reference=OWNER, current=None)
    assert hp.collision_count == 1
    assert hp.updated == revision.name("web", ud("i:1").spec.template, 1)


def test_history_is_trimmed_but_never_the_current_revision() -> None:
    revs = [stored(f"i:{n}", n) for n in range(1, 6)]
    current = revs[0]["metadata"]["name"]
    hp = history.plan(ud("i:new", limit=2), revs, owner_reference=OWNER, current=current)
    assert hp.create is not None
    assert current not in hp.delete
    assert hp.delete == [r["metadata"]["name"] for r in revs[1:5]]


def orphan(image: str, number: int, **meta: Any) -> dict[str, Any]:
    r = stored(image, number)
    del r["metadata"]["ownerReferences"]
    r["metadata"].update(meta)
    return r


class TestOrphansAndTakenNames:
    """Orphans are adopted as OpenKruise does, and a name someone else's
    revision holds is never assumed to be ours."""

    def test_a_matching_orphan_is_adopted_and_reused(self) -> None:
        hp = history.plan(ud("i:1"), [], owner_reference=OWNER, current=None, others=[orphan("i:1", 4)])
        assert [r["metadata"]["name"] for r in hp.adopt] == [hp.updated]
        assert hp.create is None and hp.bump is None

    def test_adopted_orphans_count_in_the_history(self) -> None:
        hp = history.plan(ud("i:2"), [stored("i:1", 1)], owner_reference=OWNER, current=None, others=[orphan("i:3", 7)])
        assert len(hp.adopt) == 1
        assert hp.create is not None and hp.create["revision"] == 8

    def test_a_name_held_by_a_revision_we_may_not_adopt_is_probed_past(self) -> None:
        wanted = revision.name("web", ud("i:1").spec.template)
        unmatched = orphan("i:2", 1, name=wanted, labels={"app": "not-web"})
        foreign = orphan("i:2", 1, name=wanted, ownerReferences=[{"uid": "someone-else", "controller": True}])
        for other in (unmatched, foreign):
            hp = history.plan(ud("i:1"), [], owner_reference=OWNER, current=None, others=[other])
            assert hp.adopt == []
            assert hp.create is not None and hp.updated != wanted and hp.collision_count == 1

    def test_orphans_elsewhere_or_of_a_deleted_owner_are_not_adopted(self) -> None:
        elsewhere = orphan("i:1", 1, namespace="b")
        assert history.plan(ud("i:1"), [], owner_reference=OWNER, current=None, others=[elsewhere]).adopt == []
        gone = ud("i:1")
        gone.raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        assert history.plan(gone, [], owner_reference=OWNER, current=None, others=[orphan("i:1", 1)]).adopt == []


def test_the_template_is_encoded_once_however_long_the_history(monkeypatch: Any) -> None:
    """Comparing each stored revision with the template must not re-encode the template: at
    128 KiB that doubled the time the pass held the event loop."""
    old = [stored(f"i:{n}", n) for n in range(1, 11)]
    encoded = 0
    data = revision.data

    def counting(template: Any) -> bytes:
        nonlocal encoded
        encoded += 1
        return data(template)

    monkeypatch.setattr(revision, "data", counting)
    hp = history.plan(ud("i:5"), old, owner_reference=OWNER, current=None)
    assert hp.bump is not None and encoded == 1


class Compared:
    """Counts the comparisons of a revision's Data with a template."""

    def __init__(self, monkeypatch: Any) -> None:
        self.calls = 0
        same = revision.same

        def counting(*args: Any) -> bool:
            self.calls += 1
            return same(*args)

        monkeypatch.setattr(revision, "same", counting)


def test_likeness_compares_each_revision_once_and_forgets_deleted_ones(monkeypatch: Any) -> None:
    revisions = [stored(f"i:{n}", n) for n in range(1, 6)]
    for n, r in enumerate(revisions):
        r["metadata"]["uid"] = f"r{n}"
    compared = Compared(monkeypatch)
    current = ud("i:3")
    likeness = history.Likeness(current.spec.template)
    for _ in range(3):
        hp = history.plan(current, revisions, owner_reference=OWNER, current=None, likeness=likeness)
        assert hp.bump == (hp.updated, 6) == (revisions[2]["metadata"]["name"], 6)
    assert compared.calls == 5, "each revision once, whatever the number of plans"
    assert [likeness.known(r) for r in revisions] == [True] * 5
    likeness.keep(revisions[1:])
    assert not likeness.known(revisions[0]) and likeness.known(revisions[1])
    history.plan(current, revisions, owner_reference=OWNER, current=None, likeness=likeness)
    assert compared.calls == 6


def test_a_new_revision_carries_the_change_cause_the_user_recorded() -> None:
    plain = history.plan(ud("i:1"), [], owner_reference=OWNER, current=None)
    assert plain.create is not None and "annotations" not in plain.create["metadata"]
    recorded = ud("i:2")
    recorded.raw["metadata"]["annotations"] = {history.CHANGE_CAUSE: "kubectl set image web c=i:2"}
    hp = history.plan(recorded, [], owner_reference=OWNER, current=None)
    assert hp.create is not None
    assert hp.create["metadata"]["annotations"] == {history.CHANGE_CAUSE: "kubectl set image web c=i:2"}
