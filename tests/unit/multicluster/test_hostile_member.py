"""A hostile member cluster, played by a tiny HTTPS server on 127.0.0.1: the controller's member
client and probe against redirects, huge and deeply nested answers, raw error bodies, plain
http:// and proxies. Whatever it answers, the controller reads a bounded amount, follows nothing,
echoes only a clipped ``Status.message`` into the ``Cluster``'s condition, and keeps probing."""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

import pytest
import yaml
from aiohttp import web

from united.kube import KubeClient
from united.kube.client import MEMBER_MAX_MESSAGE, PODS
from united.kube.errors import TooLarge, TransientError
from united.multicluster.credentials import SecretWatch
from united.multicluster.health import CREDENTIALS_UNAVAILABLE, REACHABLE, UNREACHABLE, Failure
from united.multicluster.member import Member
from united.multicluster.model import ClusterSpec, SecretRef
from united.runtime.certificates import issue

TOKEN = "member-token-never-echoed"
LEAK = "internal-credential-XYZ"
"""What the internal endpoint a redirect points at would disclose."""
SPEC = ClusterSpec(name="evil", secret_ref=SecretRef(namespace="united-clusters", name="evil"))
PAUSE_AFTER = 2 * 2**20
"""Bytes a streaming answer sends before it waits for the test to release it."""
VERSION = b'{"major":"1","minor":"20","gitVersion":"v1.20.2"}'
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Evil:
    """The hostile member: ``routes`` by path, what it was asked (``hits``), what it sent."""

    url: str = ""
    ca: bytes = b""
    routes: dict[str, Handler] = field(default_factory=dict)
    hits: list[str] = field(default_factory=list)
    sent: int = 0
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def kubeconfig(self, *, server: str | None = None, **cluster: Any) -> bytes:
        entry = {"server": server or self.url, "certificate-authority-data": base64.b64encode(self.ca).decode()}
        return yaml.safe_dump(
            {
                "clusters": [{"name": "m", "cluster": {**entry, **cluster}}],
                "users": [{"name": "u", "user": {"token": TOKEN}}],
                "contexts": [{"name": "c", "context": {"cluster": "m", "user": "u"}}],
                "current-context": "c",
            }
        ).encode()

    async def client(self) -> KubeClient:
        return await KubeClient.from_kubeconfig_data(self.kubeconfig(), where="test", retry_attempts=1)

    async def stream(self, request: web.Request, total: int, *, chunk: bytes, announce: bool) -> web.StreamResponse:
        """An answer of ``total`` bytes (announced or not) of which only the first
        :data:`PAUSE_AFTER` are sent until :attr:`release` is set: a client that reads it all
        waits for ever (a failed test, never a slow one), a bounded one gives up before."""
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        if announce:
            response.content_length = total
        await response.prepare(request)
        sent = 0
        try:
            while sent < total:
                if sent >= PAUSE_AFTER:
                    await self.release.wait()
                await response.write(chunk)
                sent += len(chunk)
                self.sent += len(chunk)
        except (ConnectionError, RuntimeError):
            pass
        return response


@pytest.fixture
async def evil() -> AsyncIterator[Evil]:
    bundle = issue(["127.0.0.1"], now=datetime.now(UTC))
    made = Evil(ca=bundle.ca_bundle)

    async def dispatch(request: web.Request) -> web.StreamResponse:
        made.hits.append(request.path)
        handler = made.routes.get(request.path)
        if handler is None:
            return web.json_response({"kind": "Status", "code": 404, "message": "no"}, status=404)
        return await handler(request)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", dispatch)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*_files(bundle))
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    made.url = f"https://127.0.0.1:{port}"
    try:
        yield made
    finally:
        await runner.cleanup()


def _files(bundle: Any) -> tuple[str, str]:
    import tempfile

    directory = tempfile.mkdtemp()
    cert, key = f"{directory}/tls.crt", f"{directory}/tls.key"
    with open(cert, "wb") as out:
        out.write(bundle.cert_pem)
    with open(key, "wb") as out:
        out.write(bundle.key_pem)
    return cert, key


