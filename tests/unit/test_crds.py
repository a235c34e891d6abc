"""CRD and sample-manifest tests.

* the committed CRDs equal the output of ``scripts/gen_crds.py`` (one schema, two groups);
* the schemas are *structural* in the apiextensions.k8s.io/v1 sense (a lint that mirrors the API
  server's rules, plus the Kubernetes 1.20 limits: no CEL);
* both CRDs serve the same schema, subresources and printer columns;
* every sample in ``manifests/samples`` validates against the CRD of its apiVersion, loses no field
  to structural pruning, and follows OpenKruise's cross-field rules;
* structurally bad manifests are rejected, each on the expected field;
* the status schema holds exactly the fields the controller writes.

The schema is checked with ``jsonschema`` after translating the Kubernetes extensions
(``x-kubernetes-int-or-string`` -> ``anyOf: [integer, string]``, other ``x-`` keys dropped). The API
server's own behaviours that jsonschema does not model -- list-type map key uniqueness, pruning of
unknown fields, defaulting -- are simulated by small helpers below.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest
import yaml

from united import data
from united.api.crdrules import RULES, without_rules
from united.api.groups import KRUISE_GROUP, KRUISE_UD_CRD
from united.api.limits import MAX_REVISION_HISTORY, MAX_SUBSETS
from united.workloadspread.validation import MAX_SUBSET_NAME

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "crds"
SAMPLES_DIR = REPO / "manifests" / "samples"
GEN_SCRIPT = REPO / "scripts" / "gen_crds.py"

Obj = dict[str, Any]
Problem = tuple[str, str]  # (field path, failing rule)


# --------------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------------


def load_docs(path: Path) -> list[Obj]:
    with path.open(encoding="utf-8") as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc is not None]


def crd_paths() -> list[Path]:
    return sorted(CRD_DIR.rglob("*.yaml"))


@functools.cache
def _parsed_crds() -> tuple[Obj, ...]:
    docs = (doc for path in crd_paths() for doc in load_docs(path))
    return tuple(doc for doc in docs if doc["spec"]["names"]["kind"] == "UnitedDeployment")


def all_crds() -> list[Obj]:
    """The UnitedDeployment CRD documents in crds/ (parsed once; treat as read-only). The
    WorkloadSpread ones are tested in tests/unit/workloadspread/test_crds.py."""
    return list(_parsed_crds())


def crd_for_group(group: str) -> Obj:
    (found,) = [doc for doc in all_crds() if doc["spec"]["group"] == group]
    return found


UNSERVED = ("apps.kruise.io", "v1beta1")
"""Listed, as OpenKruise's releases list it, and served only on request (``united install
--kruise-v1beta1``): each served version costs every write on current API servers."""


def served_schema(api_version: str, kind: str) -> Obj:
    """The schema ``api_version`` is served with (once it is asked for, for :data:`UNSERVED`)."""
    group, _, version = api_version.rpartition("/")
    for crd in all_crds():
        if crd["spec"]["group"] != group or crd["spec"]["names"]["kind"] != kind:
            continue
        for entry in crd["spec"]["versions"]:
            if entry["name"] == version and (entry["served"] or (group, version) == UNSERVED):
                schema: Obj = entry["schema"]["openAPIV3Schema"]
                return schema
    raise LookupError(f"no CRD in crds/ serves {kind} {api_version}")


def united_schema() -> Obj:
    return served_schema("apps.united.io/v1alpha1", "UnitedDeployment")


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_crds", GEN_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sample_paths() -> list[Path]:
    return sorted(SAMPLES_DIR.rglob("*.yaml"))


def ud_sample_paths() -> list[Path]:
    return [path for path in sample_paths() if path.parent == SAMPLES_DIR]


def ud_docs(path: Path) -> list[Obj]:
    return [doc for doc in load_docs(path) if doc.get("kind") == "UnitedDeployment"]


# --------------------------------------------------------------------------------------------------
# Schema helpers: JSON Schema translation, validation, pruning and defaulting as the API server does
# --------------------------------------------------------------------------------------------------

_CHILD_SCHEMA_KEYS = ("items", "additionalProperties", "not")
_JUNCTORS = ("allOf", "anyOf", "oneOf")


def to_jsonschema(node: Obj) -> Obj:
    """Translate an OpenAPI v3 (Kubernetes flavour) schema node for the jsonschema validator."""
    out: Obj = {}
    for key, value in node.items():
        if key.startswith("x-kubernetes-") or key == "nullable":
            continue
        if key == "properties":
            out[key] = {name: to_jsonschema(child) for name, child in value.items()}
        elif key in _CHILD_SCHEMA_KEYS and isinstance(value, dict):
            out[key] = to_jsonschema(value)
        elif key in _JUNCTORS:
            out[key] = [to_jsonschema(child) for child in value]
        else:
            out[key] = value
    if node.get("x-kubernetes-int-or-string") and "anyOf" not in node:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    return out


def format_path(parts: Iterator[str | int] | list[str | int]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def schema_problems(obj: Obj, schema: Obj) -> list[Problem]:
    """jsonschema errors as (path, rule); a missing required field is reported at its own path."""
    validator = jsonschema.Draft7Validator(to_jsonschema(schema))
    problems: list[Problem] = []
    for error in validator.iter_errors(obj):
        path: list[str | int] = list(error.absolute_path)
        if error.validator == "required" and isinstance(error.instance, dict):
            for name in error.validator_value:
                if name not in error.instance:
                    problems.append((format_path([*path, name]), "required"))
            continue
        problems.append((format_path(path), str(error.validator)))
    return sorted(problems)


def list_key_problems(obj: Any, schema: Obj, path: list[str | int] | None = None) -> list[Problem]:
    """Duplicate keys in x-kubernetes-list-type map/set lists (the API server rejects them)."""
    path = path or []
    problems: list[Problem] = []
    if isinstance(obj, dict):
        for name, value in obj.items():
            if name in schema.get("properties", {}):
                problems += list_key_problems(value, schema["properties"][name], [*path, name])
            elif isinstance(schema.get("additionalProperties"), dict):
                problems += list_key_problems(value, schema["additionalProperties"], [*path, name])
    elif isinstance(obj, list) and "items" in schema:
        seen: set[str] = set()
        list_type = schema.get("x-kubernetes-list-type")
        for index, item in enumerate(obj):
            if list_type == "map" and isinstance(item, dict):
                key = repr([item.get(k) for k in schema["x-kubernetes-list-map-keys"]])
            elif list_type == "set":
                key = repr(item)
            else:
                key = None
            if key is not None:
                if key in seen:
                    problems.append((format_path([*path, index]), "duplicate"))
                seen.add(key)
            problems += list_key_problems(item, schema["items"], [*path, index])
    return problems


def api_server_problems(obj: Obj, schema: Obj) -> list[Problem]:
    return sorted(schema_problems(obj, schema) + list_key_problems(obj, schema))


def pruned_fields(obj: Any, schema: Obj, path: list[str | int] | None = None) -> list[str]:
    """Fields that structural pruning would silently drop from ``obj``."""
    path = path or []
    dropped: list[str] = []
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    if isinstance(obj, dict):
        properties: Obj = schema.get("properties", {})
        additional = schema.get("additionalProperties")
        for name, value in obj.items():
            here = [*path, name]
            if not path and name in ("apiVersion", "kind", "metadata"):
                continue  # the API server handles TypeMeta and ObjectMeta itself
            if name in properties:
                dropped += pruned_fields(value, properties[name], here)
            elif isinstance(additional, dict):
                dropped += pruned_fields(value, additional, here)
            elif not preserve:
                dropped.append(format_path(here))
    elif isinstance(obj, list) and "items" in schema:
        for index, item in enumerate(obj):
            dropped += pruned_fields(item, schema["items"], [*path, index])
    return dropped


def apply_defaults(obj: Any, schema: Obj) -> Any:
    """Structural defaulting: fill missing properties that declare a default (recursively)."""
    if isinstance(obj, dict):
        for name, child in schema.get("properties", {}).items():
            if name not in obj and "default" in child:
                obj[name] = copy.deepcopy(child["default"])
            if name in obj:
                apply_defaults(obj[name], child)
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            for value in obj.values():
                apply_defaults(value, additional)
    elif isinstance(obj, list) and "items" in schema:
        for item in obj:
            apply_defaults(item, schema["items"])
    return obj


# --------------------------------------------------------------------------------------------------
# Structural-schema lint (apiextensions.k8s.io/v1 rules + Kubernetes 1.20 limits)
# --------------------------------------------------------------------------------------------------

ALLOWED_KEYS = {
    # value validations and metadata that JSONSchemaProps (apiextensions v1) carries
    "description", "type", "format", "title", "default", "enum", "example", "nullable",
    "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "multipleOf",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems",
    "maxProperties", "minProperties", "required", "items", "properties", "additionalProperties",
    "allOf", "anyOf", "oneOf", "not",
    # Kubernetes extensions known to a 1.20 API server
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
}  # fmt: skip
TYPES = {"object", "array", "string", "integer", "number", "boolean"}
SCALAR_TYPES = {"string", "integer", "number", "boolean"}
FORMATS = {"int32", "int64", "float", "double", "byte", "date", "date-time", "duration", ""}
JUNCTOR_FORBIDDEN = {"description", "type", "default", "additionalProperties", "nullable"}
INT_OR_STRING_ANYOF = [{"type": "integer"}, {"type": "string"}]


def structural_problems(schema: Obj, path: str = "<root>") -> list[str]:
    """Why ``schema`` is not a structural schema the v1 API server would accept (empty: fine)."""
    problems: list[str] = []

    def walk(node: Any, where: str, in_junctor: bool, int_or_string_branch: bool = False) -> None:
        if not isinstance(node, dict):
            problems.append(f"{where}: schema must be an object, got {type(node).__name__}")
            return
        for key in node:
            if key not in ALLOWED_KEYS:
                problems.append(f"{where}: key {key!r} is not allowed")
        int_or_string = node.get("x-kubernetes-int-or-string")
        preserve = node.get("x-kubernetes-preserve-unknown-fields")
        for ext, value in (("int-or-string", int_or_string), ("preserve-unknown-fields", preserve)):
            if value is not None and value is not True:
                problems.append(f"{where}: x-kubernetes-{ext} must be true or absent")
        type_ = node.get("type")
        if in_junctor:
            for key in sorted(JUNCTOR_FORBIDDEN & node.keys()):
                if not (key == "type" and int_or_string_branch):
                    problems.append(f"{where}: {key!r} is not allowed inside a junctor")
        elif type_ is None and not int_or_string and not preserve:
            problems.append(f"{where}: type is required (or an int-or-string/preserve escape)")
        if type_ is not None and type_ not in TYPES:
            problems.append(f"{where}: unknown type {type_!r}")
        if int_or_string:
            if type_ is not None:
                problems.append(f"{where}: int-or-string nodes must not set type")
            if "anyOf" in node and node["anyOf"] != INT_OR_STRING_ANYOF:
                problems.append(f"{where}: int-or-string anyOf must be [integer, string]")
        if node.get("format", "") not in FORMATS:
            problems.append(f"{where}: unknown format {node['format']!r}")
        if "properties" in node and "additionalProperties" in node:
            problems.append(f"{where}: properties and additionalProperties are mutually exclusive")
        if "additionalProperties" in node and not isinstance(node["additionalProperties"], dict):
            problems.append(f"{where}: additionalProperties must be a schema")
        if node.get("uniqueItems") is True:
            problems.append(f"{where}: uniqueItems cannot be true")
        if type_ == "array" and "items" not in node:
            problems.append(f"{where}: arrays must declare items")
        if "items" in node and not isinstance(node["items"], dict):
            problems.append(f"{where}: items must be a single schema")
        if (type_ is not None and type_ != "object") and ("properties" in node or "additionalProperties" in node):
            problems.append(f"{where}: properties on a non-object")
        for name in node.get("required", []):
            if name not in node.get("properties", {}):
                problems.append(f"{where}: required {name!r} is not a declared property")
        check_list_and_map_types(node, where)
        check_default(node, where)
        for name, child in node.get("properties", {}).items():
            walk(child, f"{where}.{name}", in_junctor)
        for key in _CHILD_SCHEMA_KEYS:
            if isinstance(node.get(key), dict):
                walk(node[key], f"{where}.{key}", in_junctor or key == "not")
        for key in _JUNCTORS:
            for index, child in enumerate(node.get(key, [])):
                walk(child, f"{where}.{key}[{index}]", True, bool(int_or_string) and key == "anyOf")

    def check_list_and_map_types(node: Obj, where: str) -> None:
        list_type = node.get("x-kubernetes-list-type")
        keys = node.get("x-kubernetes-list-map-keys")
        if list_type is not None:
            if node.get("type") != "array":
                problems.append(f"{where}: x-kubernetes-list-type on a non-array")
            if list_type not in ("atomic", "set", "map"):
                problems.append(f"{where}: unknown x-kubernetes-list-type {list_type!r}")
        items: Obj = node.get("items", {})
        if list_type == "set" and items.get("type") not in SCALAR_TYPES:
            problems.append(f"{where}: set items must be scalars")
        if keys is not None and list_type != "map":
            problems.append(f"{where}: x-kubernetes-list-map-keys needs list-type map")
        if list_type == "map":
            if items.get("type") != "object":
                problems.append(f"{where}: list-type map items must be objects")
            if not keys:
                problems.append(f"{where}: list-type map needs x-kubernetes-list-map-keys")
            for key in keys or []:
                prop = items.get("properties", {}).get(key)
                if prop is None or prop.get("type") not in SCALAR_TYPES:
                    problems.append(f"{where}: map key {key!r} must be a scalar property")
                elif key not in items.get("required", []) and "default" not in prop:
                    problems.append(f"{where}: map key {key!r} must be required or defaulted")
        map_type = node.get("x-kubernetes-map-type")
        if map_type is not None and (map_type not in ("granular", "atomic") or node.get("type") != "object"):
            problems.append(f"{where}: bad x-kubernetes-map-type {map_type!r}")

    def check_default(node: Obj, where: str) -> None:
        if "default" not in node:
            return
        errors = list(jsonschema.Draft7Validator(to_jsonschema(node)).iter_errors(node["default"]))
        if errors:
            problems.append(f"{where}: default does not validate: {errors[0].message}")

    if schema.get("type") != "object":
        problems.append(f"{path}: the root must have type object")
    metadata = schema.get("properties", {}).get("metadata")
    if metadata is not None and set(metadata.get("properties", {})) - {"name", "generateName"}:
        problems.append(f"{path}.metadata: only name and generateName may be constrained")
    walk(schema, path, in_junctor=False)
    return problems


def walk_nodes(node: Obj, where: str = "") -> Iterator[tuple[str, Obj]]:
    yield where, node
    for name, child in node.get("properties", {}).items():
        yield from walk_nodes(child, f"{where}.{name}")
    for key in (*_CHILD_SCHEMA_KEYS,):
        if isinstance(node.get(key), dict):
            yield from walk_nodes(node[key], f"{where}.{key}")


def resolve(schema: Obj, json_path: str) -> Obj:
    node = schema
    for part in json_path.lstrip(".").split("."):
        node = node["properties"][part]
    return node


# --------------------------------------------------------------------------------------------------
# 1. Generated files are in sync
# --------------------------------------------------------------------------------------------------


def test_committed_crds_equal_generator_output() -> None:
    generated: dict[Path, str] = load_generator().render_all()
    assert {REPO / path for path in generated} == set(crd_paths()), "crds/ has extra/missing files"
    for relative, text in generated.items():
        committed = (REPO / relative).read_text(encoding="utf-8")
        assert yaml.safe_load(committed) == yaml.safe_load(text), (
            f"{relative} differs from scripts/gen_crds.py; run python scripts/gen_crds.py"
        )
        assert committed == text, f"{relative} was edited by hand; run python scripts/gen_crds.py"


def test_generator_check_mode_detects_stale_files(tmp_path: Path) -> None:
    generator = load_generator()
    assert generator.main(["--root", str(tmp_path)]) == 0
    assert generator.main(["--root", str(tmp_path), "--check"]) == 0
    target = tmp_path / generator.KRUISE_CRD_PATH
    target.write_text(target.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    assert generator.main(["--root", str(tmp_path), "--check"]) == 1


# --------------------------------------------------------------------------------------------------
# 2. CRD shape
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", crd_paths(), ids=lambda p: str(p.relative_to(CRD_DIR)))
def test_crd_file_is_one_v1_crd(path: Path) -> None:
    (crd,) = load_docs(path)
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}"
    kind = spec["names"]["kind"]
    assert spec["names"] == {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": f"{kind.lower()}s",
        "singular": kind.lower(),
        "shortNames": [{"UnitedDeployment": "ud", "WorkloadSpread": "ws", "Cluster": "ucl"}[kind]],
        **({"categories": ["united"]} if kind == "Cluster" else {}),
    }
    assert path.name == f"{spec['group']}_{spec['names']['plural']}.yaml"
    assert spec["scope"] == ("Cluster" if kind == "Cluster" else "Namespaced")
    assert spec.get("preserveUnknownFields") is not True
    assert [v["name"] for v in spec["versions"] if v["storage"]] in (["v1alpha1"], ["v1beta1"])
    assert all(version["served"] for version in spec["versions"] if (spec["group"], version["name"]) != UNSERVED)


def test_united_crd_versions() -> None:
    spec = crd_for_group("apps.united.io")["spec"]
    assert [(v["name"], v["served"], v["storage"]) for v in spec["versions"]] == [("v1alpha1", True, True)]


def test_kruise_compat_crd_versions_and_conversion() -> None:
    spec = crd_for_group("apps.kruise.io")["spec"]
    assert [(v["name"], v["served"], v["storage"]) for v in spec["versions"]] == [
        ("v1alpha1", True, True),
        ("v1beta1", False, False),
    ]
    assert spec["conversion"] == {"strategy": "None"}


def test_the_installer_serves_the_compat_v1beta1_on_request() -> None:
    docs = data.controller(KRUISE_GROUP)

    def the_crd(of: list[Obj]) -> Obj:
        (found,) = [d for d in of if d["kind"] == "CustomResourceDefinition" and d["metadata"]["name"] == KRUISE_UD_CRD]
        return found

    served = data.serving(docs, KRUISE_UD_CRD, "v1beta1")
    assert [(v["name"], v["served"], v["storage"]) for v in the_crd(served)["spec"]["versions"]] == [
        ("v1alpha1", True, True),
        ("v1beta1", True, False),
    ]
    assert [d for d in served if d is not the_crd(served)] == [d for d in docs if d is not the_crd(docs)]
    assert not the_crd(docs)["spec"]["versions"][1]["served"], "the documents given are left as they were"
    with pytest.raises(LookupError, match="lists no version v2"):
        data.serving(docs, KRUISE_UD_CRD, "v2")


def all_versions() -> list[tuple[str, Obj]]:
    return [
        (f"{crd['spec']['group']}/{version['name']}", version)
        for crd in all_crds()
        for version in crd["spec"]["versions"]
    ]


def test_all_versions_share_one_schema_subresources_and_columns() -> None:
    versions = all_versions()
    assert sorted(name for name, _ in versions) == [
        "apps.kruise.io/v1alpha1",
        "apps.kruise.io/v1beta1",
        "apps.united.io/v1alpha1",
    ]
    _, reference = versions[0]
    for name, version in versions[1:]:
        for key in ("schema", "subresources", "additionalPrinterColumns"):
            assert without_update_types(version[key]) == without_update_types(reference[key]), f"{name}: {key} differs"


def without_update_types(node: Obj) -> Obj:
    """A version's schema but for ``updateStrategy.type`` and ``progressive`` and the subsets'
    ``cluster``: only our group offers the Progressive strategy and multi-cluster subsets."""
    if "openAPIV3Schema" not in node:
        return node
    out = copy.deepcopy(node)
    strategy = out["openAPIV3Schema"]["properties"]["spec"]["properties"]["updateStrategy"]["properties"]
    strategy.pop("type")
    strategy.pop("progressive", None)
    resolve(out["openAPIV3Schema"], ".spec.topology.subsets")["items"]["properties"].pop("cluster", None)
    return out


def test_only_our_group_offers_the_progressive_strategy() -> None:
    for name, version in all_versions():
        strategy = resolve(version["schema"]["openAPIV3Schema"], ".spec.updateStrategy")["properties"]
        ours = name.startswith("apps.united.io/")
        assert ("progressive" in strategy) is ours, name
        assert strategy["type"]["enum"] == (["Manual", "Progressive", ""] if ours else ["Manual", ""]), name


def test_only_our_group_has_multi_cluster_subsets() -> None:
    for name, version in all_versions():
        subset = resolve(version["schema"]["openAPIV3Schema"], ".spec.topology.subsets")["items"]["properties"]
        assert ("cluster" in subset) is name.startswith("apps.united.io/"), name
    cluster = resolve(united_schema(), ".spec.topology.subsets")["items"]["properties"]["cluster"]
    accepted = re.compile(cluster["pattern"])
    assert [bool(accepted.match(v)) for v in ("", "member-1", "eu.member-2", "Member_1", "-a", "a.")] == [
        True,
        True,
        True,
        False,
        False,
        False,
    ]
    assert cluster["maxLength"] == 253


@pytest.mark.parametrize(("name", "version"), all_versions(), ids=[n for n, _ in all_versions()])
def test_subresources(name: str, version: Obj) -> None:
    schema = version["schema"]["openAPIV3Schema"]
    assert version["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.labelSelector",
        },
    }
    assert resolve(schema, ".spec.replicas")["type"] == "integer"
    assert resolve(schema, ".status.replicas")["type"] == "integer"
    assert resolve(schema, ".status.labelSelector")["type"] == "string"


@pytest.mark.parametrize(("name", "version"), all_versions(), ids=[n for n, _ in all_versions()])
def test_printer_columns(name: str, version: Obj) -> None:
    columns = version["additionalPrinterColumns"]
    assert [(c["name"], c["type"], c["jsonPath"]) for c in columns if not c.get("priority")] == [
        ("DESIRED", "integer", ".spec.replicas"),
        ("CURRENT", "integer", ".status.replicas"),
        ("UPDATED", "integer", ".status.updatedReplicas"),
        ("READY", "integer", ".status.readyReplicas"),
        ("AGE", "date", ".metadata.creationTimestamp"),
    ]
    schema = version["schema"]["openAPIV3Schema"]
    for column in columns:
        if column["jsonPath"] == ".metadata.creationTimestamp":
            continue
        assert resolve(schema, column["jsonPath"])["type"] == column["type"], column["name"]
    extra = [c for c in columns if c.get("priority")]
    assert all(c["priority"] == 1 for c in extra)
    assert [c["name"] for c in extra] == ["REVISION"]


# --------------------------------------------------------------------------------------------------
# 3. Structural-schema lint
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "version"), all_versions(), ids=[n for n, _ in all_versions()])
def test_schema_is_structural(name: str, version: Obj) -> None:
    """As a 1.20 server gets it: without the CEL rules (``united.api.crdrules``)."""
    assert structural_problems(without_rules(version["schema"]["openAPIV3Schema"])) == []


def test_schema_uses_no_references() -> None:
    text = "\n".join(path.read_text(encoding="utf-8") for path in crd_paths())
    for forbidden in ("$ref", "$defs", "definitions:", "$schema"):
        assert forbidden not in text


def _rules(node: Any) -> Iterator[Any]:
    if isinstance(node, dict):
        if RULES in node:
            yield node[RULES]
        for value in node.values():
            yield from _rules(value)
    elif isinstance(node, list):
        for value in node:
            yield from _rules(value)


def test_the_only_cel_rules_are_the_generators_and_stripping_removes_them_all() -> None:
    known = [rule for rules in load_generator().CEL_RULES.values() for rule in rules]
    docs = [doc for path in crd_paths() for doc in load_docs(path)]
    found = [rule for doc in docs for rules in _rules(doc) for rule in rules]
    assert found and all(rule in known for rule in found)
    assert {json.dumps(r, sort_keys=True) for r in found} == {json.dumps(r, sort_keys=True) for r in known}
    assert not any(True for doc in docs for _ in _rules(without_rules(doc)))


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ({"type": "object", "properties": {"a": {"$ref": "#/x"}}}, "key '$ref' is not allowed"),
        ({"type": "object", "$defs": {}}, "key '$defs' is not allowed"),
        ({"type": "object", "definitions": {}}, "key 'definitions' is not allowed"),
        ({"type": "object", "properties": {"a": {"description": "x"}}}, "type is required"),
        (
            {"type": "object", "x-kubernetes-validations": [{"rule": "self.a > 0"}]},
            "key 'x-kubernetes-validations' is not allowed",
        ),
        (
            {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}},
            "mutually exclusive",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}},
             "additionalProperties": {"type": "string"}},
            "mutually exclusive",
        ),
        ({"type": "object", "additionalProperties": False}, "must be a schema"),
        ({"type": "object", "properties": {"a": {"type": "array"}}}, "arrays must declare items"),
        (
            {"type": "object", "properties": {"a": {"type": "integer", "default": "x"}}},
            "default does not validate",
        ),
        (
            {"type": "object", "properties": {"a": {"x-kubernetes-int-or-string": True,
                                                   "type": "string"}}},
            "must not set type",
        ),
        (
            {"type": "object", "properties": {"a": {
                "x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer", "description": "n"}, {"type": "string"}]}}},
            "'description' is not allowed inside a junctor",
        ),
        (
            {"type": "object", "properties": {"l": {
                "type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}},
            "must be required or defaulted",
        ),
        (
            {"type": "object", "properties": {"l": {
                "type": "array", "x-kubernetes-list-type": "set",
                "items": {"type": "object"}}}},
            "set items must be scalars",
        ),
        ({"type": "object", "properties": {"a": {"type": "null"}}}, "unknown type 'null'"),
        (
            {"type": "object", "properties": {"a": {
                "type": "string", "anyOf": [{"type": "string"}, {"pattern": "^a"}]}}},
            "'type' is not allowed inside a junctor",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "object", "required": ["b"]}}},
            "required 'b' is not a declared property",
        ),
        (
            {"type": "object", "properties": {"metadata": {
                "type": "object", "properties": {"labels": {"type": "object"}}}}},
            "only name and generateName",
        ),
        (
            {"type": "object", "properties": {
                "a": {"type": "object", "x-kubernetes-preserve-unknown-fields": False}}},
            "must be true or absent",
        ),
        ({"type": "array", "items": {"type": "string"}}, "root must have type object"),
    ],
)  # fmt: skip
def test_structural_lint_rejects(bad: Obj, expected: str) -> None:
    problems = structural_problems(bad)
    assert any(expected in problem for problem in problems), problems


def test_structural_lint_accepts_escapes() -> None:
    schema = {
        "type": "object",
        "properties": {
            "ios": {"x-kubernetes-int-or-string": True, "anyOf": INT_OR_STRING_ANYOF},
            "free": {"x-kubernetes-preserve-unknown-fields": True},
        },
    }
    assert structural_problems(schema) == []


def test_every_int_or_string_node_is_a_replica_field() -> None:
    nodes = [where for where, node in walk_nodes(united_schema()) if node.get("x-kubernetes-int-or-string")]
    prefix = ".spec.topology.subsets.items"
    assert sorted(nodes) == [
        f"{prefix}.maxReplicas",
        f"{prefix}.minReplicas",
        f"{prefix}.replicas",
        ".spec.updateStrategy.progressive.maxUnavailable",
        ".spec.updateStrategy.progressive.waves.items.pause.duration",
    ]


# --------------------------------------------------------------------------------------------------
# 4. Spec schema details (Kruise compatibility)
# --------------------------------------------------------------------------------------------------


def test_spec_top_level_fields_match_kruise() -> None:
    spec = resolve(united_schema(), ".spec")
    assert sorted(spec["properties"]) == [
        "replicas",
        "revisionHistoryLimit",
        "selector",
        "template",
        "topology",
        "updateStrategy",
    ]
    assert spec["required"] == ["selector"]
    replicas = spec["properties"]["replicas"]
    assert (replicas["type"], replicas["format"], replicas["minimum"], replicas["default"]) == (
        "integer",
        "int32",
        0,
        1,
    )
    assert spec["properties"]["revisionHistoryLimit"]["default"] == 10
    maximum = spec["properties"]["revisionHistoryLimit"]["maximum"]
    assert maximum == MAX_REVISION_HISTORY == load_generator().MAX_REVISION_HISTORY


def test_templates_are_schemaless_with_kruise_required_fields() -> None:
    template = resolve(united_schema(), ".spec.template")
    assert sorted(template["properties"]) == [
        "advancedStatefulSetTemplate",
        "cloneSetTemplate",
        "deploymentTemplate",
        "statefulSetTemplate",
    ]
    for name, variant in template["properties"].items():
        assert variant["required"] == ["spec"], name
        assert variant["properties"]["metadata"]["x-kubernetes-preserve-unknown-fields"] is True
        spec = variant["properties"]["spec"]
        assert spec["x-kubernetes-preserve-unknown-fields"] is True, name
        expected = (
            ["selector", "template"]
            if name
            in (
                "advancedStatefulSetTemplate",
                "cloneSetTemplate",
            )
            else None
        )
        assert spec.get("required") == expected, name
        if expected:
            pod_template = spec["properties"]["template"]
            assert pod_template["x-kubernetes-preserve-unknown-fields"] is True


def test_topology_schema() -> None:
    topology = resolve(united_schema(), ".spec.topology")
    subsets = topology["properties"]["subsets"]
    assert subsets["x-kubernetes-list-type"] == "map"
    assert subsets["x-kubernetes-list-map-keys"] == ["name"]
    assert subsets["maxItems"] == MAX_SUBSETS == load_generator().MAX_SUBSETS
    assert load_generator().WS_SUBSET_NAME_MAX == MAX_SUBSET_NAME
    subset = subsets["items"]
    assert subset["required"] == ["name"]
    assert subset["properties"]["name"]["maxLength"] == 63
    assert sorted(subset["properties"]) == [
        "cluster",
        "maxReplicas",
        "minReplicas",
        "name",
        "nodeSelectorTerm",
        "patch",
        "replicas",
        "tolerations",
        "weight",
    ]
    assert subset["properties"]["weight"]["minimum"] == 0
    assert topology["properties"]["rounding"]["enum"] == ["HalfUp", "Monotone", ""]
    assert subset["properties"]["patch"]["x-kubernetes-preserve-unknown-fields"] is True
    term = subset["properties"]["nodeSelectorTerm"]
    assert sorted(term["properties"]) == ["matchExpressions", "matchFields"]
    toleration = subset["properties"]["tolerations"]["items"]
    assert sorted(toleration["properties"]) == [
        "effect",
        "key",
        "operator",
        "tolerationSeconds",
        "value",
    ]
    strategy = topology["properties"]["scheduleStrategy"]["properties"]
    assert strategy["type"]["enum"] == ["Adaptive", "Fixed", ""]
    adaptive = strategy["adaptive"]["properties"]
    assert adaptive["rescheduleCriticalSeconds"]["default"] == 30
    # defaulted by the controller, so that the legacy spelling below can be honoured
    assert "default" not in adaptive["unschedulableDuration"]
    assert adaptive["reserveUnschedulablePods"]["type"] == "boolean"
    # Kruise v1.8 spelling, declared so it is not pruned; no default (the controller must be able
    # to tell whether it was set).
    assert adaptive["unschedulableLastSeconds"]["type"] == "integer"
    assert "default" not in adaptive["unschedulableLastSeconds"]


def test_update_strategy_schema() -> None:
    strategy = resolve(united_schema(), ".spec.updateStrategy")["properties"]
    assert strategy["type"]["enum"] == ["Manual", "Progressive", ""]
    partitions = strategy["manualUpdate"]["properties"]["partitions"]
    assert partitions["additionalProperties"]["format"] == "int32"


def test_defaults_are_applied_like_the_api_server() -> None:
    ud = minimal_ud()
    del ud["spec"]["replicas"], ud["spec"]["revisionHistoryLimit"]
    ud["spec"]["topology"]["scheduleStrategy"] = {"type": "Adaptive", "adaptive": {}}
    defaulted = apply_defaults(ud, united_schema())
    assert defaulted["spec"]["replicas"] == 1
    assert defaulted["spec"]["revisionHistoryLimit"] == 10
    assert defaulted["spec"]["topology"]["scheduleStrategy"]["adaptive"] == {
        "rescheduleCriticalSeconds": 30,
    }
    # explicit values are kept; absent optional objects are not invented
    explicit = minimal_ud()
    explicit["spec"]["replicas"] = 0
    assert apply_defaults(explicit, united_schema())["spec"]["replicas"] == 0
    bare = apply_defaults(minimal_ud(), united_schema())["spec"]
    assert "scheduleStrategy" not in bare["topology"]


# --------------------------------------------------------------------------------------------------
# 5. Bad manifests are rejected on the expected field
# --------------------------------------------------------------------------------------------------


def minimal_ud(api_version: str = "apps.united.io/v1alpha1") -> Obj:
    labels = {"app": "demo"}
    return {
        "apiVersion": api_version,
        "kind": "UnitedDeployment",
        "metadata": {"name": "demo"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "deploymentTemplate": {
                    "metadata": {"labels": dict(labels)},
                    "spec": {
                        "selector": {"matchLabels": dict(labels)},
                        "template": {
                            "metadata": {"labels": dict(labels)},
                            "spec": {"containers": [{"name": "app", "image": "nginx"}]},
                        },
                    },
                }
            },
            "topology": {
                "subsets": [
                    {
                        "name": "zone-a",
                        "nodeSelectorTerm": {
                            "matchExpressions": [
                                {
                                    "key": "topology.kubernetes.io/zone",
                                    "operator": "In",
                                    "values": ["a"],
                                }
                            ]
                        },
                        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
                        "replicas": 1,
                    },
                    {"name": "zone-b"},
                ]
            },
            "updateStrategy": {"type": "Manual", "manualUpdate": {"partitions": {"zone-a": 0}}},
            "revisionHistoryLimit": 10,
        },
    }


def _set(path: str, value: Any) -> Callable[[Obj], None]:
    def mutate(ud: Obj) -> None:
        *parents, last = re.findall(r"[^.\[\]]+", path)
        node: Any = ud
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(last) if last.isdigit() else last] = value

    return mutate


def _delete(path: str) -> Callable[[Obj], None]:
    def mutate(ud: Obj) -> None:
        *parents, last = re.findall(r"[^.\[\]]+", path)
        node: Any = ud
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        del node[int(last) if last.isdigit() else last]

    return mutate


SUBSET0 = "spec.topology.subsets[0]"
DEPLOYMENT = "spec.template.deploymentTemplate"

BAD_MANIFESTS: list[tuple[str, Callable[[Obj], None], Problem]] = [
    ("replicas-string", _set("spec.replicas", "abc"), ("spec.replicas", "type")),
    ("replicas-negative", _set("spec.replicas", -1), ("spec.replicas", "minimum")),
    ("replicas-float", _set("spec.replicas", 1.5), ("spec.replicas", "type")),
    ("selector-missing", _delete("spec.selector"), ("spec.selector", "required")),
    (
        "selector-labels-not-strings",
        _set("spec.selector.matchLabels", {"app": 1}),
        ("spec.selector.matchLabels.app", "type"),
    ),
    (
        "selector-expression-without-operator",
        _set("spec.selector.matchExpressions", [{"key": "app"}]),
        ("spec.selector.matchExpressions[0].operator", "required"),
    ),
    ("subset-without-name", _delete(f"{SUBSET0}.name"), (f"{SUBSET0}.name", "required")),
    ("subset-name-not-dns1123", _set(f"{SUBSET0}.name", "Zone_A"), (f"{SUBSET0}.name", "pattern")),
    (
        "subset-name-too-long",
        _set(f"{SUBSET0}.name", "a" * 64),
        (f"{SUBSET0}.name", "maxLength"),
    ),
    ("subset-replicas-bool", _set(f"{SUBSET0}.replicas", True), (f"{SUBSET0}.replicas", "anyOf")),
    (
        "subset-max-replicas-list",
        _set(f"{SUBSET0}.maxReplicas", [1]),
        (f"{SUBSET0}.maxReplicas", "anyOf"),
    ),
    ("subset-patch-string", _set(f"{SUBSET0}.patch", "x"), (f"{SUBSET0}.patch", "type")),
    ("subset-patch-list", _set(f"{SUBSET0}.patch", [{"a": 1}]), (f"{SUBSET0}.patch", "type")),
    (
        "subset-node-selector-without-key",
        _set(f"{SUBSET0}.nodeSelectorTerm.matchExpressions", [{"operator": "Exists"}]),
        (f"{SUBSET0}.nodeSelectorTerm.matchExpressions[0].key", "required"),
    ),
    (
        "subset-toleration-seconds-string",
        _set(f"{SUBSET0}.tolerations[0].tolerationSeconds", "soon"),
        (f"{SUBSET0}.tolerations[0].tolerationSeconds", "type"),
    ),
    (
        "subset-tolerations-object",
        _set(f"{SUBSET0}.tolerations", {"key": "k"}),
        (f"{SUBSET0}.tolerations", "type"),
    ),
    (
        "duplicate-subset-names",
        _set("spec.topology.subsets[1].name", "zone-a"),
        ("spec.topology.subsets[1]", "duplicate"),
    ),
    (
        "update-strategy-auto",
        _set("spec.updateStrategy.type", "Auto"),
        ("spec.updateStrategy.type", "enum"),
    ),
    (
        "partition-string",
        _set("spec.updateStrategy.manualUpdate.partitions", {"zone-a": "3"}),
        ("spec.updateStrategy.manualUpdate.partitions.zone-a", "type"),
    ),
    (
        "partition-negative",
        _set("spec.updateStrategy.manualUpdate.partitions", {"zone-a": -1}),
        ("spec.updateStrategy.manualUpdate.partitions.zone-a", "minimum"),
    ),
    (
        "schedule-strategy-sometimes",
        _set("spec.topology.scheduleStrategy", {"type": "Sometimes"}),
        ("spec.topology.scheduleStrategy.type", "enum"),
    ),
    (
        "adaptive-seconds-as-duration-string",
        _set("spec.topology.scheduleStrategy", {"adaptive": {"rescheduleCriticalSeconds": "30s"}}),
        ("spec.topology.scheduleStrategy.adaptive.rescheduleCriticalSeconds", "type"),
    ),
    (
        "reserve-unschedulable-pods-string",
        _set("spec.topology.scheduleStrategy", {"adaptive": {"reserveUnschedulablePods": "yes"}}),
        ("spec.topology.scheduleStrategy.adaptive.reserveUnschedulablePods", "type"),
    ),
    (
        "revision-history-limit-negative",
        _set("spec.revisionHistoryLimit", -1),
        ("spec.revisionHistoryLimit", "minimum"),
    ),
    (
        "revision-history-limit-too-large",
        _set("spec.revisionHistoryLimit", 101),
        ("spec.revisionHistoryLimit", "maximum"),
    ),
    ("template-spec-missing", _delete(f"{DEPLOYMENT}.spec"), (f"{DEPLOYMENT}.spec", "required")),
    ("template-spec-string", _set(f"{DEPLOYMENT}.spec", "nginx"), (f"{DEPLOYMENT}.spec", "type")),
    (
        "cloneset-template-without-selector",
        _set("spec.template", {"cloneSetTemplate": {"spec": {"template": {}}}}),
        ("spec.template.cloneSetTemplate.spec.selector", "required"),
    ),
    (
        "advanced-statefulset-template-without-template",
        _set(
            "spec.template",
            {"advancedStatefulSetTemplate": {"spec": {"selector": {"matchLabels": {"a": "b"}}}}},
        ),
        ("spec.template.advancedStatefulSetTemplate.spec.template", "required"),
    ),
    (
        "subsets-not-a-list",
        _set("spec.topology.subsets", {"zone-a": {}}),
        ("spec.topology.subsets", "type"),
    ),
    ("spec-not-an-object", _set("spec", []), ("spec", "type")),
]


def test_minimal_ud_is_valid() -> None:
    for api_version in ("apps.united.io/v1alpha1", "apps.kruise.io/v1alpha1",
                        "apps.kruise.io/v1beta1"):  # fmt: skip
        ud = minimal_ud(api_version)
        schema = served_schema(api_version, "UnitedDeployment")
        assert api_server_problems(ud, schema) == []
        assert pruned_fields(ud, schema) == []


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [(mutate, expected) for _, mutate, expected in BAD_MANIFESTS],
    ids=[name for name, _, _ in BAD_MANIFESTS],
)
def test_bad_manifest_is_rejected_on_the_expected_field(mutate: Callable[[Obj], None], expected: Problem) -> None:
    ud = minimal_ud()
    mutate(ud)
    assert api_server_problems(ud, united_schema()) == [expected]


def test_unknown_spec_fields_are_pruned_not_rejected() -> None:
    ud = minimal_ud()
    ud["spec"]["topology"]["schedulStrategy"] = {"type": "Adaptive"}  # typo
    ud["spec"]["topology"]["subsets"][0]["priority"] = 3
    ud["spec"]["template"]["deploymentTemplate"]["spec"]["anything"] = {"kept": True}
    ud["spec"]["topology"]["subsets"][0]["patch"] = {"spec": {"whatever": 1}}
    schema = united_schema()
    assert api_server_problems(ud, schema) == []
    assert pruned_fields(ud, schema) == [
        "spec.topology.subsets[0].priority",
        "spec.topology.schedulStrategy",
    ]


# --------------------------------------------------------------------------------------------------
# 6. Status schema: the controller's contract
# --------------------------------------------------------------------------------------------------

# (type, format) of every status field; nested objects by dotted path. The controller writes these
# and nothing else -- anything not declared here is pruned silently by the API server.
EXPECTED_STATUS: dict[str, tuple[str, str | None]] = {
    "observedGeneration": ("integer", "int64"),
    "replicas": ("integer", "int32"),
    "readyReplicas": ("integer", "int32"),
    "updatedReplicas": ("integer", "int32"),
    "updatedReadyReplicas": ("integer", "int32"),
    "reservedPods": ("integer", "int32"),
    "collisionCount": ("integer", "int32"),
    "currentRevision": ("string", None),
    "updatedRevision": ("string", None),
    "labelSelector": ("string", None),
    "updateStatus": ("object", None),
    "updateStatus.updatedRevision": ("string", None),
    "updateStatus.currentPartitions": ("object", None),
    "updateStatus.currentPartitions.*": ("integer", "int32"),
    "subsetReplicas": ("object", None),
    "subsetReplicas.*": ("integer", "int32"),
    "subsetStatuses": ("array", None),
    "subsetStatuses[].name": ("string", None),
    "subsetStatuses[].desired": ("integer", "int32"),
    "subsetStatuses[].replicas": ("integer", "int32"),
    "subsetStatuses[].readyReplicas": ("integer", "int32"),
    "subsetStatuses[].updatedReplicas": ("integer", "int32"),
    "subsetStatuses[].updatedReadyReplicas": ("integer", "int32"),
    "subsetStatuses[].reservedPods": ("integer", "int32"),
    "subsetStatuses[].partition": ("integer", "int32"),
    "subsetStatuses[].partitionApplied": ("boolean", None),
    "subsetStatuses[].reason": ("string", None),
    "subsetStatuses[].message": ("string", None),
    "subsetStatuses[].rollout": ("string", None),
    "subsetStatuses[].cluster": ("string", None),
    "rollout": ("object", None),
    "rollout.revision": ("string", None),
    "rollout.wave": ("integer", "int32"),
    "rollout.waves": ("integer", "int32"),
    "rollout.phase": ("string", None),
    "rollout.reason": ("string", None),
    "rollout.message": ("string", None),
    "rollout.since": ("string", "date-time"),
    "rollout.lastProgressTime": ("string", "date-time"),
    "subsetStatuses[].conditions": ("array", None),
    "subsetStatuses[].conditions[].type": ("string", None),
    "subsetStatuses[].conditions[].status": ("string", None),
    "subsetStatuses[].conditions[].lastTransitionTime": ("string", "date-time"),
    "subsetStatuses[].conditions[].reason": ("string", None),
    "subsetStatuses[].conditions[].message": ("string", None),
    "conditions": ("array", None),
    "conditions[].type": ("string", None),
    "conditions[].status": ("string", None),
    "conditions[].observedGeneration": ("integer", "int64"),
    "conditions[].lastTransitionTime": ("string", "date-time"),
    "conditions[].reason": ("string", None),
    "conditions[].message": ("string", None),
}


def flatten_status(node: Obj, prefix: str = "") -> dict[str, tuple[str, str | None]]:
    flat: dict[str, tuple[str, str | None]] = {}
    for name, child in node.get("properties", {}).items():
        path = f"{prefix}{name}"
        flat[path] = (child["type"], child.get("format"))
        if child["type"] == "object":
            flat.update(flatten_status(child, f"{path}."))
            if isinstance(child.get("additionalProperties"), dict):
                values = child["additionalProperties"]
                flat[f"{path}.*"] = (values["type"], values.get("format"))
        if child["type"] == "array":
            flat.update(flatten_status(child["items"], f"{path}[]."))
    return flat


def test_status_schema_is_exactly_the_controller_contract() -> None:
    assert flatten_status(resolve(united_schema(), ".status")) == EXPECTED_STATUS


def test_status_lists_are_maps_and_only_their_keys_are_required() -> None:
    status = resolve(united_schema(), ".status")
    assert "required" not in status
    subset_statuses = status["properties"]["subsetStatuses"]
    assert subset_statuses["x-kubernetes-list-map-keys"] == ["name"]
    assert subset_statuses["items"]["required"] == ["name"]
    conditions = status["properties"]["conditions"]
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    assert conditions["items"]["required"] == ["type"]
    subset_conditions = subset_statuses["items"]["properties"]["conditions"]
    assert subset_conditions["items"]["required"] == ["type"]
    required = [where for where, node in walk_nodes(status) if node.get("required")]
    assert sorted(required) == [
        ".conditions.items",
        ".subsetStatuses.items",
        ".subsetStatuses.items.conditions.items",
    ]


def full_status() -> Obj:
    return {
        "observedGeneration": 4,
        "replicas": 5,
        "readyReplicas": 4,
        "updatedReplicas": 3,
        "updatedReadyReplicas": 3,
        "reservedPods": 0,
        "collisionCount": 0,
        "currentRevision": "demo-55f9dbcb4b",
        "updatedRevision": "demo-7d4b9c8f6d",
        "labelSelector": "app=demo",
        "updateStatus": {
            "updatedRevision": "demo-7d4b9c8f6d",
            "currentPartitions": {"zone-a": 0, "zone-b": 2},
        },
        "subsetReplicas": {"zone-a": 2, "zone-b": 3},
        "subsetStatuses": [
            {
                "name": "zone-a",
                "desired": 2,
                "replicas": 2,
                "readyReplicas": 2,
                "updatedReplicas": 2,
                "updatedReadyReplicas": 2,
                "reservedPods": 0,
                "partition": 0,
                "partitionApplied": True,
                "reason": "",
                "message": "",
                "conditions": [
                    {
                        "type": "Schedulable",
                        "status": "True",
                        "lastTransitionTime": "2026-01-02T03:04:05Z",
                        "reason": "recover",
                        "message": "unschedulable subset recovered after 300.000000 seconds",
                    }
                ],
            },
            {
                "name": "zone-b",
                "desired": 3,
                "replicas": 3,
                "partition": 2,
                "partitionApplied": False,
                "reason": "PartitionUnsupported",
                "message": "Deployment subsets ignore partitions",
            },
        ],
        "conditions": [
            {
                "type": "UnitedDeploymentUpdated",
                "status": "False",
                "observedGeneration": 4,
                "lastTransitionTime": "2026-01-02T03:04:05Z",
                "reason": "UnitedDeploymentRevisionUpdating",
                "message": "updating to revision demo-7d4b9c8f6d",
            },
            {"type": "SubsetProvisioned", "status": "True"},
        ],
    }


@pytest.mark.parametrize(
    "api_version", ["apps.united.io/v1alpha1", "apps.kruise.io/v1alpha1", "apps.kruise.io/v1beta1"]
)
def test_full_status_validates_and_survives_pruning(api_version: str) -> None:
    ud = minimal_ud(api_version)
    ud["status"] = full_status()
    schema = served_schema(api_version, "UnitedDeployment")
    assert api_server_problems(ud, schema) == []
    assert pruned_fields(ud, schema) == []


def test_partial_status_is_accepted() -> None:
    ud = minimal_ud()
    ud["status"] = {"observedGeneration": 1, "conditions": [{"type": "SubsetProvisioned"}]}
    assert api_server_problems(ud, united_schema()) == []


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({"replicas": "3"}, ("status.replicas", "type")),
        ({"subsetStatuses": [{"replicas": 1}]}, ("status.subsetStatuses[0].name", "required")),
        (
            {"subsetStatuses": [{"name": "a"}, {"name": "a"}]},
            ("status.subsetStatuses[1]", "duplicate"),
        ),
        (
            {"conditions": [{"type": "X", "status": "True"}, {"type": "X", "status": "False"}]},
            ("status.conditions[1]", "duplicate"),
        ),
        (
            {"subsetStatuses": [{"name": "a", "partitionApplied": "no"}]},
            ("status.subsetStatuses[0].partitionApplied", "type"),
        ),
        ({"subsetReplicas": {"a": "1"}}, ("status.subsetReplicas.a", "type")),
    ],
)
def test_bad_status_is_rejected(status: Obj, expected: Problem) -> None:
    # Note: a 1.20 API server does NOT check list-type map uniqueness on /status writes (only on
    # create and spec updates, and those are skipped while the stored object is already invalid),
    # so the controller must never write duplicate subsetStatuses names or condition types.
    ud = minimal_ud()
    ud["status"] = status
    assert api_server_problems(ud, united_schema()) == [expected]


def test_undeclared_status_fields_would_be_pruned() -> None:
    ud = minimal_ud()
    ud["status"] = {
        "replicas": 1,
        "selector": "app=demo",
        "subsetStatuses": [{"name": "a", "x": 1}],
    }
    assert pruned_fields(ud, united_schema()) == ["status.selector", "status.subsetStatuses[0].x"]


# --------------------------------------------------------------------------------------------------
# 7. Samples
# --------------------------------------------------------------------------------------------------

EXPECTED_UD_SAMPLES = {
    "arch-patch.yaml",
    "bandwidth-packages.yaml",
    "canary-partitions.yaml",
    "cloneset.yaml",
    "elastic-pool.yaml",
    "kruise-v1alpha1.yaml",
    "kruise-v1beta1.yaml",
    "multicluster.yaml",
    "progressive-waves.yaml",
    "serverless-adaptive.yaml",
    "statefulset.yaml",
    "zones-percent.yaml",
}


def sample_id(path: Path) -> str:
    return str(path.relative_to(SAMPLES_DIR))


def test_sample_set() -> None:
    assert {path.name for path in ud_sample_paths()} == EXPECTED_UD_SAMPLES


@pytest.mark.parametrize("path", ud_sample_paths(), ids=sample_id)
def test_sample_header_and_api_version(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# "), "samples start with a comment saying what they show"
    assert f"united plan manifests/samples/{sample_id(path)}" in text
    docs = load_docs(path)
    assert docs, "empty sample"
    assert all(doc["kind"] == "UnitedDeployment" for doc in docs)
    expected = {
        "kruise-v1beta1.yaml": "apps.kruise.io/v1beta1",
        "kruise-v1alpha1.yaml": "apps.kruise.io/v1alpha1",
    }.get(path.name, "apps.united.io/v1alpha1")
    assert {doc["apiVersion"] for doc in docs} == {expected}


@pytest.mark.parametrize("path", ud_sample_paths(), ids=sample_id)
def test_sample_validates_against_its_crd(path: Path) -> None:
    for doc in ud_docs(path):
        schema = served_schema(doc["apiVersion"], doc["kind"])
        assert api_server_problems(doc, schema) == []
        assert pruned_fields(doc, schema) == [], "a field of the sample would be pruned"


@pytest.mark.parametrize("path", ud_sample_paths(), ids=sample_id)
def test_sample_follows_reference_rules(path: Path) -> None:
    for doc in ud_docs(path):
        assert reference_rule_violations(doc) == []


def test_samples_have_unique_names() -> None:
    names = [doc["metadata"]["name"] for path in ud_sample_paths() for doc in ud_docs(path)]
    assert len(names) == len(set(names))


def test_samples_cover_every_template_variant_and_mode() -> None:
    docs = [doc for path in ud_sample_paths() for doc in ud_docs(path)]
    variants = {next(iter(doc["spec"]["template"])) for doc in docs}
    assert variants == {
        "deploymentTemplate",
        "statefulSetTemplate",
        "advancedStatefulSetTemplate",
        "cloneSetTemplate",
    }
    modes = {replica_mode(doc) for doc in docs}
    assert modes == {"fixed", "elastic", "adaptive"}
    assert any(subset.get("patch") for doc in docs for subset in doc["spec"]["topology"]["subsets"])


HPA_SAMPLE = SAMPLES_DIR / "hpa" / "uniteddeployment-hpa.yaml"


def test_hpa_sample_targets_an_autoscalable_sample() -> None:
    text = HPA_SAMPLE.read_text(encoding="utf-8")
    assert text.startswith("# ")
    (hpa,) = load_docs(HPA_SAMPLE)
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["kind"] == "HorizontalPodAutoscaler"
    assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["apiVersion"], target["kind"]) == ("apps.united.io/v1alpha1", "UnitedDeployment")
    (ud,) = [doc for path in ud_sample_paths() for doc in ud_docs(path) if doc["metadata"]["name"] == target["name"]]
    # any replica count in [min, max] must keep the spec valid (as for an HPA's scale writes)
    for replicas in (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"], 137):
        scaled = copy.deepcopy(ud)
        scaled["spec"]["replicas"] = replicas
        assert reference_rule_violations(scaled) == [], replicas


def test_every_sample_file_is_known() -> None:
    # WorkloadSpread samples (workloadspread/) are tested in tests/unit/workloadspread/test_samples.py.
    workloadspread = set((SAMPLES_DIR / "workloadspread").glob("*.yaml"))
    assert set(sample_paths()) == set(ud_sample_paths()) | {HPA_SAMPLE} | workloadspread


# --------------------------------------------------------------------------------------------------
# OpenKruise's cross-field rules, enough to keep samples honest.
# The controller has its own implementation; this one only guards the sample manifests.
# --------------------------------------------------------------------------------------------------

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
PERCENT = re.compile(r"^([0-9]+)%$")
VARIANTS = (
    "statefulSetTemplate",
    "advancedStatefulSetTemplate",
    "cloneSetTemplate",
    "deploymentTemplate",
)


def selector_matches(selector: Obj, labels: dict[str, str]) -> bool:
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        return False
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expr in selector.get("matchExpressions", []):
        key, op, values = expr["key"], expr["operator"], expr.get("values", [])
        ok = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[op]
        if not ok:
            return False
    return True


def parse_replicas(value: Any, total: int | None) -> int | None:
    """A subset's replicas read as OpenKruise reads them; None on error."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    match = PERCENT.match(str(value))
    if total is None or match is None or not 0 <= int(match.group(1)) <= 100:
        return None
    return (total * int(match.group(1)) + 50) // 100


