"""Rendering children: golden files for every kind, plus focused assertions on each rule.

Regenerate the goldens with
``UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/uniteddeployment/render`` and review the
diff by eye before committing it.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from united.uniteddeployment import revision
from united.uniteddeployment.admission import admit
from united.uniteddeployment.allocation import allocate
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import (
    ADVANCED_STATEFUL_SET,
    CLONE_SET,
    DEPLOYMENT,
    STATEFUL_SET,
    Spec,
    Subset,
    Template,
    UnitedDeployment,
)
from united.uniteddeployment.render import (
    KINDS,
    Rendered,
    child_selector,
    kind_of,
    owner_reference,
    render,
    spec_digest,
)

Doc = dict[str, Any]
GOLDEN = Path(__file__).parent / "golden"
UID = "6f1c2a3e-8d4b-4c5a-9e7f-0a1b2c3d4e5f"
ZONE = "topology.kubernetes.io/zone"


def pod_template() -> Doc:
    """A pod template with a required node affinity of two terms, a toleration, env and resources."""
    return {
        "metadata": {"labels": {"app": "web", "tier": "frontend"}, "annotations": {"example.com/scrape": "true"}},
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]},
                            {"matchExpressions": [{"key": "example.com/pool", "operator": "Exists"}]},
                        ]
                    }
                }
            },
            "tolerations": [
                {"key": "example.com/dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}
            ],
            "containers": [
                {
                    "name": "main",
                    "image": "nginx:1.27",
                    "env": [{"name": "MODE", "value": "production"}],
                    "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
                }
            ],
        },
    }


WORKLOAD_SPEC: dict[str, Doc] = {
    DEPLOYMENT: {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}}},
    STATEFUL_SET: {"serviceName": "web", "podManagementPolicy": "Parallel"},
    ADVANCED_STATEFUL_SET: {
        "serviceName": "web",
        "updateStrategy": {"rollingUpdate": {"podUpdatePolicy": "InPlaceIfPossible", "maxUnavailable": 1}},
    },
    CLONE_SET: {"updateStrategy": {"type": "InPlaceIfPossible", "maxUnavailable": 1}},
}


def manifest(variant: str = DEPLOYMENT, api_version: str = "apps.united.io/v1alpha1") -> Doc:
    """The fixed manifest every golden renders: 5 replicas over zone-a (2, tolerations) and zone-b (3, patch)."""
    return {
        "apiVersion": api_version,
        "kind": "UnitedDeployment",
        "metadata": {"name": "web", "namespace": "shop", "uid": UID},
        "spec": {
            "replicas": 5,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                variant: {
                    "metadata": {
                        "labels": {"app": "web", "team": "shop"},
                        "annotations": {"example.com/owner": "shop-team"},
                    },
                    "spec": {
                        "selector": {"matchLabels": {"app": "web"}},
                        **copy.deepcopy(WORKLOAD_SPEC[variant]),
                        "template": pod_template(),
                    },
                }
            },
            "topology": {
                "subsets": [
                    {
                        "name": "zone-a",
                        "nodeSelectorTerm": {
                            "matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-a"]}],
                            "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}],
                        },
                        "tolerations": [{"key": "example.com/zone-a", "operator": "Exists", "effect": "NoSchedule"}],
                        "replicas": 2,
                    },
                    {
                        "name": "zone-b",
                        "nodeSelectorTerm": {
                            "matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone-b"]}],
                        },
                        "patch": {
                            "spec": {
                                "containers": [
                                    {
                                        "name": "main",
                                        "env": [{"name": "ZONE", "value": "b"}],
                                        "resources": {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}},
                                    }
                                ]
                            }
                        },
                    },
                ]
            },
            "updateStrategy": {"type": "Manual", "manualUpdate": {"partitions": {"zone-a": 1, "zone-b": 2}}},
        },
    }


def render_all(ud: UnitedDeployment) -> list[tuple[str, Rendered]]:
    """Every subset's child, as ``united render`` would produce them."""
    assert ud.spec.template is not None
    plan = allocate(ud.spec)
    name = revision.name(ud.name, ud.spec.template)
    return [
        (
            s.name,
            render(
                ud,
                subset=s,
                replicas=plan[s.name].replicas,
                partition=plan[s.name].partition,
                revision=name,
                keys=Keys(ud.group),
            ),
        )
        for s in ud.spec.subsets
    ]


