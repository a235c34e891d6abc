"""Forged admission reviews sent straight to a running controller's webhook port (HTTPS, no
client certificate), against the local control plane: nothing is booked or noted, nothing is
written, no Event follows; and the genuine eviction the API server sends is still noted."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
from dataclasses import replace
from typing import Any

import aiohttp
import pytest

from tests.e2e.workloadspread.conftest import Spreading
from tests.e2e.workloadspread.test_spread import WS, deployment, observed, pods_of, spread, subset_of, webhook_ready
from tests.support.namespace import server_version
from united.controller.webhooks import MUTATING
from united.kube.client import DEPLOYMENTS, REPLICA_SETS, KubeClient, Resource
from united.kube.errors import TooManyRequests
from united.kube.wait import eventually
from united.workloadspread.webhookconfig import NAME

pytestmark = pytest.mark.e2e

JSON = dict[str, Any]
EVENTS = Resource("", "v1", "events", True, "Event")
PDBS = Resource("policy", "v1beta1", "poddisruptionbudgets", True, "PodDisruptionBudget")


def review(request: JSON) -> JSON:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "forged", **request}}


def forged(namespace: str, rs: JSON, real: JSON) -> dict[str, tuple[str, JSON]]:
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs["metadata"]["name"], "controller": True}
    labels = real["metadata"]["labels"]
    ghost = {
        "name": "ghost",
        "namespace": namespace,
        "uid": "uid-ghost",
        "labels": labels,
        "annotations": real["metadata"]["annotations"],
        "ownerReferences": [{**ref, "uid": rs["metadata"]["uid"]}],
    }
    other_uid = {**real["metadata"], "uid": "uid-other"}

    def pod(meta: JSON) -> JSON:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": real["spec"], "status": real["status"]}

    def create(meta: JSON) -> tuple[str, JSON]:
        return "/mutate-pods", review({"operation": "CREATE", "namespace": namespace, "object": pod(meta)})

    def delete(meta: JSON) -> tuple[str, JSON]:
        request = {"operation": "DELETE", "namespace": namespace, "name": meta["name"], "oldObject": pod(meta)}
        return "/validate-pods", review(request)

    eviction = {
        "apiVersion": "policy/v1beta1",
        "kind": "Eviction",
        "metadata": {"name": "ghost", "namespace": namespace},
    }
    return {
        "create, owner without uid": create({"name": "f-1", "labels": labels, "ownerReferences": [ref]}),
        "create, guessed owner uid": create(
            {"name": "f-2", "labels": labels, "ownerReferences": [{**ref, "uid": "x"}]}
        ),
        "create, labels a list": create(
            {"name": "f-3", "labels": ["app"], "ownerReferences": ghost["ownerReferences"]}
        ),
        "delete, no such pod": delete(ghost),
        "delete, the real pod's name with another uid": delete(other_uid),
        "evict, no such pod": (
            "/validate-pods",
            review(
                {
                    "operation": "CREATE",
                    "subResource": "eviction",
                    "namespace": namespace,
                    "name": "ghost",
                    "object": eviction,
                }
            ),
        ),
    }


def pending(status: JSON) -> JSON:
    """What bookings and notes the status holds, by list and subset."""
    lists = {"aggregate": status.get("subsetStatuses") or [], **(status.get("versionedSubsetStatuses") or {})}
    return {
        name: {s["name"]: (sorted(s.get("creatingPods") or {}), sorted(s.get("deletingPods") or {})) for s in items}
        for name, items in lists.items()
    }


async def test_forged_reviews_to_the_running_controller_write_nothing(
    kube: KubeClient, namespace: str, spreading: Spreading
) -> None:
    await webhook_ready(kube, spreading)
    await kube.create(WS, spread("web", "web", [1, None]), namespace=namespace)
    await observed(kube, namespace, "web")
    await kube.create(DEPLOYMENTS, deployment("web", 1), namespace=namespace)

    async def placed() -> tuple[JSON, JSON]:
        pods = await pods_of(kube, namespace, "web")
        assert len(pods) == 1, pods
        real = pods[0]
        assert subset_of(real) == "zone-a"
        status = (await kube.get(WS, "web", namespace=namespace)).get("status") or {}
        assert all(not s.get("creatingPods") for s in status.get("subsetStatuses") or []), status
        replicasets = (await kube.list(REPLICA_SETS, namespace=namespace)).items
        assert len(replicasets) == 1, replicasets
        return real, replicasets[0]

    real, rs = await eventually(placed, within=90, what="one pod placed in zone-a and counted")
    before = await kube.get(WS, "web", namespace=namespace)
    config = await kube.get(MUTATING, NAME)
    ca = base64.b64decode(config["webhooks"][0]["clientConfig"]["caBundle"]).decode()
    trust = ssl.create_default_context(cadata=ca)
    async with aiohttp.ClientSession() as session:
        for name, (path, body) in forged(namespace, rs, real).items():
            url = f"https://127.0.0.1:{spreading.webhook_port}{path}"
            async with session.post(url, data=json.dumps(body), ssl=trust) as resp:
                assert resp.status == 200, name
                answer = await resp.json()
            assert answer["response"] == {"uid": "forged", "allowed": True}, name
    await asyncio.sleep(3)
    after = await kube.get(WS, "web", namespace=namespace)
    assert pending(after.get("status") or {}) == pending(before.get("status") or {})
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    events = (await kube.list(EVENTS, namespace=namespace)).items
    assert not [e for e in events if e.get("reason") in ("DeletePodFailed", "CreatePodFailed")]

    # The genuine eviction, refused by a disruption budget after the webhook saw it, is noted.
    policy = "v1" if (await server_version(kube)).at_least(22) else "v1beta1"  # v1beta1 is gone from 1.25
    budget = {"apiVersion": f"policy/{policy}", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
              "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}  # fmt: skip
    await kube.create(replace(PDBS, version=policy), budget, namespace=namespace)
    name = real["metadata"]["name"]
    eviction = {
        "apiVersion": f"policy/{policy}",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
    }
    with pytest.raises(TooManyRequests):
        await kube._json("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction", body=eviction)

    async def noted() -> None:
        status = (await kube.get(WS, "web", namespace=namespace)).get("status") or {}
        notes = {k for items in (status.get("versionedSubsetStatuses") or {}).values() for s in items
                 for k in s.get("deletingPods") or {}}  # fmt: skip
        assert notes == {name}, status

    await eventually(noted, within=10, what="the refused eviction noted in deletingPods")
