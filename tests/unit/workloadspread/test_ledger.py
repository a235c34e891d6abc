"""The ledger's group commit against an API that answers like the API server on a status
PATCH: resourceVersion preconditions (409), a write that takes time, 404. The webhook's
bookings against the control plane are in tests/e2e/workloadspread."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import datetime
from typing import Any, cast

import pytest

from tests.unit.uniteddeployment.test_diff import apply_merge_patch
from tests.unit.workloadspread.test_reconciler import controller, obj, put, ws
from united.api.document import Json
from united.controller.manager import Manager, Settings
from united.kube import Conflict, KubeClient, NotFound, Resource
from united.runtime.metrics import Metrics
from united.workloadspread import ledger as ledger_module
from united.workloadspread.booking import Booking, book_create
from united.workloadspread.kind import setup as setup_kind
from united.workloadspread.ledger import Ledger
from united.workloadspread.model import VERSION_IGNORED, WorkloadSpread
from united.workloadspread.reconciler import POD_EVENT_DELAY, WorkloadSpreadController

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
RESOURCE = cast(Resource, object())


class Api:
    """One spread behind status PATCH and GET."""

    def __init__(self, obj: Json, *, latency: float = 0.01) -> None:
        self.obj = copy.deepcopy(obj)
        self.latency = latency
        self.patches: list[Json] = []
        self.gets = 0
        self.conflicts = 0
        self.gone = False

    def bump(self, status: Json | None = None) -> None:
        """Another writer's change."""
        meta = self.obj["metadata"]
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        if status is not None:
            self.obj["status"] = status

    async def patch(self, resource: Resource, name: str, body: Json, **kw: Any) -> Json:
        assert kw["subresource"] == "status"
        await asyncio.sleep(self.latency)
        if self.gone:
            raise NotFound("gone", status=404)
        if body["metadata"]["resourceVersion"] != self.obj["metadata"]["resourceVersion"]:
            self.conflicts += 1
            raise Conflict("stale", status=409)
        self.patches.append(body)
        self.obj["status"] = copy.deepcopy(apply_merge_patch(self.obj.get("status") or {}, body["status"]))
        self.bump()
        return copy.deepcopy(self.obj)

    async def get(self, resource: Resource, name: str, **kw: Any) -> Json:
        self.gets += 1
        await asyncio.sleep(self.latency)
        return copy.deepcopy(self.obj)


def spread(max_a: int = 30) -> Json:
    obj = ws("spread", "Deployment", "web")
    obj["metadata"]["uid"] = "uid-spread"
    obj["spec"]["subsets"] = [{"name": "a", "maxReplicas": max_a}, {"name": "b"}]
    return obj


def setup(obj: Json, **kw: Any) -> tuple[Api, Ledger, WorkloadSpread]:
    c = controller()

    def admitted(raw: Json) -> WorkloadSpread | None:
        out = c.caches.admitted(raw)
        return out if isinstance(out, WorkloadSpread) else None

    api = Api(obj)
    model = admitted(obj)
    assert model is not None
    return api, Ledger(cast(KubeClient, api), admitted, **kw), model


def create(name: str) -> Any:
    pod = {"metadata": {"name": name, "namespace": "shop"}}
    return lambda w: book_create(w, pod, replicas=40, now=NOW, new_uid=lambda: "x")


def booked(api: Api, subset: str = "a") -> set[str]:
    statuses = (api.obj.get("status") or {}).get("versionedSubsetStatuses") or {}
    return {
        pod
        for items in statuses.values()
        for s in items
        if s["name"] == subset
        for pod in (s.get("creatingPods") or {})
    }


async def test_a_burst_is_written_in_a_few_status_writes_and_never_overfills() -> None:
    api, ledger, model = setup(spread(30))
    answers = await asyncio.gather(*(ledger.book(RESOURCE, model, create(f"p-{i}"), dry_run=False) for i in range(40)))
    subsets = [cast(Booking, a).subset for a in answers]
    assert subsets.count("a") == 30 and subsets.count("b") == 10
    assert booked(api) == {f"p-{i}" for i in range(40) if subsets[i] == "a"}
    assert len(api.patches) == 1, "all forty queued before the writer ran"