def render_one(ud: UnitedDeployment, subset: str = "zone-a", *, replicas: int = 2, partition: int = 1) -> Rendered:
    s = ud.spec.subset(subset)
    assert s is not None
    return render(ud, subset=s, replicas=replicas, partition=partition, revision="web-rev", keys=Keys(ud.group))


# Golden files

GOLDEN_CASES = {
    "deployment": (DEPLOYMENT, "apps.united.io/v1alpha1"),
    "statefulset": (STATEFUL_SET, "apps.united.io/v1alpha1"),
    "advanced-statefulset-kruise": (ADVANCED_STATEFUL_SET, "apps.kruise.io/v1beta1"),
    "cloneset": (CLONE_SET, "apps.united.io/v1alpha1"),
    "cloneset-kruise": (CLONE_SET, "apps.kruise.io/v1alpha1"),
}


def golden_documents(case: str) -> list[Doc]:
    variant, api_version = GOLDEN_CASES[case]
    ud = admit(manifest(variant, api_version))
    return [{"subset": name, "partitionApplied": r.partition_applied, "child": r.object} for name, r in render_all(ud)]


def dump(docs: list[Doc], case: str) -> str:
    variant, api_version = GOLDEN_CASES[case]
    header = (
        "# Golden: children of the fixed manifest in tests/unit/uniteddeployment/render/test_render.py"
        f" ({variant}, {api_version}).\n"
        "# Regenerate: UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/uniteddeployment/render"
        " -- then review the diff by eye.\n"
    )
    return header + yaml.safe_dump_all(docs, sort_keys=False, default_flow_style=False, width=200)


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_golden(case: str) -> None:
    path = GOLDEN / f"{case}.yaml"
    actual = golden_documents(case)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(dump(actual, case))
    assert path.exists(), f"{path} is missing: run with UPDATE_GOLDEN=1 and review it"
    expected = list(yaml.safe_load_all(path.read_text()))
    # Round-trip through JSON so tuples and other Python-only shapes would show up as differences.
    actual = json.loads(json.dumps(actual))
    if expected != actual:
        diff = difflib.unified_diff(
            yaml.safe_dump_all(expected, sort_keys=True).splitlines(),
            yaml.safe_dump_all(actual, sort_keys=True).splitlines(),
            "golden",
            "rendered",
            lineterm="",
        )
        pytest.fail(f"{path.name} differs (UPDATE_GOLDEN=1 regenerates it):\n" + "\n".join(diff))


def test_every_golden_file_is_a_case() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.yaml")) == sorted(GOLDEN_CASES)


def test_goldens_cover_every_kind() -> None:
    assert {variant for variant, _ in GOLDEN_CASES.values()} == set(KINDS)


# Kind identity and metadata


@pytest.mark.parametrize(
    ("variant", "api_version", "kind"),
    [
        (DEPLOYMENT, "apps/v1", "Deployment"),
        (STATEFUL_SET, "apps/v1", "StatefulSet"),
        (ADVANCED_STATEFUL_SET, "apps.kruise.io/v1beta1", "StatefulSet"),
        (CLONE_SET, "apps.kruise.io/v1alpha1", "CloneSet"),
    ],
)
def test_kind_identity(variant: str, api_version: str, kind: str) -> None:
    child = render_one(admit(manifest(variant))).object
    assert (child["apiVersion"], child["kind"]) == (api_version, kind)
    assert kind_of(admit(manifest(variant))).variant == variant


def test_metadata() -> None:
    ud = admit(manifest(STATEFUL_SET))
    meta = render_one(ud).object["metadata"]
    assert meta["generateName"] == "web-zone-a-"
    assert meta["namespace"] == "shop"
    assert meta["labels"] == {
        "app": "web",
        "team": "shop",
        "apps.united.io/controller-revision-hash": "web-rev",
        "apps.united.io/subset-name": "zone-a",
    }
    assert set(meta["annotations"]) == {
        "example.com/owner",
        "apps.united.io/subset-patch",
        "apps.united.io/spec-hash",
    }
    assert meta["annotations"]["example.com/owner"] == "shop-team"
    assert meta["annotations"]["apps.united.io/subset-patch"] == ""
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "apps.united.io/v1alpha1",
            "kind": "UnitedDeployment",
            "name": "web",
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert meta["ownerReferences"] == [owner_reference(ud)]
    assert "name" not in meta


