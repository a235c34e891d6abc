"""The manager's workers when leadership goes (the whole manager runs in tests/e2e and tests/chaos)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from tests.unit.runtime.test_leader import FakeLeases
from united.api.groups import KRUISE_GROUP
from united.controller.manager import Manager, Settings
from united.kube import JSON, Fenced, KubeClient, Resource
from united.kube.client import CLONE_SETS, CONFIG_MAPS, DEPLOYMENTS
from united.kube.errors import TransientError
from united.multicluster.kind import MemberClusters
from united.runtime.controller import Reconciler
from united.runtime.leader import LeaderElector
from united.runtime.metrics import Metrics
from united.uniteddeployment.controller import UnitedDeploymentController
from united.uniteddeployment.kind import setup as ud_setup
from united.uniteddeployment.kind import ud_resource
from united.workloadspread.kind import setup as ws_setup


class Passes:
    """A reconciler whose passes wait on the API server until cancelled, or are fenced."""

    def __init__(self, *, fenced: bool = False) -> None:
        self.fenced = fenced
        self.started: list[str] = []
        self.cancelled: list[str] = []

    async def reconcile(self, key: str) -> Any:
        self.started.append(key)
        if self.fenced:
            raise Fenced("not the leader")
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.append(key)
            raise


class Events:
    """The Events API behind a fence, as :class:`KubeClient` puts it; 10 ms per answer."""

    def __init__(self) -> None:
        self.fence: Any = None
        self.posted: list[str] = []

    async def create(self, resource: Resource, body: JSON, *, namespace: str | None = None) -> JSON:
        if self.fence is not None:
            self.fence("POST", resource.path(namespace=namespace))
        await asyncio.sleep(0.01)
        self.posted.append(body["reason"])
        return body


def manager(passes: Passes, client: object = None) -> Manager:
    """A manager running the UnitedDeployment kind, whose passes are ``passes``."""
    made = Manager(
        cast(KubeClient, client or object()), Settings(), kinds=[ud_setup], metrics=Metrics(process_metrics=False)
    )
    ud(made).reconciler = cast(Reconciler, passes)
    return made


def ud(m: Manager) -> UnitedDeploymentController:
    return next(c for c in m.controllers if isinstance(c, UnitedDeploymentController))


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_losing_leadership_cancels_the_passes_in_flight_and_starts_no_queued_key() -> None:
    passes = Passes()
    m = manager(passes)
    for key in ("ns/a", "ns/b", "ns/c"):
        ud(m).queue.add(key)
    workers = [asyncio.create_task(ud(m)._worker()) for _ in range(2)]
    await settle()
    assert passes.started == ["ns/a", "ns/b"]
    ud(m)._workers = workers
    m._abandon()
    await asyncio.wait_for(asyncio.gather(*workers, return_exceptions=True), 1)
    assert passes.cancelled == ["ns/a", "ns/b"]
    assert passes.started == ["ns/a", "ns/b"], "a queued key started after leadership was lost"
    assert all(w.cancelled() for w in workers)
    assert not ud(m).queue.processing and len(ud(m).queue) == 0


async def test_a_fenced_pass_ends_quietly_and_its_key_waits_for_a_renewal() -> None:
    passes = Passes(fenced=True)
    m = manager(passes)
    ud(m).queue.add("ns/a")
    worker = asyncio.create_task(ud(m)._worker())
    await settle()
    assert passes.started == ["ns/a"]
    assert not worker.done(), "the worker goes on (the elector decides whether leadership is lost)"
    assert ud(m).queue.waiting == 1, "requeued with backoff, in case a late renewal keeps the Lease"
    ud(m)._workers = [worker]
    m._abandon()
    await asyncio.gather(worker, return_exceptions=True)
    assert ud(m).queue.waiting == 0


async def test_a_graceful_shutdown_posts_the_queued_events_before_it_releases_the_lease() -> None:
    events = Events()
    m = manager(Passes(), events)
    elector = LeaderElector(FakeLeases(), name="united", namespace="ns", identity="me")
    events.fence = elector.fence
    election = asyncio.create_task(elector.run())
    await asyncio.wait_for(elector.elected.wait(), 1)
    m.recorder.start()
    ud = {"apiVersion": "apps.united.io/v1alpha1", "kind": "UnitedDeployment", "metadata": {"name": "web"}}
    reasons = [f"Reason{n}" for n in range(5)]
    for reason in reasons:
        m.recorder.normal(ud, reason, "from the last passes before SIGTERM")
    m._election = election
    await m._shutdown()
    assert events.posted == reasons
    assert not elector.is_leader


async def test_a_kind_served_late_counts_in_readiness_and_gets_workers_only_once_its_informers_sync() -> None:
    m = manager(Passes())
    m._leading = True
    spreads = ws_setup(m, m.settings)
    m._deferred = []
    made = spreads.make(m)
    informers, m._deferred = m._deferred, None
    assert informers and not set(informers) & set(m.informers), "kept out of readiness while syncing"
    activation = asyncio.create_task(m._activate(made, informers))
    await settle()
    assert made not in m.controllers and not made._workers
    for informer in m.informers:
        informer.has_synced.set()
    m._webhooks = cast(Any, object())
    assert spreads.caches() is None, "the pod webhook must not read caches still syncing"
    with pytest.raises(RuntimeError, match="WorkloadSpread caches not synced yet"):
        m._not_serving()
    for informer in informers:
        informer.has_synced.set()
    await asyncio.wait_for(activation, 1)
    assert made in m.controllers and set(informers) <= set(m.informers)
    assert spreads.caches() is not None and m._not_serving()
    m._running = m._discovered = True
    late = m.watch(CLONE_SETS, None, lambda kind, obj, old: None)
    assert not all(i.has_synced.is_set() for i in late)
    assert spreads.caches() is not None, "an informer started later (CloneSets served) must not stop admission"
    m._not_synced()
    assert not set(late) & set(m.informers), "a Ready replica stays Ready while a kind found later lists"
    for informer in late:
        informer.has_synced.set()
    await settle()
    assert set(late) <= set(m.informers), "counted in readiness once synced"
    assert len(made._workers) == m.settings.workers
    made.abandon()
    await asyncio.gather(*made._workers, return_exceptions=True)


def test_a_replica_serving_webhooks_is_ready_only_once_it_listens() -> None:
    """The two-replica burst (tests/e2e/workloadspread/test_burst.py) posts as soon as /readyz
    answers 200: a Ready replica that is not listening yet refused its connections."""
    m = manager(Passes())
    with pytest.raises(RuntimeError, match="not listening yet"):
        m._not_serving()
    m._webhooks = cast(Any, object())
    assert m._not_serving()


def test_ready_only_once_the_kinds_were_looked_up() -> None:
    """Caches warm means the child kinds' too: until the first discovery ends (synced, or
    timed out), a replica is not Ready (an outage right after Ready found it half started)."""
    m = manager(Passes())
    with pytest.raises(RuntimeError, match="not synced: "):
        m._not_synced()
    for informer in m.informers:
        informer.has_synced.set()
    with pytest.raises(RuntimeError, match="discovering kinds"):
        m._not_synced()
    m._discovered = True
    assert m._not_synced()


class Namespaces:
    """``GET namespaces/kube-system``: refused ``failures`` times, then answered."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.gets = 0

    async def get(self, resource: Resource, name: str, *, namespace: str | None = None) -> JSON:
        self.gets += 1
        if self.gets <= self.failures:
            raise TransientError("cannot reach https://127.0.0.1:1: connection refused")
        return {"metadata": {"name": name, "uid": "host-uid"}}


