"""``united demo`` on a cluster the demo does not own (``--kubeconfig FILE``, ``--context
NAME``, ``--current-context``): someone's kind, minikube or development cluster.

It may only add to that cluster and take back exactly what it added, so everything it
creates carries the label ``demo.united.dev/run=<this run's token>`` and is written in a
:class:`Ledger` *before* it is sent (an interrupted request is still cleaned up); what it
finds is used as it is and never changed or deleted. What it creates:

* the CRDs the cluster lacks: UnitedDeployment, WorkloadSpread and Cluster, and (only when
  neither exists, i.e. OpenKruise is not installed) the simulated CloneSet and Advanced
  StatefulSet, whose simulated controller then runs here;
* the sample's namespace (``--namespace``, default ``demo``) and the controller's
  (``<namespace>-controller``: the webhook certificate Secret); it refuses, before creating
  anything, a namespace that exists;
* simulated Nodes that fit the sample's subsets, with the node simulator as their kubelet (the
  samples' images are made up: nothing could run them). They are tainted
  ``demo.united.dev/simulated=true:NoSchedule`` and only the sample's pods get the toleration,
  so no other pod of the cluster is scheduled onto a node that does not exist;
* the pod webhook configurations the controller writes: it runs in this process with the
  kubeconfig's credentials, serves only the demo's namespace, and its webhooks select only
  namespaces with this run's label, calling ``https://<--webhook-host>:<port>``. A cluster
  where they exist already (united is installed there) is refused: the demo would take them
  over. It never touches OpenKruise's WorkloadSpread CRD (no conversion webhook).

On exit (Ctrl-C, SIGTERM, an error, or the controller stopping) the controller stops first,
then, phase by phase and waiting for each: the webhook configurations (only if they still
call this run's URL), the namespaces (their pods force-deleted: no kubelet finishes them), the
Nodes, the CRDs, each only if it still carries this run's label. Ctrl-C during that is held
until it is done.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import re
import secrets
import signal
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path

from united import data
from united.controller.kinds import KINDS
from united.controller.manager import Manager, Settings
from united.controller.webhooks import Options as WebhookOptions
from united.devcluster import crds, fleet
from united.devcluster.cluster import HOST, interrupts_deferred
from united.devcluster.demo import (
    UD_KIND,
    apply_sample,
    demo_nodes,
    namespace_usable,
    read_sample,
    say,
    show_until_stopped,
    webhooks_trusted,
)
from united.devcluster.nodes import NodeSimulator, Taint
from united.devcluster.ports import free_port
from united.devcluster.versions import NEWEST, KubeVersion
from united.devcluster.workloads import WorkloadSimulator
from united.kube.apply import is_established
from united.kube.client import (
    CRDS,
    JSON,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    NODES,
    PODS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    KubeClient,
    Resource,
)
from united.kube.errors import AlreadyExists, ApiError, ConfigError, Conflict, NotFound
from united.kube.kubeconfig import check as check_kubeconfig
from united.kube.wait import eventually
from united.log import configure_logging
from united.workloadspread.webhookconfig import NAME as WEBHOOK_CONFIGURATIONS

RUN_LABEL = "demo.united.dev/run"
TAINT = Taint("demo.united.dev/simulated", "true", "NoSchedule")
TOLERATION: JSON = {"key": TAINT.key, "operator": "Equal", "value": TAINT.value, "effect": TAINT.effect}
DEFAULT_NAMESPACE = "demo"
DEFAULT_WEBHOOK_HOST = HOST
CONTROLLER_SUFFIX = "-controller"
READY_LINE = "demo running; press Ctrl-C to stop and remove what the demo created"
WEBHOOKS = (MUTATING_WEBHOOK_CONFIGURATIONS, VALIDATING_WEBHOOK_CONFIGURATIONS)
REMOVAL_ORDER = (*WEBHOOKS, NAMESPACES, NODES, CRDS)
"""Who calls whom first: nothing may call the stopped webhook, pods go before their Nodes,
custom objects (in the namespaces) before their CRDs."""
REMOVAL_WAIT = 120.0
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_GIT_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


class UsageError(ValueError):
    """A refusal for a person, ``field: message``, before anything is created (exit 2)."""

    def __init__(self, field_path: str, message: str) -> None:
        super().__init__(f"{field_path}: {message}")


@dataclass(frozen=True)
class Target:
    """The cluster to use: a kubeconfig file and one of its contexts (None: its current one);
    ``flag`` is the option that chose it, for messages."""

    kubeconfig: Path
    context: str | None
    flag: str

    def kubectl_flags(self) -> str:
        return f"--kubeconfig {self.kubeconfig}" + (f" --context {self.context}" if self.context else "")

    def __str__(self) -> str:
        which = f"context {self.context!r}" if self.context else "the current context"
        return f"{which} of {self.kubeconfig}"


def default_kubeconfig(env: Mapping[str, str]) -> Path:
    """Where kubectl looks: the first file of ``$KUBECONFIG``, else ``~/.kube/config``."""
    first = env.get("KUBECONFIG", "").split(os.pathsep)[0]
    return Path(first).expanduser() if first else Path(env.get("HOME", "~")).expanduser() / ".kube" / "config"


def choose_target(
    *, kubeconfig: str | None, context: str | None, current_context: bool, env: Mapping[str, str]
) -> Target | None:
    """The existing cluster the options name, or None for the demo's own control plane.
    ``--current-context`` is the explicit way to say "the cluster kubectl uses now": without
    any of the three the demo never touches a cluster it did not start."""
    if kubeconfig is None and context is None and not current_context:
        return None
    if context is not None and current_context:
        raise UsageError("--current-context", "conflicts with --context: give one of them")
    if context == "":
        raise UsageError("--context", "must name a context of the kubeconfig")
    if kubeconfig == "":
        raise UsageError("--kubeconfig", "must name a file")
    flag = "--kubeconfig" if kubeconfig else "--context" if context else "--current-context"
    path = Path(kubeconfig).expanduser() if kubeconfig else default_kubeconfig(env)
    return Target(path, context, flag)


def check_namespace(name: str) -> None:
    """A namespace name (DNS label) that leaves room for the controller's ``-controller``."""
    longest = 63 - len(CONTROLLER_SUFFIX)
    if not _DNS_LABEL.fullmatch(name) or len(name) > longest:
        raise UsageError(
            "--namespace", f"{name!r} is not a namespace name (lower-case letters, digits and '-', at most {longest})"
        )


