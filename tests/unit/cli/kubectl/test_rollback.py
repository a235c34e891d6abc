"""Which revision ``rollout undo`` restores."""

from __future__ import annotations

import json
from typing import Any

import pytest

from united.cli.kubectl.rollback import (
    RevisionError,
    choose,
    history_rows,
    owned,
    revision_template,
    template_of,
    undo_patch,
)
from united.uniteddeployment import revision
from united.uniteddeployment.model import Template

UID = "uid-web"


def template(image: str) -> dict[str, Any]:
    pod = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": image}]}}
    return {"deploymentTemplate": {"metadata": {"labels": {"app": "web"}}, "spec": {"template": pod}}}


def rev(name: str, number: int, image: str, *, owner: str = UID) -> dict[str, Any]:
    body = template(image)["deploymentTemplate"]
    data = revision.data(Template("deploymentTemplate", body["metadata"], body["spec"]))
    return {
        "metadata": {"name": name, "ownerReferences": [{"uid": owner, "controller": True}]},
        "data": json.loads(data),
        "revision": number,
    }


HISTORY = [rev("web-1", 1, "v1"), rev("web-2", 2, "v2"), rev("web-3", 3, "v3")]


def test_owned_keeps_the_objects_revisions_oldest_first() -> None:
    mixed = [HISTORY[2], rev("other-1", 1, "v1", owner="uid-other"), HISTORY[0], HISTORY[1]]
    assert [r["metadata"]["name"] for r in owned(mixed, UID)] == ["web-1", "web-2", "web-3"]


def test_previous_is_the_newest_revision_with_another_template() -> None:
    assert choose(HISTORY, template("v3"))["metadata"]["name"] == "web-2"  # type: ignore[index]


def test_a_template_changed_since_the_newest_revision_goes_back_to_the_newest() -> None:
    assert choose(HISTORY, template("v4"))["metadata"]["name"] == "web-3"  # type: ignore[index]


def test_two_undos_toggle_like_kubectl() -> None:
    bumped = [HISTORY[0], HISTORY[2], {**HISTORY[1], "revision": 4}]  # after undo to v2: web-2 renumbered
    assert choose(bumped, template("v2"))["metadata"]["name"] == "web-3"  # type: ignore[index]


def test_to_revision_picks_by_number_and_skips_the_current_one() -> None:
    assert choose(HISTORY, template("v3"), to_revision=1)["metadata"]["name"] == "web-1"  # type: ignore[index]
    assert choose(HISTORY, template("v3"), to_revision=3) is None


def test_missing_revisions_say_so_in_kubectls_words() -> None:
    with pytest.raises(RevisionError, match="unable to find specified revision 9 in history"):
        choose(HISTORY, template("v3"), to_revision=9)
    with pytest.raises(RevisionError, match="no rollout history found"):
        choose([], template("v3"))
    with pytest.raises(RevisionError, match="no previous revision"):
        choose(HISTORY[:1], template("v1"))


def test_template_of_drops_the_patch_marker_and_round_trips() -> None:
    assert template_of(HISTORY[0]) == template("v1")
    with pytest.raises(RevisionError, match="holds no UnitedDeployment template"):
        template_of({"metadata": {"name": "x"}, "data": {"spec": {}}})


def test_undo_patch_replaces_the_template_guarded_by_the_resource_version() -> None:
    obj = {"metadata": {"uid": UID, "resourceVersion": "41"}, "spec": {"template": template("v3")}}
    assert undo_patch(obj, HISTORY) == (
        [
            {"op": "replace", "path": "/metadata/resourceVersion", "value": "41"},
            {"op": "replace", "path": "/spec/template", "value": template("v2")},
        ],
        2,
    )
    assert undo_patch(obj, HISTORY, to_revision=3) is None
    stranger = {**obj, "metadata": {"uid": "uid-other", "resourceVersion": "41"}}
    with pytest.raises(RevisionError, match="no rollout history found"):
        undo_patch(stranger, HISTORY)


def test_history_lists_the_revisions_with_their_change_cause() -> None:
    caused = rev("web-2", 2, "v2")
    caused["metadata"]["annotations"] = {"kubernetes.io/change-cause": "image v2"}
    mixed = [HISTORY[2], caused, rev("other-1", 1, "v1", owner="uid-other"), HISTORY[0]]
    assert history_rows(mixed, UID) == [(1, "<none>"), (2, "image v2"), (3, "<none>")]
    assert history_rows(mixed, "uid-nobody") == []


def test_history_shows_one_revisions_template_or_says_it_is_missing() -> None:
    assert revision_template(HISTORY, UID, 2)["deploymentTemplate"]["spec"]["template"]["spec"]["containers"] == [
        {"name": "c", "image": "v2"}
    ]
    with pytest.raises(RevisionError, match="unable to find the specified revision 7"):
        revision_template(HISTORY, UID, 7)
