"""``united run`` as an operator meets it: SIGTERM and SIGINT stop it with exit code 0 in
every state — before the first answer from the API server, while it is unreachable, while the
caches sync, during discovery, as standby, as leader (the Lease released) and with passes in
flight (cancelled after the grace) — its logs stay readable while the API server is dead (a
bounded number of lines, in words, with machine fields), ``/readyz`` says why it is not ready,
and a child kind it cannot list stalls only its own UnitedDeployments.

A stop must not wait for the requests the fault proxy holds back (120 s): a test fails when the
process outlives three times the documented ``STOP_WITHIN``, a deadline to wait for, not a
speed to meet. The seconds each stop took are printed (``-s``), not asserted: a loaded machine
stretches them.

The controller is a subprocess under its shipped ServiceAccount; the states that need the API
server to hold back are made by the fault proxy (latency on one request), the unreachable ones
by a closed port and by a port that accepts connections and never answers."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.chaos.support import proxy_for, token_of
from tests.e2e.controller.helpers import CLONESETS, UD, condition, ud, wait_ready, zone
from tests.support.controller import LOG_DIR
from tests.support.faultproxy import ThreadedFaultProxy
from united.controller.manager import STOP_WITHIN
from united.devcluster.cluster import LocalCluster
from united.devcluster.credentials import write_kubeconfig
from united.devcluster.ports import free_port
from united.kube.apply import SYSTEM
from united.kube.client import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    LEASES,
    ROLE_BINDINGS,
    ROLES,
    SERVICE_ACCOUNTS,
    KubeClient,
    PatchType,
)
from united.kube.errors import NotFound
from united.kube.kubeconfig import render_kubeconfig
from united.kube.wait import eventually

pytestmark = pytest.mark.e2e
SIGNALS = pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
RBAC = "rbac.authorization.k8s.io/v1"
STOP_TIMES: dict[str, float] = {}
"""Measured signal-to-exit times, printed at the end of the module (``-s``)."""


_RUNS = itertools.count()
"""Numbers each run's log file, so a parametrized test's runs do not overwrite each other's."""


class Run:
    """One ``united run`` subprocess with a JSON log file."""

    def __init__(self, kubeconfig: Path, *flags: str, name: str) -> None:
        self.port = free_port()
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.log_path = LOG_DIR / f"lifecycle-{name}-{os.getpid()}-{next(_RUNS)}.log"
        self._log = self.log_path.open("wb")
        argv = [sys.executable, "-m", "united", "run", "--kubeconfig", str(kubeconfig)]
        argv += ["--http-port", str(self.port), "--log-format", "json", "--discovery-interval", "3", *flags]
        self.proc = subprocess.Popen(
            argv, stdout=self._log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )

    def lines(self) -> list[dict[str, Any]]:
        out = []
        for raw in self.log_path.read_text().splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(raw))
        return out

    def text(self) -> str:
        return self.log_path.read_text()

    async def logged(self, event: str, *, within: float = 60) -> dict[str, Any]:
        async def found() -> dict[str, Any]:
            assert self.proc.poll() is None, f"exited with {self.proc.returncode}:\n{self.text()}"
            line = next((line for line in self.lines() if event in str(line.get("event"))), None)
            assert line is not None, f"no {event!r} yet in {self.log_path}"
            return line

        return await eventually(found, within=within, what=f"log line {event!r}")

    def readyz(self) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz?verbose", timeout=5) as answer:
                return int(answer.status), str(answer.read().decode())
        except urllib.error.HTTPError as error:
            return int(error.code), str(error.read().decode())

    async def ready(self, *, within: float = 60) -> None:
        async def ok() -> None:
            assert self.proc.poll() is None, f"exited with {self.proc.returncode}:\n{self.text()}"
            with contextlib.suppress(OSError):
                assert self.readyz()[0] == 200
                return
            raise AssertionError("not serving /readyz yet")

        await eventually(ok, within=within, what="controller ready")

    def stop(self, sig: int, *, state: str) -> float:
        """Signal it; assert a clean exit (failing if it is still running after three times
        the documented bound); return the seconds it took, for the figures."""
        started = time.monotonic()
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=STOP_WITHIN * 3)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(
                f"{state}: still running {STOP_WITHIN * 3:g}s after {sig!r}; see {self.log_path}"
            ) from None
        finally:
            self._log.close()
        seconds = time.monotonic() - started
        STOP_TIMES[f"{state}, {signal.Signals(sig).name}"] = seconds
        assert code == 0, f"{state}: exit code {code} after {signal.Signals(sig).name}; see {self.log_path}"
        assert "Traceback" not in self.text(), self.log_path
        return seconds

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    if STOP_TIMES:
        print("\nsignal -> exit, by state:")
        for state, seconds in sorted(STOP_TIMES.items()):
            print(f"  {state}: {seconds:.2f}s")


