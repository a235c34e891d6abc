"""The reconciler on fake caches and a recording client (the e2e suite runs it for real)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.test_adaptive import Cluster, FakeClient, store_of
from united.controller.reconciler import resource_of
from united.kube.errors import Forbidden, error_from_status, namespace_terminating

DEPLOYMENTS = resource_of("deploymentTemplate")
STATEFULSETS = resource_of("statefulSetTemplate")
TERMINATING = {
    "kind": "Status",
    "status": "Failure",
    "reason": "Forbidden",
    "message": 'controllerrevisions.apps "web-1" is forbidden: unable to create new content in namespace ns '
    "because it is being terminated",
    "details": {
        "causes": [
            {
                "reason": "NamespaceTerminating",
                "message": "namespace ns is being terminated",
                "field": "metadata.namespace",
            }
        ]
    },
    "code": 403,
}


class RefusingClient(FakeClient):
    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__()
        self.body = body

    async def create(self, resource: Any, body: Any, *, namespace: str) -> Any:
        self.calls.append(("create", resource.plural, "", body))
        raise error_from_status(403, self.body)


async def test_a_namespace_being_deleted_ends_the_pass_without_more_writes() -> None:
    c = Cluster({}, replicas=2, a=(1, 1), b=(1, 1))
    c.client = RefusingClient(TERMINATING)
    result = await c.reconcile(0.0)
    assert result.requeue_after is None
    assert [(v, w) for v, w, _, _ in c.client.calls] == [("create", "controllerrevisions")]
    assert c.recorder.events == []


async def test_another_forbidden_create_still_fails_the_pass() -> None:
    c = Cluster({}, replicas=2, a=(1, 1), b=(1, 1))
    c.client = RefusingClient({**TERMINATING, "details": {}})
    with pytest.raises(Forbidden, match="forbidden"):
        await c.reconcile(0.0)


def test_namespace_terminating_reads_the_status_cause() -> None:
    assert namespace_terminating(error_from_status(403, TERMINATING))
    assert not namespace_terminating(error_from_status(403, {**TERMINATING, "details": {}}))
    assert not namespace_terminating(error_from_status(409, TERMINATING))


def child(name: str, rv: int, replicas: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv)}, "spec": {"replicas": replicas}}


def reconciler() -> Any:
    from united.controller.reconciler import Caches, Reconciler
    from united.kube import Resource

    caches = Caches(uniteddeployments=store_of(), revisions=store_of(), pods=store_of())
    ud = Resource("apps.united.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")
    return Reconciler(client=FakeClient(), caches=caches, recorder=None, ud_resource=ud)  # type: ignore[arg-type]


class TestExpectations:
    """Our own writes stand in for a cache that has not shown them yet, and only until it has."""

    def test_a_created_child_is_seen_until_the_cache_has_it(self) -> None:
        r = reconciler()
        r.remember("ns/web", DEPLOYMENTS, "web-a", child("web-a", 10), rv=10)
        assert [c["metadata"]["name"] for c in r.fresh("ns/web", DEPLOYMENTS, [])] == ["web-a"]
        assert r.fresh("ns/other", DEPLOYMENTS, []) == []
        assert r.fresh("ns/web", STATEFULSETS, []) == []
        assert r.fresh("ns/web", DEPLOYMENTS, [child("web-a", 10)]) == [child("web-a", 10)]
        assert r._children == {}

    def test_a_patched_child_wins_over_an_older_cached_copy(self) -> None:
        r = reconciler()
        r.remember("ns/web", DEPLOYMENTS, "web-a", child("web-a", 12, replicas=3), rv=12)
        assert r.fresh("ns/web", DEPLOYMENTS, [child("web-a", 11)]) == [child("web-a", 12, replicas=3)]
        newer = child("web-a", 13, replicas=5)
        assert r.fresh("ns/web", DEPLOYMENTS, [newer]) == [newer]

    def test_a_deleted_child_is_hidden_until_the_cache_drops_it(self) -> None:
        r = reconciler()
        r.remember("ns/web", DEPLOYMENTS, "web-b", None, rv=7)
        assert r.fresh("ns/web", DEPLOYMENTS, [child("web-b", 7), child("web-a", 3)]) == [child("web-a", 3)]
        assert r.fresh("ns/web", DEPLOYMENTS, [child("web-a", 3)]) == [child("web-a", 3)]
        assert r._children == {}

    def test_expectations_expire(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from united.controller import reconciler as module

        r = reconciler()
        r.remember("ns/web", DEPLOYMENTS, "web-a", child("web-a", 10), rv=10)
        start = module.time.monotonic()
        monkeypatch.setattr(module.time, "monotonic", lambda: start + module.EXPECTATION_TTL + 1)
        assert r.fresh("ns/web", DEPLOYMENTS, []) == []

    async def test_a_deleted_ud_forgets_its_expectations(self) -> None:
        r = reconciler()
        r.remember("ns/web", DEPLOYMENTS, "web-a", child("web-a", 10), rv=10)
        await r.reconcile("ns/web")
        assert r._children == {}


async def test_an_undecodable_ud_gets_a_warning_event_and_a_stalled_status_once() -> None:
    from tests.unit.test_adaptive import FakeRecorder
    from united.controller.reconciler import Caches, Reconciler
    from united.kube import Resource
    from united.kube.decode import Undecodable

    reason = "spec: nested deeper than 100 levels, more than the controller reads"
    meta = {"name": "web", "namespace": "ns", "uid": "u1", "resourceVersion": "5", "generation": 2}
    stub = {"apiVersion": "apps.united.io/v1alpha1", "kind": "UnitedDeployment", "metadata": meta}
    skipped = {"ns/web": Undecodable(stub, reason)}
    client, recorder = FakeClient(), FakeRecorder()
    caches = Caches(uniteddeployments=store_of(), revisions=store_of(), pods=store_of(), undecodable=skipped)
    ud = Resource("apps.united.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")
    r = Reconciler(client=client, caches=caches, recorder=recorder, ud_resource=ud, clock=lambda: "T")  # type: ignore[arg-type]

    await r.reconcile("ns/web")
    assert recorder.events == [("Warning", "Undecodable", reason)]
    [(name, patch)] = client.writes("patch", "uniteddeployments/status")
    assert name == "web"
    stalled = {c["type"]: c for c in patch["status"]["conditions"]}["Stalled"]
    assert (stalled["status"], stalled["reason"], stalled["message"]) == ("True", "Undecodable", reason)
    assert patch["status"]["observedGeneration"] == 2

    # The stub of the next watch event carries the status written: nothing more to write.
    written = {**stub, "metadata": {**meta, "resourceVersion": "99"}, "status": patch["status"]}
    skipped["ns/web"] = Undecodable(written, reason)
    await r.reconcile("ns/web")
    assert len(client.writes("patch", "uniteddeployments/status")) == 1

    del skipped["ns/web"]  # deleted: forgotten, nothing written
    await r.reconcile("ns/web")
    assert len(client.calls) == 1
