"""The pure parts of the webhook certificate loop: the names to certify, "already holds"."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import NoReturn

import pytest

from united.controller.webhooks import Options, Webhooks, WebhookService, _covers
from united.kube.errors import TransientError
from united.runtime.certificates import issue
from united.runtime.webserver import TLS, WebhookServer


def test_hosts_are_the_service_names_and_the_url_host() -> None:
    assert Options(namespace="ops").hosts == ["united-webhook.ops.svc", "united-webhook.ops.svc.cluster.local"]
    assert Options(namespace="ops", url="https://127.0.0.1:9443").hosts[2:] == ["127.0.0.1"]
    assert Options(namespace="ops", url="https://[::1]:9443/base").hosts[2:] == ["::1"]
    assert Options(namespace="ops", url="https://dev.example:9443").hosts[2:] == ["dev.example"]


def test_covers_ignores_fields_the_api_server_adds_but_nothing_else() -> None:
    wanted = [{"name": "w", "clientConfig": {"url": "https://h/x", "caBundle": "Q0E="}, "rules": [{"a": 1}]}]
    defaulted = [{**wanted[0], "extra": True, "rules": [{"a": 1, "scope": "*"}]}]
    assert _covers(defaulted, wanted)
    assert not _covers([{**wanted[0], "clientConfig": {"url": "https://h/x", "caBundle": "b2xk"}}], wanted)
    assert not _covers([*defaulted, *defaulted], wanted)
    assert not _covers([{"name": "w"}], wanted)
    assert not _covers(None, wanted)


async def test_a_start_cancelled_while_waiting_for_the_certificate_stops_the_loop() -> None:
    class Unreachable:
        async def get(self, *args: object, **kwargs: object) -> NoReturn:
            raise TransientError("cannot reach the API server")

    webhooks = Webhooks(Unreachable(), Options(namespace="ops"), TLS())  # type: ignore[arg-type]
    service = WebhookService(webhooks, WebhookServer(host="127.0.0.1", port=0, tls=webhooks.tls, routes={}))
    start = asyncio.create_task(service.start())
    await asyncio.sleep(0.05)
    task = service.task
    assert task is not None and not task.done()
    start.cancel()
    with pytest.raises(asyncio.CancelledError):
        await start
    assert task.cancelled()
    assert service.task is None


async def test_wait_lasts_while_the_server_serves_and_ends_with_its_thread() -> None:
    """The manager's liveness follows :meth:`WebhookService.wait`: it must not end while the
    server runs, and must end when the server's thread does."""

    class Issued(Webhooks):
        async def run(self) -> None:
            bundle = issue(["127.0.0.1"], now=datetime.now(UTC))
            self.tls.load(bundle.cert_pem, bundle.key_pem)
            self.ready.set()
            await asyncio.Event().wait()

    webhooks = Issued(None, Options(namespace="ops"), TLS())  # type: ignore[arg-type]
    service = WebhookService(webhooks, WebhookServer(host="127.0.0.1", port=0, tls=webhooks.tls, routes={}))
    await service.start()
    try:
        waiting = asyncio.create_task(service.wait())
        await asyncio.sleep(0.2)
        assert not waiting.done()
        await service.server.stop()  # as if the server's thread had died
        await asyncio.wait_for(waiting, 20)
    finally:
        await service.stop()