@contextlib.contextmanager
def running(kubeconfig: Path, *flags: str, name: str) -> Iterator[Run]:
    run = Run(kubeconfig, *flags, name=name)
    try:
        yield run
    finally:
        run.kill()


def unreachable_kubeconfig(path: Path, port: int) -> Path:
    config = render_kubeconfig(server=f"https://127.0.0.1:{port}", ca_cert=path, user="u", token="t")
    config["clusters"][0]["cluster"].pop("certificate-authority", None)
    config["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    return write_kubeconfig(path, config)


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def black_hole() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield int(sock.getsockname()[1])


@pytest.fixture
def proxy(cluster: LocalCluster, controller_identity: Path) -> Iterator[ThreadedFaultProxy]:
    started = proxy_for(cluster, controller_identity, name="lifecycle")
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def proxied(proxy: ThreadedFaultProxy, controller_identity: Path, tmp_path: Path) -> Path:
    """A kubeconfig for the controller's identity through the proxy."""
    return proxy.write_kubeconfig(tmp_path / "proxied", token=token_of(controller_identity), user="united-controller")


# -- unreachable: no cluster involved ---------------------------------------------------------


@SIGNALS
async def test_stops_before_the_first_answer(tmp_path: Path, black_hole: int, sig: int) -> None:
    with running(unreachable_kubeconfig(tmp_path / "kc", black_hole), name="first-contact") as run:
        await run.logged("health server listening")
        await asyncio.sleep(1)
        assert not [line for line in run.lines() if line.get("error_type")], "the first request got an answer"
        run.stop(sig, state="before the first answer")


@SIGNALS
async def test_stops_while_unreachable(tmp_path: Path, closed_port: int, sig: int) -> None:
    with running(unreachable_kubeconfig(tmp_path / "kc", closed_port), name="unreachable") as run:
        await run.logged("still failing")
        run.stop(sig, state="API server unreachable")


async def test_an_unreachable_api_server_is_a_few_readable_lines(tmp_path: Path, closed_port: int) -> None:
    """20 s against a closed port: a bounded number of lines, each in words with machine fields,
    and /readyz names every informer that has not synced and why."""
    server = f"https://127.0.0.1:{closed_port}"
    with running(unreachable_kubeconfig(tmp_path / "kc", closed_port), name="log-volume") as run:
        await run.logged("health server listening")
        started = time.monotonic()

        async def says_why() -> tuple[int, str]:
            # The first LIST fails after the client's own retries (a second or so), then
            # /readyz names each informer and its error.
            code, body = run.readyz()
            for informer in ("uniteddeployments.apps.united.io", "controllerrevisions.apps", "pods"):
                assert f"{informer} (cannot list {informer}: cannot reach {server}: connection refused)" in body, body
            return code, body

        code, body = await eventually(says_why, within=10, what="/readyz saying why it is not ready")
        await asyncio.sleep(20 - (time.monotonic() - started))
        lines = run.lines()
        run.stop(signal.SIGTERM, state="API server unreachable for 20 s")
    failures = [line for line in lines if line.get("error_type")]
    assert failures, run.text()
    for line in failures:
        assert line["event"].startswith(f"cannot reach {server}: connection refused"), line
        assert line["error_type"] == "ConnectionRefused" and line["resource"] and line["attempt"] >= 1, line
    assert "ConnectionKey" not in run.text()
    # first failure, then steps of 1, 2, 4, 8 s; plus start-up lines; was ~100 lines
    assert len(lines) <= 12, "\n".join(map(str, lines))
    assert code == 503, body


# -- against the local control plane ----------------------------------------------------------


@SIGNALS
async def test_stops_while_the_caches_sync(proxy: ThreadedFaultProxy, proxied: Path, sig: int) -> None:
    proxy.add_rule(methods="GET", path=r"/api/v1/pods$", watch=False, latency=120)
    with running(proxied, name="syncing") as run:

        async def waiting_for_pods() -> None:
            with contextlib.suppress(OSError):
                code, body = run.readyz()
                assert code == 503 and "not synced: pods (LIST in progress)" in body, body
                return
            raise AssertionError("not serving /readyz yet")

        await eventually(waiting_for_pods, within=60, what="only the pods LIST pending")
        run.stop(sig, state="caches syncing")


@SIGNALS
async def test_stops_during_discovery(proxy: ThreadedFaultProxy, proxied: Path, sig: int) -> None:
    proxy.add_rule(methods="GET", path=r"^/apis/apps\.kruise\.io/v1alpha1$", latency=120)
    with running(proxied, name="discovery") as run:
        await proxy.log.wait_for(1, within=60, path_regex=r"^/apis/apps\.kruise\.io/v1alpha1$")
        run.stop(sig, state="during discovery")


async def _lease_role(kube: KubeClient, namespace: str) -> None:
    """What manifests/base/leader-election.yaml grants, in the test's own namespace (so the
    test's Lease is not the suite controller's)."""
    rule = {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create", "get", "update"]}
    subject = {"kind": "ServiceAccount", "name": "united-controller", "namespace": SYSTEM}
    role = {"apiVersion": RBAC, "kind": "Role", "metadata": {"name": "lease"}, "rules": [rule]}
    await kube.create(ROLES, role, namespace=namespace)
    binding = {
        "apiVersion": RBAC,
        "kind": "RoleBinding",
        "metadata": {"name": "lease"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "lease"},
        "subjects": [subject],
    }
    await kube.create(ROLE_BINDINGS, binding, namespace=namespace)


@SIGNALS
async def test_stops_as_leader_and_releases_the_lease(
    kube: KubeClient, namespace: str, controller_identity: Path, sig: int
) -> None:
    await _lease_role(kube, namespace)
    flags = ("--leader-elect", "--leader-election-namespace", namespace)
    with running(controller_identity, *flags, name="leader") as run:
        await run.logged("starting workers")
        lease = await kube.get(LEASES, "united-controller", namespace=namespace)
        assert lease["spec"]["holderIdentity"], lease
        run.stop(sig, state="leader")
    lease = await kube.get(LEASES, "united-controller", namespace=namespace)
    assert not lease["spec"].get("holderIdentity"), lease
    assert lease["spec"]["leaseDurationSeconds"] == 1, lease


@SIGNALS
async def test_stops_as_standby(kube: KubeClient, namespace: str, controller_identity: Path, sig: int) -> None:
    await _lease_role(kube, namespace)
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    held = {"holderIdentity": "someone-else", "leaseDurationSeconds": 3600, "acquireTime": now, "renewTime": now}
    await kube.create(
        LEASES,
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "united-controller"},
            "spec": held,
        },
        namespace=namespace,
    )
    flags = ("--leader-elect", "--leader-election-namespace", namespace)
    with running(controller_identity, *flags, name="standby") as run:
        await run.ready()
        await asyncio.sleep(3)  # a retry period or so as standby
        assert not [line for line in run.lines() if "starting workers" in str(line.get("event"))]
        run.stop(sig, state="standby")
    lease = await kube.get(LEASES, "united-controller", namespace=namespace)
    assert lease["spec"]["holderIdentity"] == "someone-else", lease


