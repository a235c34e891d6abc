"""A small cluster for the pod webhook's tests: a spread in namespace ``shop`` with a full
subset ``a`` (one real pod) and a free subset ``b``, behind an API that answers status
PATCHes as the API server does and records every call; and the reviews a real API server
sends, to forge from."""

from __future__ import annotations

import copy
import datetime
import json
from dataclasses import dataclass, field
from typing import Any, cast

from tests.unit.uniteddeployment.test_diff import apply_merge_patch
from tests.unit.workloadspread.test_reconciler import NS, controller, obj, put
from united.api.document import Json
from united.kube import Conflict, KubeClient, NotFound, Resource
from united.workloadspread.model import MATCHED_ANNOTATION, VERSION_IGNORED
from united.workloadspread.reconciler import Reconciler, WorkloadSpreadController
from united.workloadspread.webhook import PodWebhook

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
OTHER_NS = "elsewhere"
"""A namespace with a spread of its own: the attacker's."""

DEPLOY = obj("apps/v1", "Deployment", "web", spec={"replicas": 3})
RS = obj("apps/v1", "ReplicaSet", "web-1", owner=DEPLOY)


def spread(namespace: str = NS) -> Json:
    return {
        "apiVersion": "apps.united.io/v1alpha1",
        "kind": "WorkloadSpread",
        "metadata": {
            "name": "spread",
            "namespace": namespace,
            "uid": f"uid-spread-{namespace}",
            "resourceVersion": "1",
            "creationTimestamp": "2024-01-01T00:00:00Z",
        },
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "subsets": [{"name": "a", "maxReplicas": 1}, {"name": "b", "maxReplicas": 5}],
        },
        "status": {
            "versionedSubsetStatuses": {
                VERSION_IGNORED: [
                    {"name": "a", "replicas": 1, "missingReplicas": 0},
                    {"name": "b", "replicas": 0, "missingReplicas": 5},
                ]
            }
        },
    }


def pod(name: str, *, owner: Json = RS, subset: str | None = None, namespace: str = NS) -> Json:
    out = obj("v1", "Pod", name, owner=owner)
    out["metadata"]["namespace"] = namespace
    if subset is not None:
        out["metadata"]["annotations"] = {MATCHED_ANNOTATION: json.dumps({"name": "spread", "subset": subset})}
    out["spec"] = {"containers": [{"name": "main", "image": "app"}]}
    out["status"] = {"phase": "Running"}
    return out


REAL = pod("web-1-real", subset="a")
"""The one pod of subset ``a``, in the cache."""


@dataclass
class Call:
    verb: str
    plural: str
    namespace: str | None
    name: str
    body: Any = None


@dataclass
class Api:
    """The API server as far as the webhook and a pass use it; every call recorded."""

    objects: dict[tuple[str, str | None, str], Json] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)

    def add(self, plural: str, o: Json) -> None:
        self.objects[(plural, o["metadata"].get("namespace"), o["metadata"]["name"])] = copy.deepcopy(o)

    @property
    def writes(self) -> list[Call]:
        return [c for c in self.calls if c.verb != "get"]

    async def get(self, resource: Resource, name: str, *, namespace: str | None = None, **kw: Any) -> Json:
        self.calls.append(Call("get", resource.plural, namespace, name))
        found = self.objects.get((resource.plural, namespace, name))
        if found is None:
            raise NotFound("not found", status=404)
        return copy.deepcopy(found)

    async def patch(
        self, resource: Resource, name: str, body: Json, *, namespace: str | None = None, **kw: Any
    ) -> Json:
        self.calls.append(Call("patch", resource.plural, namespace, name, body))
        found = self.objects.get((resource.plural, namespace, name))
        if found is None:
            raise NotFound("not found", status=404)
        wanted = (body.get("metadata") or {}).get("resourceVersion")
        if wanted is not None and wanted != found["metadata"]["resourceVersion"]:
            raise Conflict("stale", status=409)
        patched = apply_merge_patch(found, {k: v for k, v in body.items() if k != "metadata"})
        patched["metadata"]["resourceVersion"] = str(int(found["metadata"].get("resourceVersion") or 0) + 1)
        self.objects[(resource.plural, namespace, name)] = patched
        return copy.deepcopy(patched)

    async def delete(self, resource: Resource, name: str, *, namespace: str | None = None, **kw: Any) -> None:
        self.calls.append(Call("delete", resource.plural, namespace, name))

    async def create(self, resource: Resource, body: Json, *, namespace: str | None = None, **kw: Any) -> Json:
        self.calls.append(Call("create", resource.plural, namespace, str(body.get("metadata", {}).get("name"))))
        return body


