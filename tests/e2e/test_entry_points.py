"""``united demo``'s backend and ``python -m united.devcluster start`` as a person
uses them: run until Ctrl-C, usable meanwhile, nothing left behind afterwards — neither
after SIGTERM, nor after a Ctrl-C while starting, nor after a second Ctrl-C while stopping."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

from tests.e2e.conftest import KUBE_VERSION
from tests.e2e.console import STOP_WITHIN, interrupt, read_until, run_until, value
from united.devcluster.build import Layout, provision
from united.devcluster.cluster import LocalCluster
from united.devcluster.demo import READY_LINE
from united.devcluster.nodes import SIMULATED_LABEL, is_pod_ready
from united.kube.client import NODES, PODS, KubeClient, Resource
from united.kube.wait import eventually
from united.workloadspread.model import MATCHED_ANNOTATION

pytestmark = pytest.mark.e2e
SAMPLES = Path(__file__).resolve().parents[2] / "manifests" / "samples"
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
    running = next(line for line in lines if "is running at" in line)
    assert running.startswith(f"Kubernetes {KUBE_VERSION.tag} is running at"), running  # what /version says
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


def _components(pid: int) -> dict[str, list[str]]:
    """The command lines of ``pid``'s children, by program name (the cluster's components)."""
    found: dict[str, list[str]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            argv = (stat.parent / "cmdline").read_bytes().decode().split("\0")
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and argv[0]:
            found[Path(argv[0]).name] = argv
    return found


async def _spawn(module: str, *args: str) -> asyncio.subprocess.Process:
    """``python -m module args``, its output and errors on one pipe."""
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", module, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )


async def _cluster_files(proc: asyncio.subprocess.Process) -> list[Path]:
    """Once its API server runs: the cluster directory and etcd's data directory of ``proc``,
    after checking that every file the components were given lies in one of them (no key,
    token or kubeconfig elsewhere) besides the cached binaries."""

    async def started() -> list[Path]:
        argv = _components(proc.pid)
        assert {"etcd", "kube-apiserver"} <= set(argv), f"components so far: {sorted(argv)}"
        return [Path(a.split("=", 1)[1]) for args in argv.values() for a in args[1:] if "=/" in a]

    paths = await eventually(started, within=120, interval=0.05, what="the API server started")
    workdir = next(p.parent for p in paths if p.name == "tokens.csv")
    etcd = next(p.parent for p in paths if p.name == "data")
    assert workdir.name.startswith("united-kube-") and etcd.name.startswith("united-etcd-"), paths
    assert all(p.is_relative_to(workdir) or p.is_relative_to(etcd) for p in paths), paths
    assert {p.name for p in workdir.iterdir()} >= {"pki", "tokens.csv", "admin.kubeconfig"}
    return [workdir, etcd]


def _left_behind(paths: list[Path]) -> list[str]:
    return [f"{p}: {sorted(c.name for c in p.iterdir())}" for p in paths if p.exists()]


async def _exit(proc: asyncio.subprocess.Process) -> str:
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=STOP_WITHIN)
    return out.decode()


async def test_demo_removes_the_cluster_directory_on_sigterm_while_starting() -> None:
    """SIGTERM used to end the demo on the spot, leaving the admin kubeconfig, tokens, keys
    and etcd's data behind."""
    proc, _ = await run_until([sys.executable, "-m", "united", "demo"], "starting the local control plane")
    files = await _cluster_files(proc)
    proc.send_signal(signal.SIGTERM)
    output = await _exit(proc)
    assert proc.returncode == 130, output
    assert not _left_behind([*files, Path("/var/run/kubernetes")]), output


async def test_demo_removes_the_cluster_directory_on_sigterm_once_running() -> None:
    proc, lines = await run_until([sys.executable, "-m", "united", "demo"], READY_LINE)
    files = [Path(value(lines, "kubeconfig:")).parent]
    assert files[0].is_dir()
    proc.send_signal(signal.SIGTERM)
    output = await _exit(proc)
    assert proc.returncode == 0, output  # the controller stops gracefully on SIGTERM
    assert not _left_behind(files), output


