"""Temporary: the linear merge against the quadratic one it replaced (tests/unit/_old_patch.py)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit import _old_patch as old
from united import patch as new


def rarely(usual: st.SearchStrategy[Any], odd: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``odd`` one time in 30: hostile shapes must agree too, but mostly the merge should run."""
    return st.integers(0, 29).flatmap(lambda n: odd if n == 0 else usual)


_NAMES = rarely(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from([None, 1, 1.0, True, {"x": 1}, ["a"]]))
_SCALAR = st.sampled_from(["a", "b", 1, 2, "delete", "replace"])
_ODD_SCALAR = st.sampled_from([None, 1.0, True, "a"])


def _element(depth: int) -> st.SearchStrategy[Any]:
    fields: dict[str, st.SearchStrategy[Any]] = {
        "image": _SCALAR,
        "$patch": rarely(
            st.sampled_from(["delete", "delete", "delete", "replace"]), st.sampled_from(["merge", "bogus"])
        ),
        "$retainKeys": rarely(
            st.just(["name", "image", "env", "args"]), st.lists(st.sampled_from(["name", "image", "env"]), max_size=3)
        ),
        "args": st.lists(st.sampled_from(["a", "b", "c"]), max_size=3),
        "$setElementOrder/env": st.lists(st.fixed_dictionaries({"name": _NAMES}), max_size=3),
        "$deleteFromPrimitiveList/args": st.lists(st.sampled_from(["a", "b"]), max_size=2),
    }
    if depth:
        fields["env"] = st.lists(_element(depth - 1), max_size=6)
    return rarely(
        st.fixed_dictionaries({"name": _NAMES}, optional=fields),
        st.fixed_dictionaries({}, optional=fields) | _ODD_SCALAR,
    )


_LIST = st.lists(_element(1), max_size=8)
_FINALIZERS = st.lists(rarely(st.sampled_from(["f", "g", "h"]), _ODD_SCALAR), max_size=6)


def _doc(containers: Any, finalizers: Any, directives: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"finalizers": finalizers}, "spec": {"containers": containers, **directives}}


_DIRECTIVES = st.fixed_dictionaries(
    {},
    optional={
        "$setElementOrder/containers": st.lists(
            rarely(st.fixed_dictionaries({"name": _NAMES}), _ODD_SCALAR), max_size=6
        ),
        "$retainKeys": rarely(
            st.just(["containers", "hostname"]), st.lists(st.sampled_from(["containers", "hostname"]), max_size=2)
        ),
        "hostname": _SCALAR,
    },
)


def outcome(module: Any, original: Any, patch: Any) -> Any:
    try:
        return module.strategic_merge(copy.deepcopy(original), copy.deepcopy(patch))
    except module.PatchError as e:
        return ("error", e.path, e.message)


@given(_LIST, _FINALIZERS, _LIST, _FINALIZERS, _DIRECTIVES, st.booleans())
@settings(max_examples=20000, deadline=None)
def test_same_outcome(
    containers: Any, finalizers: Any, p_containers: Any, p_finalizers: Any, directives: Any, meta: bool
) -> None:
    original = _doc(containers, finalizers, {})
    patch = _doc(p_containers, p_finalizers, directives)
    if meta and p_finalizers:
        patch["metadata"]["$deleteFromPrimitiveList/finalizers"] = p_finalizers[:2]
    assert outcome(new, original, patch) == outcome(old, original, patch)
