"""The event recorder against a real API server: it writes valid core/v1 Events,
aggregates repeats into ``count`` with a merge patch the server accepts, truncates
messages, and shrugs off refusals (a deleted namespace, missing RBAC)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime

import pytest

from united.devcluster.cluster import LocalCluster
from united.devcluster.credentials import StaticUser
from united.kube.client import CONFIG_MAPS, EVENTS, JSON, NAMESPACES, KubeClient
from united.kube.errors import NotFound
from united.kube.wait import eventually
from united.runtime.events import CORE_EVENTS, EventRecorder
from united.runtime.metrics import Metrics

pytestmark = pytest.mark.e2e


@pytest.fixture
async def config_map(kube: KubeClient, namespace: str) -> JSON:
    return await kube.create(
        CONFIG_MAPS,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "1"}},
        namespace=namespace,
    )


@pytest.fixture
def metrics() -> Metrics:
    return Metrics(process_metrics=False)


@pytest.fixture
async def recorder(kube: KubeClient, metrics: Metrics) -> AsyncIterator[EventRecorder]:
    async with EventRecorder(kube, component="united-controller", instance="e2e-0", metrics=metrics) as recorder:
        yield recorder


def outcomes(metrics: Metrics) -> dict[str, float]:
    return {
        sample.labels["outcome"]: sample.value
        for family in metrics.events_total.collect()
        for sample in family.samples
        if sample.name == "united_events_total"
    }


async def events_about(kube: KubeClient, obj: JSON, *, namespace: str | None = None) -> list[JSON]:
    uid = obj["metadata"]["uid"]
    listed = await kube.list(
        CORE_EVENTS,
        namespace=namespace or obj["metadata"]["namespace"],
        field_selector=f"involvedObject.uid={uid}",
    )
    return listed.items


async def test_an_event_about_a_config_map_is_stored_with_its_reference(
    kube: KubeClient, namespace: str, config_map: JSON, recorder: EventRecorder, metrics: Metrics
) -> None:
    recorder.normal(config_map, "Observed", "the settings were read")
    assert await recorder.flush(within=30)
    assert outcomes(metrics) == {"created": 1.0}

    (event,) = await events_about(kube, config_map)
    involved = event["involvedObject"]
    assert involved["kind"] == "ConfigMap" and involved["apiVersion"] == "v1"
    assert involved["name"] == "settings" and involved["namespace"] == namespace
    assert involved["uid"] == config_map["metadata"]["uid"]
    assert involved["resourceVersion"] == config_map["metadata"]["resourceVersion"]
    assert (event["type"], event["reason"], event["message"]) == ("Normal", "Observed", "the settings were read")
    assert event["source"]["component"] == "united-controller"
    assert event["reportingComponent"] == "united-controller"
    assert event["reportingInstance"] == "e2e-0"
    assert event["count"] == 1
    assert event["firstTimestamp"] == event["lastTimestamp"]

    # The same stored object, seen through events.k8s.io/v1 (what `kubectl events` reads).
    modern = await kube.get(EVENTS, event["metadata"]["name"], namespace=namespace)
    assert modern["regarding"]["uid"] == config_map["metadata"]["uid"]
    assert modern["note"] == "the settings were read"


async def test_a_repeat_increments_count_instead_of_creating_another_event(
    kube: KubeClient, config_map: JSON, recorder: EventRecorder, metrics: Metrics
) -> None:
    for _ in range(3):
        recorder.warning(config_map, "SyncFailed", "the backend refused the settings")
    recorder.warning(config_map, "SyncFailed", "a different message is a different event")
    assert await recorder.flush(within=30)
    assert outcomes(metrics) == {"created": 2.0, "aggregated": 2.0}

    events = await events_about(kube, config_map)
    counts = {event["message"]: event["count"] for event in events}
    assert counts == {
        "the backend refused the settings": 3,
        "a different message is a different event": 1,
    }
    repeated = next(event for event in events if event["count"] == 3)
    first = datetime.fromisoformat(repeated["firstTimestamp"])
    last = datetime.fromisoformat(repeated["lastTimestamp"])
    assert first <= last


async def test_long_messages_are_stored_truncated(kube: KubeClient, config_map: JSON, recorder: EventRecorder) -> None:
    recorder.warning(config_map, "InvalidSpec", "subset zone-a: " + "x" * 4000)
    assert await recorder.flush(within=30)
    (event,) = await events_about(kube, config_map)
    assert len(event["message"]) == 1024
    assert event["message"].startswith("subset zone-a: xxx")
    assert event["message"].endswith("...")


async def test_events_about_cluster_scoped_objects_go_to_the_default_namespace(
    kube: KubeClient, namespace: str, recorder: EventRecorder
) -> None:
    ns_object = await kube.get(NAMESPACES, namespace)
    recorder.normal(ns_object, "Observed", f"namespace {namespace} is in use")
    assert await recorder.flush(within=30)
    events = await events_about(kube, ns_object, namespace="default")
    try:
        (event,) = events
        assert event["metadata"]["namespace"] == "default"
        assert "namespace" not in event["involvedObject"]
    finally:
        for event in events:
            await kube.delete(CORE_EVENTS, event["metadata"]["name"], namespace="default")


async def test_an_object_whose_namespace_was_deleted_fails_quietly(
    kube: KubeClient, namespace: str, config_map: JSON, recorder: EventRecorder, metrics: Metrics
) -> None:
    await kube.delete(NAMESPACES, namespace)

    async def terminating_or_gone() -> None:
        try:
            ns_object = await kube.get(NAMESPACES, namespace)
        except NotFound:
            return
        assert ns_object.get("status", {}).get("phase") == "Terminating"

    await eventually(terminating_or_gone, within=30, what=f"namespace {namespace} deleted")

    recorder.warning(config_map, "SyncFailed", "nobody will read this")  # must not raise
    assert await recorder.flush(within=30)
    assert outcomes(metrics) == {"failed": 1.0}

    # The recorder survived the failure and still posts elsewhere.
    other = await kube.get(NAMESPACES, "default")
    recorder.normal(other, "Observed", f"still posting after {namespace} went away")
    assert await recorder.flush(within=30)
    assert outcomes(metrics) == {"failed": 1.0, "created": 1.0}
    for event in await events_about(kube, other, namespace="default"):
        await kube.delete(CORE_EVENTS, event["metadata"]["name"], namespace="default")


async def test_missing_rbac_fails_quietly(
    cluster: LocalCluster, kube: KubeClient, config_map: JSON, unprivileged_user: StaticUser, metrics: Metrics
) -> None:
    kubeconfig = cluster.kubeconfig_for(unprivileged_user.name)
    async with (
        await KubeClient.from_kubeconfig(kubeconfig) as nobody,
        EventRecorder(nobody, metrics=metrics) as recorder,
    ):
        recorder.warning(config_map, "SyncFailed", "forbidden to say so")
        recorder.normal(config_map, "Observed", "and again")
        assert await recorder.flush(within=30)
        assert outcomes(metrics) == {"failed": 2.0}
    assert await events_about(kube, config_map) == []


async def test_recording_never_blocks_the_caller(config_map: JSON, kube: KubeClient, metrics: Metrics) -> None:
    # A tiny queue and a burst of events: event() returns at once every time, even
    # though the API server cannot keep up with a synchronous caller.
    async with EventRecorder(kube, metrics=metrics, queue_size=3, burst=100) as recorder:
        loop = asyncio.get_running_loop()
        started = loop.time()
        for i in range(50):
            recorder.normal(config_map, "Tick", f"tick {i}")
        assert loop.time() - started < 0.5
        assert await recorder.flush(within=30)
    counts = outcomes(metrics)
    assert counts["created"] == 3
    assert counts["queue_full"] == 47
