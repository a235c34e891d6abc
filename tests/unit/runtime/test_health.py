"""The probe server answers /healthz, /readyz and /metrics over real HTTP: liveness
follows the core tasks only, readiness its checks and the shutdown flag."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from united.runtime.health import HealthServer
from united.runtime.metrics import Metrics


class Served:
    def __init__(self, server: HealthServer, metrics: Metrics, session: aiohttp.ClientSession, port: int) -> None:
        self.server = server
        self.metrics = metrics
        self.session = session
        self.base = f"http://127.0.0.1:{port}"

    async def get(self, path: str) -> tuple[int, str]:
        async with self.session.get(self.base + path) as resp:
            return resp.status, await resp.text()


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    metrics = Metrics(process_metrics=False)
    server = HealthServer(exposition=metrics.exposition, check_timeout=0.5)
    port = await server.start("127.0.0.1", 0)
    try:
        async with aiohttp.ClientSession() as session:
            yield Served(server, metrics, session, port)
    finally:
        await server.stop()


async def test_a_fresh_server_is_live_and_ready(served: Served) -> None:
    assert await served.get("/healthz") == (200, "ok")
    assert await served.get("/readyz") == (200, "ok")


async def test_readiness_follows_its_checks(served: Served) -> None:
    synced = False
    served.server.add_readiness_check("informer-uniteddeployments", lambda: synced)

    async def async_ok() -> bool:
        return True

    served.server.add_readiness_check("async-check", async_ok)

    status, text = await served.get("/readyz")
    assert status == 503
    assert "[-]informer-uniteddeployments failed: check returned false" in text
    assert "[+]async-check ok" in text

    synced = True
    assert await served.get("/readyz") == (200, "ok")
    status, text = await served.get("/readyz?verbose")
    assert status == 200
    assert "[+]informer-uniteddeployments ok" in text
    assert "[+]shutdown ok" in text


async def test_a_raising_or_hanging_check_fails_with_its_reason(served: Served) -> None:
    def broken() -> bool:
        raise RuntimeError("cache poisoned")

    async def hangs() -> bool:
        await asyncio.Event().wait()
        return True

    served.server.add_readiness_check("broken", broken)
    served.server.add_readiness_check("hangs", hangs)
    status, text = await served.get("/readyz")
    assert status == 503
    assert "[-]broken failed: cache poisoned" in text
    assert "[-]hangs failed: timed out after 0.5s" in text


async def test_shutting_down_flips_readiness_but_not_liveness(served: Served) -> None:
    served.server.add_readiness_check("synced", lambda: True)
    served.server.set_shutting_down()
    status, text = await served.get("/readyz")
    assert status == 503
    assert "[-]shutdown failed: shutting down" in text
    assert await served.get("/healthz") == (200, "ok")


async def test_liveness_fails_when_a_core_task_dies_and_ignores_readiness(served: Served) -> None:
    stop = asyncio.Event()

    async def worker() -> None:
        await stop.wait()
        raise RuntimeError("worker crashed")

    task = asyncio.create_task(worker())
    served.server.watch_task("worker-0", task)
    served.server.add_readiness_check("never-synced", lambda: False)  # readiness must not affect liveness

    assert await served.get("/healthz") == (200, "ok")
    stop.set()
    with pytest.raises(RuntimeError):
        await task
    status, text = await served.get("/healthz")
    assert status == 503
    assert "[-]worker-0 failed: task ended: RuntimeError('worker crashed')" in text


async def test_liveness_fails_for_a_cancelled_or_returned_core_task(served: Served) -> None:
    async def returns() -> None:
        return None

    finished = asyncio.create_task(returns())
    await finished
    cancelled = asyncio.create_task(asyncio.Event().wait())
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    served.server.watch_task("informer", finished)
    served.server.watch_task("elector", cancelled)

    status, text = await served.get("/healthz")
    assert status == 503
    assert "[-]informer failed: task returned" in text
    assert "[-]elector failed: task was cancelled" in text


async def test_metrics_are_served_from_the_dedicated_registry(served: Served) -> None:
    served.metrics.api.observe("PATCH", "deployments.apps", 200, 0.05)
    served.metrics.set_leader("united", True)
    async with served.session.get(served.base + "/metrics") as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain")
        text = await resp.text()
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    key = ("rest_client_requests_total", (("code", "200"), ("resource", "deployments.apps"), ("verb", "PATCH")))
    assert samples[key] == 1.0
    assert samples[("leader_election_master_status", (("name", "united"),))] == 1.0
    # Nothing from the global registry (e.g. its default process collector).
    assert not any(name.startswith("python_gc") for name, _ in samples)


async def test_port_zero_picks_a_free_port_and_stop_closes_it() -> None:
    metrics = Metrics(process_metrics=False)
    first, second = HealthServer(exposition=metrics.exposition), HealthServer(exposition=metrics.exposition)
    port_a = await first.start("127.0.0.1", 0)
    port_b = await second.start("127.0.0.1", 0)
    try:
        assert port_a != port_b and port_a > 0 and port_b > 0
        with pytest.raises(RuntimeError):
            await first.start("127.0.0.1", 0)
    finally:
        await first.stop()
        await second.stop()
    await first.stop()  # idempotent
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectionError):
            await session.get(f"http://127.0.0.1:{port_a}/healthz")
