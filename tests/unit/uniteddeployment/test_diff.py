"""Child diffs: nothing to do means no patch; otherwise the smallest merge patch."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from united.api.mergepatch import identified, merge_patch
from united.uniteddeployment.admission import admit
from united.uniteddeployment.diff import child_patch, immutable_changes
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.render import KINDS, render

KEYS = Keys()


def rendered(
    variant: str = "deploymentTemplate", replicas: int = 3, partition: int = 0, image: str = "nginx:1"
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": image}]}},
    }
    ud = admit(
        {
            "apiVersion": "apps.united.io/v1alpha1",
            "kind": "UnitedDeployment",
            "metadata": {"name": "web", "namespace": "ns", "uid": "u1"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {variant: {"metadata": {"labels": {"app": "web"}}, "spec": spec}},
                "topology": {"subsets": [{"name": "a"}]},
                "updateStrategy": {"manualUpdate": {"partitions": {"a": partition}}},
            },
        }
    )
    return render(
        ud, subset=ud.spec.subsets[0], replicas=replicas, partition=partition, revision="web-r1", keys=KEYS
    ).object


def live_from(desired: dict[str, Any]) -> dict[str, Any]:
    """What the API server gives back: a name, server defaults, status, others' labels."""
    live = copy.deepcopy(desired)
    live["metadata"]["name"] = "web-a-abcde"
    live["metadata"]["resourceVersion"] = "42"
    live["metadata"]["labels"]["team"] = "payments"
    live["spec"]["progressDeadlineSeconds"] = 600
    live["spec"]["template"]["spec"]["dnsPolicy"] = "ClusterFirst"
    live["status"] = {"replicas": 3}
    return live


def test_nothing_to_do_means_no_patch_despite_server_defaults() -> None:
    want = rendered()
    assert (
        child_patch(live_from(want), want, kind=KINDS["deploymentTemplate"], keys=KEYS, partition_applied=False) is None
    )


def test_scaling_touches_only_replicas() -> None:
    live = live_from(rendered(replicas=3))
    patch = child_patch(
        live, rendered(replicas=5), kind=KINDS["deploymentTemplate"], keys=KEYS, partition_applied=False
    )
    assert patch == {"spec": {"replicas": 5}}


def test_template_change_replaces_spec_and_drops_what_we_no_longer_render() -> None:
    live = live_from(rendered(image="nginx:1"))
    patch = child_patch(
        live, rendered(image="nginx:2"), kind=KINDS["deploymentTemplate"], keys=KEYS, partition_applied=False
    )
    assert patch is not None
    assert patch["spec"]["template"]["spec"]["containers"] == [{"name": "c", "image": "nginx:2"}]
    assert patch["spec"]["progressDeadlineSeconds"] is None  # re-defaulted by the server
    assert "team" not in patch["metadata"].get("labels", {})  # other writers' labels stay
    assert KEYS.spec_hash in patch["metadata"]["annotations"]


def test_partition_only_change_for_statefulsets_and_clonesets() -> None:
    for variant, expected in (
        ("statefulSetTemplate", {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}),
        ("cloneSetTemplate", {"partition": 2}),
    ):
        live = live_from(rendered(variant, partition=0))
        patch = child_patch(
            live, rendered(variant, partition=2), kind=KINDS[variant], keys=KEYS, partition_applied=True
        )
        assert patch == {"spec": {"updateStrategy": expected}}, variant


def test_adoption_adds_our_controller_reference_and_keeps_others() -> None:
    want = rendered()
    live = live_from(want)
    live["metadata"]["ownerReferences"] = [{"uid": "other", "kind": "Thing", "name": "t"}]
    patch = child_patch(live, want, kind=KINDS["deploymentTemplate"], keys=KEYS, partition_applied=False)
    assert patch is not None
    refs = patch["metadata"]["ownerReferences"]
    assert [r["uid"] for r in refs] == ["other", "u1"] and refs[1]["controller"] is True


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=2), children, max_size=3),
    max_leaves=12,
)


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 apply, to check what merge_patch produces."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = apply_merge_patch(out.get(k), v)
    return out