def served_version(git_version: str) -> KubeVersion:
    """The API server's release from its ``gitVersion`` (``v1.28.3+k3s1`` too); the newest
    known when it cannot be read (distributions' own schemes)."""
    match = _GIT_VERSION.match(git_version)
    return KubeVersion(*(int(p) for p in match.groups())) if match else NEWEST


@dataclass
class Ledger:
    """What this run created on the cluster, in order (written before each request, so an
    interrupted one is covered), and what it found there and kept."""

    run: str = field(default_factory=lambda: secrets.token_hex(3))
    created: list[tuple[Resource, str]] = field(default_factory=list)
    kept: list[tuple[Resource, str]] = field(default_factory=list)
    url: str | None = None
    """Where this run's webhook configurations call, once known: how they are recognised."""

    @property
    def labels(self) -> dict[str, str]:
        return {RUN_LABEL: self.run}

    def add(self, resource: Resource, name: str) -> None:
        if (resource, name) not in self.created:
            self.created.append((resource, name))

    def discard(self, resource: Resource, name: str) -> None:
        """It existed after all (someone else's): not ours to remove."""
        if (resource, name) in self.created:
            self.created.remove((resource, name))
        self.keep(resource, name)

    def keep(self, resource: Resource, name: str) -> None:
        if (resource, name) not in self.kept:
            self.kept.append((resource, name))

    def removal(self) -> list[tuple[Resource, list[str]]]:
        """What to delete, kind by kind in :data:`REMOVAL_ORDER`, each kind's names in the
        reverse of their creation."""
        return [
            (kind, names)
            for kind in REMOVAL_ORDER
            if (names := [name for resource, name in reversed(self.created) if resource == kind])
        ]

    def ours(self, obj: JSON) -> bool:
        """Whether a live object is this run's: it carries the run's label, or (the webhook
        configurations the controller writes) every webhook in it calls this run's URL."""
        metadata = obj.get("metadata") or {}
        if (metadata.get("labels") or {}).get(RUN_LABEL) == self.run:
            return True
        hooks = obj.get("webhooks") or []
        urls = [str((hook.get("clientConfig") or {}).get("url") or "") for hook in hooks if isinstance(hook, dict)]
        return bool(self.url and urls) and all(url.startswith(f"{self.url}/") for url in urls)

    def summary(self, kind: Resource, *, kept: bool = False) -> list[str]:
        return [name for resource, name in (self.kept if kept else self.created) if resource == kind]


