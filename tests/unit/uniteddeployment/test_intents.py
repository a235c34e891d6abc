"""What a pass writes to each child, decided without a client: create, patch, or nothing."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.unit.uniteddeployment.test_adaptive import KEYS
from tests.unit.uniteddeployment.test_remote import ud as manifest
from united.api.document import Json
from united.uniteddeployment import intents
from united.uniteddeployment.admission import admit
from united.uniteddeployment.allocation import Allocation, Plan
from united.uniteddeployment.children import Claim
from united.uniteddeployment.render import KINDS
from united.uniteddeployment.render.blueprints import Blueprints

KIND = KINDS["deploymentTemplate"]


def target(replicas: int = 2, **kw: Any) -> intents.Target:
    ud = admit(manifest({"name": "a"}, replicas=replicas))
    return intents.Target("ns/web", ud, KEYS, ud.spec.subsets[0], Allocation("a", replicas, 0, "", ""), "r1", **kw)


def decide(t: intents.Target, live: Json | None, **kw: Any) -> intents.ChildDecision:
    rendered, overridden = intents.render(t, live, Blueprints())
    args: dict[str, Any] = {"overridden": overridden, "updated": "r1", "cluster": None, "terminating": False,
                            "redistributed": True} | kw  # fmt: skip
    return intents.child_write(t, KIND, live, rendered, **args)


def created(t: intents.Target) -> Json:
    """The child as the API server would keep it after our create."""
    rendered, _ = intents.render(t, None, Blueprints())
    child = copy.deepcopy(rendered.object)
    child["metadata"] |= {"name": "web-a-x1", "uid": "c1", "resourceVersion": "5"}
    return child


def test_a_missing_child_is_created_with_its_event() -> None:
    d = decide(target(), None, cluster="m1")
    assert d.write is not None and d.write.verb == "create" and not d.immutable
    assert d.write.body["spec"]["replicas"] == 2
    assert d.write.success == ("SuccessfulCreate", "Created Deployment for subset a in cluster m1 with 2 replicas")


def test_a_subset_whose_old_child_is_being_deleted_waits() -> None:
    assert decide(target(), None, terminating=True) == intents.ChildDecision()


def test_a_child_as_rendered_gets_no_write() -> None:
    t = target()
    assert decide(t, created(t)) == intents.ChildDecision()


def test_a_child_scaled_by_a_redistribution_is_patched_and_the_event_says_so() -> None:
    live = created(target(replicas=2))
    d = decide(target(replicas=3), live)
    assert d.write is not None and d.write.verb == "update" and not d.write.exact
    assert d.write.body["spec"] == {"replicas": 3}
    assert d.write.success == ("ScaledSubset", "Deployment web-a-x1 of subset a: scaled from 2 to 3")


def test_a_child_following_a_new_total_is_patched_without_an_event() -> None:
    live = created(target(replicas=2))
    d = decide(target(replicas=3), live, redistributed=False)
    assert d.write is not None and d.write.body == {"spec": {"replicas": 3}} and d.write.success is None


def test_a_scale_with_another_change_keeps_its_event_whatever_the_total() -> None:
    t = target(replicas=3)
    live = created(target(replicas=2))
    live["metadata"]["labels"][KEYS.revision] = "r0"
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "old"
    live["metadata"]["annotations"][KEYS.spec_hash] = "old"
    d = decide(t, live, redistributed=False)
    assert d.write is not None and d.write.success is not None
    assert d.write.success[1].endswith("scaled from 2 to 3, updated to revision r1")


@pytest.mark.parametrize(
    ("before", "after", "moved"),
    [
        ({"a": 2, "b": 2}, {"a": 3, "b": 3}, False),  # a new total, every subset along
        ({"a": 2, "b": 2}, {"a": 2, "b": 1}, False),
        ({"a": 2, "b": 2}, {"a": 2, "b": 2}, False),
        ({"a": 2, "b": 0}, {"a": 1, "b": 1}, True),  # the same total, moved
        ({"a": 2, "b": 2}, {"a": 1, "b": 4}, True),  # a larger total, yet one subset shrinks
        ({"a": 3, "b": 3}, {"a": 4, "b": 1}, True),
        ({"a": 2}, {"a": 2, "b": 3}, False),  # a new subset's child is created (its own Event)
        ({"a": 2, "c": 3}, {"a": 2}, False),
    ],
)
def test_a_redistribution_moves_replicas_between_subsets(
    before: dict[str, int], after: dict[str, int], moved: bool
) -> None:
    assert intents.redistributes(before, after) is moved


def test_a_child_of_an_older_revision_is_updated_to_the_new_one() -> None:
    t = target()
    live = created(t)
    live["metadata"]["labels"][KEYS.revision] = "r0"
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "old"
    live["metadata"]["annotations"][KEYS.spec_hash] = "old"
    d = decide(t, live)
    assert d.write is not None and d.write.success[0] == "UpdatedSubset"
    assert "updated to revision r1" in d.write.success[1]


def test_an_override_comes_and_goes_through_the_spec_digest() -> None:
    t = target()
    live = created(t)
    rendered, overridden = intents.render(target(override=1), live, Blueprints())
    assert overridden
    assert rendered.object["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 1
    plain, _ = intents.render(t, live, Blueprints())
    assert (
        rendered.object["metadata"]["annotations"][KEYS.spec_hash]
        != plain.object["metadata"]["annotations"][KEYS.spec_hash]
    )


def test_an_orphan_is_adopted_with_an_exact_patch() -> None:
    t = target()
    live = created(t)
    live["metadata"]["ownerReferences"] = []
    d = decide(t, live)
    assert d.write is not None and d.write.exact and "adopted" in d.write.success[1]


def test_removed_subsets_children_and_duplicates_are_unwanted_but_drained_ones_are_kept() -> None:
    t = target()
    a, gone, draining, dup = ({"metadata": {"name": n}} for n in ("web-a", "web-x", "web-y", "web-a2"))
    claimed = Claim(by_subset={"a": a, "x": gone, "y": draining}, duplicates=[dup])
    assert intents.unwanted(t.ud, claimed, keep=["y"]) == [gone, dup]


def test_only_drained_children_whose_replicas_change_are_scaled() -> None:
    p = Plan("elastic", 3, (Allocation("x", 1, 0, "", ""), Allocation("y", 2, 0, "", "")))
    x, y = {"spec": {"replicas": 3}}, {"spec": {"replicas": 2}}
    assert intents.drains({"x": x, "y": y}, p, ["x", "y"]) == [("x", x, 3, 1)]


def test_a_released_child_keeps_the_other_owners_only() -> None:
    t = target()
    ours = {"uid": t.ud.uid, "kind": "UnitedDeployment"}
    other = {"uid": "o1", "kind": "Other"}
    assert intents.release(t.ud, {"metadata": {"ownerReferences": [ours, other]}}) == {
        "metadata": {"ownerReferences": [other]}
    }
    assert intents.release(t.ud, {"metadata": {"ownerReferences": [ours]}}) == {"metadata": {"ownerReferences": None}}