def clusters(m: Manager, cluster_id: str | None = None) -> MemberClusters:
    return MemberClusters(
        m, cluster_id=cluster_id, uds=(), ud_resource=ud_resource(m.settings.api_group), serve=lambda *_: None
    )


async def test_the_host_identity_is_waited_for_not_an_exit() -> None:
    api = Namespaces(failures=2)
    c = clusters(manager(Passes(), api))
    assert await c.identity() is False
    assert await c.identity() is False
    assert c.cluster_id is None
    assert await c.identity() is True
    assert c.cluster_id == "host-uid"
    assert await c.identity() is True and api.gets == 3  # read once


async def test_a_given_cluster_id_needs_no_read() -> None:
    api = Namespaces(failures=0)
    c = clusters(Manager(cast(KubeClient, api), Settings(), metrics=Metrics(process_metrics=False)), "given")
    assert await c.identity() is True and api.gets == 0


def test_the_member_clusters_wait_for_the_host_identity_in_our_group_only() -> None:
    """The UnitedDeployment kind registers member clusters (its plug-in) with their identity as
    the condition, and only in this project's group: OpenKruise's has no member clusters."""
    ours = manager(Passes())
    assert [(r.kind, ready is not None) for r, _, ready in ours._optional] == [("Cluster", True)]
    kruise = Manager(cast(KubeClient, object()), Settings(api_group=KRUISE_GROUP), kinds=[ud_setup])
    assert kruise._optional == []


def test_selected_informers_follow_an_unselected_one_only_when_some_controller_needs_it() -> None:
    """UnitedDeployments alone cache only their labelled pods and children; once WorkloadSpreads
    watch every pod and Deployment, the UnitedDeployment informers are served from theirs."""
    m = manager(Passes())
    ud_pods = ud(m).pods
    assert ud_pods and all(i.label_selector and i.source is None for i in ud_pods)
    spreads = ws_setup(m, m.settings)
    m._deferred = []
    spreads.make(m)
    m._deferred = None
    assert spreads.controller is not None
    ws_pods = spreads.controller.caches.pods.stores
    assert [i.source.store if i.source else None for i in ud_pods] == ws_pods
    before = set(m._shared.values())
    made = m.watch(DEPLOYMENTS, ud(m).keys.subset_name, lambda *_: None)
    assert set(made).isdisjoint(before), "a selected informer of its own, served from the unselected one"
    assert all(i.source is not None and i.source.label_selector is None for i in made)
    assert m.watch(CONFIG_MAPS, ud(m).keys.subset_name, lambda *_: None)[0].source is None, "nothing to follow"