def replica_mode(ud: Obj) -> str:
    topology = ud["spec"].get("topology", {})
    if topology.get("scheduleStrategy", {}).get("type") == "Adaptive":
        return "adaptive"
    subsets = topology.get("subsets", [])
    if any("minReplicas" in s or "maxReplicas" in s for s in subsets):
        return "elastic"
    return "fixed"


def reference_rule_violations(ud: Obj) -> list[str]:
    spec = ud["spec"]
    errors: list[str] = []
    total: int | None = spec.get("replicas", 1)
    if total is not None and total < 0:
        errors.append("spec.replicas must be >= 0")
    selector = spec.get("selector") or {}
    if not selector.get("matchLabels"):
        errors.append("spec.selector needs matchLabels")
    variants = [name for name in VARIANTS if name in spec.get("template", {})]
    if len(variants) != 1:
        errors.append(f"exactly one template variant, got {variants}")
    for name in variants:
        template = spec["template"][name]
        wl_labels = template.get("metadata", {}).get("labels", {})
        if not selector_matches(selector, wl_labels):
            errors.append(f"{name}: selector does not match template labels")
        wl_spec = template["spec"]
        pod_labels = wl_spec.get("template", {}).get("metadata", {}).get("labels", {})
        if not selector_matches(selector, pod_labels):
            errors.append(f"{name}: selector does not match pod template labels")
        if "replicas" in wl_spec:
            errors.append(f"replicas in {name} will not be used")
        strategy = wl_spec.get("updateStrategy", {})
        if (
            name in ("statefulSetTemplate", "advancedStatefulSetTemplate")
            and strategy.get("type", "RollingUpdate") == "RollingUpdate"
            and "partition" in strategy.get("rollingUpdate", {})
        ):
            errors.append(f"{name}: rollingUpdate.partition must be unset")
    topology = spec.get("topology", {})
    subsets: list[Obj] = topology.get("subsets", [])
    names = [subset.get("name", "") for subset in subsets]
    for name in names:
        if not DNS1123_LABEL.match(name) or len(name) > 63:
            errors.append(f"invalid subset name {name!r}")
    if len(set(names)) != len(names):
        errors.append("duplicated subset name")
    strategy = topology.get("scheduleStrategy", {})
    adaptive = strategy.get("type") == "Adaptive"
    if adaptive and any("replicas" in subset for subset in subsets):
        errors.append("adaptive strategy forbids subset replicas")
    if strategy.get("adaptive", {}).get("reserveUnschedulablePods") and set(variants) & {
        "statefulSetTemplate",
        "advancedStatefulSetTemplate",
    }:
        errors.append("reservation mode needs a Deployment or CloneSet template")
    fixed = [subset for subset in subsets if "replicas" in subset]
    capacity = [s for s in subsets if "minReplicas" in s or "maxReplicas" in s]
    if fixed and capacity:
        errors.append("replicas and minReplicas/maxReplicas are mutually exclusive")
    elif capacity:
        if total is None:
            errors.append("spec.replicas required with minReplicas/maxReplicas")
        if sum("maxReplicas" in s for s in subsets) >= len(subsets):
            errors.append("at least one subset.maxReplicas must be empty")
        mins = [parse_replicas(s.get("minReplicas", 0), total) for s in subsets]
        maxes = [parse_replicas(s["maxReplicas"], total) for s in subsets if "maxReplicas" in s]
        if None in mins or None in maxes:
            errors.append("unparsable minReplicas/maxReplicas")
        else:
            for subset, low in zip(subsets, mins, strict=True):
                high = parse_replicas(subset.get("maxReplicas", 1_000_000), total)
                if low is not None and high is not None and low > high:
                    errors.append(f"{subset['name']}: minReplicas > maxReplicas")
    else:
        values = [parse_replicas(subset["replicas"], total) for subset in fixed]
        if None in values:
            errors.append("unparsable subset replicas")
        elif total is None:
            if len(fixed) != len(subsets):
                errors.append("all subsets need replicas when spec.replicas is unset")
        else:
            allocated = sum(v for v in values if v is not None)
            if allocated > total:
                errors.append(f"sum of subset replicas {allocated} > {total}")
            if fixed and len(fixed) == len(subsets) and allocated != total:
                errors.append(f"sum of subset replicas {allocated} != {total}")
    update = spec.get("updateStrategy", {})
    ours = ("Progressive",) if ud.get("apiVersion", "").startswith("apps.united.io/") else ()
    if update.get("type", "") not in ("Manual", "", *ours):
        errors.append("updateStrategy.type must be Manual (or, in our group, Progressive)")
    for key in update.get("manualUpdate", {}).get("partitions", {}):
        if key not in names:
            errors.append(f"subset {key} does not exist")
    return errors


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (_set("spec.template.deploymentTemplate.metadata.labels", {"app": "x"}),
         "deploymentTemplate: selector does not match template labels"),
        (_set("spec.template.deploymentTemplate.spec.template.metadata.labels", {}),
         "deploymentTemplate: selector does not match pod template labels"),
        (_set("spec.template.deploymentTemplate.spec.replicas", 3),
         "replicas in deploymentTemplate will not be used"),
        (_set("spec.template.statefulSetTemplate", {"spec": {}}),
         "exactly one template variant, got ['statefulSetTemplate', 'deploymentTemplate']"),
        (_set("spec.topology.subsets[1].maxReplicas", 5),
         "replicas and minReplicas/maxReplicas are mutually exclusive"),
        (_set("spec.topology.scheduleStrategy", {"type": "Adaptive"}),
         "adaptive strategy forbids subset replicas"),
        (_set("spec.updateStrategy.manualUpdate.partitions", {"zone-c": 1}),
         "subset zone-c does not exist"),
        (_set("spec.topology.subsets[1].replicas", 5), "sum of subset replicas 6 > 3"),
        (_set("spec.topology.subsets[1].replicas", "34%"), "sum of subset replicas 2 != 3"),
        (_set("spec.topology.subsets[1].name", "Zone_B"), "invalid subset name 'Zone_B'"),
    ],
)  # fmt: skip
def test_reference_rule_check_can_fail(mutate: Callable[[Obj], None], expected: str) -> None:
    ud = minimal_ud()
    assert reference_rule_violations(ud) == []
    mutate(ud)
    assert expected in reference_rule_violations(ud)


def test_reference_rule_check_elastic_mode() -> None:
    ud = minimal_ud()
    subsets = ud["spec"]["topology"]["subsets"]
    del subsets[0]["replicas"]
    subsets[0]["maxReplicas"] = 2
    assert reference_rule_violations(ud) == []
    subsets[1]["maxReplicas"] = "50%"
    assert "at least one subset.maxReplicas must be empty" in reference_rule_violations(ud)
    del subsets[1]["maxReplicas"]
    subsets[0]["minReplicas"] = 3
    assert "zone-a: minReplicas > maxReplicas" in reference_rule_violations(ud)


def test_the_status_is_one_atomic_field_for_the_api_servers_field_manager() -> None:
    """Only the controller writes the status (a merge patch replaces lists whole whatever their
    type): tracking its fields one by one bought nothing and cost a record of every field, item
    and condition in ``managedFields``, handled on every write and watch event of the object."""
    for name, version in all_versions():
        status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
        assert status["x-kubernetes-map-type"] == "atomic", name