def tolerating(obj: JSON) -> JSON:
    """A copy of a UnitedDeployment or workload whose pod templates tolerate the demo's
    simulated Nodes (:data:`TAINT`)."""
    out = copy.deepcopy(obj)
    spec = out.get("spec") or {}
    template = spec.get("template") or {}
    workloads = [t for t in template.values() if isinstance(t, dict)] if obj.get("kind") == UD_KIND else [out]
    for workload in workloads:
        pod = workload.setdefault("spec", {}).setdefault("template", {}).setdefault("spec", {})
        tolerations = pod.setdefault("tolerations", [])
        if TOLERATION not in tolerations:
            tolerations.append(dict(TOLERATION))
    return out


def labelled(body: JSON, labels: Mapping[str, str]) -> JSON:
    metadata = body.get("metadata") or {}
    return {**body, "metadata": {**metadata, "labels": {**(metadata.get("labels") or {}), **labels}}}


async def _exists(client: KubeClient, resource: Resource, name: str) -> bool:
    try:
        await client.get(resource, name)
    except NotFound:
        return False
    return True


async def refuse_foreign(client: KubeClient, target: Target, namespaces: Sequence[str]) -> None:
    """Refuse (before creating anything) what the demo would have to share or take over:
    an existing namespace, or united's webhook configurations (it is installed there)."""
    for name in namespaces:
        if await _exists(client, NAMESPACES, name):
            raise UsageError(
                "--namespace",
                f"namespace {name} already exists and the demo did not create it; it only uses (and deletes) "
                "namespaces it creates: choose another with --namespace",
            )
    for resource in WEBHOOKS:
        if await _exists(client, resource, WEBHOOK_CONFIGURATIONS):
            raise UsageError(
                target.flag,
                f"{resource.kind} {WEBHOOK_CONFIGURATIONS} exists there: united is installed in that cluster, "
                "and the demo's own controller would take its webhooks over; use a cluster without it",
            )


async def create(client: KubeClient, ledger: Ledger, resource: Resource, body: JSON) -> bool:
    """Create ``body`` with the run's label, recorded first; False (and kept, not ours) if it
    exists."""
    name = body["metadata"]["name"]
    ledger.add(resource, name)
    try:
        await client.create(resource, labelled(body, ledger.labels))
    except AlreadyExists:
        ledger.discard(resource, name)
        return False
    return True


async def install_crds(client: KubeClient, ledger: Ledger) -> bool:
    """The CRDs the cluster lacks (see the module docstring), waited for until Established;
    whether the simulated OpenKruise kinds are the demo's (then it simulates their controller)."""
    wanted = data.documents(*data.crds())
    kruise = crds.kruise_crds()
    missing = [c for c in kruise if not await _exists(client, CRDS, c["metadata"]["name"])]
    simulated = len(missing) == len(kruise)
    for crd in kruise if not simulated else []:
        ledger.keep(CRDS, crd["metadata"]["name"])
    for crd in [*wanted, *(kruise if simulated else [])]:
        name = crd["metadata"]["name"]
        if await _exists(client, CRDS, name):
            ledger.keep(CRDS, name)
        else:
            await create(client, ledger, CRDS, crd)

    async def established() -> None:
        for crd in [*wanted, *(kruise if simulated else [])]:
            live = await client.get(CRDS, crd["metadata"]["name"])
            assert is_established(live), f"CRD {crd['metadata']['name']} not established yet"

    await eventually(established, within=30, what="CRDs established", retry_on=(AssertionError, NotFound))
    return simulated