def test_no_namespace_when_the_manifest_has_none() -> None:
    doc = manifest()
    del doc["metadata"]["namespace"], doc["metadata"]["uid"]
    meta = render_one(admit(doc)).object["metadata"]
    assert "namespace" not in meta
    assert meta["ownerReferences"][0]["uid"] == ""


def test_subset_patch_annotation_is_compact_sorted_json() -> None:
    meta = render_one(admit(manifest()), "zone-b").object["metadata"]
    assert meta["annotations"]["apps.united.io/subset-patch"] == (
        '{"spec":{"containers":[{"env":[{"name":"ZONE","value":"b"}],"name":"main",'
        '"resources":{"limits":{"memory":"1Gi"},"requests":{"cpu":"1"}}}]}}'
    )


def test_our_labels_win_over_template_labels() -> None:
    doc = manifest()
    doc["spec"]["template"][DEPLOYMENT]["metadata"]["labels"]["apps.united.io/subset-name"] = "other"
    doc["spec"]["template"][DEPLOYMENT]["metadata"]["labels"]["apps.united.io/controller-revision-hash"] = "old"
    labels = render_one(admit(doc)).object["metadata"]["labels"]
    assert labels["apps.united.io/subset-name"] == "zone-a"
    assert labels["apps.united.io/controller-revision-hash"] == "web-rev"


def test_selector_match_labels_are_child_labels() -> None:
    doc = manifest()
    doc["spec"]["selector"]["matchLabels"]["tier"] = "frontend"
    doc["spec"]["template"][DEPLOYMENT]["metadata"]["labels"]["tier"] = "frontend"
    labels = render_one(admit(doc)).object["metadata"]["labels"]
    assert labels["tier"] == "frontend"


# Spec


def test_child_selector_is_the_ud_selector_plus_the_subset_label() -> None:
    doc = manifest()
    doc["spec"]["selector"]["matchExpressions"] = [{"key": "tier", "operator": "In", "values": ["frontend"]}]
    doc["spec"]["template"][DEPLOYMENT]["metadata"]["labels"]["tier"] = "frontend"
    ud = admit(doc)
    expected = {
        "matchLabels": {"app": "web", "apps.united.io/subset-name": "zone-a"},
        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["frontend"]}],
    }
    assert render_one(ud).object["spec"]["selector"] == expected
    assert child_selector(ud, "zone-a", Keys()) == expected


def test_pod_template_labels_keep_theirs_and_add_subset_and_revision() -> None:
    pod = render_one(admit(manifest())).object["spec"]["template"]
    assert pod["metadata"]["labels"] == {
        "app": "web",
        "tier": "frontend",
        "apps.united.io/subset-name": "zone-a",
        "apps.united.io/controller-revision-hash": "web-rev",
    }
    assert pod["metadata"]["annotations"] == {"example.com/scrape": "true"}


def test_pod_template_without_metadata_gets_our_labels() -> None:
    ud = admit(manifest())
    template = ud.spec.template
    assert template is not None
    spec = copy.deepcopy(template.spec)
    del spec["template"]["metadata"]
    bare = Template(variant=DEPLOYMENT, metadata={}, spec=spec)
    ud = _with(ud, templates=(bare,))
    pod = render_one(ud).object["spec"]["template"]
    assert pod["metadata"] == {
        "labels": {"apps.united.io/subset-name": "zone-a", "apps.united.io/controller-revision-hash": "web-rev"}
    }


def test_affinity_is_anded_into_every_term_and_match_fields_are_ignored() -> None:
    pod = render_one(admit(manifest())).object["spec"]["template"]["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    zone = {"key": ZONE, "operator": "In", "values": ["zone-a"]}
    assert terms == [
        {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}, zone]},
        {"matchExpressions": [{"key": "example.com/pool", "operator": "Exists"}, zone]},
    ]
    assert "matchFields" not in json.dumps(pod)


def test_tolerations_are_appended_after_the_templates() -> None:
    pod = render_one(admit(manifest())).object["spec"]["template"]["spec"]
    assert pod["tolerations"] == [
        {"key": "example.com/dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"},
        {"key": "example.com/zone-a", "operator": "Exists", "effect": "NoSchedule"},
    ]