class Secrets:
    def __init__(self, answer: bytes) -> None:
        self.answer = answer

    def kubeconfig(self, ref: SecretRef) -> bytes | Failure | None:
        return self.answer

    async def reread(self, ref: SecretRef) -> None:
        pass


class Host:
    fence: Any = None


def member(kubeconfig: bytes, spec: ClusterSpec = SPEC) -> Member:
    return Member(
        spec,
        host=cast(KubeClient, Host()),
        secrets=cast(SecretWatch, Secrets(kubeconfig)),
        health=None,
        changed=lambda m, flipped: None,
        spawn=asyncio.ensure_future,
    )


async def probed(kubeconfig: bytes, spec: ClusterSpec = SPEC) -> Member:
    made = member(kubeconfig, spec)
    try:
        await made._supervised()
    finally:
        await made.close()
    return made


async def test_a_well_behaved_member_is_reachable(evil: Evil) -> None:
    async def version(request: web.Request) -> web.StreamResponse:
        return web.Response(body=VERSION, content_type="application/json")

    evil.routes["/version"] = version
    made = await probed(evil.kubeconfig())
    assert (made.health.reason, made.health.version) == (REACHABLE, "v1.20.2")


async def test_a_redirect_is_not_followed_and_its_target_never_echoed(evil: Evil) -> None:
    async def redirect(request: web.Request) -> web.StreamResponse:
        return web.Response(status=302, headers={"Location": "/internal"}, text=f"see /internal {LEAK}")

    async def internal(request: web.Request) -> web.StreamResponse:
        return web.json_response({"token": LEAK})

    evil.routes |= {"/version": redirect, "/internal": internal}
    made = await probed(evil.kubeconfig())
    assert evil.hits == ["/version"], "the redirect was followed"
    assert made.health.reason == UNREACHABLE
    assert made.health.message == "get /version: 302 error: HTTP 302: a redirect (not followed)"
    assert LEAK not in made.health.message and TOKEN not in made.health.message


async def test_only_a_clipped_status_message_is_echoed(evil: Evil) -> None:
    long = "x" * 5000

    async def status(request: web.Request) -> web.StreamResponse:
        body = {"kind": "Status", "code": 500, "reason": "InternalError", "message": long, "extra": LEAK}
        return web.json_response(body, status=500)

    async def raw(request: web.Request) -> web.StreamResponse:
        return web.Response(status=503, text=f"<html>upstream {LEAK}</html>")

    evil.routes["/version"] = status
    said = (await probed(evil.kubeconfig())).health.message
    assert said.startswith("get /version: 500 InternalError: xxx") and LEAK not in said
    assert len(said) < MEMBER_MAX_MESSAGE + 100
    evil.routes["/version"] = raw
    said = (await probed(evil.kubeconfig())).health.message
    assert said == "get /version: 503 error: HTTP 503"


@pytest.mark.parametrize("announce", [True, False])
async def test_a_huge_version_answer_is_not_read(evil: Evil, announce: bool) -> None:
    """A 400 MB ``/version``, announced or chunked: the probe stops at 64 KiB."""
    total = 400 * 2**20

    async def huge(request: web.Request) -> web.StreamResponse:
        return await evil.stream(request, total, chunk=b" " * 2**20, announce=announce)

    evil.routes["/version"] = huge
    made = await probed(evil.kubeconfig())
    evil.release.set()
    assert made.health.reason == UNREACHABLE, "the probe waited for the whole answer (and timed out)"
    assert made.health.message.endswith("is larger than 65536 bytes")


async def test_every_member_answer_is_bounded(evil: Evil) -> None:
    """A LIST page and a watch event longer than the client's bound (1 MiB here) raise before the
    member sends more than 2 MiB of its 64 MiB answers."""

    async def listed(request: web.Request) -> web.StreamResponse:
        chunk = (b"[" if request.query.get("watch") else b" ") * 2**16
        return await evil.stream(request, 64 * 2**20, chunk=chunk, announce=False)

    evil.routes["/api/v1/pods"] = listed
    async with await evil.client() as client:
        client.max_answer = 2**20
        with pytest.raises(TooLarge):
            await asyncio.wait_for(client.list(PODS), timeout=60)
        async with client.watch(PODS, resource_version="1") as events:
            with pytest.raises(TransientError):
                await asyncio.wait_for(anext(events), timeout=60)
        evil.release.set()


