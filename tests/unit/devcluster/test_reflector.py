"""The simulators' reflector against a scripted API server on loopback: it re-lists
after a 410 and reports objects that vanished in between as deleted."""

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from united.devcluster.ports import free_ports
from united.devcluster.reflector import Reflector
from united.kube.client import CONFIG_MAPS, KubeClient
from united.kube.wait import eventually


def cm(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}


LISTS = [
    {
        "kind": "ConfigMapList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "10"},
        "items": [cm("a", "5"), cm("b", "6")],
    },
    {
        "kind": "ConfigMapList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "20"},
        "items": [cm("a", "5"), cm("c", "18")],
    },
]
WATCHES = [
    [
        {"type": "MODIFIED", "object": cm("a", "11")},
        {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}},
    ],
    [{"type": "ADDED", "object": cm("d", "21")}],
]


@pytest.fixture
async def api() -> AsyncIterator[tuple[str, list[str]]]:
    requests: list[str] = []
    lists = iter(LISTS)
    watches = iter(WATCHES)

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") != "true":
            requests.append("list")
            return web.json_response(next(lists))
        requests.append(f"watch@{request.query.get('resourceVersion')}")
        response = web.StreamResponse()
        await response.prepare(request)
        for event in next(watches, []):
            await response.write((json.dumps(event) + "\n").encode())
        if requests[-1] == "watch@20":
            await asyncio.sleep(3600)  # hold the last stream open, like a quiet server
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_get("/api/v1/configmaps", handle)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    port = free_ports(1)[0]
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}", requests
    finally:
        await runner.cleanup()


async def test_relists_after_gone_and_reports_vanished_objects(
    api: tuple[str, list[str]],
) -> None:
    url, requests = api
    seen: list[tuple[str, str]] = []

    async def handler(kind: str, obj: dict[str, Any]) -> None:
        seen.append((kind, obj["metadata"]["name"]))

    async with KubeClient.for_server(url) as client:
        reflector = Reflector(client, CONFIG_MAPS, handler, retry_delay=0)
        task = asyncio.create_task(reflector.run())

        async def settled() -> None:
            assert ("ADDED", "d") in seen, f"seen {seen}"

        try:
            await eventually(settled, within=10, interval=0.05)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    assert requests == ["list", "watch@10", "list", "watch@20"]
    assert seen == [
        ("SYNC", "a"),
        ("SYNC", "b"),
        ("MODIFIED", "a"),
        ("DELETED", "b"),
        ("SYNC", "a"),
        ("SYNC", "c"),
        ("ADDED", "d"),
    ]
    assert sorted(name for _, name in reflector.cache) == ["a", "c", "d"]
    assert reflector.synced.is_set()