def test_patch_is_applied_last() -> None:
    pod = render_one(admit(manifest()), "zone-b").object["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["resources"] == {"requests": {"cpu": "1", "memory": "256Mi"}, "limits": {"memory": "1Gi"}}
    assert container["env"] == [{"name": "ZONE", "value": "b"}, {"name": "MODE", "value": "production"}]
    assert pod["tolerations"] == [
        {"key": "example.com/dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}
    ]


def test_patch_replaces_what_placement_wrote() -> None:
    doc = manifest()
    doc["spec"]["topology"]["subsets"][0]["patch"] = {"spec": {"tolerations": [{"key": "only", "operator": "Exists"}]}}
    pod = render_one(admit(doc)).object["spec"]["template"]["spec"]
    assert pod["tolerations"] == [{"key": "only", "operator": "Exists"}]


def test_replicas_are_the_allocation_and_template_replicas_are_dropped() -> None:
    ud = admit(manifest())
    assert render_one(ud, replicas=7).object["spec"]["replicas"] == 7
    template = ud.spec.template
    assert template is not None
    with_replicas = Template(variant=DEPLOYMENT, metadata=template.metadata, spec={**template.spec, "replicas": 99})
    assert render_one(_with(ud, templates=(with_replicas,)), replicas=3).object["spec"]["replicas"] == 3


def test_workload_spec_fields_are_copied() -> None:
    spec = render_one(admit(manifest(STATEFUL_SET))).object["spec"]
    assert spec["serviceName"] == "web"
    assert spec["podManagementPolicy"] == "Parallel"


# Partitions


def test_statefulset_partition_sets_rolling_update() -> None:
    r = render_one(admit(manifest(STATEFUL_SET)), partition=1)
    assert r.partition_applied
    assert r.object["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}


def test_advanced_statefulset_partition_leaves_an_empty_type_empty() -> None:
    r = render_one(admit(manifest(ADVANCED_STATEFUL_SET)), partition=1)
    assert r.partition_applied
    assert r.object["spec"]["updateStrategy"] == {
        "rollingUpdate": {"podUpdatePolicy": "InPlaceIfPossible", "maxUnavailable": 1, "partition": 1}
    }


@pytest.mark.parametrize("variant", [STATEFUL_SET, ADVANCED_STATEFUL_SET])
def test_explicit_rolling_update_keeps_its_type(variant: str) -> None:
    doc = manifest(variant)
    doc["spec"]["template"][variant]["spec"]["updateStrategy"] = {"type": "RollingUpdate"}
    r = render_one(admit(doc), partition=2)
    assert r.partition_applied
    assert r.object["spec"]["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}


@pytest.mark.parametrize("variant", [STATEFUL_SET, ADVANCED_STATEFUL_SET])
def test_on_delete_is_untouched(variant: str) -> None:
    doc = manifest(variant)
    doc["spec"]["template"][variant]["spec"]["updateStrategy"] = {"type": "OnDelete"}
    r = render_one(admit(doc), partition=1)
    assert not r.partition_applied
    assert r.object["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_cloneset_partition_is_update_strategy_partition() -> None:
    r = render_one(admit(manifest(CLONE_SET)), partition=1)
    assert r.partition_applied
    assert r.object["spec"]["updateStrategy"] == {"type": "InPlaceIfPossible", "maxUnavailable": 1, "partition": 1}
    assert "rollingUpdate" not in r.object["spec"]["updateStrategy"]


def test_cloneset_without_update_strategy_gets_one() -> None:
    doc = manifest(CLONE_SET)
    del doc["spec"]["template"][CLONE_SET]["spec"]["updateStrategy"]
    r = render_one(admit(doc), partition=0)
    assert r.partition_applied
    assert r.object["spec"]["updateStrategy"] == {"partition": 0}


def test_deployment_has_no_partition() -> None:
    r = render_one(admit(manifest(DEPLOYMENT)), partition=1)
    assert not r.partition_applied
    assert "partition" not in json.dumps(r.object)
    assert "updateStrategy" not in r.object["spec"]
    assert r.object["spec"]["strategy"] == WORKLOAD_SPEC[DEPLOYMENT]["strategy"]


@pytest.mark.parametrize(
    ("variant", "child_spec", "expected"),
    [
        (STATEFUL_SET, {"updateStrategy": {"rollingUpdate": {"partition": 3}}}, 3),
        (STATEFUL_SET, {"updateStrategy": {"type": "RollingUpdate"}}, 0),
        (STATEFUL_SET, {}, 0),
        (STATEFUL_SET, {"updateStrategy": {"type": "OnDelete", "rollingUpdate": {"partition": 3}}}, None),
        (STATEFUL_SET, {"updateStrategy": {"rollingUpdate": {"partition": "3"}}}, 0),
        (ADVANCED_STATEFUL_SET, {"updateStrategy": {"rollingUpdate": {"partition": 2}}}, 2),
        (CLONE_SET, {"updateStrategy": {"partition": 2}}, 2),
        (CLONE_SET, {"replicas": 5, "updateStrategy": {"partition": "30%"}}, 2),
        (CLONE_SET, {"replicas": 5, "updateStrategy": {"partition": "bad"}}, 0),
        (CLONE_SET, {}, 0),
        (DEPLOYMENT, {"updateStrategy": {"partition": 2}}, None),
    ],
)
def test_read_partition(variant: str, child_spec: Doc, expected: int | None) -> None:
    assert KINDS[variant].read_partition({"spec": child_spec}) == expected


@pytest.mark.parametrize("variant", sorted(KINDS))
def test_read_partition_reads_what_set_partition_wrote(variant: str) -> None:
    r = render_one(admit(manifest(variant)), partition=1)
    assert KINDS[variant].read_partition(r.object) == (1 if r.partition_applied else None)


# The spec-hash annotation


def _hash(ud: UnitedDeployment, subset: str = "zone-a", **kw: Any) -> str:
    value: str = render_one(ud, subset, **kw).object["metadata"]["annotations"]["apps.united.io/spec-hash"]
    return value


def _doc_hash(doc: Doc) -> str:
    return _hash(admit(doc))


def test_spec_hash_ignores_replicas_and_partition() -> None:
    ud = admit(manifest(STATEFUL_SET))
    assert _hash(ud, replicas=1, partition=0) == _hash(ud, replicas=9, partition=4)
    ud = admit(manifest(CLONE_SET))
    assert _hash(ud, replicas=1, partition=0) == _hash(ud, replicas=9, partition=4)


def test_spec_hash_is_stable_and_per_subset() -> None:
    assert _doc_hash(manifest()) == _doc_hash(manifest())
    ud = admit(manifest())
    assert _hash(ud, "zone-a") != _hash(ud, "zone-b")
    assert len(_hash(ud)) == 16


def _edit(path: tuple[Any, ...], value: Any) -> Doc:
    doc = manifest()
    target = doc
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return doc


SUBSET_A = ("spec", "topology", "subsets", 0)
POD = ("spec", "template", DEPLOYMENT, "spec", "template")


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param(_edit((*POD, "spec", "containers", 0, "image"), "nginx:1.28"), id="container image"),
        pytest.param(_edit((*POD, "metadata", "annotations"), {"x": "y"}), id="pod annotations"),
        pytest.param(_edit(("spec", "template", DEPLOYMENT, "metadata", "annotations"), {}), id="workload annotations"),
        pytest.param(_edit(("spec", "template", DEPLOYMENT, "spec", "minReadySeconds"), 5), id="workload spec"),
        pytest.param(
            _edit((*SUBSET_A, "nodeSelectorTerm"), {"matchExpressions": [{"key": ZONE, "operator": "Exists"}]}),
            id="subset node selector",
        ),
        pytest.param(_edit((*SUBSET_A, "tolerations"), []), id="subset tolerations"),
        pytest.param(_edit((*SUBSET_A, "patch"), {"metadata": {"labels": {"x": "y"}}}), id="subset patch"),
    ],
)
def test_spec_hash_changes_with_what_we_render(changed: Doc) -> None:
    assert _doc_hash(changed) != _doc_hash(manifest())


def test_spec_hash_ignores_subset_replicas_and_partitions_in_the_manifest() -> None:
    doc = manifest()
    doc["spec"]["replicas"] = 9
    doc["spec"]["topology"]["subsets"][0]["replicas"] = 4
    doc["spec"]["updateStrategy"]["manualUpdate"]["partitions"] = {"zone-a": 0}
    assert _doc_hash(doc) == _doc_hash(manifest())


def test_spec_hash_changes_with_the_revision() -> None:
    ud = admit(manifest())
    s = ud.spec.subsets[0]
    a, b = (
        render(ud, subset=s, replicas=1, partition=0, revision=rev, keys=Keys()).object["metadata"]["annotations"]
        for rev in ("web-a", "web-b")
    )
    assert a["apps.united.io/spec-hash"] != b["apps.united.io/spec-hash"]


def test_spec_digest_is_key_order_independent() -> None:
    assert spec_digest(a={"x": 1, "y": [1, 2]}, b="z") == spec_digest(b="z", a={"y": [1, 2], "x": 1})
    assert spec_digest(a=1) != spec_digest(a=2)


# Inputs are never mutated; children share nothing


@pytest.mark.parametrize("variant", sorted(KINDS))
def test_inputs_are_not_mutated(variant: str) -> None:
    doc = manifest(variant)
    pristine = copy.deepcopy(doc)
    ud = admit(doc)
    model_before = copy.deepcopy(ud)
    children = render_all(ud)
    assert doc == pristine
    assert ud == model_before
    assert ud.raw == pristine
    # Changing a rendered child changes neither the model nor its sibling.
    first, second = children[0][1].object, children[1][1].object
    first["spec"]["template"]["spec"]["containers"][0]["image"] = "changed"
    first["spec"]["selector"]["matchLabels"]["app"] = "changed"
    first["metadata"]["labels"]["app"] = "changed"
    assert ud == model_before and doc == pristine
    assert second["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"


# API group of the keys


@pytest.mark.parametrize("variant", sorted(KINDS))
@pytest.mark.parametrize("api_version", ["apps.kruise.io/v1alpha1", "apps.kruise.io/v1beta1"])
def test_kruise_manifests_get_kruise_keys(variant: str, api_version: str) -> None:
    ud = admit(manifest(variant, api_version))
    for _, r in render_all(ud):
        child = r.object
        text = json.dumps(child)
        assert "apps.united.io" not in text
        assert child["metadata"]["labels"]["apps.kruise.io/subset-name"] in ("zone-a", "zone-b")
        assert "apps.kruise.io/controller-revision-hash" in child["metadata"]["labels"]
        assert {"apps.kruise.io/subset-patch", "apps.kruise.io/spec-hash"} <= set(child["metadata"]["annotations"])
        assert "apps.kruise.io/subset-name" in child["spec"]["selector"]["matchLabels"]
        assert "apps.kruise.io/subset-name" in child["spec"]["template"]["metadata"]["labels"]
        assert "apps.kruise.io/controller-revision-hash" in child["spec"]["template"]["metadata"]["labels"]
        assert child["metadata"]["ownerReferences"][0]["apiVersion"] == api_version


@pytest.mark.parametrize("variant", sorted(KINDS))
def test_united_manifests_get_united_keys(variant: str) -> None:
    for _, r in render_all(admit(manifest(variant))):
        assert "apps.kruise.io/subset" not in json.dumps(r.object)
        assert "apps.kruise.io/controller" not in json.dumps(r.object)


def test_kind_of_needs_a_template() -> None:
    ud = admit(manifest())
    with pytest.raises(ValueError, match=r"^spec\.template: Required value"):
        kind_of(_with(ud, templates=()))


def test_render_without_selector_uses_only_the_subset_label() -> None:
    ud = _with(admit(manifest()), selector=None)
    child = render_one(ud).object
    assert child["spec"]["selector"] == {"matchLabels": {"apps.united.io/subset-name": "zone-a"}}


def test_subset_outside_the_topology_renders_with_its_own_placement() -> None:
    ud = admit(manifest())
    extra = Subset(name="zone-z")
    child = render(ud, subset=extra, replicas=1, partition=0, revision="r", keys=Keys()).object
    assert child["metadata"]["generateName"] == "web-zone-z-"
    assert child["spec"]["template"]["spec"]["tolerations"] == pod_template()["spec"]["tolerations"]


def _with(ud: UnitedDeployment, **changes: Any) -> UnitedDeployment:
    spec: Spec = dataclasses.replace(ud.spec, **changes)
    return dataclasses.replace(ud, spec=spec)