async def test_a_conflict_rereads_the_spread_and_books_the_whole_batch_again() -> None:
    api, ledger, model = setup(spread(5))
    rival = {
        "versionedSubsetStatuses": {
            VERSION_IGNORED: [
                {
                    "name": "a",
                    "missingReplicas": 2,
                    "creatingPods": {
                        "r-1": "2026-01-01T00:00:00Z",
                        "r-2": "2026-01-01T00:00:00Z",
                        "r-3": "2026-01-01T00:00:00Z",
                    },
                }
            ]
        }
    }
    api.bump(rival)
    answers = await asyncio.gather(*(ledger.book(RESOURCE, model, create(f"p-{i}"), dry_run=False) for i in range(4)))
    subsets = [cast(Booking, a).subset for a in answers]
    assert subsets == ["a", "a", "b", "b"]
    assert booked(api) == {"r-1", "r-2", "r-3", "p-0", "p-1"}
    assert api.gets == 1


async def test_the_first_retry_follows_the_fresh_read_at_once_and_later_ones_back_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pauses: list[float] = []

    async def pause(seconds: float) -> None:
        pauses.append(seconds)

    api, ledger, model = setup(spread(5), sleep=pause)
    api.latency = 0
    patch = api.patch

    async def rival_writes_first(resource: Resource, name: str, body: Json, **kw: Any) -> Json:
        if len(pauses) < 2 and api.gets <= 1:
            api.bump()  # another writer got in before each of the first two attempts
        return await patch(resource, name, body, **kw)

    monkeypatch.setattr(api, "patch", rival_writes_first)
    answer = await ledger.book(RESOURCE, model, create("p-0"), dry_run=False)
    assert cast(Booking, answer).subset == "a"
    assert (api.gets, pauses) == (2, [ledger_module.BACKOFF]), "no pause before the second attempt"


async def test_requests_that_waited_past_patience_are_answered_unplaced_and_never_written() -> None:
    now = [0.0]
    api, ledger, model = setup(spread(30), clock=lambda: now[0], patience=2.0)
    first = asyncio.ensure_future(ledger.book(RESOURCE, model, create("p-0"), dry_run=False))
    await asyncio.sleep(0)
    queued = [asyncio.ensure_future(ledger.book(RESOURCE, model, create(f"q-{i}"), dry_run=False)) for i in range(3)]
    await asyncio.sleep(0)
    now[0] = 2.5
    assert (await first) is not None
    assert await asyncio.gather(*queued) == [None] * 3
    assert booked(api) == {"p-0"} and len(api.patches) == 1


async def test_a_dry_run_books_without_a_write_and_takes_no_slot() -> None:
    api, ledger, model = setup(spread(1))
    dry = await ledger.book(RESOURCE, model, create("dry"), dry_run=True)
    assert dry is not None and dry.subset == "a" and not api.patches
    real = await ledger.book(RESOURCE, model, create("real"), dry_run=False)
    assert real is not None and real.subset == "a" and booked(api) == {"real"}


async def test_a_spread_deleted_meanwhile_lets_the_pods_in_unplaced() -> None:
    api, ledger, model = setup(spread(30))
    api.gone = True
    assert (
        await asyncio.gather(*(ledger.book(RESOURCE, model, create(f"p-{i}"), dry_run=False) for i in range(3)))
        == [None] * 3
    )


async def test_a_failing_booking_costs_its_batch_only() -> None:
    api, ledger, model = setup(spread(30))

    def broken(w: WorkloadSpread) -> Booking:
        raise ValueError("bug")

    assert await ledger.book(RESOURCE, model, broken, dry_run=False) is None
    after = await ledger.book(RESOURCE, model, create("p-1"), dry_run=False)
    assert after is not None and after.subset == "a" and booked(api) == {"p-1"}


async def test_the_next_batch_books_against_the_last_write_even_if_the_cache_is_behind() -> None:
    api, ledger, stale = setup(spread(2))
    for name in ("p-0", "p-1", "p-2"):
        answer = await ledger.book(RESOURCE, stale, create(name), dry_run=False)
        assert answer is not None
    assert booked(api) == {"p-0", "p-1"} and api.gets == 0