@dataclass
class Events:
    """A recorder keeping what it is given."""

    seen: list[tuple[str, str, str]] = field(default_factory=list)

    def event(self, o: Json, event_type: str, reason: str, message: str) -> None:
        self.seen.append((o["metadata"].get("namespace"), reason, message))


@dataclass
class Cluster:
    controller: WorkloadSpreadController
    api: Api
    webhook: PodWebhook

    def spread_status(self, namespace: str = NS) -> Json:
        return self.api.objects[("workloadspreads", namespace, "spread")].get("status") or {}

    async def pass_at(self, when: datetime.datetime, events: Events) -> None:
        """The spread's pass in ``shop`` at ``when``, its cache showing what was written."""
        put(self.controller, self.api.objects[("workloadspreads", NS, "spread")])
        reconciler = Reconciler(
            client=cast(KubeClient, self.api),
            caches=self.controller.caches,
            resource=self.controller.resource,
            recorder=events,
            clock=lambda: when,
        )
        await reconciler.reconcile(f"{NS}/spread")


def cluster() -> Cluster:
    c = controller()
    api = Api()
    other_deploy = {**copy.deepcopy(DEPLOY), "metadata": {**DEPLOY["metadata"], "namespace": OTHER_NS}}
    for o in (spread(), spread(OTHER_NS), DEPLOY, RS, REAL, other_deploy):
        put(c, o)
    for plural, o in (("workloadspreads", spread()), ("workloadspreads", spread(OTHER_NS)), ("replicasets", RS)):
        api.add(plural, o)
    api.add("deployments", DEPLOY)
    hook = PodWebhook(cast(KubeClient, api), lambda: (c.caches, c.spreads), clock=lambda: NOW)
    return Cluster(c, api, hook)


def create_review(p: Any, *, namespace: str = NS, uid: str = "req-1", **request: Any) -> Json:
    body = {"uid": uid, "operation": "CREATE", "namespace": namespace, "object": p, **request}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": body}


def delete_review(p: Any, *, namespace: str = NS, name: str | None = None, uid: str = "req-1") -> Json:
    meta = p.get("metadata") if isinstance(p, dict) else None
    body = {
        "uid": uid,
        "operation": "DELETE",
        "namespace": namespace,
        "name": name if name is not None else (meta or {}).get("name"),
        "oldObject": p,
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": body}


def eviction_review(name: str, *, namespace: str = NS, pod_uid: str | None = None, uid: str = "req-1") -> Json:
    eviction: Json = {"apiVersion": "policy/v1beta1", "kind": "Eviction", "metadata": {"name": name}}
    if pod_uid is not None:
        eviction["deleteOptions"] = {"preconditions": {"uid": pod_uid}}
    body = {
        "uid": uid,
        "operation": "CREATE",
        "subResource": "eviction",
        "namespace": namespace,
        "name": name,
        "object": eviction,
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": body}


def without_uid(ref_owner: Json) -> Json:
    """A pod whose controller reference names ``ref_owner`` without its uid."""
    p = pod("forged", owner=ref_owner)
    del p["metadata"]["ownerReferences"][0]["uid"]
    return p


def forged_reviews() -> dict[str, Json]:
    """Reviews nobody but an attacker sends, each of which today's checks must refuse to book on."""
    guessed = pod("forged")
    guessed["metadata"]["ownerReferences"][0]["uid"] = "guessed"
    cross = pod("forged")
    list_labels = pod("forged")
    list_labels["metadata"]["labels"] = ["app", "web"]
    ghost = pod("ghost", subset="a")
    ghost["metadata"]["uid"] = "uid-ghost"
    other_uid = copy.deepcopy(REAL)
    other_uid["metadata"]["uid"] = "uid-other"
    no_uid = copy.deepcopy(REAL)
    del no_uid["metadata"]["uid"]
    moved = copy.deepcopy(REAL)
    moved["metadata"]["namespace"] = OTHER_NS
    return {
        "create: owner reference without uid": create_review(without_uid(RS)),
        "create: the target itself without uid": create_review(without_uid(DEPLOY)),
        "create: a guessed owner uid": create_review(guessed),
        "create: review namespace differs from the pod's": create_review(cross, namespace=OTHER_NS),
        "create: labels are a list": create_review(list_labels),
        "delete: a pod that does not exist": delete_review(ghost),
        "delete: a real pod's name with another uid": delete_review(other_uid),
        "delete: a real pod's name without a uid": delete_review(no_uid),
        "delete: review namespace differs from the pod's": delete_review(moved, namespace=NS),
        "delete: review name differs from the pod's": delete_review(REAL, name="other"),
        "delete: the real pod, reviewed in another namespace": delete_review(REAL, namespace=OTHER_NS),
        "evict: a pod that does not exist": eviction_review("ghost"),
        "evict: a real pod with another uid as precondition": eviction_review(REAL["metadata"]["name"], pod_uid="x"),
    }
