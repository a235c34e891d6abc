"""``united demo``'s backend and ``python -m united.devcluster start`` as a person
uses them: run until Ctrl-C, usable meanwhile, nothing left behind afterwards."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.e2e.console import interrupt, read_until, run_until, value
from united.devcluster.demo import READY_LINE
from united.devcluster.nodes import SIMULATED_LABEL, is_pod_ready
from united.devcluster.wait import eventually
from united.kube.client import NODES, PODS, KubeClient, Resource

pytestmark = pytest.mark.e2e
UDS = Resource("apps.united.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")


def _exists(path: Path) -> bool:
    return path.exists()


def _port_closed(server: str) -> bool:
    url = urlparse(server)
    with socket.socket() as sock:
        return sock.connect_ex((url.hostname or "127.0.0.1", url.port or 443)) != 0


async def test_demo_converges_a_sample_until_interrupted() -> None:
    """The README's newcomer command: the controller takes the sample to Ready, the table
    shows every subset, Ctrl-C stops the controller gracefully and removes everything."""
    proc, lines = await run_until([sys.executable, "-m", "united", "demo"], READY_LINE)
    kubeconfig = Path(value(lines, "kubeconfig:"))
    server = value(lines, "is running at")
    try:
        async with await KubeClient.from_kubeconfig(kubeconfig) as client:
            nodes = await client.list(NODES, label_selector=f"{SIMULATED_LABEL}=true")
            zones = {n["metadata"]["labels"].get("topology.kubernetes.io/zone") for n in nodes.items}
            assert {"zone-a", "zone-b", "zone-c", "us-east-1a", "us-east-1b", "us-east-1c"} <= zones

            async def converged() -> None:
                ud = await client.get(UDS, "api-zones", namespace="demo")
                ready = [c for c in ud.get("status", {}).get("conditions", []) if c["type"] == "Ready"]
                assert ready and ready[0]["status"] == "True", ready
                pods = (await client.list(PODS, namespace="demo")).items
                assert len([p for p in pods if is_pod_ready(p)]) == 10

            await eventually(converged, within=120, what="demo sample Ready")
            if not any("Ready=True" in line for line in lines):
                await read_until(proc, lines, "Ready=True", within=30)
    finally:
        output = await interrupt(proc)
    assert proc.returncode == 0, output
    table = "\n".join(lines[lines.index(next(x for x in lines if "Ready=True" in x)) :]) + output
    assert "zone-c  6" in table, table
    assert "[debug" not in table, "the demo's table is drowned in debug logs"
    assert not _exists(kubeconfig), "the demo left its files behind"
    assert _port_closed(server), "the demo's API server still listens"


async def test_start_command_prints_a_kubeconfig_and_stops_on_ctrl_c() -> None:
    proc, lines = await run_until([sys.executable, "-m", "united.devcluster", "start"], "Ctrl-C stops it")
    kubeconfig = Path(value(lines, "export KUBECONFIG="))
    try:
        async with await KubeClient.from_kubeconfig(kubeconfig) as client:
            assert await client.get_path("/readyz") == "ok"
    finally:
        output = await interrupt(proc)
    assert proc.returncode == 0, output
    assert not _exists(kubeconfig)
