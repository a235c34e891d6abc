"""manifests/network-policy admits to the controller's pods exactly its two ports, the ones the
shipped Deployment serves: the webhook's from an ipBlock (the API servers), the probe/metrics
port from a scraper; and it fails closed until the API servers' addresses are set."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

from united.kustomization import build

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"


def _one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [o for o in objects if o["kind"] == kind]
    return found


def test_the_policy_admits_the_webhook_and_metrics_ports_of_the_controller_only() -> None:
    policy = _one(build(MANIFESTS, "network-policy"), "NetworkPolicy")
    base = build(MANIFESTS, "base")
    deployment = _one(base, "Deployment")
    assert policy["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert policy["spec"]["podSelector"]["matchLabels"] == deployment["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    webhook, metrics = policy["spec"]["ingress"]
    assert webhook["ports"] == [{"protocol": "TCP", "port": ports["webhook"]}]
    assert metrics["ports"] == [{"protocol": "TCP", "port": ports["http"]}]
    assert [list(peer) for peer in webhook["from"]] == [["ipBlock"]]
    assert all("ipBlock" not in peer for peer in metrics["from"])


def test_until_the_api_servers_addresses_are_set_nobody_reaches_the_webhook() -> None:
    policy = _one(build(MANIFESTS, "network-policy"), "NetworkPolicy")
    (peer,) = policy["spec"]["ingress"][0]["from"]
    assert ipaddress.ip_network(peer["ipBlock"]["cidr"]) == ipaddress.ip_network("192.0.2.0/24")  # TEST-NET-1
