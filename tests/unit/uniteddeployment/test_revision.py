"""Revisions: FNV-1 over Go-style JSON of the template, mapped through Kubernetes' safe alphabet."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from united.uniteddeployment import revision
from united.uniteddeployment.admission import admit
from united.uniteddeployment.model import CLONE_SET, DEPLOYMENT, STATEFUL_SET, Template

Doc = dict[str, Any]


def template(variant: str = DEPLOYMENT, image: str = "nginx:1.27") -> Template:
    return Template(
        variant=variant,
        metadata={"labels": {"app": "web"}},
        spec={
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": image}]},
            },
        },
    )


# FNV-1 (not 1a), 32 bits: the vectors of Go's hash/fnv tests (golden32) and FNV's reference values


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", 0x811C9DC5),
        (b"a", 0x050C5D7E),
        (b"ab", 0x70772D38),
        (b"abc", 0x439C2F4B),
        (b"deno", 0x6ED5A7A9),
        (b"foobar", 0x31F0B262),
    ],
)
def test_fnv1_32_vectors(data: bytes, expected: int) -> None:
    assert revision.fnv1_32(data) == expected


def test_fnv1_is_not_fnv1a() -> None:
    assert revision.fnv1_32(b"a") != 0xE40C292C  # FNV-1a("a")


# Text: decimal digits mapped through bcdfghjklmnpqrstvwxz2456789 by byte value mod 27

DIGIT_TO_CHAR = {"0": "4", "1": "5", "2": "6", "3": "7", "4": "8", "5": "9", "6": "b", "7": "c", "8": "d", "9": "f"}


def test_alphabet_is_kubernetes_safe_encoding() -> None:
    assert revision.ALPHABET == "bcdfghjklmnpqrstvwxz2456789"
    assert {d: revision.ALPHABET[ord(d) % 27] for d in "0123456789"} == DIGIT_TO_CHAR


@pytest.mark.parametrize(("payload", "count"), [(b"", 0), (b"a", 0), (b"abc", 7), (b'{"x":1}', 12)])
def test_hash_text_maps_the_decimal_hash_of_data_plus_collision_count(payload: bytes, count: int) -> None:
    digits = str(revision.fnv1_32(payload + str(count).encode()))
    assert revision.hash_text(payload, count) == "".join(DIGIT_TO_CHAR[d] for d in digits)


def test_hash_text_vector() -> None:
    # FNV-1 ends with "xor the last byte", so FNV-1("0") = FNV-1("a") ^ 0x61 ^ 0x30 (Go's golden32 vector for "a").
    h = 0x050C5D7E ^ ord("a") ^ ord("0")
    assert h == 84696367
    assert revision.hash_text(b"") == "d8bfb7bc"


@settings(max_examples=100, derandomize=True, database=None)
@given(payload=st.binary(max_size=64), count=st.integers(min_value=0, max_value=1000))
def test_hash_text_uses_only_the_safe_alphabet(payload: bytes, count: int) -> None:
    text = revision.hash_text(payload, count)
    assert 1 <= len(text) <= 10
    assert set(text) <= set("456789bcdf")


# Data: Go's encoding/json of generic maps


def test_data_exact_bytes() -> None:
    t = Template(variant=DEPLOYMENT, metadata={"labels": {"b": "2", "a": "1"}}, spec={"z": [3, 1], "a": True})
    assert revision.data(t) == (
        b'{"spec":{"template":{"$patch":"replace","deploymentTemplate":'
        b'{"metadata":{"labels":{"a":"1","b":"2"}},"spec":{"a":true,"z":[3,1]}}}}}'
    )


def test_go_json_sorts_keys_at_every_level_and_is_compact() -> None:
    value = {"b": {"y": 1, "x": [{"d": None, "c": 1.5}]}, "a": "s"}
    assert revision.go_json(value) == b'{"a":"s","b":{"x":[{"c":1.5,"d":null}],"y":1}}'


def test_go_json_sorts_keys_by_bytes() -> None:
    assert revision.go_json({"b": 1, "B": 2, "a": 3, "$x": 4, "é": 5}) == '{"$x":4,"B":2,"a":3,"b":1,"é":5}'.encode()


@pytest.mark.parametrize(
    ("text", "encoded"),
    [
        ("<script>", "\\u003cscript\\u003e"),
        ("a&b", "a\\u0026b"),
        ("line\u2028sep\u2029", "line\\u2028sep\\u2029"),
        ('quote" back\\', 'quote\\" back\\\\'),
        ("tab\tnl\ncr\r", "tab\\tnl\\ncr\\r"),
        ("\x01", "\\u0001"),
        ("é日本", "é日本"),
    ],
)
def test_go_json_string_escaping(text: str, encoded: str) -> None:
    assert revision.go_json({"k": text}) == ('{"k":"' + encoded + '"}').encode()


def test_non_ascii_is_utf8_not_escaped() -> None:
    assert revision.go_json("ü") == b'"\xc3\xbc"'


# Names


def test_name_is_ud_name_dash_hash_text() -> None:
    t = template()
    assert revision.name("web", t) == "web-" + revision.hash_text(revision.data(t))


def test_name_is_stable() -> None:
    """Pinned: changing it renames every revision (and rolls every pod) on upgrade."""
    assert revision.name("web", template()) == revision.name("web", copy.deepcopy(template()))
    assert revision.name("web", template()) == "web-6cb4bff794"


def test_key_order_of_the_input_does_not_matter() -> None:
    a = template()
    b = Template(
        variant=DEPLOYMENT,
        metadata=dict(reversed(list(a.metadata.items()))),
        spec=json.loads(json.dumps(a.spec, sort_keys=True)),
    )
    b.spec["template"]["spec"]["containers"][0] = {"image": "nginx:1.27", "name": "main"}
    assert revision.name("web", a) == revision.name("web", b)


def test_collision_count_changes_the_name() -> None:
    names = {revision.name("web", template(), n) for n in range(5)}
    assert len(names) == 5
    assert revision.name("web", template(), 0) == revision.name("web", template())


def test_long_ud_names_are_cut_at_223() -> None:
    name = revision.name("w" * 300, template())
    assert name.startswith("w" * 223 + "-")
    assert name.count("w") == 223


@pytest.mark.parametrize(
    "other",
    [
        template(image="nginx:1.28"),
        template(variant=STATEFUL_SET),
        template(variant=CLONE_SET),
        Template(variant=DEPLOYMENT, metadata={"labels": {"app": "web", "x": "y"}}, spec=template().spec),
    ],
)
def test_any_template_change_changes_the_name(other: Template) -> None:
    assert revision.name("web", other) != revision.name("web", template())


# Only the template is revisioned


def manifest() -> Doc:
    t = template()
    return {
        "apiVersion": "apps.united.io/v1alpha1",
        "kind": "UnitedDeployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 4,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {DEPLOYMENT: {"metadata": t.metadata, "spec": t.spec}},
            "topology": {"subsets": [{"name": "a"}, {"name": "b"}]},
        },
    }


def _name(doc: Doc) -> str:
    ud = admit(doc)
    assert ud.spec.template is not None
    return revision.name(ud.name, ud.spec.template)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("replicas", 40),
        ("revisionHistoryLimit", 2),
        ("topology", {"subsets": [{"name": "c", "replicas": 1}, {"name": "a"}]}),
        (
            "topology",
            {
                "subsets": [
                    {"name": "a", "nodeSelectorTerm": {"matchExpressions": [{"key": "z", "operator": "Exists"}]}},
                    {"name": "b", "tolerations": [{"key": "k", "operator": "Exists"}], "patch": {"metadata": {}}},
                ]
            },
        ),
        ("updateStrategy", {"type": "Manual", "manualUpdate": {"partitions": {"a": 1}}}),
        ("selector", {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "app", "operator": "Exists"}]}),
    ],
)
def test_only_the_template_is_revisioned(field: str, value: Any) -> None:
    changed = manifest()
    changed["spec"][field] = value
    assert _name(changed) == _name(manifest())


def test_template_change_in_a_manifest_changes_the_revision() -> None:
    changed = manifest()
    changed["spec"]["template"][DEPLOYMENT]["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    assert _name(changed) != _name(manifest())


# same(): semantic equality with a Go controller's stored Data


def go_stored(t: Template) -> Doc:
    """What a Go controller could have stored: zero values its structs emit, keys in another order."""
    data: Doc = json.loads(revision.data(t))
    body = data["spec"]["template"][t.variant]
    body["metadata"]["creationTimestamp"] = None
    body["spec"]["template"]["metadata"]["creationTimestamp"] = None
    body["spec"]["template"]["spec"]["containers"][0]["resources"] = {}
    body["spec"]["template"]["spec"]["containers"][0]["terminationMessagePath"] = ""
    body["spec"]["strategy"] = {}
    body["spec"]["template"]["spec"]["volumes"] = []
    return data


@pytest.mark.parametrize("encode", [lambda d: d, json.dumps, lambda d: json.dumps(d, indent=2).encode()])
def test_same_ignores_encoding_and_go_zero_values(encode: Any) -> None:
    t = template()
    assert revision.same(encode(go_stored(t)), t)
    assert revision.same(revision.data(t), t)


def test_same_detects_a_real_difference() -> None:
    t = template()
    assert not revision.same(go_stored(template(image="nginx:1.28")), t)
    assert not revision.same(revision.data(template(variant=STATEFUL_SET)), t)


def test_same_keeps_list_order() -> None:
    spec = copy.deepcopy(template().spec)
    spec["template"]["spec"]["containers"].append({"name": "side", "image": "busybox"})
    t = Template(variant=DEPLOYMENT, metadata={}, spec=spec)
    stored: Doc = json.loads(revision.data(t))
    containers = stored["spec"]["template"][DEPLOYMENT]["spec"]["template"]["spec"]["containers"]
    containers.reverse()
    assert not revision.same(stored, t)


def test_a_revision_gives_back_its_template_for_its_kind_only() -> None:
    template = Template("deploymentTemplate", {"labels": {"app": "web"}}, {"template": {"spec": {"containers": []}}})
    stored = revision.data(template)
    assert revision.template_of(stored, "deploymentTemplate") == template
    assert revision.template_of(json.loads(stored), "deploymentTemplate") == template
    assert revision.template_of(stored, "statefulSetTemplate") is None
    assert revision.template_of({"spec": "garbage"}, "deploymentTemplate") is None
