"""The pod webhook's answers that need no API server: untargeted pods cost no API call, a
spread with a single unlimited subset places without a status write, deletions of pods that
free nothing write nothing, conversion is A's. Bookings with status writes run against the
control plane (tests/e2e/workloadspread)."""

from __future__ import annotations

import base64
import json
from typing import Any, cast

from tests.unit.workloadspread.test_reconciler import NS, controller, obj, put, ws
from united.api.document import Json
from united.controller.manager import Manager, Settings
from united.kube import KubeClient, NotFound
from united.runtime.metrics import Metrics
from united.runtime.webserver import Computed, Shortcut
from united.workloadspread.kind import setup
from united.workloadspread.model import MATCHED_ANNOTATION
from united.workloadspread.reconciler import WorkloadSpreadController
from united.workloadspread.webhook import PodWebhook
from united.workloadspread.webhookconfig import CONVERT_PATH, MUTATE_PATH


class NoApi:
    """A client any use of which fails the test."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the webhook used the API server ({name})")


def webhook(*objects: Json, served: bool = True) -> PodWebhook:
    c = controller()
    put(c, *objects)
    return PodWebhook(cast(KubeClient, NoApi()), lambda: (c.caches, c.spreads) if served else None)


def review(pod: Json, *, operation: str = "CREATE", namespace: str = NS) -> Json:
    request: Json = {"uid": "req-1", "operation": operation, "namespace": namespace}
    request["object" if operation == "CREATE" else "oldObject"] = pod
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def pod_of(owner: Json, name: str = "") -> Json:
    pod = obj("v1", "Pod", name or f"{owner['metadata']['name']}-x", owner=owner)
    pod["spec"] = {"containers": [{"name": "main", "image": "app"}]}
    return pod


DEPLOY = obj("apps/v1", "Deployment", "web")
RS = obj("apps/v1", "ReplicaSet", "web-1", owner=DEPLOY)
OTHER = obj("apps/v1", "Deployment", "api")
OTHER_RS = obj("apps/v1", "ReplicaSet", "api-1", owner=OTHER)


async def test_a_pod_in_a_namespace_without_spreads_is_allowed_without_an_api_call() -> None:
    hook = webhook(ws("spread", "Deployment", "web"), DEPLOY, RS)
    answer = await hook.mutate(review(pod_of(RS), namespace="elsewhere"))
    assert answer["response"] == {"uid": "req-1", "allowed": True}


async def test_a_pod_of_a_workload_no_spread_targets_is_allowed_unchanged_without_an_api_call() -> None:
    hook = webhook(ws("spread", "Deployment", "web"), DEPLOY, RS, OTHER, OTHER_RS)
    answer = await hook.mutate(review(pod_of(OTHER_RS)))
    assert answer["response"] == {"uid": "req-1", "allowed": True}


async def test_every_pod_is_allowed_unchanged_while_the_kind_is_not_served_or_synced() -> None:
    hook = webhook(ws("spread", "Deployment", "web"), DEPLOY, RS, served=False)
    answer = await hook.mutate(review(pod_of(RS)))
    assert answer["response"] == {"uid": "req-1", "allowed": True}


async def test_a_single_unlimited_subset_is_injected_without_a_status_write() -> None:
    spread = ws("spread", "Deployment", "web")
    spread["spec"]["subsets"] = [{"name": "only", "tolerations": [{"key": "spot", "operator": "Exists"}]}]
    hook = webhook(spread, DEPLOY, RS)
    answer = (await hook.mutate(review(pod_of(RS))))["response"]
    assert answer["allowed"] and answer["patchType"] == "JSONPatch"
    ops = json.loads(base64.b64decode(answer["patch"]))
    paths = {op["path"] for op in ops}
    assert "/spec/tolerations" in paths
    annotation = next(op["value"] for op in ops if op["path"] == "/metadata/annotations")
    assert json.loads(annotation[MATCHED_ANNOTATION])["subset"] == "only"


async def test_deleting_a_pod_of_no_spread_is_allowed_without_an_api_call() -> None:
    hook = webhook(ws("spread", "Deployment", "web"), DEPLOY, RS, OTHER, OTHER_RS)
    answer = await hook.validate(review(pod_of(OTHER_RS), operation="DELETE"))
    assert answer["response"] == {"uid": "req-1", "allowed": True}


async def test_a_dry_run_delete_is_allowed_and_writes_nothing() -> None:
    hook = webhook(ws("spread", "Deployment", "web"), DEPLOY, RS)
    request = review(pod_of(RS), operation="DELETE")
    request["request"]["dryRun"] = True
    assert (await hook.validate(request))["response"]["allowed"]


def test_conversion_is_answered_by_the_conversion_module_on_the_servers_thread() -> None:
    alpha = {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "WorkloadSpread",
        "metadata": {"name": "s"},
        "spec": {"subsets": [{"name": "a", "requiredNodeSelectorTerm": {"matchExpressions": []}}]},
    }
    request = {"uid": "c1", "desiredAPIVersion": "apps.kruise.io/v1beta1", "objects": [alpha]}
    route = webhook().routes()[CONVERT_PATH]
    assert isinstance(route, Computed), "a conversion reads no cache: it needs no turn of the controller's loop"
    answer = route.answer({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": request})
    converted = answer["response"]["convertedObjects"][0]
    assert converted["apiVersion"] == "apps.kruise.io/v1beta1"
    assert "requiredNodeSelector" in converted["spec"]["subsets"][0]


async def test_placed_and_unplaced_pods_are_counted_and_untargeted_ones_are_not() -> None:
    results: list[str] = []
    placing = ws("spread", "Deployment", "web")
    placing["spec"]["subsets"] = [{"name": "only"}]
    full = ws("full", "Deployment", "api")
    full["spec"]["subsets"] = [{"name": "none-left", "maxReplicas": 0}]
    c = controller()
    put(c, placing, full, DEPLOY, RS, OTHER, OTHER_RS)
    hook = PodWebhook(cast(KubeClient, NoApi()), lambda: (c.caches, c.spreads), placements=results.append)
    await hook.mutate(review(pod_of(RS)))
    await hook.mutate(review(pod_of(OTHER_RS)))
    await hook.mutate(review(pod_of(RS), namespace="elsewhere"))
    assert results == ["placed", "unplaced"]


def test_the_controllers_webhook_counts_placements_in_its_metrics() -> None:
    metrics = Metrics(process_metrics=False)
    spreads = setup(Manager(cast(KubeClient, object()), Settings(), metrics=metrics), Settings())
    spreads.webhook.placements("unplaced")
    sample = metrics.registry.get_sample_value("united_workloadspread_placements_total", {"result": "unplaced"})
    assert sample == 1.0


def hook_and_controller(*objects: Json) -> tuple[PodWebhook, WorkloadSpreadController]:
    c = controller()
    put(c, *objects)
    return PodWebhook(cast(KubeClient, NoApi()), lambda: (c.caches, c.spreads)), c


async def test_the_next_pod_of_a_workload_no_spread_targets_is_answered_early_until_something_changes() -> None:
    """The first pod of another workload crosses to :meth:`PodWebhook.mutate`, which finds its
    ReplicaSet a bystander; the next pods of it are allowed by :meth:`PodWebhook.early` (on the
    server's thread) until a spread or an owner up its chain changes."""
    spread = ws("spread", "Deployment", "web")
    hook, c = hook_and_controller(spread, DEPLOY, RS, OTHER, OTHER_RS)
    route = hook.routes()[MUTATE_PATH]
    assert isinstance(route, Shortcut) and route.early == hook.early
    other = review(pod_of(OTHER_RS))
    assert hook.early(other) is None, "not known yet"
    assert (await hook.mutate(other))["response"] == {"uid": "req-1", "allowed": True}
    assert hook.early(other) == allow_of(other)
    assert hook.early(review(pod_of(OTHER_RS, "api-1-y"))) is not None, "any pod of it"
    assert hook.early(review(pod_of(OTHER_RS), namespace="elsewhere")) is None
    assert hook.early(review(pod_of(OTHER_RS), operation="DELETE")) is None

    c._on_spread("MODIFIED", {**spread, "status": {"x": 1}}, spread)
    assert hook.early(other) is not None, "a spread's status says nothing of whom it targets"
    c._on_workload("MODIFIED", {**OTHER_RS, "status": {"replicas": 2}}, OTHER_RS)
    assert hook.early(other) is not None, "nor does an owner's status"
    elsewhere = {**ws("later", "Deployment", "api"), "metadata": {"name": "later", "namespace": "elsewhere"}}
    c._on_spread("ADDED", elsewhere, None)
    c._on_workload("DELETED", {**OTHER, "metadata": {**OTHER["metadata"], "namespace": "elsewhere"}}, None)
    assert hook.early(other) is not None, "another namespace's spreads and owners"
    c._on_spread("ADDED", ws("later", "Deployment", "api"), None)
    assert hook.early(other) is None, "a spread added: every walk again"

    await hook.mutate(other)
    assert hook.early(other) is not None
    adopted = obj("apps/v1", "ReplicaSet", "api-1", owner=DEPLOY)
    c._on_workload("MODIFIED", adopted, OTHER_RS)
    assert hook.early(other) is None, "an owner with other owners: every walk again"
    await hook.mutate(other)
    c._on_workload("DELETED", OTHER, OTHER)
    assert hook.early(other) is None, "an owner gone"


class Absent:
    """A client that finds nothing."""

    async def get(self, *args: Any, **kwargs: Any) -> Json:
        raise NotFound("absent", status=404)


async def test_a_targeted_pod_and_a_pod_whose_owner_is_not_cached_are_never_answered_early() -> None:
    spread = ws("spread", "Deployment", "web")
    spread["spec"]["subsets"] = [{"name": "only"}]
    c = controller()
    put(c, spread, DEPLOY, RS, OTHER_RS)
    hook = PodWebhook(cast(KubeClient, Absent()), lambda: (c.caches, c.spreads))
    assert (await hook.mutate(review(pod_of(RS))))["response"]["patchType"] == "JSONPatch"
    assert (await hook.mutate(review(pod_of(OTHER_RS))))["response"] == {"uid": "req-1", "allowed": True}
    assert hook.early(review(pod_of(RS))) is None
    assert hook.early(review(pod_of(OTHER_RS))) is None, "its Deployment may yet show up in the cache"
    assert len(c.caches.bystanders) == 0


def test_a_pod_without_a_controller_is_answered_early_and_nothing_while_the_kind_is_not_served() -> None:
    bare = obj("v1", "Pod", "bare")
    hook = webhook(ws("spread", "Deployment", "web"), DEPLOY, RS)
    assert hook.early(review(bare)) == allow_of(review(bare))
    assert webhook(ws("spread", "Deployment", "web"), served=False).early(review(bare)) is None


def allow_of(review: Json) -> Json:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": True}}  # fmt: skip


async def test_a_finished_pod_is_placed_nowhere_without_reading_its_uncached_owners() -> None:
    hook = webhook(ws("spread", "Deployment", "web"), RS)  # its Deployment not cached
    done = pod_of(RS)
    done["status"] = {"phase": "Succeeded"}
    assert (await hook.mutate(review(done)))["response"] == {"uid": "req-1", "allowed": True}
