"""``united demo --sample multicluster`` as a person runs it: three local control planes (the host,
member-1, member-2), the members joined as ``united join`` joins one, the controller converging
the sample's UnitedDeployment across the three, its table with a CLUSTER column; Ctrl-C stops the
controller gracefully and tears every plane down."""

from __future__ import annotations

import re
import socket
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.e2e.console import interrupt, read_until, run_until, value
from united.devcluster.demo import READY_LINE
from united.devcluster.nodes import is_pod_ready
from united.kube.client import PODS, KubeClient, Resource
from united.kube.wait import eventually
from united.multicluster.resource import CLUSTERS

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]
UDS = Resource("apps.united.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")
MEMBER_LINE = re.compile(r"^\s+(member-\d): Kubernetes at (\S+), kubeconfig (\S+)$")


def _port_closed(server: str) -> bool:
    url = urlparse(server)
    with socket.socket() as sock:
        return sock.connect_ex((url.hostname or "127.0.0.1", url.port or 443)) != 0


async def _ready_pods(kubeconfig: Path) -> int:
    async with await KubeClient.from_kubeconfig(kubeconfig) as client:
        pods = (await client.list(PODS, namespace="demo", label_selector="app=web")).items
        return sum(1 for p in pods if is_pod_ready(p))


async def test_the_multicluster_sample_converges_across_three_clusters_until_interrupted() -> None:
    argv = [sys.executable, "-m", "united", "demo", "--sample", "multicluster"]
    proc, lines = await run_until(argv, READY_LINE, within=600)
    host = Path(value(lines, "kubeconfig:"))
    servers = {"host": value(lines, "is running at")}
    kubeconfigs = {"host": host}
    for line in lines:
        found = MEMBER_LINE.match(line)
        if found:
            servers[found[1]], kubeconfigs[found[1]] = found[2], Path(found[3])
    try:
        assert sorted(servers) == ["host", "member-1", "member-2"], lines
        async with await KubeClient.from_kubeconfig(host) as client:
            for name in ("member-1", "member-2"):
                ready = [c for c in (await client.get(CLUSTERS, name))["status"]["conditions"] if c["type"] == "Ready"]
                assert ready[0]["status"] == "True", ready

            async def converged() -> None:
                ud = await client.get(UDS, "web-everywhere", namespace="demo")
                status = ud.get("status") or {}
                ready = [c for c in status.get("conditions", []) if c["type"] == "Ready"]
                assert ready and ready[0]["status"] == "True", ready
                assert status["readyReplicas"] == 6
                assert [s.get("cluster") for s in status["subsetStatuses"]] == [None, "member-1", "member-2"]
                assert {name: await _ready_pods(path) for name, path in kubeconfigs.items()} == dict.fromkeys(
                    kubeconfigs, 2
                )

            await eventually(converged, within=240, what="the multi-cluster sample Ready in three clusters")
        if not any("Ready=True" in line for line in lines[lines.index(READY_LINE) :]):
            await read_until(proc, lines, "Ready=True", within=60)
    finally:
        output = await interrupt(proc)
    assert proc.returncode == 0, output
    table = "\n".join(lines[lines.index(READY_LINE) :]) + output
    assert "SUBSET  CLUSTER   DESIRED" in table, table
    assert re.search(r"^east\s+member-1\s+2\s+2\s+2\s+2", table, re.MULTILINE), table
    assert re.search(r"^west\s+member-2\s+2\s+2\s+2\s+2", table, re.MULTILINE), table
    assert "stopping the local control planes" in output
    assert not [path for path in kubeconfigs.values() if path.exists()], "the demo left files behind"
    assert [name for name, server in servers.items() if not _port_closed(server)] == [], "API servers still listen"