async def remove(client: KubeClient, ledger: Ledger, *, within: float = REMOVAL_WAIT) -> list[str]:
    """Delete what :meth:`Ledger.removal` lists, kind by kind, each kind gone before the next;
    anything no longer this run's (:meth:`Ledger.ours`) is left alone and said. What could
    not be removed ``within`` seconds per kind, as ``Kind name``."""
    left: list[str] = []
    for kind, names in ledger.removal():
        doomed: list[str] = []
        for name in names:
            try:
                live = await client.get(kind, name)
            except NotFound:
                continue
            if not ledger.ours(live):
                say(f"left {kind.kind} {name} alone: it is no longer the demo's")
                continue
            uid = str(live["metadata"].get("uid", ""))
            with contextlib.suppress(NotFound, Conflict):
                await client.delete(kind, name, preconditions={"uid": uid} if uid else None)
            doomed.append(name)

        async def gone(kind: Resource = kind, doomed: list[str] = doomed) -> None:
            for name in doomed:
                if kind == NAMESPACES:
                    await _force_delete_pods(client, name)
                with contextlib.suppress(NotFound):
                    await client.get(kind, name)
                    raise AssertionError(f"{kind.kind} {name} still there")

        try:
            await eventually(gone, within=within, interval=1.0, what=f"the demo's {kind.plural} removed")
        except TimeoutError as exc:
            say(str(exc))
            left += [f"{kind.kind} {name}" for name in doomed]
    return left


async def _force_delete_pods(client: KubeClient, namespace: str) -> None:
    """Pods on simulated Nodes have no kubelet to finish their deletion: finish it."""
    for pod in (await client.list(PODS, namespace=namespace)).items:
        with contextlib.suppress(NotFound, Conflict):
            await client.delete(PODS, pod["metadata"]["name"], namespace=namespace, grace_period_seconds=0)


def run(*, target: Target, sample: str | None, namespace: str, webhook_host: str = DEFAULT_WEBHOOK_HOST) -> int:
    """Run the demo on ``target`` until Ctrl-C (or SIGTERM), then remove what it created.
    Returns the process exit code: 2 for a refusal, 1 when something failed (or could not be
    removed), 130 when interrupted before the demo was running."""
    try:
        check_namespace(namespace)
        check_kubeconfig(target.kubeconfig, context=target.context)
        path, doc, workloads = read_sample(sample)
    except ConfigError as exc:
        say(f"{target.flag}: {exc}")
        return 2
    except ValueError as exc:
        say(str(exc))
        return 2
    if doc.get("kind") == UD_KIND and fleet.clusters(doc):
        clusters = ", ".join(fleet.clusters(doc))
        say(f"--sample: its subsets name member clusters ({clusters}), which only the demo's own control "
            "planes provide: run it without --kubeconfig, --context or --current-context")  # fmt: skip
        return 2
    configure_logging(level="WARNING", log_format="console")
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        # SIGTERM is Ctrl-C: asyncio.run cancels its task on SIGINT (a KeyboardInterrupt raised at a
        # random point of the loop instead left that task's exception unretrieved), then clean-up runs.
        signal.signal(signal.SIGTERM, _as_ctrl_c)
    ledger = Ledger()
    code = 1
    try:
        code = asyncio.run(_serve(target, ledger, path, doc, workloads, namespace=namespace, host=webhook_host))
    except KeyboardInterrupt:
        code = 130
    except UsageError as exc:
        say(str(exc))
        code = 2
    except (ApiError, OSError, TimeoutError, RuntimeError) as exc:
        say(f"the demo on {target} failed: {exc}")
        code = 1
    finally:
        if ledger.created:
            say(f"removing what the demo created on {target} ...")
            with interrupts_deferred():
                left = asyncio.run(_clean(target, ledger))
            if left:
                say(f"could not remove: {', '.join(left)}")
                code = code or 1
            else:
                say("removed everything the demo created; nothing else was changed")
    return code


def _as_ctrl_c(signum: int, frame: object) -> None:
    signal.raise_signal(signal.SIGINT)


async def _clean(target: Target, ledger: Ledger) -> list[str]:
    try:
        async with await KubeClient.from_kubeconfig(
            target.kubeconfig, context=target.context, user_agent="united-demo"
        ) as client:
            return await remove(client, ledger)
    except (ApiError, OSError) as exc:
        say(f"cannot reach {target} to remove what the demo created: {exc}")
        return [f"{resource.kind} {name}" for resource, name in ledger.created]


