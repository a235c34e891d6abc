"""The client against a small real HTTP server on loopback: status checks on every
answer (kubernetes-asyncio skips them without preloading), content types, and
watch-stream decoding."""

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from united.devcluster.ports import free_ports
from united.kube.client import CLONE_SETS, PODS, RETRY_ATTEMPTS, KubeClient, PatchType
from united.kube.errors import Fenced, Gone, NotFound, TooManyRequests, TransientError

Seen = list[dict[str, Any]]


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, Seen]]:
    seen: Seen = []

    async def handle(request: web.Request) -> web.StreamResponse:
        seen.append(
            {
                "method": request.method,
                "path": request.path,
                "query": dict(request.query),
                "content_type": request.headers.get("Content-Type"),
                "auth": request.headers.get("Authorization"),
                "body": await request.text(),
            }
        )
        if request.path.endswith("/missing"):
            return web.json_response(
                {"kind": "Status", "code": 404, "reason": "NotFound", "message": "gone fishing"},
                status=404,
            )
        if "flaky-" in request.path:  # fails as many times as the number after "flaky-"
            failures = int(next(p for p in request.path.split("/") if "flaky-" in p).rsplit("-", 1)[1])
            if sum(1 for r in seen if r["path"] == request.path) <= failures:
                if "throttled" in request.path:
                    return web.json_response({"kind": "Status", "code": 429}, status=429, headers={"Retry-After": "0"})
                return web.json_response({"kind": "Status", "code": 503, "reason": "ServiceUnavailable"}, status=503)
        if request.path.endswith("/busy"):
            return web.json_response(
                {"kind": "Status", "code": 429, "reason": "TooManyRequests"}, status=429, headers={"Retry-After": "2"}
            )
        if request.query.get("watch") == "true":
            response = web.StreamResponse()
            await response.prepare(request)
            events = [
                {"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "11"}}},
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}},
                {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}},
            ]
            for event in events:
                await response.write((json.dumps(event) + "\n").encode())
            await response.write_eof()
            return response
        if request.method == "GET":
            return web.json_response(
                {
                    "kind": "PodList",
                    "apiVersion": "v1",
                    "metadata": {"resourceVersion": "10"},
                    "items": [{"metadata": {"name": "a"}}],
                }
            )
        return web.json_response({"ok": True}, status=201 if request.method == "POST" else 200)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_ports(1)[0]
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        await runner.cleanup()


async def test_error_statuses_raise_typed_errors(server: tuple[str, Seen]) -> None:
    url, _ = server
    async with KubeClient.for_server(url, token="secret", retry_attempts=1) as client:
        with pytest.raises(NotFound, match="gone fishing"):
            await client.get(PODS, "missing", namespace="ns")
        with pytest.raises(TooManyRequests) as info:
            await client.get(PODS, "busy", namespace="ns")
        assert info.value.retry_after == 2.0


async def test_list_fills_kind_and_returns_the_list_version(server: tuple[str, Seen]) -> None:
    url, seen = server
    async with KubeClient.for_server(url, token="secret") as client:
        listed = await client.list(PODS, namespace="ns", label_selector="app=web")
    assert listed.resource_version == "10"
    assert listed.items == [{"metadata": {"name": "a"}, "apiVersion": "v1", "kind": "Pod"}]
    assert seen[0]["query"]["labelSelector"] == "app=web"
    assert seen[0]["auth"] == "Bearer secret"


async def test_patch_sends_the_requested_content_type(server: tuple[str, Seen]) -> None:
    url, seen = server
    async with KubeClient.for_server(url) as client:
        await client.patch(
            CLONE_SETS, "c", {"spec": {"replicas": 2}}, namespace="ns", patch_type=PatchType.MERGE, subresource="scale"
        )
        await client.patch(
            CLONE_SETS,
            "c",
            {"apiVersion": "x", "kind": "y"},
            namespace="ns",
            patch_type=PatchType.APPLY,
            field_manager="united",
            force=True,
        )
    assert seen[0]["content_type"] == "application/merge-patch+json"
    assert seen[0]["path"] == "/apis/apps.kruise.io/v1alpha1/namespaces/ns/clonesets/c/scale"
    assert json.loads(seen[0]["body"]) == {"spec": {"replicas": 2}}
    assert seen[1]["content_type"] == "application/apply-patch+yaml"
    assert seen[1]["query"] == {"fieldManager": "united", "force": "true"}


