"""What tenants write in ``apps.kruise.io/matched-workloadspread`` costs bounded memory and never
an exception: long values are not decoded, the parsed cache is bounded in bytes, a namespace
without spreads parses nothing, and a value nested thousands deep is one unplaced pod."""

from __future__ import annotations

import datetime
import json
import tracemalloc
from collections.abc import Iterator

import pytest

from tests.unit.workloadspread import factories
from tests.unit.workloadspread.pod_reviews import REAL, cluster, delete_review
from tests.unit.workloadspread.test_reconciler import NS, controller, obj, put, ws
from united.api.document import Json
from united.workloadspread import injection
from united.workloadspread.model import MATCHED_ANNOTATION
from united.workloadspread.reconciler import WorkloadSpreadController
from united.workloadspread.sync import sync

LARGE = 255 * 1024
"""A tenant's annotation value: just under the API server's 256 KiB for all of a pod's."""
DEEP = "[" * 5000


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    injection._CACHE.clear()
    yield
    injection._CACHE.clear()


def annotated(name: str, value: str, *, namespace: str = NS) -> Json:
    deploy = obj("apps/v1", "Deployment", "web")
    pod = obj("v1", "Pod", name, owner=obj("apps/v1", "ReplicaSet", "web-1", owner=deploy))
    pod["metadata"]["namespace"] = namespace
    pod["metadata"]["annotations"] = {MATCHED_ANNOTATION: value}
    return pod


def spread_controller() -> WorkloadSpreadController:
    c = controller()
    put(c, ws("spread", "Deployment", "web"))
    return c


def grown(since: int) -> int:
    return tracemalloc.get_traced_memory()[0] - since


async def test_ten_thousand_large_annotations_leave_no_memory_behind() -> None:
    """Every event of 10,000 pods re-annotated with distinct 255 KiB values, half of them in
    the spread's namespace: what stays allocated afterwards is a few KiB, not the values."""
    c = spread_controller()
    pad = "x" * LARGE
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for i in range(10_000):
            value = f'{{"name":"spread","subset":"a","pad":"{i:08d}{pad}"}}'
            c._on_pod("MODIFIED", annotated(f"p-{i}", value, namespace=NS if i % 2 else "elsewhere"), None)
            if i % 500 == 0:
                assert grown(base) < 4 * 1024 * 1024, f"{grown(base)} bytes kept after {i + 1} events"
        kept = grown(base)
    finally:
        tracemalloc.stop()
    print(f"10,000 annotations of {LARGE} bytes: {kept} bytes kept, cache {injection._CACHE.used} chars")
    assert kept < 1024 * 1024
    assert len(injection._CACHE) == 0  # none short enough to be ours: none decoded


async def test_the_parsed_cache_is_bounded_in_bytes_however_many_distinct_values() -> None:
    """Values just short enough to be read, all distinct: the cache evicts by bytes."""
    c = spread_controller()
    limit = injection.MAX_ANNOTATION_CHARS
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for i in range(10_000):
            value = f'{{"name":"spread","subset":"a","pad":"{i:08d}"}}'
            value = value[:-1] + " " * (limit - len(value)) + "}"
            c._on_pod("MODIFIED", annotated(f"p-{i}", value), None)
        kept = grown(base)
    finally:
        tracemalloc.stop()
    print(f"10,000 distinct {limit}-character annotations: {kept} bytes kept, cache {injection._CACHE.used} chars")
    assert injection._CACHE.used <= injection.CACHE_CHARS
    assert 0 < len(injection._CACHE) < 10_000
    assert kept < injection.CACHE_CHARS * 1.15


async def test_a_pod_event_in_a_namespace_without_spreads_parses_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real = injection._parse
    monkeypatch.setattr(injection, "_parse", lambda text: parsed.append(text) or real(text))
    c = spread_controller()
    for i in range(100):
        c._on_pod("ADDED", annotated(f"p-{i}", f'{{"name":"spread","subset":"a{i}"}}', namespace="elsewhere"), None)
    value = '{"name":"spread","subset":"a"}'
    assert parsed == []
    c._on_pod("ADDED", annotated("p-x", value), None)
    assert parsed == [value]


def test_an_annotation_nested_thousands_deep_is_not_ours() -> None:
    for value in (
        DEEP,
        "[" * 1500,
        '{"name":' + "[" * 1200,
        '{"name":"s","subset":"a","x":' + "[" * 900 + "]" * 900 + "}",
    ):
        assert injection.matched({"metadata": {"annotations": {MATCHED_ANNOTATION: value}}}) is None, value[:40]


async def test_a_deeply_nested_annotation_is_one_unplaced_pod_for_events_webhook_and_recount() -> None:
    c = spread_controller()
    deploy = obj("apps/v1", "Deployment", "web")
    put(c, deploy, obj("apps/v1", "ReplicaSet", "web-1", owner=deploy))
    assert c._spreads_of_pod(annotated("p", DEEP)) == {f"{NS}/spread"}  # queued by its owner, nothing raised

    world = cluster()
    deep = {**REAL, "metadata": {**REAL["metadata"], "annotations": {MATCHED_ANNOTATION: DEEP}}}
    put(world.controller, deep)
    answer = await world.webhook.validate(delete_review(deep))
    assert answer["response"] == {"uid": "req-1", "allowed": True} and world.api.writes == []

    spread = factories.spread(2, 2)
    good = factories.pod("good", "a")
    bad = factories.pod("bad", "b")
    bad["metadata"]["annotations"][MATCHED_ANNOTATION] = DEEP
    decided = sync(
        spread,
        pods=[good, bad],
        workload=factories.deployment(2),
        replicasets=[factories.replicaset()],
        nodes={},
        now=datetime.datetime(2026, 3, 1, tzinfo=datetime.UTC),
    )
    subsets = {s.name: s.replicas for s in decided.status.subset_statuses}
    assert subsets["a"] == 1 and decided.status.extra["unplacedReplicas"] == 1
    json.dumps(decided.status.to_dict())
