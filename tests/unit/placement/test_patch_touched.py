"""strategic_merge_touched is strategic_merge (same result, same key order, same errors) that
copies only what the patch names: the rest of the result is the original's own objects."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from united.placement.patch import POD, PatchError, strategic_merge, strategic_merge_touched

Json = Any

scalars = st.none() | st.integers(0, 2) | st.sampled_from(["a", "b"])
keys = st.sampled_from(["metadata", "spec", "labels", "annotations", "containers", "name", "image", "x", "tolerations"])
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=10,
)
containers = st.lists(
    st.fixed_dictionaries({"name": st.sampled_from(["main", "side"])}, optional={"image": scalars, "x": values}),
    max_size=3,
)
pods = st.fixed_dictionaries(
    {},
    optional={
        "metadata": st.dictionaries(keys, values, max_size=3),
        "spec": st.fixed_dictionaries({}, optional={"containers": containers, "tolerations": values, "x": values}),
        "status": values,
    },
)
directives = st.sampled_from([{}, {"$patch": "replace"}, {"$retainKeys": ["containers"]}])
patches = st.fixed_dictionaries(
    {},
    optional={
        "metadata": st.dictionaries(keys, values, max_size=2) | st.none(),
        "spec": st.builds(
            lambda fields, directive: {**fields, **directive},
            st.fixed_dictionaries({}, optional={"containers": containers, "x": values, "priorityClassName": scalars}),
            directives,
        ),
        "x": values,
    },
)


def outcome(merge: Any, original: Json, patch: Json) -> tuple[str, str]:
    try:
        return "ok", json.dumps(merge(original, patch, schema=POD))
    except PatchError as exc:
        return "error", str(exc)


@settings(max_examples=400, deadline=None)
@given(original=pods, patch=patches)
def test_the_result_the_order_and_the_errors_are_strategic_merges(original: Json, patch: Json) -> None:
    before = copy.deepcopy((original, patch))
    assert outcome(strategic_merge_touched, original, patch) == outcome(strategic_merge, original, patch)
    assert (original, patch) == before


def test_what_the_patch_does_not_name_is_shared_not_copied() -> None:
    tolerations: list[Json] = [{} for _ in range(1000)]
    spec = {"tolerations": tolerations, "containers": [{"name": "main", "image": "app"}]}
    pod: dict[str, Any] = {
        "metadata": {"name": "p", "labels": {"a": "1"}},
        "spec": spec,
        "status": {"phase": "Pending"},
    }
    out = strategic_merge_touched(pod, {"spec": {"containers": [{"name": "main", "image": "v2"}]}}, schema=POD)
    assert out["spec"]["tolerations"] is tolerations
    assert out["metadata"] is pod["metadata"] and out["status"] is pod["status"]
    assert out["spec"]["containers"] == [{"name": "main", "image": "v2"}]
    assert pod["spec"]["containers"] == [{"name": "main", "image": "app"}]
