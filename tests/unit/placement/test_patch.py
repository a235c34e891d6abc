"""Tests for united.placement.patch (strategic merge patch) and its table in united.placement.patchschema."""

from __future__ import annotations

import contextlib
import copy
import itertools
from collections.abc import Callable, Mapping
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.runtime.virtual_time import Operations
from united.placement.patch import POD, POD_TEMPLATE, PatchError, strategic_merge
from united.placement.patchschema import (
    SCALAR,
    ListSchema,
    ObjectSchema,
    Schema,
    atomic,
    merge_by,
    merge_set,
    obj,
    string_map,
)

Json = Any


def merge(original: Mapping[str, Any], patch: Mapping[str, Any], **kw: Any) -> dict[str, Any]:
    """Apply and also check that neither input was touched."""
    before = copy.deepcopy((original, patch))
    out = strategic_merge(original, patch, **kw)
    assert (original, patch) == before
    return out


def fails(original: Mapping[str, Any], patch: Mapping[str, Any], **kw: Any) -> PatchError:
    with pytest.raises(PatchError) as info:
        strategic_merge(original, patch, **kw)
    return info.value


def spec(**fields: Json) -> dict[str, Json]:
    return {"spec": fields}


def container(name: str, **fields: Json) -> dict[str, Json]:
    return {"name": name, **fields}


# The struct upstream's patch_test.go uses (MergeItem), restated as a table, so that its
# test cases can be restated as data below.
_MERGE_ITEM_FIELDS: dict[str, Schema] = {}
MERGE_ITEM = ObjectSchema(fields=_MERGE_ITEM_FIELDS)
_MERGE_ITEM_FIELDS.update(
    mergingList=merge_by("name", MERGE_ITEM),
    nonMergingList=atomic(MERGE_ITEM),
    mergingIntList=merge_set(),
    nonMergingIntList=atomic(SCALAR),
    simpleMap=string_map(),
    retainKeysMap=obj(
        {
            "simpleMap": string_map(),
            "mergingIntList": merge_set(),
            "mergingList": merge_by("name", MERGE_ITEM),
            "nonMergingList": atomic(MERGE_ITEM),
        }
    ),
    retainKeysMergingList=merge_by("name", MERGE_ITEM),
)


# --- maps and null -------------------------------------------------------------------


def test_maps_merge_recursively_and_scalars_are_replaced() -> None:
    original = {"metadata": {"labels": {"app": "web", "tier": "fe"}}, "spec": {"hostname": "a"}}
    patch = {"metadata": {"labels": {"tier": "edge", "zone": "z1"}}, "spec": {"hostname": "b"}}
    assert merge(original, patch) == {
        "metadata": {"labels": {"app": "web", "tier": "edge", "zone": "z1"}},
        "spec": {"hostname": "b"},
    }


def test_null_deletes_a_key() -> None:
    original = {"metadata": {"labels": {"app": "web", "tier": "fe"}}, "spec": {"hostname": "a"}}
    assert merge(original, {"metadata": {"labels": {"tier": None}}, "spec": {"hostname": None}}) == {
        "metadata": {"labels": {"app": "web"}},
        "spec": {},
    }


def test_null_for_an_absent_key_is_dropped_not_kept() -> None:
    assert merge({"spec": {}}, {"spec": {"hostname": None}}) == {"spec": {}}


def test_nulls_inside_a_value_copied_into_an_absent_field_are_dropped() -> None:
    patch = spec(affinity={"nodeAffinity": None, "podAffinity": {"x": {"a": 1, "b": None}}})
    assert merge({"spec": {}}, patch) == spec(affinity={"podAffinity": {"x": {"a": 1}}})


def test_nulls_already_in_the_original_are_kept() -> None:
    original = {"spec": {"hostname": None, "nodeSelector": {"a": None}}}
    assert merge(original, spec(subdomain="s")) == {
        "spec": {"hostname": None, "nodeSelector": {"a": None}, "subdomain": "s"}
    }


def test_a_value_of_another_json_type_replaces_the_original() -> None:
    original = {"spec": {"hostname": 7, "x": {"a": 1}, "y": [1]}}
    patch = spec(hostname="h", x=[1, 2], y={"b": None, "c": 2})
    assert merge(original, patch) == spec(hostname="h", x=[1, 2], y={"c": 2})


def test_key_order_keeps_original_keys_in_place_and_appends_new_ones() -> None:
    out = merge({"spec": {"b": 1, "a": 2}}, spec(c=3, a=4))
    assert list(out["spec"]) == ["b", "a", "c"]


# --- atomic lists ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "old", "new"),
    [
        (("spec", "tolerations"), [{"key": "a"}, {"key": "b"}], [{"key": "c"}]),
        (("spec", "readinessGates"), [{"conditionType": "a"}], [{"conditionType": "b"}]),
        (("spec", "containers", 0, "args"), ["--a", "--b"], ["--c"]),
        (("spec", "containers", 0, "command"), ["sh", "-c"], ["bash"]),
        (
            ("spec", "containers", 0, "envFrom"),
            [{"configMapRef": {"name": "a"}}],
            [{"secretRef": {"name": "s"}}],
        ),
        (
            ("spec", "containers", 0, "resizePolicy"),
            [{"resourceName": "cpu"}],
            [{"resourceName": "memory"}],
        ),
        (("spec", "containers", 0, "resources", "claims"), [{"name": "a"}], [{"name": "b"}]),
        (
            (
                "spec",
                "affinity",
                "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution",
                "nodeSelectorTerms",
            ),
            [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}],
            [{"matchFields": [{"key": "b", "operator": "Exists"}]}],
        ),
        (("spec", "securityContext", "supplementalGroups"), [1, 2], [3]),
        (("spec", "dnsConfig", "options"), [{"name": "ndots"}], [{"name": "edns0"}]),
        (("metadata", "managedFields"), [{"manager": "a"}], [{"manager": "b"}]),
    ],
)
def test_lists_without_a_patch_strategy_are_replaced(path: tuple[Any, ...], old: Json, new: Json) -> None:
    def nest(value: Json) -> dict[str, Json]:
        doc: dict[str, Json] = {}
        node: Any = doc
        for step, nxt in itertools.pairwise(path):
            if isinstance(nxt, int):
                node[step] = [{"name": "main"}]
                node = node[step][0]
            elif not isinstance(step, int):
                node = node.setdefault(step, {})
        node[path[-1]] = value
        return doc

    assert merge(nest(old), nest(new)) == nest(new)


def test_an_atomic_list_is_taken_verbatim_even_with_nulls_and_directives() -> None:
    original = spec(tolerations=[{"key": "a"}])
    patch = spec(tolerations=[{"key": "b", "value": None}, {"$patch": "replace"}])
    assert merge(original, patch) == patch


# --- merge keys, one case per family of the table ---------------------------------------


def _containers(field: str, items: list[Json]) -> dict[str, Json]:
    return spec(containers=[container("main", **{field: items})])


