"""Start and stop one local control plane: etcd, kube-apiserver,
kube-controller-manager and kube-scheduler, all on 127.0.0.1.

Every process gets its own process group and is stopped through it (SIGTERM, then
SIGKILL), and asks the kernel to SIGTERM it should the starting process die first,
so no etcd or apiserver outlives a test run. Ports are picked free at random, so
several clusters (two pytest sessions) can coexist. A failed start (or a run that
ended with an exception) keeps its logs and names their directory.

The cluster directory ``/tmp/united-kube-*`` holds an admin kubeconfig, bearer tokens and
private keys, and etcd's data (``/dev/shm/united-etcd-*``) every Secret: a stop removes both,
also when it is interrupted, and while a cluster runs SIGTERM interrupts the process as Ctrl-C
does, so the same tear-down runs for both signals. After a failure only ``logs/`` is kept. What
a killed process (SIGKILL) left behind is removed by the next cluster created on the machine.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from united.devcluster import certs as certs_mod
from united.devcluster import versions
from united.devcluster.build import Binaries, tail
from united.devcluster.credentials import (
    StaticUser,
    admin_user,
    render_token_file,
    request_token,
    user_kubeconfig,
    write_kubeconfig,
    write_private,
)
from united.devcluster.ports import free_ports
from united.kube.client import SECRETS, SERVICE_ACCOUNTS, KubeClient
from united.kube.errors import NotFound
from united.kube.kubeconfig import render_kubeconfig
from united.kube.wait import WaitTimeoutError, eventually, wait_until

HOST = "127.0.0.1"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
# Service IPs are only allocated in etcd (nothing routes or connects to them).
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
# Node lifecycle is deliberately absent: the node simulator owns node health. The
# volume binder completes bindings for the simulated provisioner (volumes.py), and
# the protection controllers remove the finalizers that admission puts on claims
# and volumes, without which they (and their namespaces) could never be deleted.
DEFAULT_CONTROLLERS = (
    "serviceaccount-token",
    "serviceaccount",
    "namespace",
    "garbagecollector",
    "deployment",
    "replicaset",
    "statefulset",
    "persistentvolume-binder",
    "pvc-protection",
    "pv-protection",
    "horizontalpodautoscaling",
)


class _ComponentDiedError(RuntimeError):
    """A component exited while we waited for it to become healthy."""


class ClusterError(RuntimeError):
    """The control plane could not be started (or died); ``log_dir`` has the logs."""

    def __init__(self, message: str, *, log_dir: Path) -> None:
        super().__init__(f"{message}\nlogs kept in {log_dir}")
        self.log_dir = log_dir


@dataclass(frozen=True)
class Ports:
    """The ports of one cluster."""

    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int

    @classmethod
    def pick(cls) -> Ports:
        return cls(*free_ports(5))


def etcd_args(*, name: str, data_dir: Path, ports: Ports) -> list[str]:
    """etcd's command-line flags: a one-member cluster on loopback."""
    client = f"http://{HOST}:{ports.etcd_client}"
    peer = f"http://{HOST}:{ports.etcd_peer}"
    return [
        f"--name={name}",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster={name}={peer}",
        "--initial-cluster-state=new",
        "--logger=zap",
        "--log-outputs=stderr",
    ]


