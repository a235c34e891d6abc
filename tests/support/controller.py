"""The controller under test: ``united run`` as a subprocess, under its own ServiceAccount
token bound to the ClusterRole shipped in ``manifests/base`` — so a missing RBAC rule fails
a test instead of passing unnoticed with admin rights.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from united.controller.webhooks import COMPAT_CRD, MUTATING, VALIDATING
from united.devcluster.installation import KRUISE_RBAC, documents
from united.devcluster.ports import free_port
from united.kube.apply import SYSTEM, apply
from united.kube.client import KubeClient, PatchType, Resource
from united.kube.errors import NotFound
from united.kube.wait import eventually
from united.workloadspread import webhookconfig

ROOT = Path(__file__).resolve().parents[3]
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", False, "CustomResourceDefinition")
LOG_DIR = Path(os.environ.get("UNITED_E2E_LOGS", "/tmp/united-e2e-logs"))
"""Controller logs outlive the cluster's temporary directory, for post-mortems."""
WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE")


async def install_kruise_rbac(client: KubeClient) -> None:
    """The ``manifests/kruise`` overlay's extra rules: UnitedDeployments of apps.kruise.io."""
    await apply(client, documents(KRUISE_RBAC))


class Controller:
    """A running ``united run`` process and what the tests read from it."""

    def __init__(
        self, kubeconfig: Path, *, name: str = "controller", extra: tuple[str, ...] = (), leader_elect: bool = True
    ) -> None:
        self.kubeconfig = kubeconfig
        self.leader_elect = leader_elect
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.log_path = LOG_DIR / f"{name}-{os.getpid()}.log"
        self.extra = extra
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None
        self.starts = 0

    def start(self) -> None:
        self.port = free_port()
        self.starts += 1
        self._close_log()
        self._log = log = self.log_path.open("ab")
        log.write(f"\n==== start {self.starts} ====\n".encode())
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "united",
                "run",
                "--kubeconfig",
                str(self.kubeconfig),
                "--http-port",
                str(self.port),
                *(("--leader-elect", "--leader-election-namespace", SYSTEM) if self.leader_elect else ()),
                "--log-format",
                "json",
                "--workers",
                "4",
                "--discovery-interval",
                "3",
                *self.extra,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"controller exited with {self.proc.returncode}; see {self.log_path}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=1) as answer,
            ):
                if answer.status == 200:
                    return
            time.sleep(0.2)
        self.stop(signal.SIGKILL)  # a test that fails here has no process to stop in its own cleanup
        raise RuntimeError(f"controller not ready within 60 s; see {self.log_path}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 40) -> int | None:
        if self.proc is None:
            self._close_log()
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        code = self.proc.returncode
        self.proc = None
        self._close_log()
        return code

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def restart(self, sig: int = signal.SIGTERM) -> None:
        self.stop(sig)
        self.start()

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as answer:
            return str(answer.read().decode())

    def counter(self, name: str, **labels: str) -> float:
        """Sum of a metric's samples whose labels include ``labels``."""
        total = 0.0
        for line in self.metrics().splitlines():
            if not line.startswith(name + "{") and not line.startswith(name + " "):
                continue
            head, _, value = line.rpartition(" ")
            if all(f'{k}="{v}"' in head for k, v in labels.items()):
                total += float(value)
        return total

    def writes_by_resource(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for line in self.metrics().splitlines():
            if line.startswith("rest_client_requests_total{") and any(f'verb="{v}"' in line for v in WRITE_VERBS):
                resource = line.split('resource="', 1)[1].split('"', 1)[0]
                out[resource] = out.get(resource, 0) + int(float(line.rpartition(" ")[2]))
        return out

    def writes(self, resource: str | None = None) -> int:
        """API writes made so far (POST, PUT, PATCH, DELETE), from one /metrics snapshot;
        for one resource, or all but Lease renewals (leader election, every 2 s)."""
        by = self.writes_by_resource()
        if resource is not None:
            return by.get(resource, 0)
        return sum(n for r, n in by.items() if r != "leases")


class WebhookController(Controller):
    """A controller that also serves its pod and conversion webhooks at ``url``
    (``https://127.0.0.1:PORT``), a port fixed for its life, so restarts keep the configurations
    pointing at it; ``--webhook-url`` puts that address in the serving certificate."""

    def __init__(
        self, kubeconfig: Path, *, name: str = "controller", extra: tuple[str, ...] = (), leader_elect: bool = True
    ) -> None:
        self.webhook_port = free_port()
        self.url = f"https://127.0.0.1:{self.webhook_port}"
        flags = ("--webhook-port", str(self.webhook_port), "--webhook-host", "127.0.0.1", "--webhook-url", self.url)
        super().__init__(kubeconfig, name=name, extra=(*flags, *extra), leader_elect=leader_elect)


async def install_webhook_configurations(client: KubeClient, url: str) -> None:
    """What an installer applies from ``manifests/base/webhook.yaml`` (empty ``caBundle``,
    ``failurePolicy: Ignore``), calling ``url`` instead of the Service: the local control plane
    routes no Services. Any left from an earlier controller are replaced."""
    await remove_webhook_configurations(client)
    for resource, body in zip((MUTATING, VALIDATING), webhookconfig.configurations(namespace=SYSTEM, url=url),
                              strict=True):  # fmt: skip
        await client.create(resource, body)


async def remove_webhook_configurations(client: KubeClient) -> None:
    """No configuration left calling a stopped controller's port."""
    for resource in (MUTATING, VALIDATING):
        with contextlib.suppress(NotFound):
            await client.delete(resource, webhookconfig.NAME)


Saved = list[tuple[Resource, dict[str, Any]]]


async def saved_webhook_configurations(client: KubeClient) -> Saved:
    """The webhook configurations as they are (none, or those of the session's controller), for
    :func:`restore_webhook_configurations` after a test that applies the shipped ones."""
    saved: Saved = []
    for resource in (MUTATING, VALIDATING):
        with contextlib.suppress(NotFound):
            saved.append((resource, await client.get(resource, webhookconfig.NAME)))
    return saved


async def restore_webhook_configurations(client: KubeClient, saved: Saved) -> None:
    """The configurations exactly as :func:`saved_webhook_configurations` found them (the shipped
    ones a test applied would call a Service the local control plane cannot route to)."""
    await remove_webhook_configurations(client)
    for resource, body in saved:
        if resource == CRDS:
            await _convert(client, body)
            continue
        metadata = {k: v for k, v in body["metadata"].items() if k in ("name", "labels", "annotations")}
        await client.create(resource, {**body, "metadata": metadata})


@contextlib.asynccontextmanager
async def webhook_configurations_aside(client: KubeClient) -> AsyncIterator[None]:
    """No webhook configurations meanwhile, then those there before, exactly (a test applying
    the shipped ones, which call a Service, onto the session controller's, which call a URL,
    would ask for a configuration with both)."""
    saved = await _set_aside(client)
    try:
        yield
    finally:
        await restore_webhook_configurations(client, saved)


async def _set_aside(client: KubeClient) -> Saved:
    """Also the compat CRD's conversion, when the session's controller points it at its URL:
    the shipped CRD's conversion calls the Service, and the two merged name both."""
    saved = await saved_webhook_configurations(client)
    await remove_webhook_configurations(client)
    with contextlib.suppress(NotFound):
        conversion = (await client.get(CRDS, COMPAT_CRD))["spec"].get("conversion") or {}
        if "url" in ((conversion.get("webhook") or {}).get("clientConfig") or {}):
            await _convert(client, {"strategy": "None"})
            saved.append((CRDS, conversion))
    return saved


async def _convert(client: KubeClient, conversion: dict[str, Any]) -> None:
    operation = {"op": "replace", "path": "/spec/conversion", "value": conversion}
    await client.patch(CRDS, COMPAT_CRD, [operation], patch_type=PatchType.JSON)


@contextlib.contextmanager
def webhook_configurations_set_aside(admin_kubeconfig: Path) -> Iterator[None]:
    """:func:`webhook_configurations_aside` for a test without an event loop."""

    async def aside() -> Saved:
        async with await KubeClient.from_kubeconfig(admin_kubeconfig) as client:
            return await _set_aside(client)

    async def back(saved: Saved) -> None:
        async with await KubeClient.from_kubeconfig(admin_kubeconfig) as client:
            await restore_webhook_configurations(client, saved)

    saved = asyncio.run(aside())
    try:
        yield
    finally:
        asyncio.run(back(saved))


async def webhooks_trusted(client: KubeClient, url: str, *, within: float = 60) -> None:
    """Until every webhook of both configurations calls ``url`` and trusts a CA (the
    controller's first pass filled in the ``caBundle``)."""

    async def trusted() -> None:
        for resource in (MUTATING, VALIDATING):
            for webhook in (await client.get(resource, webhookconfig.NAME))["webhooks"]:
                config = webhook["clientConfig"]
                assert config.get("caBundle"), f"{resource.plural}: no caBundle yet"
                assert str(config.get("url", "")).startswith(url + "/"), config

    await eventually(trusted, within=within, what="the webhook configurations trusting the controller")