MERGE_FAMILIES = [
    pytest.param(lambda v: {"metadata": {"ownerReferences": v}}, "uid", id="metadata.ownerReferences/uid"),
    pytest.param(lambda v: spec(volumes=v), "name", id="volumes/name"),
    pytest.param(lambda v: spec(initContainers=v), "name", id="initContainers/name"),
    pytest.param(lambda v: spec(containers=v), "name", id="containers/name"),
    pytest.param(lambda v: spec(ephemeralContainers=v), "name", id="ephemeralContainers/name"),
    pytest.param(lambda v: spec(imagePullSecrets=v), "name", id="imagePullSecrets/name"),
    pytest.param(lambda v: spec(hostAliases=v), "ip", id="hostAliases/ip"),
    pytest.param(lambda v: spec(topologySpreadConstraints=v), "topologyKey", id="topologySpreadConstraints"),
    pytest.param(lambda v: spec(schedulingGates=v), "name", id="schedulingGates/name"),
    pytest.param(lambda v: spec(resourceClaims=v), "name", id="resourceClaims/name"),
    pytest.param(lambda v: _containers("ports", v), "containerPort", id="ports/containerPort"),
    pytest.param(lambda v: _containers("env", v), "name", id="env/name"),
    pytest.param(lambda v: _containers("volumeMounts", v), "mountPath", id="volumeMounts/mountPath"),
    pytest.param(lambda v: _containers("volumeDevices", v), "devicePath", id="volumeDevices/devicePath"),
    pytest.param(
        lambda v: spec(initContainers=[container("init", env=v)]),
        "name",
        id="initContainers.env/name",
    ),
    pytest.param(
        lambda v: spec(ephemeralContainers=[container("dbg", ports=v)]),
        "containerPort",
        id="ephemeralContainers.ports/containerPort",
    ),
    pytest.param(
        lambda v: spec(
            volumes=[
                {
                    "name": "scratch",
                    "ephemeral": {"volumeClaimTemplate": {"metadata": {"ownerReferences": v}}},
                }
            ]
        ),
        "uid",
        id="volumeClaimTemplate.metadata.ownerReferences/uid",
    ),
]


@pytest.mark.parametrize(("wrap", "key"), MERGE_FAMILIES)
def test_merge_lists_merge_by_their_key(wrap: Any, key: str) -> None:
    a, b, c = ("a", "b", "c") if key != "containerPort" else (80, 81, 82)
    original = wrap([{key: a, "x": 1}, {key: b, "x": 2}])
    patch = wrap([{key: a, "y": 3}, {key: c, "x": 4}])
    # a is merged; c is new and comes before b, which the patch does not name.
    assert merge(original, patch) == wrap([{key: a, "x": 1, "y": 3}, {key: c, "x": 4}, {key: b, "x": 2}])


@pytest.mark.parametrize(("wrap", "key"), MERGE_FAMILIES)
def test_merge_lists_delete_an_element_by_key(wrap: Any, key: str) -> None:
    a, b = ("a", "b") if key != "containerPort" else (80, 81)
    original = wrap([{key: a}, {key: b}])
    assert merge(original, wrap([{key: a, "$patch": "delete"}])) == wrap([{key: b}])


def test_finalizers_are_a_union() -> None:
    original = {"metadata": {"finalizers": ["a", "b"]}}
    assert merge(original, {"metadata": {"finalizers": ["b", "c"]}}) == {"metadata": {"finalizers": ["a", "b", "c"]}}


def test_finalizers_union_drops_duplicates_from_the_original_too() -> None:
    original = {"metadata": {"finalizers": ["a", "a", "b"]}}
    assert merge(original, {"metadata": {"finalizers": []}}) == {"metadata": {"finalizers": ["a", "b"]}}


def test_container_env_ports_and_mounts_merge_inside_the_matching_container() -> None:
    original = spec(
        containers=[
            container(
                "main",
                image="app:1",
                env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                ports=[{"containerPort": 80, "protocol": "TCP"}],
                volumeMounts=[{"name": "data", "mountPath": "/data"}],
                resources={"limits": {"cpu": "1", "memory": "1Gi"}},
            ),
            container("other", image="o:1"),
        ]
    )
    patch = spec(
        containers=[
            container(
                "main",
                env=[{"name": "B", "value": "two"}],
                ports=[{"containerPort": 80, "name": "http"}],
                volumeMounts=[{"name": "data", "mountPath": "/data", "readOnly": True}],
                resources={"limits": {"cpu": "2"}},
            )
        ]
    )
    assert merge(original, patch) == spec(
        containers=[
            container(
                "main",
                image="app:1",
                env=[{"name": "A", "value": "1"}, {"name": "B", "value": "two"}],
                ports=[{"containerPort": 80, "protocol": "TCP", "name": "http"}],
                volumeMounts=[{"name": "data", "mountPath": "/data", "readOnly": True}],
                resources={"limits": {"cpu": "2", "memory": "1Gi"}},
            ),
            container("other", image="o:1"),
        ]
    )


def test_arm_subset_example_changes_limits_of_one_container_only() -> None:
    template = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [container("main", resources={"limits": {"cpu": "1"}}), container("log")]},
    }
    patch = spec(containers=[container("main", resources={"limits": {"cpu": "2"}})])
    assert merge(template, patch)["spec"]["containers"] == [
        container("main", resources={"limits": {"cpu": "2"}}),
        container("log"),
    ]


def test_merge_key_values_compare_like_go_so_int_float_and_bool_differ() -> None:
    original = _containers("ports", [{"containerPort": 1}])
    out = merge(original, _containers("ports", [{"containerPort": 1.0}, {"containerPort": True}]))
    assert out == _containers("ports", [{"containerPort": 1.0}, {"containerPort": True}, {"containerPort": 1}])


def test_table_lists_every_merge_key_of_a_pod_template() -> None:
    found: set[tuple[str, str | None]] = set()

    def walk(schema: Schema | None, path: str, depth: int) -> None:
        if depth > 8 or schema is None:
            return
        if isinstance(schema, ObjectSchema):
            for name, child in schema.fields.items():
                walk(child, f"{path}.{name}" if path else name, depth + 1)
            walk(schema.values, f"{path}.*", depth + 1)
        elif isinstance(schema, ListSchema):
            if schema.merge:
                found.add((path, schema.merge_key))
            walk(schema.items, f"{path}[]", depth + 1)

    walk(POD_TEMPLATE, "", 0)
    vct = "spec.volumes[].ephemeral.volumeClaimTemplate.metadata"
    expected = {
        ("metadata.finalizers", None),
        ("metadata.ownerReferences", "uid"),
        (f"{vct}.finalizers", None),
        (f"{vct}.ownerReferences", "uid"),
        ("spec.volumes", "name"),
        ("spec.imagePullSecrets", "name"),
        ("spec.hostAliases", "ip"),
        ("spec.topologySpreadConstraints", "topologyKey"),
        ("spec.schedulingGates", "name"),
        ("spec.resourceClaims", "name"),
    }
    for containers in ("initContainers", "containers", "ephemeralContainers"):
        expected |= {
            (f"spec.{containers}", "name"),
            (f"spec.{containers}[].ports", "containerPort"),
            (f"spec.{containers}[].env", "name"),
            (f"spec.{containers}[].volumeMounts", "mountPath"),
            (f"spec.{containers}[].volumeDevices", "devicePath"),
        }
    assert found == expected


def test_pod_and_pod_template_share_the_table() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [container("a")]},
    }
    out = merge(pod, spec(containers=[container("b")]), schema=POD)
    assert out["spec"]["containers"] == [container("b"), container("a")]
    assert POD is POD_TEMPLATE


# --- order -------------------------------------------------------------------------------


def test_a_new_container_goes_before_the_original_ones_the_patch_does_not_name() -> None:
    original = spec(containers=[container("main"), container("log")])
    assert merge(original, spec(containers=[container("sidecar")]))["spec"]["containers"] == [
        container("sidecar"),
        container("main"),
        container("log"),
    ]


def test_a_new_container_after_a_named_one_follows_it() -> None:
    original = spec(containers=[container("main"), container("log")])
    out = merge(original, spec(containers=[container("log", image="l"), container("sidecar")]))
    assert out["spec"]["containers"] == [
        container("main"),
        container("log", image="l"),
        container("sidecar"),
    ]