def test_a_patch_names_the_object_it_was_computed_from() -> None:
    """The API server refuses a patch whose uid is not the object's (the name was reused), and
    with a resourceVersion one decided from a state that has changed since."""
    live = {"metadata": {"name": "web-a", "uid": "u9", "resourceVersion": "12"}}
    patch = {"metadata": {"labels": {"x": "1"}}, "spec": {"replicas": 2}}
    assert identified(patch, live) == {"metadata": {"labels": {"x": "1"}, "uid": "u9"}, "spec": {"replicas": 2}}
    exact = identified({"spec": {}}, live, exact=True)
    assert exact == {"spec": {}, "metadata": {"uid": "u9", "resourceVersion": "12"}}
    assert identified(patch, {"metadata": {}}) == patch


def changed(desired: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """``desired`` with a template change: ``spec`` fields set and a new digest."""
    out = copy.deepcopy(desired)
    out["spec"].update(spec)
    out["metadata"]["annotations"][KEYS.spec_hash] = "a-new-digest"
    return out


class TestImmutableFields:
    """A patch touching an immutable field is refused whole, replicas included, so the child
    could never be scaled again: such fields are reported, never sent."""

    def test_a_statefulset_keeps_scaling_and_updating_when_its_service_name_changes(self) -> None:
        kind = KINDS["statefulSetTemplate"]
        before = rendered("statefulSetTemplate", replicas=3)
        before["spec"]["serviceName"] = "web"
        live = live_from(before)
        live["spec"].update(podManagementPolicy="OrderedReady", revisionHistoryLimit=10)  # server defaults
        want = changed(rendered("statefulSetTemplate", replicas=5, image="nginx:2"), serviceName="web-2")
        patch = child_patch(live, want, kind=kind, keys=KEYS, partition_applied=True)
        assert patch is not None
        assert patch["spec"].keys() <= kind.mutable
        assert patch["spec"]["replicas"] == 5
        assert patch["spec"]["template"]["spec"]["containers"] == [{"name": "c", "image": "nginx:2"}]
        assert immutable_changes(live, want, kind=kind) == ["spec.serviceName"]
        assert immutable_changes(live, before, kind=kind) == [], "server defaults are not changes"

    def test_a_deployment_selector_change_is_reported_not_sent(self) -> None:
        kind = KINDS["deploymentTemplate"]
        live = live_from(rendered())
        selector = {"matchLabels": {**live["spec"]["selector"]["matchLabels"], "tier": "front"}}
        want = changed(rendered(replicas=4), selector=selector)
        patch = child_patch(live, want, kind=kind, keys=KEYS, partition_applied=False)
        assert patch is not None and "selector" not in patch["spec"] and patch["spec"]["replicas"] == 4
        assert immutable_changes(live, want, kind=kind) == ["spec.selector"]

    def test_volume_claim_templates_compare_through_defaults_and_canonical_quantities(self) -> None:
        kind = KINDS["statefulSetTemplate"]

        def claims(storage: str) -> list[dict[str, Any]]:
            return [{"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": storage}}}}]

        live = live_from(rendered("statefulSetTemplate"))
        live["spec"]["volumeClaimTemplates"] = claims("1Gi")
        live["spec"]["volumeClaimTemplates"][0]["spec"]["volumeMode"] = "Filesystem"
        live["spec"]["volumeClaimTemplates"][0]["status"] = {"phase": "Pending"}
        same = changed(rendered("statefulSetTemplate"), volumeClaimTemplates=claims("1024Mi"))
        assert immutable_changes(live, same, kind=kind) == []
        bigger = changed(rendered("statefulSetTemplate"), volumeClaimTemplates=claims("2Gi"))
        assert immutable_changes(live, bigger, kind=kind) == ["spec.volumeClaimTemplates"]
        more = changed(rendered("statefulSetTemplate"), volumeClaimTemplates=claims("1Gi") * 2)
        assert immutable_changes(live, more, kind=kind) == ["spec.volumeClaimTemplates"]


def strip_nulls(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: strip_nulls(x) for k, x in v.items() if x is not None}
    return v


@given(
    st.dictionaries(st.text(max_size=2), json_values, max_size=4),
    st.dictionaries(st.text(max_size=2), json_values, max_size=4),
)
def test_merge_patch_round_trips(live: dict[str, Any], desired: dict[str, Any]) -> None:
    # RFC 7386 cannot express null map values; compare on null-free documents
    desired = strip_nulls(desired)
    assert apply_merge_patch(live, merge_patch(live, desired)) == desired