def apiserver_args(
    *,
    ports: Ports,
    certs: certs_mod.CertificateSet,
    token_file: Path,
    profiling: bool = False,
    admission_config: Path | None = None,
    version: versions.KubeVersion = versions.DEFAULT,
) -> list[str]:
    """kube-apiserver's flags for ``version``: TLS, static tokens, RBAC, ServiceAccount tokens
    (and, before 1.24, ``--insecure-port=0``: without it 1.20 refuses to start); with
    ``admission_config``, its ``--admission-control-config-file``."""
    extra = [f"--admission-control-config-file={admission_config}"] if admission_config is not None else []
    return [
        f"--advertise-address={HOST}",
        f"--bind-address={HOST}",
        f"--secure-port={ports.apiserver}",
        *(["--insecure-port=0"] if versions.has_insecure_port_flag(version) else []),
        f"--etcd-servers=http://{HOST}:{ports.etcd_client}",
        f"--tls-cert-file={certs.serving_cert}",
        f"--tls-private-key-file={certs.serving_key}",
        f"--client-ca-file={certs.ca_cert}",
        f"--token-auth-file={token_file}",
        "--authorization-mode=Node,RBAC",
        f"--service-account-key-file={certs.service_account_pub}",
        f"--service-account-signing-key-file={certs.service_account_key}",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
        "--endpoint-reconciler-type=none",
        "--allow-privileged=true",
        f"--profiling={str(profiling).lower()}",
        "--v=1",
        *extra,
    ]


def controller_manager_args(
    *,
    ports: Ports,
    kubeconfig: Path,
    certs: certs_mod.CertificateSet,
    controllers: Sequence[str],
    version: versions.KubeVersion = versions.DEFAULT,
) -> list[str]:
    """kube-controller-manager's flags for ``version``: only ``controllers``, no leader election,
    no insecure port (``--port=0`` while the flag exists)."""
    return [
        f"--kubeconfig={kubeconfig}",
        f"--bind-address={HOST}",
        f"--secure-port={ports.controller_manager}",
        *(["--port=0"] if versions.controller_manager_has_port_flag(version) else []),
        "--leader-elect=false",
        f"--controllers={','.join(controllers)}",
        f"--service-account-private-key-file={certs.service_account_key}",
        f"--root-ca-file={certs.ca_cert}",
        "--use-service-account-credentials=false",
        "--controller-start-interval=0",
        "--profiling=false",
        "--v=1",
    ]


def scheduler_args(*, ports: Ports, kubeconfig: Path, version: versions.KubeVersion = versions.DEFAULT) -> list[str]:
    """kube-scheduler's flags for ``version``: no leader election, loopback only, no insecure
    port (``--port=0`` while it serves one)."""
    return [
        f"--kubeconfig={kubeconfig}",
        f"--bind-address={HOST}",
        f"--secure-port={ports.scheduler}",
        *(["--port=0"] if versions.scheduler_has_port_flag(version) else []),
        "--leader-elect=false",
        "--profiling=false",
        "--v=1",
    ]