@SIGNALS
async def test_stops_with_passes_in_flight(
    kube: KubeClient, namespace: str, sim: Any, proxy: ThreadedFaultProxy, proxied: Path, sig: int
) -> None:
    """Every write in the namespace hangs; the passes writing are cancelled after the grace."""
    writes = rf"/namespaces/{namespace}/"
    proxy.add_rule(methods={"POST", "PATCH", "PUT", "DELETE"}, path=writes, latency=120)
    with running(proxied, name="in-flight") as run:
        await run.ready()
        for n in range(3):
            doc = ud(f"web-{n}", [zone("a", "zone-a"), zone("b", "zone-b")], replicas=2)
            await kube.create(UD, doc, namespace=namespace)

        async def writing() -> None:
            # Any verb: in the full suite the e2e session's shared controller (all namespaces)
            # may create the revisions and children first, and this one's passes hang in
            # status patches and Events instead.
            pending = [e for e in proxy.log.writes(path_regex=writes) if e.status is None]
            assert len(pending) >= 2, "no writes in flight yet"

        await eventually(writing, within=60, what="passes hanging in a write")
        seconds = run.stop(sig, state="passes in flight")
    assert seconds >= 2, "the passes in flight got no grace"
    assert any("cancelled reconciles" in str(line.get("event")) for line in run.lines()), run.log_path