async def test_delete_sends_delete_options(server: tuple[str, Seen]) -> None:
    url, seen = server
    async with KubeClient.for_server(url) as client:
        await client.delete(PODS, "p", namespace="ns", grace_period_seconds=0, propagation_policy="Foreground")
    assert json.loads(seen[0]["body"]) == {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "propagationPolicy": "Foreground",
        "gracePeriodSeconds": 0,
    }


async def test_watch_yields_events_tracks_bookmarks_and_raises_gone(
    server: tuple[str, Seen],
) -> None:
    url, seen = server
    got = []
    async with (
        KubeClient.for_server(url) as client,
        client.watch(PODS, namespace="ns", resource_version="10", timeout_seconds=5) as events,
    ):
        with pytest.raises(Gone):
            async for event in events:
                got.append((event.type, events.resource_version))
    assert got == [("ADDED", "11"), ("BOOKMARK", "15")]
    assert seen[0]["query"] == {
        "watch": "true",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "5",
        "resourceVersion": "10",
    }


async def test_a_closed_fence_refuses_every_write_before_it_is_sent_and_lets_reads_through(
    server: tuple[str, Seen],
) -> None:
    url, seen = server
    asked: list[tuple[str, str]] = []

    def fence(method: str, path: str) -> None:
        asked.append((method, path))
        raise Fenced(f"{method} {path}")

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    async with KubeClient.for_server(url) as client:
        client.fence = fence
        assert (await client.list(PODS, namespace="ns")).resource_version == "10"
        await client.get(PODS, "p", namespace="ns")
        writes = [
            client.create(PODS, pod, namespace="ns"),
            client.replace(PODS, pod, namespace="ns"),
            client.patch(PODS, "p", {}, patch_type=PatchType.MERGE, namespace="ns", subresource="status"),
            client.apply(PODS, pod, namespace="ns", field_manager="united"),
            client.delete(PODS, "p", namespace="ns"),
        ]
        for write in writes:
            with pytest.raises(Fenced):
                await write
    assert [s["method"] for s in seen] == ["GET", "GET"], "a refused write reached the server"
    assert [m for m, _ in asked] == ["POST", "PUT", "PATCH", "PATCH", "DELETE"]
    assert asked[2][1] == "/api/v1/namespaces/ns/pods/p/status"


async def test_the_fence_is_consulted_with_the_connection_in_hand(server: tuple[str, Seen]) -> None:
    """A write checked while the Lease was ours, then held up opening its connection (a TCP and
    TLS handshake are several turns of the loop; a leader can be frozen in between and resume
    after its Lease ran out), must be refused when it is about to be sent."""
    url, seen = server
    opening, release = asyncio.Event(), asyncio.Event()

    async def slow_connection(*_: object) -> None:
        opening.set()
        await release.wait()

    trace = aiohttp.TraceConfig()
    trace.on_connection_create_start.append(slow_connection)
    trace.freeze()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    async with KubeClient.for_server(url) as client:
        client._api.rest_client.pool_manager.trace_configs.append(trace)
        client.fence = lambda method, path: None
        write = asyncio.create_task(client.create(PODS, pod, namespace="ns"))
        await asyncio.wait_for(opening.wait(), 5)

        def closed(method: str, path: str) -> None:
            raise Fenced(f"{method} {path}")

        client.fence = closed
        release.set()
        with pytest.raises(Fenced):
            await write
    assert seen == [], "a write fenced while its connection opened reached the server"


async def test_the_fence_is_consulted_again_as_the_bytes_leave(server: tuple[str, Seen]) -> None:
    """aiohttp writes a request's headers and body from a task that runs on a later turn of the
    loop than ``send``: a leader frozen between the two and resumed past its Lease must not let
    the write out (a chaos run saw one arrive 2.2 s after the Lease expired)."""
    url, seen = server
    calls: list[str] = []

    def fence(method: str, path: str) -> None:
        calls.append(method)
        if len(calls) == 1:
            # Runs before the body writer's first step: the Lease runs out in between.
            asyncio.get_running_loop().call_soon(setattr, client, "fence", closed)

    def closed(method: str, path: str) -> None:
        calls.append(f"refused {method}")
        raise Fenced(f"{method} {path}")

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    async with KubeClient.for_server(url) as client:
        client.fence = fence
        if sys.version_info >= (3, 12):
            # aiohttp starts the body writer eagerly, inside send: no turn of the loop between
            # the check and the socket, so the write leaves before the Lease runs out.
            await client.create(PODS, pod, namespace="ns")
            assert [s["method"] for s in seen] == ["POST"] and calls == ["POST", "POST"]
            return
        with pytest.raises(Fenced):
            await client.create(PODS, pod, namespace="ns")
    assert seen == [], "a write fenced before its bytes left reached the server"
    assert calls[:2] == ["POST", "refused POST"]