_LIBC = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM when the parent dies (PR_SET_PDEATHSIG).

    libc is loaded once in the parent, so the child (forked from a possibly
    multi-threaded process) only makes one system call before exec. The signal
    fires when the *thread* that started the component exits, so start clusters
    from a thread that outlives them (the main thread in tests and the demo).
    """
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class _Process:
    """One component in its own process group, output to ``<log_dir>/<name>.log``."""

    def __init__(self, name: str, argv: Sequence[str], log_dir: Path, *, append: bool = False) -> None:
        self.name = name
        self.argv = list(argv)
        self.log = log_dir / f"{name}.log"
        self._log_file: IO[bytes] = self.log.open("ab" if append else "wb")
        self._log_file.write(f"$ {' '.join(argv)}\n".encode())
        self._log_file.flush()
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, *, timeout: float = 10.0) -> None:
        """SIGTERM the process group, then SIGKILL it if it lingers; always reaps."""
        if self.proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.proc.wait()
        # Children the component may have left in its group.
        self._signal(signal.SIGKILL)
        self._log_file.close()

    def _signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)


class LocalCluster:
    """One local control plane. Use as a context manager, or ``start()``/``stop()``.

    ``users`` are extra static-token users (RBAC decides what they may do); each gets
    a kubeconfig via :meth:`kubeconfig_for`. ``admin_kubeconfig`` is for tests and
    ``kubectl``. ``name`` tells several planes of one run apart (multi-cluster tests):
    it is in the directory names and is etcd's member name.
    """

    def __init__(
        self,
        binaries: Binaries,
        *,
        name: str = "host",
        users: Sequence[StaticUser] = (),
        controllers: Sequence[str] = DEFAULT_CONTROLLERS,
        startup_timeout: float = 90.0,
        log_root: Path | None = None,
        profiling: bool = False,
        admission_config: Path | None = None,
    ) -> None:
        self.binaries = binaries
        self.profiling = profiling
        self.admission_config = admission_config
        """kube-apiserver's ``--admission-control-config-file`` (e.g. the client certificate it
        presents to webhooks)."""
        """kube-apiserver serves ``/debug/pprof`` (the bench's ``--server-profile``)."""
        self.name = name
        self.admin = admin_user()
        self.users = {u.name: u for u in (self.admin, *users)}
        self.controllers = tuple(controllers)
        self.startup_timeout = startup_timeout
        self._log_root = log_root
        _interrupt_on_sigterm()
        sweep_abandoned(Path(log_root or tempfile.gettempdir()))
        self.workdir = Path(tempfile.mkdtemp(prefix=f"united-kube-{name}-", dir=log_root))
        self.log_dir = self.workdir / "logs"
        self.log_dir.mkdir()
        self._etcd_dir = Path(tempfile.mkdtemp(prefix=f"united-etcd-{name}-", dir=_fast_tmp()))
        owner = {"pid": os.getpid(), "started": _started(os.getpid()), "etcd": str(self._etcd_dir)}
        (self.workdir / OWNER_FILE).write_text(json.dumps(owner))
        self.ports = Ports.pick()
        self.server = f"https://{HOST}:{self.ports.apiserver}"
        self._processes: list[_Process] = []
        self._down: set[str] = set()
        self._certs: certs_mod.CertificateSet | None = None
        self.keep_logs = False
        self._stopped = False

    @property
    def ca_cert(self) -> Path:
        return self.workdir / "pki" / "ca.crt"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.workdir / "admin.kubeconfig"

    def kubeconfig_for(self, user: str, *, namespace: str | None = None) -> Path:
        """A kubeconfig for a static user given at construction."""
        return user_kubeconfig(
            self.workdir, server=self.server, ca_cert=self.ca_cert, user=self.users[user], namespace=namespace
        )

    async def service_account_kubeconfig(
        self, client: KubeClient, *, namespace: str, name: str, within: float = 30.0
    ) -> Path:
        """A kubeconfig with the token of ServiceAccount ``namespace/name`` — the
        identity the controller has in a real cluster. Before 1.24 waits for the token
        controller to have issued the token Secret; since then (no such Secrets) asks the
        TokenRequest API once the ServiceAccount exists."""

        async def token() -> str:
            account = await client.get(SERVICE_ACCOUNTS, name, namespace=namespace)
            if not versions.makes_token_secrets(self.binaries.version):
                return await request_token(client, namespace=namespace, name=name)
            for ref in account.get("secrets") or []:
                secret = await client.get(SECRETS, ref["name"], namespace=namespace)
                if secret.get("type") == "kubernetes.io/service-account-token":
                    data = secret.get("data") or {}
                    assert "token" in data, f"secret {ref['name']} has no token yet"
                    return base64.b64decode(data["token"]).decode()
            raise AssertionError(f"ServiceAccount {namespace}/{name} has no token secret yet")

        value = await eventually(
            token,
            within=within,
            what=f"token of {namespace}/{name}",
            retry_on=(AssertionError, NotFound),
        )
        user = f"system:serviceaccount:{namespace}:{name}"
        config = render_kubeconfig(
            server=self.server, ca_cert=self.ca_cert, user=user, token=value, namespace=namespace
        )
        return write_kubeconfig(self.workdir / f"sa-{namespace}-{name}.kubeconfig", config)

    def start(self) -> None:
        """Start all components and wait until each is healthy; on failure stop
        whatever started, keep the logs and raise :class:`ClusterError`."""
        start_together([self])

    def _stages(self) -> Iterator[list[_Process]]:
        """Start the components in dependency order: each batch yielded must be healthy
        before the next is started (:func:`start_together` interleaves several planes)."""
        pki = self.workdir / "pki"
        self._certs = certs_mod.generate(pki)
        token_file = self.workdir / "tokens.csv"
        write_private(token_file, render_token_file(self.users.values()))
        write_kubeconfig(
            self.admin_kubeconfig,
            render_kubeconfig(server=self.server, ca_cert=self.ca_cert, user=self.admin.name, token=self.admin.token),
        )
        certs = self._certs
        binaries = self.binaries
        etcd = etcd_args(name=self.name, data_dir=self._etcd_dir / "data", ports=self.ports)
        yield [self._spawn("etcd", [str(binaries.etcd), *etcd])]
        version = binaries.version
        apiserver = apiserver_args(
            ports=self.ports,
            certs=certs,
            token_file=token_file,
            profiling=self.profiling,
            admission_config=self.admission_config,
            version=version,
        )
        yield [self._spawn("kube-apiserver", [str(binaries.kube_apiserver), *apiserver])]
        manager = controller_manager_args(
            ports=self.ports,
            kubeconfig=self.admin_kubeconfig,
            certs=certs,
            controllers=self.controllers,
            version=version,
        )
        scheduler = scheduler_args(ports=self.ports, kubeconfig=self.admin_kubeconfig, version=version)
        yield [
            self._spawn("kube-controller-manager", [str(binaries.kube_controller_manager), *manager]),
            self._spawn("kube-scheduler", [str(binaries.kube_scheduler), *scheduler]),
        ]

    def restart(self, component: str, *, timeout: float | None = None) -> int:
        """Stop one component (SIGTERM, then SIGKILL) and start it again with the same flags,
        ports and data, then wait until it is healthy (after etcd, until the API server is
        ready again): an outage of that component, for chaos tests. Returns the new pid.
        Raises ``KeyError`` for an unknown component, :class:`ClusterError` if it does not
        come back within ``timeout`` (default: the start-up timeout). Call it from the thread
        that started the cluster: the new process dies with its starting thread (see
        :func:`_die_with_parent`)."""
        self.stop_component(component)
        return self.start_component(component, timeout=timeout)

    def stop_component(self, component: str) -> None:
        """Stop one component (SIGTERM, then SIGKILL) and leave it down — an outage as long as
        a test needs — until :meth:`start_component`. Its data stays (etcd's directory, the
        flags). Raises ``KeyError`` for an unknown component."""
        self._process(component).stop()
        self._down.add(component)

    def start_component(self, component: str, *, timeout: float | None = None) -> int:
        """Start a component stopped by :meth:`stop_component` again, like :meth:`restart`'s
        second half; returns the new pid."""
        old = self._process(component)
        if old.alive():
            raise ValueError(f"{component} is running; stop_component() it first")
        process = _Process(old.name, old.argv, self.log_dir, append=True)
        self._processes[self._processes.index(old)] = process
        self._down.discard(component)
        deadline = time.monotonic() + (self.startup_timeout if timeout is None else timeout)
        try:
            self._wait_healthy(process, deadline)
            if component == "etcd":
                self._wait_healthy(self._process("kube-apiserver"), deadline)
        except (_ComponentDiedError, WaitTimeoutError) as exc:
            self.keep_logs = True
            raise ClusterError(f"{component} did not come back: {exc}", log_dir=self.log_dir) from exc
        return process.proc.pid

    def _process(self, component: str) -> _Process:
        found = next((p for p in self._processes if p.name == component), None)
        if found is None:
            raise KeyError(f"no component {component!r}; have {sorted(p.name for p in self._processes)}")
        return found

    def _wait_healthy(self, process: _Process, deadline: float) -> None:
        if process.name == "etcd":
            self._wait(
                process,
                f"http://{HOST}:{self.ports.etcd_client}/health",
                deadline,
                accept=lambda body: '"health":"true"' in body.replace(" ", ""),
            )
        elif process.name == "kube-apiserver":
            self._wait(process, f"{self.server}/readyz", deadline, token=self.admin.token)
        else:
            port = self.ports.controller_manager if process.name == "kube-controller-manager" else self.ports.scheduler
            self._wait(process, f"https://{HOST}:{port}/healthz", deadline, verify=False)

    def _spawn(self, name: str, argv: list[str]) -> _Process:
        process = _Process(name, argv, self.log_dir)
        self._processes.append(process)
        return process

    def _wait(
        self,
        process: _Process,
        url: str,
        deadline: float,
        *,
        token: str | None = None,
        verify: bool = True,
        accept: object = None,
    ) -> None:
        def healthy() -> bool:
            if not process.alive():
                raise _ComponentDiedError(f"{process.name} exited with code {process.proc.returncode}")
            status, body = _http_get(url, ca=self.ca_cert if verify else None, token=token)
            if status != 200:
                raise AssertionError(f"{url} answered {status}: {body[:300]}")
            return bool(accept(body)) if callable(accept) else True

        wait_until(
            healthy,
            timeout=max(deadline - time.monotonic(), 1.0),
            interval=0.25,
            what=f"{process.name} healthy at {url}",
            retry_on=(AssertionError, OSError),
        )

    def _failure_tails(self) -> str:
        parts = [
            f"\n--- last lines of {process.log} ---\n{tail(process.log, 25)}"
            for process in self._processes
            if not process.alive()
        ]
        if not parts and self._processes:
            last = self._processes[-1]
            parts.append(f"\n--- last lines of {last.log} ---\n{tail(last.log, 25)}")
        return "".join(parts)

    @property
    def pids(self) -> dict[str, int]:
        """Process ids of the running components, by name (not those stopped on purpose)."""
        return {p.name: p.proc.pid for p in self._processes if p.name not in self._down}

    def check_alive(self) -> None:
        """Raise :class:`ClusterError` if a component has died since start (one stopped by
        :meth:`stop_component` is not dead)."""
        for process in self._processes:
            if process.name not in self._down and not process.alive():
                self.keep_logs = True
                raise ClusterError(
                    f"{process.name} died with code {process.proc.returncode}:\n{tail(process.log, 25)}",
                    log_dir=self.log_dir,
                )

    def stop(self) -> None:
        """Stop exactly the processes this cluster started (newest first) and remove
        its files, except the logs when ``keep_logs`` is set. Ctrl-C and SIGTERM wait
        until it is done (a second Ctrl-C used to leave the keys behind); idempotent."""
        with interrupts_deferred():
            for process in reversed(self._processes):
                process.stop()
            self._processes.clear()
            shutil.rmtree(self._etcd_dir, ignore_errors=True)
            if self._stopped:
                return
            self._stopped = True
            if self.keep_logs:
                for entry in self.workdir.iterdir():
                    if entry != self.log_dir:
                        _remove(entry)
                print(f"local control plane logs kept in {self.log_dir}", file=sys.stderr)
            else:
                shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None and not issubclass(exc_type, KeyboardInterrupt):
            self.keep_logs = True
        self.stop()


def start_together(clusters: Sequence[LocalCluster]) -> None:
    """Start several control planes from this thread, their components in parallel: each
    plane's etcds, then API servers, then controller managers and schedulers (one thread
    starts them all, as each component dies with the thread that started it). On failure
    every plane is stopped, the failed one's logs kept, and :class:`ClusterError` names it;
    an interruption (Ctrl-C, SIGTERM) is no failure: nothing is kept."""
    current = clusters[0]
    try:
        running = [(cluster, cluster._stages(), time.monotonic() + cluster.startup_timeout) for cluster in clusters]
        while running:
            batches = []
            for cluster, stages, deadline in running:
                current = cluster
                batch = next(stages, None)
                if batch is not None:
                    batches.append((cluster, stages, deadline, batch))
            for cluster, _, deadline, batch in batches:
                current = cluster
                for process in batch:
                    cluster._wait_healthy(process, deadline)
            running = [(cluster, stages, deadline) for cluster, stages, deadline, _ in batches]
    except BaseException as exc:
        current.keep_logs = not isinstance(exc, KeyboardInterrupt)
        tails = current._failure_tails() if current.keep_logs else ""
        for cluster in clusters:
            cluster.stop()
        if isinstance(exc, _ComponentDiedError | WaitTimeoutError | certs_mod.CertificateError | OSError):
            what = "local control plane" if len(clusters) == 1 else f"local control plane {current.name}"
            raise ClusterError(f"{what} failed to start: {exc}{tails}", log_dir=current.log_dir) from exc
        raise


OWNER_FILE = "owner.json"
"""In a cluster directory: the process that made it (pid and start time) and etcd's directory."""


def _started(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks after boot), or None if there is none: with
    the pid, an identity that a recycled pid does not share."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _mine(path: Path) -> bool:
    """Whether ``path`` is there and this user's: the clusters of parallel test workers sweep
    the same root, and another one may remove a directory between the listing and the look."""
    try:
        return path.stat().st_uid == os.getuid()
    except OSError:
        return False


def sweep_abandoned(root: Path) -> list[Path]:
    """Remove the cluster directories under ``root`` (and their etcd data) whose process is
    gone without tearing down — SIGKILL, the OOM killer, a power cut of a CI job — so their
    tokens and keys do not outlive them; returns what was removed. A live owner's directory,
    and one without an owner file (a failed start's kept logs), are left alone."""
    removed = []
    for workdir in sorted(root.glob("united-kube-*")):
        try:
            owner = json.loads((workdir / OWNER_FILE).read_text())
            pid, started, etcd = int(owner["pid"]), str(owner["started"]), Path(owner["etcd"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if _started(pid) == started or not _mine(workdir):
            continue
        if etcd.name.startswith("united-etcd-") and _mine(etcd):
            shutil.rmtree(etcd, ignore_errors=True)
        shutil.rmtree(workdir, ignore_errors=True)
        removed.append(workdir)
    return removed


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _interrupt_on_sigterm() -> None:
    """From a cluster's creation on, SIGTERM raises ``KeyboardInterrupt`` as Ctrl-C does, so the
    same ``finally`` blocks, context managers and pytest fixture finalizers stop the cluster
    and remove its keys; SIGTERM's default action would end the process on the spot and leave
    them in /tmp. Only when nobody handles SIGTERM yet, and only in the main thread (the one
    place handlers can be set); an event loop's own handler (the controller's) takes over
    while it runs."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, signal.default_int_handler)


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block is done, then deliver the first one caught to
    the handler that was in place, so a tear-down cannot be cut short half-way."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {sig: signal.signal(sig, lambda number, _frame: caught.append(number))
                for sig in (signal.SIGINT, signal.SIGTERM)}  # fmt: skip
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        if caught:
            signal.raise_signal(caught[0])


def _fast_tmp() -> str | None:
    """etcd fsyncs a lot; on tmpfs that is free, and the data dies with the run anyway."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def _http_get(url: str, *, ca: Path | None, token: str | None) -> tuple[int, str]:
    """GET ``url`` on loopback; verifies TLS against ``ca`` unless it is None
    (the controller-manager and scheduler serve throwaway self-signed certs)."""
    context: ssl.SSLContext | None = None
    if url.startswith("https:"):
        if ca is None:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        else:
            context = ssl.create_default_context(cafile=str(ca))
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as resp:
            return int(resp.status), resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        with exc:
            return int(exc.code), exc.read().decode("utf-8", "replace")


def describe(cluster: LocalCluster) -> str:
    """Human-readable facts about a running cluster (for the CLI and the demo)."""
    facts = {
        "server": cluster.server,
        "kubeconfig": str(cluster.admin_kubeconfig),
        "kubectl": str(cluster.binaries.kubectl),
        "logs": str(cluster.log_dir),
    }
    return json.dumps(facts, indent=2)
