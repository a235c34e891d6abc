"""The event recorder's own logic against a recording fake sink: body shape,
aggregation, truncation, per-object rate limit, and that nothing ever raises into
or blocks the caller. (tests/e2e/runtime/test_events.py checks the same against a
real API server.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import structlog.testing

from united.kube.client import JSON, PatchType, Resource
from united.kube.errors import Fenced, NotFound, TransientError, error_from_status
from united.runtime.events import CORE_EVENTS, EventRecorder, EventType, truncate_message
from united.runtime.metrics import Metrics

CONFIG_MAP: JSON = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "settings", "namespace": "team-a", "uid": "uid-1", "resourceVersion": "42"},
}
UD: JSON = {
    "apiVersion": "apps.united.io/v1alpha1",
    "kind": "UnitedDeployment",
    "metadata": {"name": "web", "namespace": "team-a", "uid": "uid-2", "resourceVersion": "7"},
}


class FakeSink:
    """Records create/patch calls; ``fail_with`` makes the next calls raise."""

    def __init__(self) -> None:
        self.created: list[tuple[str | None, JSON]] = []
        self.patched: list[tuple[str, str | None, JSON, PatchType]] = []
        self.fail_with: list[BaseException] = []
        self.gate: asyncio.Event | None = None

    async def create(self, resource: Resource, body: JSON, *, namespace: str | None = None) -> JSON:
        assert resource == CORE_EVENTS
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_with:
            raise self.fail_with.pop(0)
        self.created.append((namespace, body))
        return body

    async def patch(
        self, resource: Resource, name: str, body: JSON, *, patch_type: PatchType, namespace: str | None = None
    ) -> JSON:
        assert resource == CORE_EVENTS
        if self.fail_with:
            raise self.fail_with.pop(0)
        self.patched.append((name, namespace, body, patch_type))
        return body


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.wall = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

    def __call__(self) -> float:
        return self.now

    def wall_clock(self) -> datetime:
        return self.wall

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.wall += timedelta(seconds=seconds)


@pytest.fixture
def sink() -> FakeSink:
    return FakeSink()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def metrics() -> Metrics:
    return Metrics(process_metrics=False)


@pytest.fixture
async def recorder(sink: FakeSink, clock: Clock, metrics: Metrics) -> AsyncIterator[EventRecorder]:
    async with EventRecorder(
        sink,
        component="united-controller",
        instance="united-0",
        metrics=metrics,
        clock=clock,
        wall_clock=clock.wall_clock,
    ) as recorder:
        yield recorder


def outcome(metrics: Metrics, name: str) -> float:
    return metrics.registry.get_sample_value("united_events_total", {"outcome": name}) or 0.0


async def test_an_event_is_a_core_v1_event_about_the_object(
    recorder: EventRecorder, sink: FakeSink, metrics: Metrics
) -> None:
    recorder.normal(UD, "SubsetCreated", "created subset zone-a")
    assert await recorder.flush(within=5)

    ((namespace, body),) = sink.created
    assert namespace == "team-a"
    assert body["apiVersion"] == "v1" and body["kind"] == "Event"
    assert body["metadata"]["namespace"] == "team-a"
    assert body["metadata"]["name"].startswith("web.")
    assert body["involvedObject"] == {
        "apiVersion": "apps.united.io/v1alpha1",
        "kind": "UnitedDeployment",
        "name": "web",
        "namespace": "team-a",
        "uid": "uid-2",
        "resourceVersion": "7",
    }
    assert body["type"] == "Normal"
    assert body["reason"] == "SubsetCreated"
    assert body["message"] == "created subset zone-a"
    assert body["source"]["component"] == "united-controller"
    assert body["reportingComponent"] == "united-controller"
    assert body["reportingInstance"] == "united-0"
    assert body["count"] == 1
    assert body["firstTimestamp"] == body["lastTimestamp"] == "2026-01-02T03:04:05Z"
    assert outcome(metrics, "created") == 1


async def test_a_repeat_within_the_window_patches_the_count(
    recorder: EventRecorder, sink: FakeSink, clock: Clock, metrics: Metrics
) -> None:
    recorder.warning(UD, "ReconcileError", "conflict on subset zone-a")
    assert await recorder.flush(within=5)
    clock.advance(60)
    recorder.warning(UD, "ReconcileError", "conflict on subset zone-a")
    clock.advance(60)
    recorder.warning(UD, "ReconcileError", "conflict on subset zone-a")
    assert await recorder.flush(within=5)

    assert len(sink.created) == 1
    name = sink.created[0][1]["metadata"]["name"]
    assert [(n, ns, patch_type) for n, ns, _, patch_type in sink.patched] == [
        (name, "team-a", PatchType.MERGE),
        (name, "team-a", PatchType.MERGE),
    ]
    assert sink.patched[0][2] == {"count": 2, "lastTimestamp": "2026-01-02T03:05:05Z"}
    assert sink.patched[1][2] == {"count": 3, "lastTimestamp": "2026-01-02T03:06:05Z"}
    assert outcome(metrics, "aggregated") == 2


async def test_a_different_message_type_or_object_is_a_new_event(recorder: EventRecorder, sink: FakeSink) -> None:
    recorder.warning(UD, "ReconcileError", "one")
    recorder.warning(UD, "ReconcileError", "two")
    recorder.normal(UD, "ReconcileError", "two")
    recorder.warning(CONFIG_MAP, "ReconcileError", "two")
    assert await recorder.flush(within=5)
    assert len(sink.created) == 4
    assert sink.patched == []


async def test_after_the_window_a_repeat_is_a_new_event(recorder: EventRecorder, sink: FakeSink, clock: Clock) -> None:
    recorder.normal(UD, "Scaled", "scaled to 3")
    assert await recorder.flush(within=5)
    clock.advance(601)
    recorder.normal(UD, "Scaled", "scaled to 3")
    assert await recorder.flush(within=5)
    assert len(sink.created) == 2
    assert sink.patched == []


async def test_a_failed_aggregation_is_dropped_and_the_next_repeat_starts_afresh(
    recorder: EventRecorder, sink: FakeSink, metrics: Metrics
) -> None:
    recorder.normal(UD, "Scaled", "scaled to 3")
    assert await recorder.flush(within=5)
    sink.fail_with.append(NotFound("event expired", status=404))
    recorder.normal(UD, "Scaled", "scaled to 3")
    assert await recorder.flush(within=5)
    assert len(sink.created) == 1 and sink.patched == []
    assert outcome(metrics, "failed") == 1

    recorder.normal(UD, "Scaled", "scaled to 3")
    assert await recorder.flush(within=5)
    assert len(sink.created) == 2


async def test_long_messages_are_truncated_to_1024_characters(recorder: EventRecorder, sink: FakeSink) -> None:
    recorder.warning(UD, "InvalidSpec", "x" * 5000)
    recorder.normal(UD, "Exact", "y" * 1024)
    assert await recorder.flush(within=5)
    long, exact = (body["message"] for _, body in sink.created)
    assert len(long) == 1024 and long.endswith("...") and long.startswith("x" * 1000)
    assert exact == "y" * 1024
    assert truncate_message("short") == "short"


async def test_the_per_object_rate_limit_allows_a_burst_then_one_per_refill(
    recorder: EventRecorder, sink: FakeSink, clock: Clock, metrics: Metrics
) -> None:
    for i in range(30):
        recorder.warning(UD, "ReconcileError", f"attempt {i}")
    recorder.normal(CONFIG_MAP, "Other", "another object has its own budget")
    assert await recorder.flush(within=5)
    assert len(sink.created) == 26
    assert outcome(metrics, "rate_limited") == 5

    clock.advance(299)
    recorder.warning(UD, "ReconcileError", "still limited")
    clock.advance(1)
    recorder.warning(UD, "ReconcileError", "one token refilled")
    recorder.warning(UD, "ReconcileError", "and spent")
    assert await recorder.flush(within=5)
    assert [body["message"] for _, body in sink.created[26:]] == ["one token refilled"]
    assert outcome(metrics, "rate_limited") == 7


@pytest.mark.parametrize(
    "error",
    [
        error_from_status(403, {"reason": "Forbidden", "message": "events is forbidden"}),
        error_from_status(404, {"reason": "NotFound", "message": 'namespaces "team-a" not found'}),
        error_from_status(500, {}),
        RuntimeError("a bug in the sink"),
    ],
    ids=["forbidden", "namespace-gone", "server-error", "unexpected"],
)
async def test_a_failed_post_never_raises_and_the_recorder_keeps_going(
    recorder: EventRecorder, sink: FakeSink, metrics: Metrics, error: BaseException
) -> None:
    sink.fail_with.append(error)
    recorder.warning(UD, "ReconcileError", "lost")
    recorder.normal(UD, "Scaled", "kept")
    assert await recorder.flush(within=5)
    assert [body["message"] for _, body in sink.created] == ["kept"]
    assert outcome(metrics, "failed") == 1
    assert outcome(metrics, "created") == 1


async def test_an_api_server_that_does_not_answer_is_logged_once_then_once_when_it_answers_again(
    recorder: EventRecorder, sink: FakeSink, metrics: Metrics
) -> None:
    unanswered = TransientError("cannot reach https://api: connection refused", reason="ConnectionRefused")
    forbidden = error_from_status(403, {"reason": "Forbidden", "message": "events is forbidden"})
    sink.fail_with += [unanswered] * 5 + [forbidden, forbidden]
    with structlog.testing.capture_logs() as logs:
        for i in range(8):
            recorder.warning({**CONFIG_MAP, "metadata": {**CONFIG_MAP["metadata"], "uid": f"u{i}"}}, "Failed", "pass")
        assert await recorder.flush(within=5)
    lines = [(entry["log_level"], entry["event"], entry.get("lost")) for entry in logs]
    assert lines == [
        ("warning", "posting an event failed; events are dropped until the API server answers", None),
        ("info", "the API server answers events again", 5),
        ("warning", "posting an event failed", None),  # an answer, if a refusal: logged each time
        ("warning", "posting an event failed", None),
    ]
    assert outcome(metrics, "failed") == 7
    assert len(sink.created) == 1


async def test_an_event_refused_by_the_fence_is_dropped_as_fenced_not_failed(
    recorder: EventRecorder, sink: FakeSink, metrics: Metrics
) -> None:
    sink.fail_with += [Fenced("not the leader"), Fenced("not the leader")]
    recorder.warning(UD, "FailedPatch", "from a replica that lost the Lease")
    recorder.normal(CONFIG_MAP, "Scaled", "also refused")
    assert await recorder.flush(within=5)
    assert sink.created == []
    assert outcome(metrics, "fenced") == 2
    assert outcome(metrics, "failed") == 0


async def test_bad_input_never_raises(recorder: EventRecorder, metrics: Metrics) -> None:
    recorder.event(UD, "Catastrophic", "Reason", "not a valid type")
    recorder.event({"kind": "ConfigMap"}, EventType.NORMAL, "NoName", "no metadata")
    bogus: Any = None
    recorder.event(bogus, EventType.NORMAL, "NotAnObject", "None")
    assert await recorder.flush(within=5)
    assert outcome(metrics, "failed") == 2
    assert outcome(metrics, "ignored") == 1


async def test_events_about_events_are_never_emitted(recorder: EventRecorder, sink: FakeSink, metrics: Metrics) -> None:
    core_event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "x.1", "namespace": "a", "uid": "e"}}
    new_event = {**core_event, "apiVersion": "events.k8s.io/v1"}
    recorder.normal(core_event, "Seen", "an event")
    recorder.normal(new_event, "Seen", "an event")
    assert await recorder.flush(within=5)
    assert sink.created == []
    assert outcome(metrics, "ignored") == 2


async def test_cluster_scoped_objects_get_events_in_default(recorder: EventRecorder, sink: FakeSink) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a", "uid": "n1"}}
    recorder.normal(node, "Drained", "drained")
    assert await recorder.flush(within=5)
    ((namespace, body),) = sink.created
    assert namespace == "default" and body["metadata"]["namespace"] == "default"
    assert "namespace" not in body["involvedObject"]


async def test_a_full_queue_drops_without_blocking(sink: FakeSink, metrics: Metrics) -> None:
    recorder = EventRecorder(sink, metrics=metrics, queue_size=2)
    for i in range(5):
        recorder.normal({**CONFIG_MAP}, "Tick", f"tick {i}")  # not started: nothing is consumed
    assert recorder.pending == 2
    assert outcome(metrics, "queue_full") == 3
    assert not await recorder.flush(within=1)  # not running: cannot drain, says so at once
    recorder.start()
    assert await recorder.close(within=5)
    assert [body["message"] for _, body in sink.created] == ["tick 0", "tick 1"]


async def test_a_full_queue_is_logged_when_it_fills_and_when_it_empties_not_per_event(
    sink: FakeSink, metrics: Metrics
) -> None:
    recorder = EventRecorder(sink, metrics=metrics, queue_size=2, burst=100)
    with structlog.testing.capture_logs() as logs:
        for i in range(50):
            recorder.normal({**CONFIG_MAP}, "Tick", f"tick {i}")
        recorder.start()
        assert await recorder.flush(within=5)
        for i in range(3):  # no await in between: the poster takes none of them yet
            recorder.normal({**CONFIG_MAP}, "Tock", f"tock {i}")
        assert await recorder.close(within=5)
    warnings = [(entry["event"], entry.get("dropped")) for entry in logs if entry["log_level"] == "warning"]
    assert warnings == [
        ("event queue full; dropping events until it is emptied", None),
        ("event queue emptied", 48),
        ("event queue full; dropping events until it is emptied", None),
        ("event queue emptied", 1),
    ]
    assert outcome(metrics, "queue_full") == 49


async def test_flush_gives_up_at_its_deadline_and_close_stops_the_poster(sink: FakeSink) -> None:
    sink.gate = asyncio.Event()  # the API server never answers
    recorder = EventRecorder(sink)
    recorder.start()
    recorder.normal(UD, "Stuck", "waiting forever")
    assert not await recorder.flush(within=0.05)
    assert not await recorder.close(within=0.05)
    assert sink.created == []
    # Closed: flushing an idle recorder is immediate and successful.
    assert recorder.pending == 0
    assert await recorder.flush(within=0.05)


async def test_an_empty_recorder_flushes_at_once(sink: FakeSink) -> None:
    recorder = EventRecorder(sink)
    assert await recorder.flush(within=0)
    recorder.start()
    assert await recorder.close(within=0.5)


def test_options_are_validated(sink: FakeSink) -> None:
    with pytest.raises(ValueError):
        EventRecorder(sink, burst=0)
    with pytest.raises(ValueError):
        EventRecorder(sink, queue_size=0)


async def test_the_instance_defaults_to_the_pod_name(sink: FakeSink, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POD_NAME", "united-7f9c-abcde")
    async with EventRecorder(sink) as recorder:
        recorder.normal(UD, "Hello", "world")
        assert await recorder.flush(within=5)
    body = sink.created[0][1]
    assert body["reportingInstance"] == "united-7f9c-abcde"
    assert body["reportingComponent"] == "united-controller"
