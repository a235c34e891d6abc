"""The pure parts of the webhook certificate loop: the names to certify, "already holds"."""

from __future__ import annotations

import asyncio
from typing import NoReturn

import pytest

from united.controller.webhooks import Options, Webhooks, WebhookService, _covers
from united.kube import Resource
from united.kube.errors import NotFound, TransientError
from united.runtime import certificates
from united.runtime.metrics import Metrics
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


async def test_the_served_certificates_expiry_is_exported() -> None:
    """The certificate-expiry alert reads this gauge: a rotation that keeps failing shows as an
    expiry that comes nearer instead of moving on."""
    options = Options(namespace="ops")
    now = certificates.utcnow()
    bundle = certificates.issue(options.hosts, now=now)

    class SecretOnly:
        async def get(self, resource: Resource, name: str, **kwargs: object) -> dict[str, object]:
            if resource.plural == "secrets":
                return {"metadata": {"name": name, "resourceVersion": "1"}, "data": bundle.secret_data()}
            raise NotFound("not installed", status=404)

    metrics = Metrics(process_metrics=False)
    webhooks = Webhooks(SecretOnly(), options, TLS(), metrics=metrics)  # type: ignore[arg-type]
    await webhooks.sync()
    exported = metrics.registry.get_sample_value("united_webhook_certificate_expiry_timestamp_seconds")
    assert exported == bundle.cert.not_valid_after_utc.timestamp()
    assert exported > now.timestamp()