async def test_api_server_outage_is_logged_once_per_step_and_recovery_once(
    proxy: ThreadedFaultProxy, proxied: Path, namespace: str
) -> None:
    """A running controller whose API server goes away for 20 s (the proxy stopped: connection
    refused) and comes back: a bounded number of lines meanwhile, then one "recovered" line.
    It serves a namespace of its own, so the lines are its informers' alone (the reconciles
    of queued objects that get no answer join the same lines: a unit test of the workers)."""
    with running(proxied, "--namespace", namespace, name="outage") as run:
        await run.ready()
        before = len(run.lines())
        proxy.stop()
        await asyncio.sleep(20)
        during = run.lines()[before:]
        proxy.start()

        async def recovered() -> list[dict[str, Any]]:
            after = run.lines()[before + len(during) :]
            lines = [line for line in after if str(line.get("event")).startswith("recovered: ")]
            assert lines, "no recovery logged yet"
            return lines

        recoveries = await eventually(recovered, within=90, what="recovery logged")
        await asyncio.sleep(1)
        run.stop(signal.SIGTERM, state="after an outage")
    assert not [line for line in during if str(line.get("event")).startswith("recovered: ")], during
    failing = [line for line in during if line.get("error_type")]
    assert failing, during
    for line in failing:
        # a cut watch first ("the answer was cut short"), then every re-list refused
        assert line["error_type"] in ("ConnectionRefused", "Disconnected"), line
        assert line["event"].startswith(f"cannot reach {proxy.url}: "), line
    assert len(during) <= 12, "\n".join(map(str, during))
    assert [line["event"] for line in recoveries] == [f"recovered: cannot reach {proxy.url}: connection refused"]


async def test_a_child_kind_it_cannot_list_stalls_only_its_own(
    kube: KubeClient, namespace: str, sim: Any, cluster: LocalCluster
) -> None:
    """CloneSets forbidden by RBAC: after the time-box the controller serves Deployments,
    reports CloneSet UnitedDeployments ``ChildKindUnavailable`` saying why, and picks CloneSets
    up once they can be listed — without a restart."""
    role = await kube.get(CLUSTER_ROLES, "united-controller")
    rules = [
        {**r, "resources": [x for x in r["resources"] if x != "clonesets"]} if "clonesets" in r["resources"] else r
        for r in role["rules"]
    ]
    name = f"united-no-clonesets-{namespace}"[:63]
    await kube.create(
        CLUSTER_ROLES,
        {
            "apiVersion": RBAC,
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": rules,
        },
    )
    try:
        account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "united-controller"}}
        await kube.create(SERVICE_ACCOUNTS, account, namespace=namespace)
        binding = {
            "apiVersion": RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": "united-controller", "namespace": namespace}],
        }
        await kube.create(CLUSTER_ROLE_BINDINGS, binding)
        identity = await cluster.service_account_kubeconfig(kube, namespace=namespace, name="united-controller")
        clones = ud("clones", [zone("a", "zone-a")], replicas=1, variant="cloneSetTemplate")
        plain = ud("plain", [zone("a", "zone-a"), zone("b", "zone-b")], replicas=2)
        await kube.create(UD, clones, namespace=namespace)
        await kube.create(UD, plain, namespace=namespace)
        with running(identity, "--namespace", namespace, name="no-clonesets") as run:
            await wait_ready(kube, namespace, plain, within=90)

            async def stalled() -> None:
                obj = await kube.get(UD, "clones", namespace=namespace)
                cond = condition(obj, "Stalled")
                assert cond.get("reason") == "ChildKindUnavailable", obj.get("status")
                assert cond["message"].startswith(f"cannot list clonesets.apps.kruise.io in {namespace}: 403 Forbidden")

            await eventually(stalled, within=60, what="CloneSet UD stalled with the reason")
            await kube.patch(CLUSTER_ROLES, name, {"rules": role["rules"]}, patch_type=PatchType.MERGE)

            async def served() -> None:
                assert (await kube.list(CLONESETS, namespace=namespace)).items, "no CloneSet child yet"

            await eventually(served, within=90, what="CloneSets picked up once listable")
            await run.logged("child kind available")
            run.stop(signal.SIGTERM, state="serving")
    finally:
        for kind in (CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES):
            with contextlib.suppress(NotFound):
                await kube.delete(kind, name)