def test_elements_named_in_the_patch_take_the_patch_order() -> None:
    original = spec(containers=[container("a"), container("b", image="b"), container("c")])
    patch = spec(containers=[container("c", image="c"), container("a", image="a")])
    assert merge(original, patch)["spec"]["containers"] == [
        container("b", image="b"),
        container("c", image="c"),
        container("a", image="a"),
    ]


def test_duplicate_keys_in_the_patch_collapse_into_one_element() -> None:
    patch = spec(containers=[container("x", image="1"), container("x", args=["a"])])
    assert merge(spec(containers=[container("a")]), patch)["spec"]["containers"] == [
        container("x", image="1", args=["a"]),
        container("a"),
    ]


# --- $patch ------------------------------------------------------------------------------


def test_patch_replace_on_a_map_replaces_it() -> None:
    original = spec(affinity={"nodeAffinity": {"a": 1}, "podAffinity": {"b": 2}})
    patch = spec(affinity={"$patch": "replace", "podAntiAffinity": {"c": 3}})
    assert merge(original, patch) == spec(affinity={"podAntiAffinity": {"c": 3}})


def test_patch_replace_keeps_the_replacement_verbatim() -> None:
    original = {"metadata": {"labels": {"a": "1"}}}
    patch = {"metadata": {"labels": {"$patch": "replace", "b": None}}}
    assert merge(original, patch) == {"metadata": {"labels": {"b": None}}}


def test_patch_delete_on_a_map_leaves_an_empty_map() -> None:
    original = spec(affinity={"nodeAffinity": {"a": 1}}, hostname="h")
    assert merge(original, spec(affinity={"$patch": "delete"})) == spec(affinity={}, hostname="h")


@pytest.mark.parametrize("directive", ["replace", "delete"])
def test_a_patch_map_under_an_absent_key_is_dropped(directive: str) -> None:
    patch = spec(affinity={"$patch": directive, "nodeAffinity": {"a": 1}})
    assert merge({"spec": {"hostname": "h"}}, patch) == spec(hostname="h")


def test_a_patch_map_replacing_a_value_of_another_type_deletes_it() -> None:
    assert merge(spec(affinity="odd", hostname="h"), spec(affinity={"$patch": "delete"})) == spec(hostname="h")


def test_directives_inside_a_value_copied_into_an_absent_field_are_removed() -> None:
    patch = spec(
        containers=[
            container("main", env=[{"name": "A", "value": "1"}, {"name": "B", "$patch": "delete"}]),
            {"name": "gone", "$patch": "delete"},
        ]
    )
    assert merge({"spec": {}}, patch) == spec(containers=[container("main", env=[{"name": "A", "value": "1"}])])


def test_top_level_patch_replace_and_delete() -> None:
    original = {"metadata": {"name": "a"}, "spec": {"hostname": "h"}}
    assert merge(original, {"$patch": "replace", "spec": {"x": 1}}) == {"spec": {"x": 1}}
    assert merge(original, {"$patch": "delete"}) == {}


def test_list_element_patch_replace_replaces_the_whole_list() -> None:
    original = spec(containers=[container("a"), container("b")])
    patch = spec(containers=[container("c"), {"$patch": "replace"}, container("d")])
    assert merge(original, patch) == spec(containers=[container("c"), container("d")])


def test_list_element_patch_replace_alone_empties_the_list() -> None:
    original = spec(volumes=[{"name": "a"}])
    assert merge(original, spec(volumes=[{"$patch": "replace"}])) == spec(volumes=[])


def test_list_element_patch_delete_removes_every_duplicate() -> None:
    original = spec(imagePullSecrets=[{"name": "a"}, {"name": "a"}, {"name": "b"}])
    patch = spec(imagePullSecrets=[{"name": "a", "$patch": "delete"}])
    assert merge(original, patch) == spec(imagePullSecrets=[{"name": "b"}])


def test_serverless_example_adds_a_sidecar_and_deletes_another() -> None:
    original = spec(containers=[container("main"), container("istio-proxy")])
    patch = spec(containers=[{"name": "istio-proxy", "$patch": "delete"}, container("agent", image="a:1")])
    assert merge(original, patch) == spec(containers=[container("agent", image="a:1"), container("main")])


def test_deleting_an_absent_element_is_a_no_op() -> None:
    original = spec(containers=[container("main")])
    patch = spec(containers=[{"name": "sidecar", "$patch": "delete"}])
    assert merge(original, patch) == original


def test_delete_element_without_merge_key_is_an_error() -> None:
    e = fails(
        spec(containers=[container("main")]),
        spec(containers=[container("x"), {"$patch": "delete"}]),
    )
    assert e.path == "spec.containers[1]" and "merge key 'name'" in e.message


@pytest.mark.parametrize(
    ("patch", "path"),
    [
        (spec(affinity={"$patch": "merge"}), "spec.affinity.$patch"),
        (spec(containers=[{"name": "a", "$patch": "merge"}]), "spec.containers[0].$patch"),
        ({"$patch": "merge"}, "$patch"),
    ],
)
def test_patch_merge_is_rejected(patch: dict[str, Json], path: str) -> None:
    e = fails(spec(affinity={}, containers=[container("a")]), patch)
    assert e.path == path and "merge" in e.message


@pytest.mark.parametrize("value", ["remove", "", None, 1, ["replace"]])
def test_unknown_patch_values_are_rejected_even_under_an_absent_key(value: Json) -> None:
    e = fails({}, spec(affinity={"$patch": value}))
    assert e.path == "spec.affinity.$patch" and "unknown patch directive" in e.message


# --- $deleteFromPrimitiveList ------------------------------------------------------------


def test_delete_from_primitive_list_removes_values() -> None:
    original = {"metadata": {"finalizers": ["a", "b", "c", "b"]}}
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "zzz"]}}
    assert merge(original, patch) == {"metadata": {"finalizers": ["a", "c"]}}


def test_delete_from_primitive_list_also_works_on_atomic_lists() -> None:
    original = _containers("args", ["--a", "--b"])
    patch = spec(containers=[container("main", **{"$deleteFromPrimitiveList/args": ["--a"]})])
    assert merge(original, patch) == _containers("args", ["--b"])


def test_delete_from_primitive_list_never_adds_the_list() -> None:
    assert merge({"metadata": {}}, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}) == {"metadata": {}}
    original = {"metadata": {"finalizers": None}}
    assert merge(original, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}) == original


def test_delete_from_primitive_list_and_additions_apply_in_patch_order() -> None:
    original = {"metadata": {"finalizers": ["a"]}}
    add_then_delete = {"metadata": {"finalizers": ["b"], "$deleteFromPrimitiveList/finalizers": ["b"]}}
    delete_then_add = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"], "finalizers": ["b"]}}
    assert merge(original, add_then_delete) == {"metadata": {"finalizers": ["a"]}}
    assert merge(original, delete_then_add) == {"metadata": {"finalizers": ["b", "a"]}}


@pytest.mark.parametrize("value", [[{"name": "a"}], [None], [["a"]], "a", None])
def test_delete_from_primitive_list_needs_a_list_of_scalars(value: Json) -> None:
    e = fails(
        {"metadata": {"finalizers": ["a"]}},
        {"metadata": {"$deleteFromPrimitiveList/finalizers": value}},
    )
    assert e.path.startswith("metadata.$deleteFromPrimitiveList/finalizers")


def test_delete_from_primitive_list_of_an_object_field_is_an_error() -> None:
    e = fails({}, {"metadata": {"$deleteFromPrimitiveList/labels": ["a"]}})
    assert e.path == "metadata.$deleteFromPrimitiveList/labels" and "not a list" in e.message


