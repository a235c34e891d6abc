"""The pure parts of the webhook certificate loop: the names to certify, "already holds"."""

from __future__ import annotations

from united.controller.webhooks import Options, _covers


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