async def test_ctrl_c_while_starting_keeps_nothing() -> None:
    """An interruption is not a failure: not even the logs stay."""
    proc = await _spawn("united.devcluster", "start")
    files = await _cluster_files(proc)
    proc.send_signal(signal.SIGINT)
    output = await _exit(proc)
    assert proc.returncode == 130, output
    assert not _left_behind(files), output
    assert "logs kept" not in output


async def test_a_second_ctrl_c_does_not_cut_the_tear_down_short() -> None:
    proc, lines = await run_until([sys.executable, "-m", "united.devcluster", "start"], "Ctrl-C stops it")
    files = await _cluster_files(proc)
    proc.send_signal(signal.SIGINT)
    await read_until(proc, lines, "stopping", within=STOP_WITHIN)
    proc.send_signal(signal.SIGINT)
    output = await _exit(proc)
    assert proc.returncode in (0, 130), output  # 0 if the stop was quicker than the second signal
    assert not _left_behind(files), output
    assert Layout.default(KUBE_VERSION).bin_dir.is_dir(), "the cached binaries stay"


async def test_a_sample_the_api_server_refuses_ends_the_demo_with_its_reason(tmp_path: Path) -> None:
    """A WorkloadSpread sample whose target the API server refuses (its selector does not
    match its template): one line naming the object and why, exit 1, nothing left behind."""
    docs = list(yaml.safe_load_all((SAMPLES / "workloadspread" / "zones-max.yaml").read_text()))
    docs[0]["spec"]["selector"]["matchLabels"] = {"app": "not-web"}
    sample = tmp_path / "refused.yaml"
    sample.write_text(yaml.safe_dump_all(docs))
    proc = await _spawn("united", "demo", "--sample", str(sample))
    files = await _cluster_files(proc)
    output = await asyncio.wait_for(_exit(proc), timeout=180)
    assert proc.returncode == 1, output
    (line,) = [x for x in output.splitlines() if x.startswith("cannot create ")]
    assert f"from {sample}: " in line, line
    assert "Traceback" not in output
    assert not _left_behind(files), output


async def test_what_a_killed_process_left_is_removed_by_the_next_cluster() -> None:
    """SIGKILL cannot be handled: its components die with it (PR_SET_PDEATHSIG), and the next
    LocalCluster created on the machine removes the directories it left."""
    proc = await _spawn("united.devcluster", "start")
    files = await _cluster_files(proc)
    proc.kill()
    await _exit(proc)
    assert _left_behind(files), "SIGKILL left nothing behind? then this test tests nothing"
    next_one = LocalCluster(provision(layout=Layout.default(KUBE_VERSION)))
    try:
        assert not _left_behind(files)
    finally:
        next_one.stop()
    assert not next_one.workdir.exists()


async def test_demo_spreads_a_deployment_with_a_workloadspread_sample() -> None:
    """``united demo --sample`` with a WorkloadSpread: the spread, then its Deployment, pods
    placed by the webhook 4 / 4 / 2, and the table says so, from the status."""
    sample = str(SAMPLES / "workloadspread" / "zones-max.yaml")
    proc, lines = await run_until([sys.executable, "-m", "united", "demo", "--sample", sample], READY_LINE)
    kubeconfig = Path(value(lines, "kubeconfig:"))
    try:
        async with await KubeClient.from_kubeconfig(kubeconfig) as client:

            async def placed() -> None:
                pods = (await client.list(PODS, namespace="demo", label_selector="app=web")).items
                subsets = sorted(
                    json.loads(p["metadata"]["annotations"][MATCHED_ANNOTATION])["subset"]
                    for p in pods
                    if is_pod_ready(p)
                )
                assert subsets == ["zone-a"] * 4 + ["zone-b"] * 4 + ["zone-c"] * 2, subsets

            await eventually(placed, within=120, what="pods placed 4 / 4 / 2")
            await read_until(proc, lines, "zone-c  2         4", within=60)
    finally:
        output = await interrupt(proc)
    assert proc.returncode == 0, output
    table = "\n".join(lines)
    assert "web-zones (Deployment web): 10 pod(s) in subsets, 0 in none" in table
    assert re.search(r"^zone-a  4         4    \S", table, re.MULTILINE), table
    assert not kubeconfig.parent.exists()