async def test_a_deeply_nested_version_is_a_failed_probe_not_a_frozen_member(evil: Evil) -> None:
    depth = 8000  # within the 64 KiB read, far past any JSON decoder's recursion

    async def deep(request: web.Request) -> web.StreamResponse:
        return web.Response(body=b'{"a":' * depth + b"1" + b"}" * depth, content_type="application/json")

    async def deep_list(request: web.Request) -> web.StreamResponse:
        return web.Response(body=b"[" * depth + b"]" * depth, content_type="application/json")

    for handler in (deep, deep_list):
        evil.routes["/version"] = handler
        made = await probed(evil.kubeconfig())
        assert (made.health.reason, made.health.message) == (
            UNREACHABLE,
            "get /version: not a Kubernetes /version answer",
        )


async def test_a_probe_that_raises_is_recorded_and_the_loop_goes_on(
    evil: Evil, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = member(evil.kubeconfig())
    calls = 0
    raised = asyncio.Event()

    async def boom() -> None:
        nonlocal calls
        calls += 1
        raised.set()
        raise RecursionError("deep")

    monkeypatch.setattr(made, "probe", boom)
    monkeypatch.setattr("united.multicluster.member.SUSPECT_EVERY", 0.0)
    task = asyncio.ensure_future(made.run())
    try:
        for _ in range(3):
            await asyncio.wait_for(raised.wait(), timeout=30)
            raised.clear()
            assert made.health.reason == UNREACHABLE and not task.done(), "the probe loop ended"
            made.suspect()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await made.close()
    assert calls == 3
    assert made.health.message == "get /version: the probe failed (RecursionError)"


@pytest.mark.parametrize(
    ("cluster", "field"),
    [
        ({"insecure-skip-tls-verify": True}, "insecure-skip-tls-verify"),
        ({"insecure-skip-tls-verify": "false"}, "insecure-skip-tls-verify"),
        ({"proxy-url": "http://127.0.0.1:3128"}, "proxy-url"),
    ],
)
async def test_an_unsafe_kubeconfig_never_reaches_the_member(evil: Evil, cluster: dict[str, Any], field: str) -> None:
    made = await probed(evil.kubeconfig(**cluster))
    assert made.health.reason == CREDENTIALS_UNAVAILABLE
    assert f"clusters[0].cluster.{field}: Forbidden" in made.health.message
    assert evil.hits == []


async def test_plain_http_is_refused_before_any_request(evil: Evil) -> None:
    made = await probed(evil.kubeconfig(server=evil.url.replace("https://", "http://")))
    assert made.health.reason == CREDENTIALS_UNAVAILABLE
    assert "server: Forbidden: only https://" in made.health.message
    assert evil.hits == []


async def test_a_proxy_the_cluster_allows_is_used(evil: Evil) -> None:
    """``allowProxy: true``: the kubeconfig's proxy-url is taken (the proxy here refuses: the
    member is unreachable through it, and never asked)."""
    allowed = ClusterSpec(name="evil", secret_ref=SPEC.secret_ref, allow_proxy=True)
    made = await probed(evil.kubeconfig(**{"proxy-url": "http://127.0.0.1:9"}), allowed)
    assert made.health.reason == UNREACHABLE and made.health.message.endswith("connection refused")
    assert evil.hits == [], "the request went around the proxy"


async def test_the_environments_proxy_is_not_used_for_a_member(evil: Evil, monkeypatch: pytest.MonkeyPatch) -> None:
    async def version(request: web.Request) -> web.StreamResponse:
        return web.Response(body=VERSION, content_type="application/json")

    evil.routes["/version"] = version
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    made = await probed(evil.kubeconfig())
    assert made.health.reason == REACHABLE