async def _serve(
    target: Target,
    ledger: Ledger,
    path: Traversable,
    doc: JSON,
    workloads: Sequence[tuple[Resource, JSON]],
    *,
    namespace: str,
    host: str,
) -> int:
    async with await KubeClient.from_kubeconfig(
        target.kubeconfig, context=target.context, user_agent="united-demo"
    ) as client:
        served = json.loads(await client.get_path("/version")).get("gitVersion", "?")
        controller_namespace = f"{namespace}{CONTROLLER_SUFFIX}"
        await refuse_foreign(client, target, [namespace, controller_namespace])
        simulated = await install_crds(client, ledger)
        for name in (namespace, controller_namespace):
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            await create(client, ledger, NAMESPACES, body)
        await namespace_usable(client, namespace, served_version(served))
        nodes = NodeSimulator(client)
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(nodes)
            if simulated:
                await stack.enter_async_context(WorkloadSimulator(client))
            specs = demo_nodes(doc, prefix=f"united-{ledger.run}-", labels=ledger.labels, taints=(TAINT,))
            for spec in specs:
                ledger.add(NODES, spec.name)
            await nodes.add_nodes(specs)
            port = free_port()
            ledger.url = f"https://{host}:{port}"
            for resource in WEBHOOKS:
                ledger.add(resource, WEBHOOK_CONFIGURATIONS)
            settings = Settings(
                http_port=0,
                workers=2,
                discovery_interval=5,
                namespaces=(namespace,),
                controller_namespace=controller_namespace,
                webhook_port=port,
                webhook_host=host,
                webhook_url=ledger.url,
            )
            options = WebhookOptions(
                namespace=controller_namespace, url=ledger.url, conversion_crd=None, match_labels=ledger.labels
            )
            manager = Manager(client, settings, kinds=KINDS, webhook_options=options)
            client.observer = manager.metrics.api.observe
            controller = asyncio.create_task(manager.run(), name="controller")
            try:
                published = asyncio.ensure_future(
                    eventually(
                        lambda: webhooks_trusted(client),
                        within=60,
                        what="the pod webhooks published",
                        retry_on=(AssertionError, NotFound),
                    )
                )
                await asyncio.wait([published, controller], return_when=asyncio.FIRST_COMPLETED)
                if not published.done():  # stopped (Ctrl-C, SIGTERM) before it served
                    published.cancel()
                    return await controller
                published.result()
                applied = await apply_sample(
                    client, path, tolerating(doc), [(r, tolerating(w)) for r, w in workloads], namespace=namespace
                )
                if applied is None:
                    return 1
                resource, shown = applied
                _print_usage(target, ledger, path, resource, namespace=namespace, served=served)
                return await show_until_stopped(
                    client, resource, shown, controller, namespace=namespace, alive=lambda: None
                )
            finally:
                if not controller.done():
                    manager.request_stop()
                with contextlib.suppress(Exception):
                    await controller


def _print_usage(
    target: Target, ledger: Ledger, path: Traversable, resource: Resource, *, namespace: str, served: str
) -> None:
    created_crds = ", ".join(ledger.summary(CRDS)) or "none"
    kept_crds = ", ".join(ledger.summary(CRDS, kept=True)) or "none"
    lines = [
        "",
        f"Kubernetes {served}: {target}",
        f"The united controller is running here; {path.name} is applied in namespace {namespace!r}.",
        "Created for the demo (all removed on exit):",
        f"  namespaces:          {', '.join(ledger.summary(NAMESPACES))}",
        f"  CRDs:                {created_crds}",
        f"  simulated nodes:     {len(ledger.summary(NODES))}, tainted {TAINT.key}={TAINT.value}:{TAINT.effect}",
        f"  webhook configs:     {WEBHOOK_CONFIGURATIONS} (calling {ledger.url})",
        f"Found there and kept as they are: CRDs {kept_crds}",
        "Try, in another terminal:",
        f"  kubectl {target.kubectl_flags()} -n {namespace} get {resource.plural}.{resource.group},deployments,pods",
        "",
        READY_LINE,
    ]
    print("\n".join(lines), flush=True)
