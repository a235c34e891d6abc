"""The CRDs' CEL rules (``x-kubernetes-validations``), evaluated with cel-python as the API server
evaluates them: ``self`` is the node that carries the rule, ``oldSelf`` its stored value on an
update. Each rule accepts the good values and refuses the bad ones, and for a WorkloadSpread the
validation module refuses the same bad spec with the same message (the rules repeat it, so
servers without them report the same in status)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import celpy
import pytest

from tests.unit.test_crds import load_generator
from united import data
from united.api.crdrules import RULES, for_server, without_rules
from united.api.document import Json
from united.api.field import ManifestError
from united.api.groups import GROUP, KRUISE_GROUP
from united.workloadspread.admission import admit
from united.workloadspread.validation import validate_update

_ENV = celpy.Environment()
RULE_SETS: dict[str, list[Json]] = load_generator().CEL_RULES


def holds(rule: Json, value: Any, old: Any = None) -> bool:
    """Whether ``rule`` passes for ``self`` = ``value`` (and ``oldSelf`` = ``old`` when given)."""
    activation = {"self": celpy.json_to_cel(value)}  # type: ignore[attr-defined]
    if old is not None:
        activation["oldSelf"] = celpy.json_to_cel(old)  # type: ignore[attr-defined]
    result = _ENV.program(_ENV.compile(rule["rule"])).evaluate(activation)
    assert not isinstance(result, celpy.CELEvalError), (rule["rule"], result)  # type: ignore[attr-defined]
    return bool(result)


def subset(name: str, **fields: Any) -> Json:
    return {"name": name, **fields}


TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}

CASES: dict[str, tuple[list[Any], list[Any]]] = {
    # node: (values every rule of the node accepts, values one of them refuses)
    "ws.subsets": (
        [[subset("a")], [subset("a"), subset("b"), subset("c")]],
        [[subset("a"), subset("a")], [subset("a"), subset("b"), subset("a")]],
    ),
    "ws.targetRef": (
        [TARGET, {**TARGET, "kind": "CloneSet", "apiVersion": "apps.kruise.io/v1alpha1"},
         {**TARGET, "kind": "StatefulSet"}, {**TARGET, "kind": "Job", "apiVersion": "batch/v1"}],
        [{**TARGET, "kind": "Pod"}, {**TARGET, "kind": "DaemonSet"}],
    ),
    "ws.subset": (
        [subset("a"), subset("a", maxReplicas=3), subset("a", minReplicas=1, maxReplicas=3),
         subset("a", minReplicas=3, maxReplicas=3), subset("a", minReplicas="10%", maxReplicas="50%"),
         subset("a", minReplicas=0), subset("a", maxReplicas=0)],
        [subset("a", maxReplicas=-1), subset("a", minReplicas=-2), subset("a", minReplicas=-1, maxReplicas="5%")],
    ),
    "ud.subset": (
        [subset("a"), subset("a", replicas=2), subset("a", weight=3), subset("a", replicas="50%")],
        [subset("a", replicas=2, weight=1), subset("a", replicas="10%", weight=0)],
    ),
    "ud.template": (
        [{"deploymentTemplate": {}}, {"statefulSetTemplate": {}}, {"cloneSetTemplate": {}},
         {"advancedStatefulSetTemplate": {}}],
        [{}, {"deploymentTemplate": {}, "cloneSetTemplate": {}}],
    ),
}  # fmt: skip


def _creation_rules(node: str) -> list[Json]:
    return [r for r in RULE_SETS[node] if "oldSelf" not in r["rule"]]


def test_every_rule_is_covered() -> None:
    assert sorted(CASES) == sorted(RULE_SETS)


@pytest.mark.parametrize("node", sorted(CASES))
def test_each_rule_accepts_the_good_and_refuses_the_bad(node: str) -> None:
    good, bad = CASES[node]
    rules = _creation_rules(node)
    for value in good:
        assert all(holds(rule, value) for rule in rules), (node, value)
    for value in bad:
        assert not all(holds(rule, value) for rule in rules), (node, value)


def test_the_target_may_change_its_version_but_not_its_kind_or_name() -> None:
    [rule] = [r for r in RULE_SETS["ws.targetRef"] if "oldSelf" in r["rule"]]
    assert holds(rule, {**TARGET, "apiVersion": "apps/v1beta2"}, TARGET)
    assert not holds(rule, {**TARGET, "kind": "ReplicaSet"}, TARGET)
    assert not holds(rule, {**TARGET, "name": "other"}, TARGET)


def spread(spec: Json) -> Json:
    return {"apiVersion": f"{GROUP}/v1alpha1", "kind": "WorkloadSpread",
            "metadata": {"name": "ws", "namespace": "team"}, "spec": spec}  # fmt: skip


def _messages(obj: Json) -> list[str]:
    try:
        admit(obj)
    except ManifestError as e:
        return [str(error) for error in e.errors]
    return []


@pytest.mark.parametrize(
    ("node", "spec", "path"),
    [
        ("ws.subsets", {"targetRef": TARGET, "subsets": [subset("a"), subset("a")]}, "spec.subsets[1].name"),
        ("ws.targetRef", {"targetRef": {**TARGET, "kind": "Pod"}, "subsets": [subset("a")]}, "spec.targetRef"),
        ("ws.subset", {"targetRef": TARGET, "subsets": [subset("a", maxReplicas=-1)]}, "spec.subsets[0].maxReplicas"),
        ("ws.subset", {"targetRef": TARGET, "subsets": [subset("a", minReplicas=-1), subset("b")]},
         "spec.subsets[0].minReplicas"),
    ],
)  # fmt: skip
def test_the_validation_module_refuses_the_same_spreads_with_the_same_message(node: str, spec: Json, path: str) -> None:
    messages = _messages(spread(spec))
    refused = [r["message"] for r in RULE_SETS[node] if any(r["message"] in m for m in messages)]
    assert refused and any(m.startswith(path) for m in messages), messages


def test_the_validation_module_refuses_a_target_change_as_the_rule_does() -> None:
    old = admit(spread({"targetRef": TARGET, "subsets": [subset("a")]}))
    new = admit(spread({"targetRef": {**TARGET, "name": "other"}, "subsets": [subset("a")]}))
    [rule] = [r for r in RULE_SETS["ws.targetRef"] if "oldSelf" in r["rule"]]
    assert any(rule["message"] in str(e) for e in validate_update(old, new))


def test_a_subset_name_over_63_characters_is_refused_by_both() -> None:
    assert any("spec.subsets[0].name" in m for m in _messages(spread({"targetRef": TARGET,
                                                                      "subsets": [subset("a" * 64)]})))  # fmt: skip
    assert not _messages(spread({"targetRef": TARGET, "subsets": [subset("a" * 63)]}))


def _crds() -> Iterator[Json]:
    for group in (GROUP, KRUISE_GROUP):
        yield from (d for d in data.controller(group) if d["kind"] == "CustomResourceDefinition")


def test_servers_before_1_25_get_the_crds_without_rules_and_newer_ones_as_they_are() -> None:
    docs = list(_crds())
    assert RULES in str(docs)
    assert for_server(docs, (1, 37)) == docs and for_server(docs, None) == docs
    old = for_server(docs, (1, 24))
    assert RULES not in str(old)
    assert old == [without_rules(d) for d in docs]
    stripped = copy.deepcopy(docs)
    assert for_server(stripped, (1, 20)) == old and stripped == docs, "the input is not changed"