async def test_connection_refused_is_transient() -> None:
    port = free_ports(1)[0]
    async with KubeClient.for_server(f"http://127.0.0.1:{port}") as client:
        with pytest.raises(TransientError):
            await client.get(PODS, "p", namespace="ns")


async def test_the_environment_proxy_is_read_once_and_still_used(
    server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch
) -> None:
    base, seen = server
    unreachable = f"http://127.0.0.1:{free_ports(1)[0]}"
    monkeypatch.setenv("HTTP_PROXY", base)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    async with KubeClient.for_server(unreachable) as client:
        assert client._api.rest_client.pool_manager.trust_env is False
        monkeypatch.delenv("HTTP_PROXY")  # read at construction, not per request
        await client.get(PODS, "p", namespace="ns")
    assert [s["path"] for s in seen] == ["/api/v1/namespaces/ns/pods/p"]


async def test_no_proxy_is_honoured(server: tuple[str, Seen], monkeypatch: pytest.MonkeyPatch) -> None:
    base, seen = server
    unreachable = f"http://127.0.0.1:{free_ports(1)[0]}"
    monkeypatch.setenv("HTTP_PROXY", base)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    async with KubeClient.for_server(unreachable) as client:
        with pytest.raises(TransientError):
            await client.get(PODS, "p", namespace="ns")
    assert seen == []


def attempts(seen: Seen, path_end: str) -> int:
    return sum(1 for r in seen if r["path"].endswith(path_end))


async def test_idempotent_requests_are_retried_through_transient_failures(server: tuple[str, Seen]) -> None:
    url, seen = server
    async with KubeClient.for_server(url, token="secret") as client:
        assert (await client.get(PODS, "flaky-2", namespace="ns"))["kind"] == "PodList"
        assert attempts(seen, "/flaky-2") == 3
        await client.patch(PODS, "flaky-1", {"a": 1}, patch_type=PatchType.MERGE, namespace="ns")
        assert attempts(seen, "/flaky-1") == 2
        with pytest.raises(TransientError):
            await client.get(PODS, "flaky-9", namespace="ns")
        assert attempts(seen, "/flaky-9") == RETRY_ATTEMPTS, "bounded"


async def test_a_create_is_retried_only_when_throttled(server: tuple[str, Seen]) -> None:
    url, seen = server
    async with KubeClient.for_server(url, token="secret") as client:
        with pytest.raises(TransientError):  # a 503 may have been stored: never sent twice
            await client.create(PODS, {"metadata": {"name": "x"}}, namespace="flaky-1")
        assert attempts(seen, "/flaky-1/pods") == 1
        with pytest.raises(TransientError):  # a JSON patch may append: the same
            operations = [{"op": "add", "path": "/a", "value": 1}]
            await client.patch(PODS, "flaky-3", operations, patch_type=PatchType.JSON, namespace="ns")
        assert attempts(seen, "/pods/flaky-3") == 1
        assert await client.create(PODS, {"metadata": {"name": "x"}}, namespace="throttled-flaky-1") == {"ok": True}
        assert attempts(seen, "/throttled-flaky-1/pods") == 2


async def test_a_watch_read_after_its_connection_closed_is_a_transient_error(server: tuple[str, Seen]) -> None:
    """aiohttp raises a bare ``RuntimeError`` there; callers retry transport errors, not that."""
    url, _ = server

    class Stream:
        def __init__(self, message: str) -> None:
            self.message = message

        async def readline(self, **_: object) -> bytes:
            raise RuntimeError(self.message)

    closed, other = Stream("Connection closed."), Stream("something else")

    async with KubeClient.for_server(url) as client:
        async with client.watch(PODS, namespace="ns", resource_version="10", timeout_seconds=5) as events:
            assert events._resp is not None
            real, events._resp.content = events._resp.content, closed  # type: ignore[assignment]
            with pytest.raises(TransientError) as caught:
                await events.__anext__()
            assert caught.value.reason == "Disconnected"
            events._resp.content = real
        async with client.watch(PODS, namespace="ns", resource_version="10", timeout_seconds=5) as events:
            assert events._resp is not None
            real, events._resp.content = events._resp.content, other  # type: ignore[assignment]
            with pytest.raises(RuntimeError, match="something else"):
                await events.__anext__()
            events._resp.content = real
