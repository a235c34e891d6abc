"""Sidecar containers (init containers with ``restartPolicy: Always``, GA in Kubernetes 1.33) through
what the controller does to pods and templates: a UnitedDeployment's subset patch, a
WorkloadSpread's injection and its patch's validation, the pod template rules, and readiness
(the pod's Ready condition, which the kubelet computes with the sidecars; the simulated kubelet
reports them as a real one does)."""

from __future__ import annotations

import copy

from united.api.document import Json
from united.api.field import Path
from united.devcluster.nodes import pod_status, status_differs
from united.placement.podtemplate import pod_template_errors
from united.placement.subset import place
from united.uniteddeployment.status import pod_ready
from united.workloadspread.injection import inject
from united.workloadspread.model import parse
from united.workloadspread.validation import validate

SIDECAR: Json = {"name": "proxy", "image": "proxy:1", "restartPolicy": "Always"}
SETUP: Json = {"name": "setup", "image": "setup:1"}
MAIN: Json = {"name": "main", "image": "app:1"}
TEMPLATE = Path("template")


def template() -> Json:
    return {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"initContainers": [copy.deepcopy(SIDECAR), copy.deepcopy(SETUP)], "containers": [copy.deepcopy(MAIN)]},
    }


def test_a_subset_patch_of_the_containers_leaves_the_sidecars_as_they_were() -> None:
    limits = {"name": "main", "resources": {"limits": {"cpu": "1"}}}
    placed = place(template(), node_selector_term=None, tolerations=None, patch={"spec": {"containers": [limits]}})
    assert placed["spec"]["initContainers"] == [SIDECAR, SETUP]


def test_a_subset_patch_of_a_sidecar_keeps_its_restart_policy_and_place() -> None:
    placed = place(template(), node_selector_term=None, tolerations=None,
                   patch={"spec": {"initContainers": [{"name": "proxy", "image": "proxy:2"}]}})  # fmt: skip
    assert placed["spec"]["initContainers"] == [{**SIDECAR, "image": "proxy:2"}, SETUP]


def test_a_subset_patch_may_add_a_sidecar_and_the_template_stays_valid() -> None:
    logger = {"name": "logger", "image": "logger:1", "restartPolicy": "Always"}
    placed = place(template(), node_selector_term=None, tolerations=None,
                   patch={"spec": {"initContainers": [logger]}})  # fmt: skip
    assert logger in placed["spec"]["initContainers"] and SIDECAR in placed["spec"]["initContainers"]
    assert pod_template_errors(placed, TEMPLATE, None) == []


def test_an_init_container_restart_policy_other_than_always_is_refused() -> None:
    bad = template()
    bad["spec"]["initContainers"][1]["restartPolicy"] = "OnFailure"
    errors = [str(e) for e in pod_template_errors(bad, TEMPLATE, None)]
    assert errors == [
        'template.spec.initContainers[1].restartPolicy: Unsupported value: "OnFailure": supported values: "Always"'
    ]
    assert pod_template_errors(template(), TEMPLATE, None) == []


def spread(patch: Json | None = None) -> Json:
    subset: Json = {"name": "a", "requiredNodeSelector": {"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["a"]}]}}  # fmt: skip
    if patch is not None:
        subset["patch"] = patch
    return {"apiVersion": "apps.united.io/v1alpha1", "kind": "WorkloadSpread",
            "metadata": {"name": "ws", "namespace": "team"},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "subsets": [subset]}}  # fmt: skip


def test_injection_leaves_a_pods_sidecars_alone_and_patches_them_by_name() -> None:
    pod = {"metadata": {"name": "p"}, **template()}
    env = [{"name": "ZONE", "value": "a"}]
    placed = inject(pod, parse(spread({"spec": {"containers": [{"name": "main", "env": env}]}})), "a", uid=None)
    assert placed["spec"]["initContainers"] == [SIDECAR, SETUP]
    assert placed["spec"]["affinity"]["nodeAffinity"]
    patched = inject(pod, parse(spread({"spec": {"initContainers": [{"name": "proxy", "env": env}]}})), "a", uid=None)
    assert patched["spec"]["initContainers"][0] == {**SIDECAR, "env": env}
    assert pod["spec"]["initContainers"] == [SIDECAR, SETUP], "the pod is not mutated"


def test_a_spread_whose_patch_adds_a_sidecar_is_valid_and_a_bad_restart_policy_is_not() -> None:
    sidecar = {"spec": {"initContainers": [{"name": "proxy", "image": "proxy:1", "restartPolicy": "Always"}]}}
    assert validate(parse(spread(sidecar))) == []
    sidecar["spec"]["initContainers"][0]["restartPolicy"] = "Never"
    [error] = [str(e) for e in validate(parse(spread(sidecar)))]
    assert error.startswith("spec.subsets[0].patch.spec.initContainers[0].restartPolicy: Unsupported value")


def _pod() -> Json:
    return {"metadata": {"name": "p", "namespace": "team"}, **template()}


def test_the_simulated_kubelet_runs_sidecars_beside_the_containers_and_completes_the_rest() -> None:
    status = pod_status(_pod(), ready=True, pod_ip="127.244.0.1", now="2026-01-01T00:00:00Z")
    inits = {s["name"]: s for s in status["initContainerStatuses"]}
    assert inits["proxy"]["ready"] and "running" in inits["proxy"]["state"]
    assert inits["setup"]["state"]["terminated"]["reason"] == "Completed"
    assert pod_ready({"status": status})
    unready = pod_status({**_pod(), "status": status}, ready=False, pod_ip="127.244.0.1", now="2026-01-01T00:00:05Z")
    assert not pod_ready({"status": unready})
    [ready_condition] = [c for c in unready["conditions"] if c["type"] == "Ready"]
    assert ready_condition["message"] == "containers with unready status: [proxy main]"
    assert not {s["name"]: s for s in unready["initContainerStatuses"]}["proxy"]["ready"]
    assert status_differs({"status": status}, unready)
    again = pod_status({**_pod(), "status": status}, ready=True, pod_ip="127.244.0.1", now="2026-01-01T00:00:09Z")
    assert not status_differs({"status": status}, again), "nothing changed: nothing to write"
    assert again["initContainerStatuses"][0]["state"] == status["initContainerStatuses"][0]["state"]


def test_a_pod_without_init_containers_reports_none() -> None:
    pod = {"metadata": {"name": "p", "namespace": "team"}, "spec": {"containers": [MAIN]}}
    assert "initContainerStatuses" not in pod_status(pod, ready=True, pod_ip="127.244.0.1", now="2026-01-01T00:00:00Z")
