"""Blueprints kept between passes: a kept child equals a fresh render (but for the pod
template it leaves out), whatever sequence of specs, revisions and replicas a UD goes through;
what it keeps is reused while, and only while, what a blueprint reads stays the same."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.uniteddeployment.render.test_render import GOLDEN_CASES, manifest
from united.api.document import Json
from united.api.groups import KRUISE_GROUP
from united.uniteddeployment.admission import admit
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import UnitedDeployment
from united.uniteddeployment.render import KINDS, Rendered, render
from united.uniteddeployment.render import blueprints as module
from united.uniteddeployment.render.blueprints import Blueprints

SAMPLES = Path(__file__).parents[3] / "manifests" / "samples"


def _samples() -> list[Json]:
    docs = [d for p in sorted(SAMPLES.glob("*.yaml")) for d in yaml.safe_load_all(p.read_text())]
    return [d for d in docs if isinstance(d, dict) and d.get("kind") == "UnitedDeployment"]


def _variants(obj: Json) -> list[Json]:
    """``obj`` and copies that differ in one thing a blueprint reads, or in nothing but the generation."""
    obj = copy.deepcopy(obj)
    obj["metadata"].setdefault("uid", "uid-1")
    out = [obj]
    same = copy.deepcopy(obj)
    same["metadata"]["generation"] = 7
    out.append(same)
    template = next(iter(obj["spec"]["template"].values()))
    relabelled = copy.deepcopy(obj)
    next(iter(relabelled["spec"]["template"].values()))["metadata"].setdefault("labels", {})["extra"] = "x"
    out.append(relabelled)
    other_pod = copy.deepcopy(obj)
    pod_spec = next(iter(other_pod["spec"]["template"].values()))["spec"]["template"]["spec"]
    pod_spec["containers"][0]["image"] = "other:2"
    out.append(other_pod)
    if template["spec"].get("template"):
        patched = copy.deepcopy(obj)
        first = patched["spec"]["topology"]["subsets"][0]
        first["patch"] = {"metadata": {"annotations": {"patched": "yes"}}}
        out.append(patched)
    replaced = copy.deepcopy(obj)
    replaced["metadata"]["uid"] = "uid-2"
    out.append(replaced)
    fewer = copy.deepcopy(obj)
    if len(fewer["spec"]["topology"]["subsets"]) > 1:
        fewer["spec"]["topology"]["subsets"].pop(0)
        fewer["spec"].get("updateStrategy", {}).get("manualUpdate", {}).pop("partitions", None)
        for rest in fewer["spec"]["topology"]["subsets"]:
            for bound in ("replicas", "minReplicas", "maxReplicas"):
                rest.pop(bound, None)
        out.append(fewer)
    return out


def _pool() -> list[UnitedDeployment]:
    bases = [manifest(variant, api_version) for variant, api_version in GOLDEN_CASES.values()] + _samples()
    pool = []
    for base in bases:
        for obj in _variants(base):
            obj["metadata"]["name"] = "web"  # one key: every UD of the pool goes through the same entry
            obj["metadata"]["namespace"] = "shop"
            pool.append(admit(obj))
    return pool


POOL = _pool()
step = st.tuples(
    st.integers(0, len(POOL) - 1),
    st.integers(0, 5),
    st.integers(0, 50),
    st.integers(0, 50),
    st.sampled_from(["web-a", "web-b"]),
    st.booleans(),
)


def _without_pod_template(obj: Json) -> Json:
    return {**obj, "spec": {k: v for k, v in obj["spec"].items() if k != "template"}}


def _as_kept(got: Rendered, fresh: Rendered) -> Json:
    """``fresh`` as ``got`` should be: the same, without its pod template if ``got`` has none."""
    return fresh.object if got.complete else _without_pod_template(fresh.object)


@settings(max_examples=300, deadline=None)
@given(st.lists(step, min_size=1, max_size=30))
def test_a_kept_child_equals_a_fresh_render(steps: list[tuple[int, int, int, int, str, bool]]) -> None:
    kept = Blueprints()
    for index, which, replicas, partition, revision, complete in steps:
        ud = POOL[index]
        subset = ud.spec.subsets[which % len(ud.spec.subsets)]
        keys = Keys(ud.group)
        fresh = render(ud, subset=subset, replicas=replicas, partition=partition, revision=revision, keys=keys)
        got = kept.render(
            "shop/web",
            ud,
            subset=subset,
            replicas=replicas,
            partition=partition,
            revision=revision,
            keys=keys,
            complete=complete,
        )
        assert got.partition_applied == fresh.partition_applied
        assert got.complete or not complete
        assert got.object == _as_kept(got, fresh)
        got.object["spec"]["updateStrategy"] = {"changed": True}  # what a pass may do to its copy
        got.object["metadata"]["annotations"]["x"] = "y"
    assert len(kept) == 1


# -- what is reused --------------------------------------------------------------------------


class Counted:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        original = module.blueprint

        def counting(*args: Any, **kw: Any) -> Json:
            self.calls += 1
            return original(*args, **kw)

        monkeypatch.setattr(module, "blueprint", counting)


def _ud(**changes: Any) -> UnitedDeployment:
    obj = manifest()
    obj["metadata"]["generation"] = changes.pop("generation", 1)
    if "image" in changes:
        next(iter(obj["spec"]["template"].values()))["spec"]["template"]["spec"]["containers"][0]["image"] = changes[
            "image"
        ]
    if "patch" in changes:
        obj["spec"]["topology"]["subsets"][1]["patch"] = changes["patch"]
    if "replicas" in changes:
        obj["spec"]["replicas"] = changes["replicas"]
    return admit(obj)


def _pass(kept: Blueprints, ud: UnitedDeployment, *, revision: str = "web-a", replicas: int = 2) -> list[Rendered]:
    return [
        kept.render(
            "shop/web",
            ud,
            subset=s,
            replicas=replicas,
            partition=0,
            revision=revision,
            keys=Keys(ud.group),
            complete=False,
        )
        for s in ud.spec.subsets
    ]


def test_a_pass_with_the_same_spec_and_revision_reuses_every_blueprint(monkeypatch: pytest.MonkeyPatch) -> None:
    counted = Counted(monkeypatch)
    kept = Blueprints()
    ud = _ud()
    _pass(kept, ud)
    assert counted.calls == 2
    _pass(kept, ud)
    assert counted.calls == 2, "a pass after a pod event renders nothing"
    children = _pass(kept, ud, replicas=9)
    assert counted.calls == 2, "replicas are not part of a blueprint"
    assert [c.object["spec"]["replicas"] for c in children] == [9, 9]
    _pass(kept, _ud(generation=2, replicas=11))
    assert counted.calls == 2, "a scale bumps the generation, not the template: compared, not rendered"


@pytest.mark.parametrize(
    ("change", "rendered"),
    [
        ({"image": "nginx:2"}, 2),
        ({"patch": {"metadata": {"labels": {"extra": "b"}}}}, 1),
    ],
    ids=["template", "one subset's patch"],
)
def test_a_spec_change_renders_what_it_touches(
    monkeypatch: pytest.MonkeyPatch, change: dict[str, Any], rendered: int
) -> None:
    kept = Blueprints()
    _pass(kept, _ud())
    counted = Counted(monkeypatch)
    changed = _ud(generation=2, **change)
    children = _pass(kept, changed)
    assert counted.calls == rendered
    fresh = [
        render(changed, subset=s, replicas=2, partition=0, revision="web-a", keys=Keys()) for s in changed.spec.subsets
    ]
    assert [c.object for c in children] == [_as_kept(c, f) for c, f in zip(children, fresh, strict=True)]
    assert sum(c.complete for c in children) == rendered


def test_a_new_revision_or_group_renders_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    kept = Blueprints()
    ud = _ud()
    _pass(kept, ud)
    counted = Counted(monkeypatch)
    children = _pass(kept, ud, revision="web-b")
    assert counted.calls == 2
    assert {c.object["metadata"]["labels"][Keys().revision] for c in children} == {"web-b"}
    s = ud.spec.subsets[0]
    other = kept.render(
        "shop/web", ud, subset=s, replicas=2, partition=0, revision="web-b", keys=Keys(KRUISE_GROUP), complete=False
    )
    assert counted.calls == 3
    assert Keys(KRUISE_GROUP).revision in other.object["metadata"]["labels"]


def test_a_complete_child_is_always_rendered_and_forget_drops_the_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    kept = Blueprints()
    ud = _ud()
    _pass(kept, ud)
    counted = Counted(monkeypatch)
    s = ud.spec.subsets[0]
    whole = kept.render("shop/web", ud, subset=s, replicas=2, partition=0, revision="web-a", keys=Keys(), complete=True)
    assert counted.calls == 1 and whole.complete and "template" in whole.object["spec"]
    kept.forget("shop/web")
    assert len(kept) == 0
    _pass(kept, ud)
    assert counted.calls == 3


def test_the_diff_never_needs_the_pod_template_it_leaves_out() -> None:
    """A kept child omits ``spec.template``: every kind must count it as mutable, or the
    immutable-field check would see it missing."""
    assert all("template" in kind.mutable for kind in KINDS.values())