# --- $setElementOrder --------------------------------------------------------------------


def test_set_element_order_reorders_a_merge_list() -> None:
    original = spec(containers=[container("a"), container("b"), container("c")])
    patch = spec(**{"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}]})
    assert merge(original, patch) == spec(containers=[container("c"), container("a"), container("b")])


def test_set_element_order_places_patch_elements_and_keeps_the_rest() -> None:
    original = spec(containers=[container("a", image="1"), container("b", image="2")])
    patch = spec(
        **{
            "$setElementOrder/containers": [
                {"name": "d"},
                {"name": "a"},
                {"name": "b"},
                {"name": "c"},
            ]
        },
        containers=[container("d"), container("c")],
    )
    assert merge(original, patch)["spec"]["containers"] == [
        container("d"),
        container("a", image="1"),
        container("b", image="2"),
        container("c"),
    ]


def test_set_element_order_of_a_primitive_list() -> None:
    original = {"metadata": {"finalizers": ["a", "b", "c"]}}
    assert merge(original, {"metadata": {"$setElementOrder/finalizers": ["c", "b", "a"]}}) == {
        "metadata": {"finalizers": ["c", "b", "a"]}
    }


def test_set_element_order_with_a_list_the_original_lacks() -> None:
    patch = spec(
        **{"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]},
        containers=[container("b"), container("a"), {"name": "z", "$patch": "delete"}],
    )
    assert merge({"spec": {}}, patch) == spec(containers=[container("b"), container("a")])


def test_set_element_order_with_a_replace_element() -> None:
    original = spec(containers=[container("a"), container("b")])
    patch = spec(
        **{"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "d"}]},
        containers=[{"$patch": "replace"}, container("c"), container("d")],
    )
    assert merge(original, patch) == spec(containers=[container("c"), container("d")])


def test_set_element_order_entries_need_the_merge_key() -> None:
    e = fails(spec(containers=[container("a")]), spec(**{"$setElementOrder/containers": [{"image": "x"}]}))
    assert e.path == "spec.$setElementOrder/containers" and "merge key 'name'" in e.message


def test_set_element_order_for_a_list_nobody_has_is_ignored() -> None:
    assert merge({"spec": {}}, spec(**{"$setElementOrder/containers": [{"name": "a"}]})) == {"spec": {}}


def test_set_element_order_that_contradicts_the_patch_list_is_an_error() -> None:
    original = spec(containers=[container("a"), container("b")])
    patch = spec(
        **{"$setElementOrder/containers": [{"name": "a"}, {"name": "b"}]},
        containers=[container("b"), container("a")],
    )
    e = fails(original, patch)
    assert e.path == "spec.$setElementOrder/containers" and "doesn't match" in e.message


@pytest.mark.parametrize(
    ("original", "patch", "path"),
    [
        (
            spec(containers="x"),
            spec(**{"$setElementOrder/containers": []}),
            "spec.$setElementOrder/containers",
        ),
        (
            spec(containers=[]),
            spec(**{"$setElementOrder/containers": "x"}),
            "spec.$setElementOrder/containers",
        ),
        ({}, spec(**{"$setElementOrder/affinity": []}), "spec.$setElementOrder/affinity"),
        (
            spec(containers=[]),
            spec(**{"$setElementOrder/containers": []}),
            "spec.$setElementOrder/containers",
        ),
        (
            spec(containers=[container("a")]),
            spec(**{"$setElementOrder/containers": ["a"]}),
            "spec.$setElementOrder/containers",
        ),
        (
            spec(containers=[container("a")]),
            spec(**{"$setElementOrder/containers": [{"name": "a"}]}, containers=["a"]),
            "spec.containers[0]",
        ),
        (
            spec(tolerations=[{"key": "a"}]),
            spec(**{"$setElementOrder/tolerations": [{"key": "a"}]}),
            "spec.$setElementOrder/tolerations",
        ),
    ],
)
def test_malformed_set_element_order(original: dict[str, Json], patch: dict[str, Json], path: str) -> None:
    assert fails(original, patch).path == path


def test_set_element_order_needs_the_patch_list_to_be_a_list() -> None:
    original = {"spec": {"x": [1]}}
    e = fails(original, spec(**{"$setElementOrder/x": [1]}, x={"a": 1}), schema=None)
    assert e.path == "spec.x" and "must be a list" in e.message


def test_set_element_order_checks_patch_elements_are_objects() -> None:
    described = obj({"l": merge_by("k", obj())})
    patch = {"$setElementOrder/l": [{"k": 1}], "l": [{"k": 1}, 2]}
    assert fails({"l": [{"k": 1}]}, patch, schema=described).path == "l[1]"
    undescribed = obj({"l": ListSchema(merge=True, merge_key="k")})
    assert fails({"l": [{"k": 1}]}, patch, schema=undescribed).path == "$setElementOrder/l[1]"


# --- $retainKeys -------------------------------------------------------------------------


def test_retain_keys_clears_fields_not_listed() -> None:
    original = spec(volumes=[{"name": "data", "emptyDir": {}}])
    patch = spec(volumes=[{"name": "data", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/x"}}])
    assert merge(original, patch) == spec(volumes=[{"name": "data", "hostPath": {"path": "/x"}}])


def test_retain_keys_rejects_patch_fields_it_does_not_list() -> None:
    patch = {"metadata": {"$retainKeys": ["labels"], "annotations": {"a": "b"}, "name": None}}
    e = fails({"metadata": {}}, patch)
    assert e.path == "metadata.annotations" and "$retainKeys" in e.message


def test_retain_keys_ignores_nulls_and_parallel_lists() -> None:
    original = {"metadata": {"finalizers": ["a", "b"], "name": "n", "labels": {"x": "1"}}}
    patch = {
        "metadata": {
            "$retainKeys": ["finalizers"],
            "labels": None,
            "$deleteFromPrimitiveList/finalizers": ["a"],
            "$setElementOrder/finalizers": ["b"],
        }
    }
    assert merge(original, patch) == {"metadata": {"finalizers": ["b"]}}


@pytest.mark.parametrize("value", ["name", [1], None])
def test_retain_keys_must_be_a_list_of_names(value: Json) -> None:
    assert fails({}, {"metadata": {"$retainKeys": value}}).path == "metadata.$retainKeys"


# --- shape and other errors --------------------------------------------------------------


@pytest.mark.parametrize(
    ("patch", "path", "fragment"),
    [
        (spec(containers={"name": "main"}), "spec.containers", "expected a list, got an object"),
        (spec(affinity="zone-a"), "spec.affinity", "expected an object, got a string"),
        (
            spec(containers=[container("main", ports={"containerPort": 80})]),
            "spec.containers[0].ports",
            "a list",
        ),
        (
            {"metadata": {"finalizers": [{"name": "a"}]}},
            "metadata.finalizers[0]",
            "expected a scalar",
        ),
        ({"metadata": {"labels": {"a": ["b"]}}}, "metadata.labels.a", "expected a scalar"),
        (spec(containers=["main"]), "spec.containers[0]", "expected an object, got a string"),
        (spec(nodeSelector=5), "spec.nodeSelector", "got a number"),
        (spec(tolerations=True), "spec.tolerations", "got a boolean"),
    ],
)
def test_shape_errors_name_the_field(patch: dict[str, Json], path: str, fragment: str) -> None:
    e = fails(spec(containers=[container("main")]), patch)
    assert (e.path, fragment in e.message) == (path, True)
    assert str(e) == f"{path}: {e.message}"


@pytest.mark.parametrize(
    ("original", "patch", "path", "fragment"),
    [
        (
            _containers("ports", [{"containerPort": 1}]),
            _containers("ports", [{"name": "x"}]),
            "spec.containers[0].ports[0]",
            "merge key",
        ),
        (
            spec(containers=[container("a")]),
            spec(containers=[{"name": {"x": 1}}]),
            "spec.containers[0].name",
            "scalar",
        ),
        (
            spec(containers=[{"name": ["a"]}]),
            spec(containers=[container("a")]),
            "spec.containers",
            "scalar",
        ),
        (spec(containers=["a"]), spec(containers=[]), "spec.containers", "objects"),
        (
            spec(containers=[[1]]),
            spec(containers=[container("a")]),
            "spec.containers",
            "lists of lists",
        ),
        (spec(containers=[None]), spec(containers=[container("a")]), "spec.containers", "null"),
        (
            spec(containers=[container("a"), 1]),
            spec(containers=[container("a")]),
            "spec.containers",
            "one type",
        ),
        (
            spec(containers=[{"image": "x"}]),
            spec(containers=[container("a")]),
            "spec.containers",
            "merge key",
        ),
        (
            {"metadata": {"finalizers": ["a", 1]}},
            {"metadata": {"finalizers": ["b"]}},
            "metadata.finalizers",
            "one type",
        ),
        (
            {"metadata": {"finalizers": ["a"]}},
            {"metadata": {"finalizers": [1.5]}},
            "metadata.finalizers",
            "one type",
        ),
    ],
)
def test_merge_errors_name_the_list(
    original: dict[str, Json], patch: dict[str, Json], path: str, fragment: str
) -> None:
    e = fails(original, patch)
    assert e.path == path and fragment in e.message


def test_an_empty_patch_list_leaves_a_merge_list_alone() -> None:
    original = spec(containers=[container("a"), container("b")])
    assert merge(original, spec(containers=[])) == original


def test_merging_objects_needs_a_merge_key() -> None:
    schema = obj({"l": ListSchema(merge=True)})
    e = fails({"l": [{"a": 1}]}, {"l": [{"a": 2}]}, schema=schema)
    assert e.path == "l" and "without a merge key" in e.message


@pytest.mark.parametrize(
    ("patch", "path", "fragment"),
    [
        ({"spec": {1: "x"}}, "spec", "keys must be strings"),
        (spec(hostname={1, 2}), "spec.hostname", "a set is not a JSON value"),
        ({"metadata": {"$foo": 1}}, "metadata.$foo", "unknown directive"),
        ({"metadata": {"$setElementOrder": []}}, "metadata.$setElementOrder", "unknown directive"),
        (
            {"metadata": {"$deleteFromPrimitiveList/": []}},
            "metadata.$deleteFromPrimitiveList/",
            "unknown directive",
        ),
        (
            {"metadata": {"$setElementOrder/finalizers": [object()]}},
            "metadata.$setElementOrder/finalizers[0]",
            "JSON",
        ),
    ],
)
def test_malformed_patches(patch: dict[Any, Json], path: str, fragment: str) -> None:
    e = fails({}, patch)
    assert e.path == path and fragment in e.message


def test_inputs_that_are_not_json_objects() -> None:
    assert "the original must be an object" in fails([], {}).message  # type: ignore[arg-type]
    assert "a patch must be an object" in fails({}, [1]).message  # type: ignore[arg-type]
    e = fails({"spec": {"x": b"raw"}}, {})
    assert e.path == "" and "spec.x" in e.message and "a bytes" in e.message
    assert "keys must be strings" in fails({"spec": {2: 1}}, {}).message


def test_tuples_are_accepted_as_lists() -> None:
    out = merge({"metadata": {"finalizers": ("a",)}}, {"metadata": {"finalizers": ("b",)}})
    assert out == {"metadata": {"finalizers": ["b", "a"]}}


def test_errors_are_value_errors() -> None:
    assert issubclass(PatchError, ValueError)
    assert str(PatchError("whole patch")) == "whole patch"


# --- fields outside the table ------------------------------------------------------------


def test_unknown_fields_merge_as_plain_json() -> None:
    original = spec(future={"a": 1, "list": [{"name": "x", "v": 1}]}, containers=[container("m", future=[1, 2])])
    patch = spec(future={"b": 2, "list": [{"name": "x", "w": 2}]}, containers=[container("m", future=[3])])
    assert merge(original, patch) == spec(
        future={"a": 1, "b": 2, "list": [{"name": "x", "w": 2}]},
        containers=[container("m", future=[3])],
    )


def test_no_schema_means_plain_json_everywhere() -> None:
    original = spec(containers=[container("a")])
    assert merge(original, spec(containers=[container("b")]), schema=None) == spec(containers=[container("b")])


# --- apimachinery's own test cases, restated as data (patch_test.go, apply half) -------------

# Upstream keeps these as YAML too; keys and values are exactly those of its test data.
UPSTREAM: list[dict[str, Any]] = yaml.safe_load(
    """
- description: unique scalars when merging lists
  original:
    mergingIntList: [1, 2]
  patch:
    mergingIntList: [2, 3]
  result:
    mergingIntList: [1, 2, 3]
- description: delete map from nested map
  original:
    simpleMap: {key1: 1, key2: 1}
  patch:
    simpleMap: {$patch: delete}
  result:
    simpleMap: {}
- description: delete all items from merging list
  original:
    mergingList:
    - {name: 1}
    - {name: 2}
  patch:
    mergingList:
    - {$patch: replace}
  result:
    mergingList: []
- description: merge empty merging lists
  original:
    mergingList: []
  patch:
    mergingList: []
  result:
    mergingList: []
- description: delete all keys from map
  original: {name: 1, value: 1}
  patch: {$patch: replace}
  result: {}
- description: add key and delete all keys from map
  original: {name: 1, value: 1}
  patch: {other: a, $patch: replace}
  result: {other: a}
- description: delete all duplicate entries in a merging list
  original:
    mergingList:
    - {name: 1}
    - {name: 1}
    - {name: 2, value: a}
    - {name: 3}
    - {name: 3}
  patch:
    mergingList:
    - {name: 1, $patch: delete}
    - {name: 3, $patch: delete}
  result:
    mergingList:
    - {name: 2, value: a}
- description: retainKeys map can add a field when no retainKeys directive present
  original:
    retainKeysMap: {name: foo}
  patch:
    retainKeysMap: {value: bar}
  result:
    retainKeysMap: {name: foo, value: bar}
- description: retainKeys map can delete a field when no retainKeys directive present
  original:
    retainKeysMap: {name: foo, value: a}
  patch:
    retainKeysMap: {value: null}
  result:
    retainKeysMap: {name: foo}
- description: retainKeys map merge an empty map
  original:
    retainKeysMap: {name: foo, value: a}
  patch:
    retainKeysMap: {}
  result:
    retainKeysMap: {name: foo, value: a}
- description: retainKeys list can change a field when no retainKeys directive present
  original:
    retainKeysMergingList:
    - {name: bar}
    - {name: foo, value: a}
  patch:
    retainKeysMergingList:
    - {name: foo, value: b}
  result:
    retainKeysMergingList:
    - {name: bar}
    - {name: foo, value: b}
- description: preserve the order from the patch in a merging list
  original:
    mergingList:
    - {name: 1}
    - {name: 2, value: b}
    - {name: 3}
  patch:
    mergingList:
    - {name: 3, value: c}
    - {name: 1, value: a}
    - {name: 2, other: x}
  result:
    mergingList:
    - {name: 3, value: c}
    - {name: 1, value: a}
    - {name: 2, value: b, other: x}
- description: preserve the order from the patch in a merging list 2
  original:
    mergingList:
    - {name: 1}
    - {name: 2, value: b}
    - {name: 3}
  patch:
    mergingList:
    - {name: 3, value: c}
    - {name: 1, value: a}
  result:
    mergingList:
    - {name: 2, value: b}
    - {name: 3, value: c}
    - {name: 1, value: a}
- description: preserve the order from the patch in a merging int list
  original:
    mergingIntList: [1, 2, 3]
  patch:
    mergingIntList: [3, 1, 2]
  result:
    mergingIntList: [3, 1, 2]
- description: preserve the order from the patch in a merging int list 2
  original:
    mergingIntList: [1, 2, 3]
  patch:
    mergingIntList: [3, 1]
  result:
    mergingIntList: [2, 3, 1]
- description: $setElementOrder contains item that is not present in the list to be merged
  original:
    mergingList:
    - {name: 1}
    - {name: 3}
  patch:
    $setElementOrder/mergingList:
    - {name: 3}
    - {name: 2}
    - {name: 1}
    mergingList:
    - {name: 3, value: 3}
    - {name: 1, value: 1}
  result:
    mergingList:
    - {name: 3, value: 3}
    - {name: 1, value: 1}
- description: $setElementOrder contains item that is not present in the int list to be merged
  original:
    mergingIntList: [1, 3]
  patch:
    $setElementOrder/mergingIntList: [3, 2, 1]
  result:
    mergingIntList: [3, 1]
- description: >-
    $deleteFromPrimitiveList of nonexistent item in primitive list should not add the item to
    the list
  original:
    mergingIntList: [1, 2]
  patch:
    $deleteFromPrimitiveList/mergingIntList: [3]
  result:
    mergingIntList: [1, 2]
- description: $deleteFromPrimitiveList on empty primitive list should not add the item to the list
  original: {mergingIntList: null}
  patch:
    $deleteFromPrimitiveList/mergingIntList: [3]
  result: {mergingIntList: null}
- description: $deleteFromPrimitiveList on nonexistent primitive list should not add the primitive
    list
  original:
    foo: [bar]
  patch:
    $deleteFromPrimitiveList/mergingIntList: [3]
  result:
    foo: [bar]
- description: $deleteFromPrimitiveList should delete item from a list without merge patch strategy
  original:
    nonMergingIntList: [1, 2, 3]
  patch:
    $deleteFromPrimitiveList/nonMergingIntList: [2]
  result:
    nonMergingIntList: [1, 3]
- description: add field and delete field from map
  original: {name: 1}
  patch: {name: null, value: 1}
  result: {value: 1}
- description: defined null values should propagate overwrite current fields
  original: {name: 2}
  patch: {name: 1, value: 1, other: null}
  result: {name: 1, value: 1}
- description: replace list of scalars
  original:
    nonMergingIntList: [1, 2]
  patch:
    nonMergingIntList: [2, 3]
  result:
    nonMergingIntList: [2, 3]
- description: nested patch merge with empty list (two-way)
  original: {name: hi}
  patch:
    mergingList:
    - {name: hello}
    - {$patch: delete, name: doesntexist}
  result:
    name: hi
    mergingList:
    - {name: hello}
- description: nested patch merge with empty list (three-way)
  original:
    name: hi
    mergingList:
    - {name: hello2}
  patch:
    $setElementOrder/mergingList:
    - {name: hello}
    - {name: doesntexist}
    mergingList:
    - {name: hello}
    - {$patch: delete, name: doesntexist}
  result:
    name: hi
    mergingList:
    - {name: hello}
    - {name: hello2}
- description: delete all duplicate items in lists of scalars
  original:
    mergingIntList: [1, 2, 3, 3, 4]
  patch:
    $setElementOrder/mergingIntList: [1, 2]
    $deleteFromPrimitiveList/mergingIntList: [3]
  result:
    mergingIntList: [1, 2, 4]
- description: add and delete items in lists of scalars
  original:
    mergingIntList: [1, 2, 3]
  patch:
    $setElementOrder/mergingIntList: [1, 2, 4]
    $deleteFromPrimitiveList/mergingIntList: [3]
    mergingIntList: [4]
  result:
    mergingIntList: [1, 2, 4]
- description: merge lists of maps (three-way)
  original:
    mergingList:
    - {name: 1, other: a}
    - {name: 2, value: 2, other: b}
  patch:
    $setElementOrder/mergingList:
    - {name: 4}
    - {name: 1}
    - {name: 2}
    - {name: 3}
    mergingList:
    - {name: 4, value: 4}
    - {name: 3, value: 3}
  result:
    mergingList:
    - {name: 4, value: 4}
    - {name: 1, other: a}
    - {name: 2, value: 2, other: b}
    - {name: 3, value: 3}
- description: add field to map in merging list with conflict (three-way)
  original:
    mergingList:
    - {name: 1, other: a}
    - {name: 3, value: 2, other: b}
  patch:
    $setElementOrder/mergingList:
    - {name: 1}
    - {name: 2}
    mergingList:
    - {name: 1, value: 1}
    - {name: 2, value: 2}
  result:
    mergingList:
    - {name: 1, other: a, value: 1}
    - {name: 2, value: 2}
    - {name: 3, value: 2, other: b}
- description: delete missing map from merging list with conflict (three-way)
  original:
    mergingList:
    - {name: 3, other: a}
  patch:
    $setElementOrder/mergingList:
    - {name: 2}
    mergingList:
    - {name: 2}
    - {name: 1, $patch: delete}
  result:
    mergingList:
    - {name: 2}
    - {name: 3, other: a}
- description: add map and delete map from merging list (two-way)
  original:
    mergingList:
    - {name: 1}
    - {name: 2}
  patch:
    $setElementOrder/mergingList:
    - {name: 2}
    - {name: 3}
    mergingList:
    - {name: 3}
    - {name: 1, $patch: delete}
  result:
    mergingList:
    - {name: 2}
    - {name: 3}
- description: replace non merging list nested in merging list
  original:
    mergingList:
    - name: 1
      other: a
      nonMergingList:
      - {name: 1}
      - {name: 2, value: 2}
    - {name: 2}
  patch:
    $setElementOrder/mergingList:
    - {name: 1}
    - {name: 2}
    mergingList:
    - name: 1
      nonMergingList:
      - {name: 1, value: 1}
  result:
    mergingList:
    - name: 1
      other: a
      nonMergingList:
      - {name: 1, value: 1}
    - {name: 2}
- description: retainKeys map adds an item in nested merging int list
  original:
    retainKeysMap:
      name: foo
      mergingIntList: [1, 2, 3]
  patch:
    retainKeysMap:
      $setElementOrder/mergingIntList: [1, 2, 4]
      $retainKeys: [mergingIntList, name]
      mergingIntList: [4]
  result:
    retainKeysMap:
      name: foo
      mergingIntList: [1, 2, 4, 3]
- description: retainKeys map adds an item and deletes an item in nested merging int list
  original:
    retainKeysMap:
      name: foo
      mergingIntList: [1, 2, 3, 4]
  patch:
    retainKeysMap:
      $retainKeys: [mergingIntList, name]
      mergingIntList: [5]
      $deleteFromPrimitiveList/mergingIntList: [2]
      $setElementOrder/mergingIntList: [1, 3, 5]
  result:
    retainKeysMap:
      name: foo
      mergingIntList: [1, 3, 5, 4]
- description: retainKeys map deletes nested non-merging list
  original:
    retainKeysMap:
      name: foo
      nonMergingList:
      - {name: a}
      - {name: b}
  patch:
    retainKeysMap:
      $retainKeys: [name, value]
      value: bar
      nonMergingList: null
  result:
    retainKeysMap: {name: foo, value: bar}
- description: retainKeys map deletes an item in nested merging list
  original:
    retainKeysMap:
      name: foo
      mergingList:
      - {name: a}
      - {name: b}
      - {name: x}
  patch:
    retainKeysMap:
      $retainKeys: [mergingList, name]
      $setElementOrder/mergingList:
      - {name: a}
      mergingList:
      - {name: b, $patch: delete}
  result:
    retainKeysMap:
      name: foo
      mergingList:
      - {name: a}
      - {name: x}
- description: retainKeys list of maps clears a field
  original:
    retainKeysMergingList:
    - {name: bar}
    - {name: foo, value: a, other: x}
  patch:
    $setElementOrder/retainKeysMergingList:
    - {name: bar}
    - {name: foo}
    retainKeysMergingList:
    - $retainKeys: [name, value]
      name: foo
  result:
    retainKeysMergingList:
    - {name: bar}
    - {name: foo, value: a}
- description: discard nulls in nested and adds not nulls
  original: {name: foo}
  patch:
    complex_nullable:
      key: {keynotnull: value, keynull: null}
  result:
    name: foo
    complex_nullable:
      key: {keynotnull: value}
- description: discard if modified all nulls
  original: {}
  patch:
    complex: {nested: null}
  result:
    complex: {}
- description: null values in original are preserved
  original: {thing: null}
  patch:
    nested: {value: 5}
  result:
    thing: null
    nested: {value: 5}
- description: filter nulls from nested slices
  original: {}
  patch:
    complex_nullable:
    - inner_one: {key_one: foo, key_two: null}
  result:
    complex_nullable:
    - inner_one: {key_one: foo}
- description: not filter nulls from non-associative slice
  original: {}
  patch:
    complex_nullable: [key1, null, key2]
  result:
    complex_nullable: [key1, null, key2]
"""
)


@pytest.mark.parametrize(
    ("original", "patch", "expected"),
    [pytest.param(c["original"], c["patch"], c["result"], id=c["description"]) for c in UPSTREAM],
)
def test_upstream_cases(original: dict[str, Json], patch: dict[str, Json], expected: dict[str, Json]) -> None:
    assert merge(original, patch, schema=MERGE_ITEM) == expected


@pytest.mark.parametrize(
    ("original", "patch", "expected", "upstream"),
    [
        pytest.param(
            {"mergingList": [{"name": 1}, {"name": 2, "other": "b"}, {"name": 4, "other": "c"}]},
            {
                "$setElementOrder/mergingList": [{"name": 2}, {"name": 3}],
                "mergingList": [{"name": 3}, {"name": 1, "$patch": "delete"}],
            },
            [2, 3, 4],
            [2, 4, 3],
            id="add map and delete map from merging list (three-way)",
        ),
        pytest.param(
            {"mergingList": [{"name": 1, "other": "a"}, {"name": 4, "other": "c"}]},
            {
                "$setElementOrder/mergingList": [{"name": 2}, {"name": 3}],
                "mergingList": [{"name": 2}, {"name": 3}, {"name": 1, "$patch": "delete"}],
            },
            [2, 3, 4],
            [4, 2, 3],
            id="add map and delete map from merging list with conflict (three-way)",
        ),
    ],
)
def test_set_element_order_with_deletions_ranks_by_the_list_before_the_patch(
    original: dict[str, Json], patch: dict[str, Json], expected: list[int], upstream: list[int]
) -> None:
    # Upstream's expected order comes from reading a Go slice that its own deletion shifted
    # in place; ours ranks by the original list, which is the documented deviation.
    names = [e["name"] for e in merge(original, patch, schema=MERGE_ITEM)["mergingList"]]
    assert names == expected != upstream


# --- quirks kept on purpose ----------------------------------------------------------------


def test_elements_appended_to_a_merge_list_are_taken_verbatim() -> None:
    original = spec(containers=[container("main")])
    new = container("sidecar", resources=None, env=[{"name": "X", "$patch": "delete"}])
    assert merge(original, spec(containers=[new]))["spec"]["containers"][0] == new


def test_patch_directives_in_original_elements_are_sorted_last() -> None:
    original = spec(containers=[{"name": "a", "$patch": "delete"}, container("b")])
    assert merge(original, spec(containers=[]))["spec"]["containers"] == [
        container("b"),
        {"name": "a", "$patch": "delete"},
    ]


# --- properties ----------------------------------------------------------------------------

_KEYS = st.sampled_from(["a", "b", "c", "name", "spec", "x"])
_SCALARS = (
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2, allow_nan=False) | st.text("xyz", max_size=2)
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=12,
)
_DOCS = st.dictionaries(_KEYS, _JSON, max_size=4)
# A merge patch for RFC 7386 comparison: nulls only as map values, lists of plain scalars.
_LIST_OF_SCALARS = st.lists(st.booleans() | st.integers(-3, 3) | st.text("xyz", max_size=2), max_size=3)
_MERGE_PATCHES = st.recursive(
    _SCALARS | _LIST_OF_SCALARS,
    lambda inner: st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=10,
).filter(lambda p: isinstance(p, dict))


def rfc7386(target: Json, patch: Json) -> Json:
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = rfc7386(out.get(k), v)
    return out


@given(_DOCS)
def test_empty_patch_is_identity(doc: dict[str, Json]) -> None:
    assert merge(doc, {}) == doc
    assert merge(doc, {}, schema=None) == doc


@given(_DOCS, _MERGE_PATCHES)
def test_without_a_schema_it_is_json_merge_patch(doc: dict[str, Json], patch: dict[str, Json]) -> None:
    assert merge(doc, patch, schema=None) == rfc7386(doc, patch)


_DIRECTIVE_JSON = st.recursive(
    _SCALARS | st.sampled_from(["replace", "delete"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "containers",
                    "env",
                    "finalizers",
                    "$patch",
                    "$retainKeys",
                    "spec",
                    "metadata",
                ]
            ),
            inner,
            max_size=3,
        )
    ),
    max_leaves=12,
)


@given(
    _DOCS | st.builds(lambda d: {"spec": d}, _DOCS),
    st.dictionaries(st.sampled_from(["spec", "metadata", "$patch"]), _DIRECTIVE_JSON, max_size=2),
)
@settings(max_examples=300)
def test_never_mutates_and_only_raises_patch_errors(doc: dict[str, Json], patch: dict[str, Json]) -> None:
    before = copy.deepcopy((doc, patch))
    with contextlib.suppress(PatchError):
        strategic_merge(doc, patch)
    assert (doc, patch) == before


_NAMES = st.sampled_from(["a", "b", "c", "d"])


def _unique_by(key: str, element: st.SearchStrategy[dict[str, Json]]) -> st.SearchStrategy[list[dict[str, Json]]]:
    return st.lists(element, max_size=3, unique_by=lambda e: e[key])


def _optional(**fields: st.SearchStrategy[Json]) -> st.SearchStrategy[dict[str, Json]]:
    return st.fixed_dictionaries({}, optional=fields)


_CONTAINERS = _unique_by(
    "name",
    st.builds(
        lambda name, rest: {"name": name, **rest},
        _NAMES,
        _optional(
            image=st.text("ab:1", min_size=1, max_size=3),
            args=st.lists(st.text("ab", max_size=2), max_size=2),
            env=_unique_by(
                "name",
                st.builds(
                    lambda n, v: {"name": n, "value": v},
                    st.sampled_from("XYZ"),
                    st.text("uv", max_size=2),
                ),
            ),
            ports=_unique_by(
                "containerPort",
                st.builds(lambda p: {"containerPort": p}, st.sampled_from([80, 443, 8080])),
            ),
            resources=_optional(
                limits=st.dictionaries(st.sampled_from(["cpu", "memory"]), st.sampled_from(["1", "2"]), max_size=2)
            ),
        ),
    ),
)
_TEMPLATES = st.fixed_dictionaries(
    {},
    optional={
        "metadata": _optional(
            labels=st.dictionaries(st.sampled_from(["app", "tier"]), st.text("ab", max_size=2), max_size=2),
            finalizers=st.lists(st.sampled_from(["f1", "f2", "f3"]), unique=True, max_size=3),
        ),
        "spec": _optional(
            containers=_CONTAINERS,
            initContainers=_CONTAINERS,
            tolerations=st.lists(st.builds(lambda k: {"key": k}, st.sampled_from("pq")), max_size=2),
            hostname=st.text("h", max_size=2),
        ),
    },
)


@given(_TEMPLATES)
def test_patching_with_the_original_itself_is_identity(template: dict[str, Json]) -> None:
    assert merge(template, template) == template


@given(_TEMPLATES, _TEMPLATES, st.booleans())
def test_applying_a_patch_twice_equals_applying_it_once(
    template: dict[str, Json], patch: dict[str, Json], drop_hostname: bool
) -> None:
    if drop_hostname:
        patch = {**patch, "spec": {**patch.get("spec", {}), "hostname": None}}
    once = merge(template, patch)
    assert merge(once, patch) == once


@given(_TEMPLATES, _TEMPLATES)
def test_merged_containers_are_the_union_of_names(template: dict[str, Json], patch: dict[str, Json]) -> None:
    names = [c["name"] for c in merge(template, patch).get("spec", {}).get("containers", [])]
    before = {c["name"] for c in template.get("spec", {}).get("containers", [])}
    added = [c["name"] for c in patch.get("spec", {}).get("containers", [])]
    assert sorted(names) == sorted(before | set(added))
    assert [n for n in names if n in added] == added


@given(_TEMPLATES, _TEMPLATES)
def test_a_merge_list_merges_element_by_element(template: dict[str, Json], patch: dict[str, Json]) -> None:
    """Each container of the result is its original merged with its patch element alone."""
    merged = {c["name"]: c for c in merge(template, patch).get("spec", {}).get("containers", [])}
    for c in patch.get("spec", {}).get("containers", []):
        mine = [o for o in template.get("spec", {}).get("containers", []) if o["name"] == c["name"]]
        alone = merge(spec(containers=mine), spec(containers=[c]))["spec"]["containers"]
        assert alone == [merged[c["name"]]]


@given(_CONTAINERS, st.lists(_NAMES, max_size=4))
def test_deleted_elements_are_exactly_the_named_ones(containers: list[dict[str, Json]], doomed: list[str]) -> None:
    patch = spec(containers=[{"name": n, "$patch": "delete"} for n in doomed])
    left = merge(spec(containers=containers), patch)["spec"]["containers"]
    assert left == [c for c in containers if c["name"] not in doomed]


def test_an_element_whose_null_key_was_deleted_takes_no_further_merges() -> None:
    """``name: null`` deletes the key of the element it merges into; a later element with a
    null key is then appended (as apimachinery's scan would), and the list has an element
    without its merge key."""
    later = {
        "name": None,
        "env": [{"name": "b"}, {"name": "a"}],
        "$setElementOrder/env": [{"name": "a"}, {"name": "b"}],
    }
    e = fails(spec(containers=[{"name": None}]), spec(containers=[{"name": None}, later]))
    assert (e.path, e.message) == ("spec.containers", "every element needs the merge key 'name'")


# --- cost: a subset patch is user input, merged on the controller's event loop ----------


def operations(original: dict[str, Json], patch: dict[str, Json]) -> int:
    """Function calls (Python and C) one merge makes: a deterministic measure of its work."""
    with Operations() as calls, contextlib.suppress(PatchError):
        strategic_merge(original, patch)
    return calls.count


def _many(n: int) -> list[str]:
    return [f"n{i}" for i in range(n)]


GROWING: dict[str, Callable[[int], tuple[dict[str, Json], dict[str, Json]]]] = {
    "new elements appended": lambda n: (
        spec(containers=[container("main")]),
        spec(containers=[container(x) for x in _many(n)]),
    ),
    "every element merged": lambda n: (
        spec(containers=[container(x, image="a") for x in _many(n)]),
        spec(containers=[container(x, image="b") for x in reversed(_many(n))]),
    ),
    "nested env merged": lambda n: (
        spec(containers=[container("main", env=[{"name": x, "value": "1"} for x in _many(n)])]),
        spec(containers=[container("main", env=[{"name": x, "value": "2"} for x in _many(n)])]),
    ),
    "elements deleted": lambda n: (
        spec(containers=[container(x) for x in _many(2 * n)]),
        spec(containers=[{"name": x, "$patch": "delete"} for x in _many(n)]),
    ),
    "element order set": lambda n: (
        spec(containers=[container(x) for x in _many(n)]),
        {
            "spec": {
                "$setElementOrder/containers": [{"name": x} for x in reversed(_many(n))],
                "containers": [container(x, image="b") for x in _many(n)[::2]][::-1],
            }
        },
    ),
    "primitive set merged": lambda n: (
        {"metadata": {"finalizers": _many(n)}},
        {"metadata": {"finalizers": [f"m{i}" for i in range(n)]}},
    ),
    "primitives deleted": lambda n: (
        {"metadata": {"finalizers": _many(2 * n)}},
        {"metadata": {"$deleteFromPrimitiveList/finalizers": _many(n)}},
    ),
    "keys retained": lambda n: (
        {"spec": {"nodeSelector": dict.fromkeys(_many(n), "v")}},
        {"spec": {"nodeSelector": {"$retainKeys": _many(n), **dict.fromkeys(_many(n), "w")}}},
    ),
    "volumes retained": lambda n: (
        spec(volumes=[{"name": x, "emptyDir": {}} for x in _many(n)]),
        spec(volumes=[{"name": x, "$retainKeys": ["name", "hostPath"], "hostPath": {}} for x in _many(n)]),
    ),
}


@pytest.mark.parametrize("case", GROWING)
def test_doubling_the_input_doubles_the_work(case: str) -> None:
    """Linear, not O(n·m): twice the elements cost about twice the calls (quadratic would
    be four times). Counted, not timed, so a loaded machine cannot flake it."""
    small, large = (operations(*GROWING[case](n)) for n in (400, 800))
    assert large / small < 2.3, (small, large)


class _Counted(str):
    """A field name whose comparisons are counted: ``in`` on a list compares every element, a
    set compares only the one its hash finds."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        _Counted.compared += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def _retained_comparisons(n: int) -> int:
    names = [f"n{i}" for i in range(n)]
    patch = {"spec": {"nodeSelector": {"$retainKeys": [_Counted(x) for x in names], **dict.fromkeys(names, "w")}}}
    _Counted.compared = 0
    strategic_merge({"spec": {"nodeSelector": dict.fromkeys(names, "v")}}, patch)
    return _Counted.compared


def test_retained_keys_are_looked_up_not_scanned() -> None:
    """``$retainKeys`` membership must be a lookup: a list scan compares every listed name for
    every field (quadratic), a set one name per field (counted, not timed)."""
    small, large = _retained_comparisons(3000), _retained_comparisons(6000)
    assert 0 < small <= 2 * 3000 and large / small < 3, (small, large)