async def test_a_booking_waits_for_the_recount_in_flight_and_books_against_its_answer() -> None:
    """The reconciler's status write and the ledger's take turns at a spread (one ``Statuses``
    per process, the kind's): a booking queued while a recount is being written waits for it and
    books against its answer, with no 409 and no fresh read; both changes are kept."""
    m = Manager(cast(KubeClient, object()), Settings(), metrics=Metrics(process_metrics=False))
    kind = setup_kind(m, m.settings)
    c = kind.make(m)
    assert isinstance(c, WorkloadSpreadController)
    assert kind.webhook._ledger.statuses is c.spreads.statuses is kind.statuses
    api = Api(spread(2), latency=0.05)
    c.spreads.client = cast(KubeClient, api)

    def admitted(raw: Json) -> WorkloadSpread | None:
        out = c.caches.admitted(raw)
        return out if isinstance(out, WorkloadSpread) else None

    ledger = Ledger(cast(KubeClient, api), admitted, statuses=c.spreads.statuses)
    model = admitted(spread(2))
    assert model is not None
    counted = dataclasses.replace(model.status, observed_generation=7)
    recount = asyncio.create_task(c.spreads.write_status(model, counted))
    await asyncio.sleep(0.01)
    answer = await ledger.book(RESOURCE, model, create("p-0"), dry_run=False)
    await recount
    assert answer is not None and booked(api) == {"p-0"}
    assert (api.conflicts, api.gets, len(api.patches)) == (0, 0, 2)
    assert api.obj["status"]["observedGeneration"] == 7
    assert len(c.spreads.statuses) == 0, "no turn is kept once the writes are done"


async def test_a_booking_that_raises_costs_its_own_request_and_the_batch_is_written() -> None:
    """One review whose pod cannot be booked (labels a list) fails only itself: the others
    queued with it are booked and written in the same status write."""
    api, ledger, model = setup(spread(30))
    bad_pod = {"metadata": {"name": "bad", "namespace": "shop", "labels": ["app"]}}
    bad = ledger.book(RESOURCE, model, lambda w: book_create(w, bad_pod, replicas=40, now=NOW, new_uid=lambda: "x"),
                      dry_run=False)  # fmt: skip
    answers = await asyncio.gather(
        ledger.book(RESOURCE, model, create("p-0"), dry_run=False),
        bad,
        ledger.book(RESOURCE, model, create("p-1"), dry_run=False),
    )
    assert [a.subset if a is not None else None for a in answers] == ["a", None, "a"]
    assert booked(api) == {"p-0", "p-1"} and len(api.patches) == 1


async def test_a_recount_computed_before_a_booking_is_not_sent_and_runs_again_from_its_answer() -> None:
    """A recount that waited its turn behind a booking was counted against the older spread: it
    is not sent (it would 409), the pass runs again shortly, and the next one writes on top of
    the booking's answer even before the cache shows it."""
    m = Manager(cast(KubeClient, object()), Settings(), metrics=Metrics(process_metrics=False))
    c = setup_kind(m, m.settings).make(m)
    assert isinstance(c, WorkloadSpreadController)
    raw = spread(2)
    raw["metadata"]["generation"] = 3
    put(c, raw, obj("apps/v1", "Deployment", "web", spec={"replicas": 0}))
    api = Api(raw)
    c.spreads.client = cast(KubeClient, api)
    key = f"{raw['metadata']['namespace']}/spread"
    async with c.spreads.statuses.turn(key):
        passing = asyncio.create_task(c.spreads.reconcile(key))
        await asyncio.sleep(0.01)
        api.bump()
        c.spreads.statuses.record(key, copy.deepcopy(api.obj))
    result = await passing
    assert (api.patches, api.conflicts, result.requeue_after) == ([], 0, POD_EVENT_DELAY)
    await c.spreads.reconcile(key)
    assert (len(api.patches), api.conflicts) == (1, 0)
