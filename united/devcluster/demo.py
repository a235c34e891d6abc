"""``united demo``: the controller converging a UnitedDeployment (or spreading a workload's
pods with a WorkloadSpread) on a local cluster.

Brings up the local control plane (provisioning it first if needed, with progress), installs
the CRDs, creates simulated Nodes that fit the sample's subsets (plus two per zone in three
zones), runs the node, workload and volume simulators, starts the controller in-process,
applies the sample and prints its per-subset table whenever it changes — until Ctrl-C, which
stops the controller gracefully and tears everything down. A WorkloadSpread sample holds the
spread and its target workload: the spread is applied first, so the pod webhook places every
pod the workload then creates. A UnitedDeployment whose subsets name clusters (the
``multicluster`` sample) also gets a member control plane per cluster, joined to the host
(:mod:`united.devcluster.fleet`); its table then has a CLUSTER column.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Callable, Sequence
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml

from united import data
from united.api import yamlload
from united.api.groups import GROUP
from united.controller.kinds import KINDS
from united.controller.manager import Manager, Settings
from united.devcluster import crds, fleet
from united.devcluster.build import ProvisionError, provision
from united.devcluster.cluster import HOST, ClusterError, LocalCluster
from united.devcluster.nodes import NodeSimulator, NodeSpec, subset_nodes, zone_nodes
from united.devcluster.planes import Plane, start_planes, stop_planes
from united.devcluster.ports import free_port
from united.devcluster.versions import DEFAULT, KubeVersion, makes_token_secrets
from united.devcluster.volumes import VolumeProvisioner
from united.devcluster.workloads import WorkloadSimulator
from united.kube.apply import install_crds
from united.kube.client import (
    JSON,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    SECRETS,
    SERVICE_ACCOUNTS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    KubeClient,
    Resource,
)
from united.kube.errors import AlreadyExists, ApiError, NotFound
from united.kube.wait import eventually
from united.log import configure_logging
from united.multicluster.join import JoinError
from united.workloadspread.webhookconfig import NAME as WEBHOOK_CONFIGURATIONS

ZONES = ("zone-a", "zone-b", "zone-c")
UD_KIND, WS_KIND = "UnitedDeployment", "WorkloadSpread"
SHOWN = {
    UD_KIND: Resource(GROUP, "v1alpha1", "uniteddeployments", True, UD_KIND),
    WS_KIND: Resource(GROUP, "v1alpha1", "workloadspreads", True, WS_KIND),
}
WORKLOAD_PLURALS = {
    "Deployment": "deployments",
    "ReplicaSet": "replicasets",
    "StatefulSet": "statefulsets",
    "Job": "jobs",
    "CloneSet": "clonesets",
}
READY_LINE = "demo running; press Ctrl-C to stop and tear everything down"
NAMESPACE = "demo"
CONTROLLER_NAMESPACE = "united-system"
DEFAULT_SAMPLE = "zones-percent"
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", False, "CustomResourceDefinition")


def demo_nodes(sample: dict[str, Any], *, prefix: str = "", **spec: Any) -> list[NodeSpec]:
    """Two nodes per zone in pool ``general``, and two that fit each of the sample's subsets
    in this cluster (a member's subsets get theirs in the member); names start with ``prefix``,
    ``spec`` adds to every node's (labels, taints)."""
    return zone_nodes(ZONES, per_zone=2, prefix=f"{prefix}demo", pool="general", **spec) + subset_nodes(
        fleet.part(sample, None) if sample.get("kind") == UD_KIND else sample,
        prefix=f"{prefix}fit",
        per_subset=2,
        cpu="64",
        memory="256Gi",
        **spec,
    )


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def provision_failure(error: ProvisionError) -> str:
    """One paragraph for a person: what failed, what to do, where the build log is."""
    return (
        f"united demo cannot start: building the local Kubernetes control plane failed: {error.message}.\n"
        f"What to do: {error.hint}.\n"
        f"Build log: {error.log}"
    )


def split_sample(docs: Sequence[Any]) -> tuple[JSON | None, JSON]:
    """What the demo applies from a sample's documents: ``(None, ud)`` for a UnitedDeployment,
    ``(target, spread)`` for a WorkloadSpread and the workload its ``targetRef`` names (the
    first of either kind is used). ``LookupError`` says what is missing."""
    objects = [d for d in docs if isinstance(d, dict)]
    shown = next((d for d in objects if d.get("kind") in (UD_KIND, WS_KIND)), None)
    if shown is None:
        raise LookupError(f"no {UD_KIND} or {WS_KIND} in it")
    if shown["kind"] == UD_KIND:
        return None, shown
    ref = (shown.get("spec") or {}).get("targetRef") or {}
    for doc in objects:
        if (doc.get("kind"), (doc.get("metadata") or {}).get("name")) == (ref.get("kind"), ref.get("name")):
            return doc, shown
    raise LookupError(f"no {ref.get('kind')} {ref.get('name')!r} in it, the target of its {WS_KIND}")


def sample_path(sample: str | None) -> Traversable:
    """The sample file ``sample`` names: a path, else a packaged sample's name (``united
    samples``); the default sample without one. ``LookupError`` if it is neither."""
    if not sample:
        return data.sample(DEFAULT_SAMPLE)
    path = Path(sample)
    return path if path.exists() else data.sample(sample)


def read_sample(sample: str | None) -> tuple[Traversable, JSON, list[tuple[Resource, JSON]]]:
    """The sample's file, the object the demo shows and the workload to create with it (a
    WorkloadSpread's target); ``ValueError`` says what is wrong, for a person."""
    try:
        path = sample_path(sample)
    except LookupError as exc:
        raise ValueError(f"cannot read {sample}: no such file, and {exc}") from None
    try:
        target, doc = split_sample(yamlload.load_all(path.read_text()))
        workloads = [(workload_resource(target), target)] if target else []
    except (OSError, LookupError, yaml.YAMLError) as exc:
        raise ValueError(f"cannot read a {UD_KIND} or a {WS_KIND} with its target from {path}: {exc}") from None
    return path, doc, workloads


def run(*, sample: str | None = None, version: KubeVersion = DEFAULT) -> int:
    """Run the demo on Kubernetes ``version`` until Ctrl-C (or SIGTERM). Returns the process
    exit code."""
    try:
        path, doc, workloads = read_sample(sample)
    except ValueError as exc:
        say(str(exc))
        return 2
    configure_logging(level="WARNING", log_format="console")
    try:
        binaries = provision(version, progress=say)
    except ProvisionError as exc:
        say(provision_failure(exc))
        return 1
    cluster = LocalCluster(binaries)
    members = fleet.member_planes(binaries, doc) if doc.get("kind") == UD_KIND else []
    try:
        if members:
            say(f"starting the local control planes: the host and {', '.join(p.name for p in members)} ...")
            start_planes(members, together=[cluster])
        else:
            say(f"starting the local control plane, Kubernetes {version} (etcd, kube-apiserver, "
                 "controller-manager, scheduler) ...")  # fmt: skip
            cluster.start()
        return asyncio.run(_serve(cluster, doc, path, workloads=workloads, members=members))
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM before the controller handles it
        return 130
    except (ClusterError, TimeoutError, RuntimeError, JoinError) as exc:
        say(str(exc))
        return 1
    finally:
        say("stopping the local control plane" + ("s" if members else ""))
        stop_planes(members)
        cluster.stop()


async def _serve(
    cluster: LocalCluster,
    doc: JSON,
    path: Traversable,
    *,
    workloads: Sequence[tuple[Resource, JSON]],
    members: Sequence[Plane] = (),
) -> int:
    async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig, user_agent="united-demo") as client:
        await install_crds(client, [*crds.kruise_crds(), *data.documents(*data.crds())])
        nodes = NodeSimulator(client)
        async with nodes, WorkloadSimulator(client), VolumeProvisioner(client):
            await nodes.add_nodes(demo_nodes(doc))
            await _namespace(client, cluster.binaries.version)
            # The pod webhooks, served here on loopback; the controller's own namespace (its
            # certificate Secret) is excluded from them, so it is not the demo's.
            port = free_port()
            with contextlib.suppress(AlreadyExists):
                await client.create(NAMESPACES, {"metadata": {"name": CONTROLLER_NAMESPACE}})
            settings = Settings(
                http_port=0,
                workers=2,
                discovery_interval=5,
                controller_namespace=CONTROLLER_NAMESPACE,
                webhook_port=port,
                webhook_host=HOST,
                webhook_url=f"https://{HOST}:{port}",
            )
            manager = Manager(client, settings, kinds=KINDS)
            client.observer = manager.metrics.api.observe
            controller = asyncio.create_task(manager.run(), name="controller")
            await eventually(lambda: webhooks_trusted(client), within=60, what="the pod webhooks published",
                             retry_on=(AssertionError, NotFound))  # fmt: skip
            try:
                await fleet.join_members(client, members, say=say)
            except JoinError:
                manager.request_stop()
                await controller
                raise
            applied = await apply_sample(client, path, doc, workloads, namespace=NAMESPACE)
            if applied is None:
                manager.request_stop()
                await controller
                return 1
            resource, doc = applied
            served = json.loads(await client.get_path("/version")).get("gitVersion", "?")
            _print_usage(cluster, path, resource, members=members, served=served)

            def alive() -> None:
                for plane in (cluster, *(m.cluster for m in members)):
                    plane.check_alive()

            return await show_until_stopped(client, resource, doc, controller, namespace=NAMESPACE, alive=alive)


async def apply_sample(
    client: KubeClient, path: Traversable, doc: JSON, workloads: Sequence[tuple[Resource, JSON]], *, namespace: str
) -> tuple[Resource, JSON] | None:
    """Create the shown object, then its target workload (the spread before its target's
    pods), in ``namespace``, as the demo's group; what is shown and how, or None (said why)
    when the API server refuses one."""
    group = str(doc["apiVersion"]).partition("/")[0]
    if group != GROUP:
        say(f"note: {path} is an {group} manifest; the demo serves {GROUP}, so it is applied as such")
        doc = {**doc, "apiVersion": f"{GROUP}/v1alpha1"}
    resource = SHOWN[doc["kind"]]
    for kind, obj in ((resource, doc), *workloads):
        try:
            await client.create(kind, obj, namespace=namespace)
        except AlreadyExists:
            pass
        except ApiError as exc:  # e.g. the API server refused the sample
            say(f"cannot create {kind.kind} {obj['metadata'].get('name')} from {path}: {exc}")
            return None
    return resource, doc


async def show_until_stopped(
    client: KubeClient,
    resource: Resource,
    doc: JSON,
    controller: asyncio.Task[int],
    *,
    namespace: str,
    alive: Callable[[], None],
) -> int:
    """Print the object's table whenever it changes until the controller stops (Ctrl-C);
    ``alive`` raises when what the demo runs on has died. The controller's exit code."""
    shown = ""
    while not controller.done():
        alive()
        with contextlib.suppress(NotFound):
            obj = await client.get(resource, doc["metadata"]["name"], namespace=namespace)
            table = render_table(obj)
            if table != shown:
                print(table, flush=True)
                shown = table
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(controller), timeout=1.0)
    return controller.result()


async def webhooks_trusted(client: KubeClient) -> None:
    """The API server may call the pod webhooks: both configurations carry our CA."""
    for resource in (MUTATING_WEBHOOK_CONFIGURATIONS, VALIDATING_WEBHOOK_CONFIGURATIONS):
        config = await client.get(resource, WEBHOOK_CONFIGURATIONS)
        assert all(w["clientConfig"].get("caBundle") for w in config.get("webhooks") or []), "no caBundle yet"


async def _namespace(client: KubeClient, version: KubeVersion) -> None:
    """The demo's namespace, once pods can be created in it."""
    with contextlib.suppress(AlreadyExists):
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    await namespace_usable(client, NAMESPACE, version)


async def namespace_usable(client: KubeClient, namespace: str, version: KubeVersion) -> None:
    """Wait until pods can be created in ``namespace`` (before 1.24: once its ``default``
    ServiceAccount's token Secret holds a token). The cluster's controller-manager makes the
    account; one started a moment ago on a loaded two-core machine once took over 30 s to."""

    async def token() -> None:
        account = await client.get(SERVICE_ACCOUNTS, "default", namespace=namespace)
        if not makes_token_secrets(version):
            return
        names = [ref["name"] for ref in account.get("secrets") or []]
        assert names, f"namespace {namespace}: default ServiceAccount has no token secret yet"
        secret = await client.get(SECRETS, names[0], namespace=namespace)
        assert (secret.get("data") or {}).get("token"), f"namespace {namespace}: token not issued yet"

    await eventually(token, within=90, what=f"namespace {namespace} usable", retry_on=(AssertionError, NotFound))


def render_table(obj: JSON) -> str:
    """The object's per-subset status as a table, with its Ready condition on top."""
    if obj.get("kind") == WS_KIND:
        return render_spread_table(obj)
    status = obj.get("status") or {}
    name, want = obj["metadata"]["name"], (obj.get("spec") or {}).get("replicas")
    head = f"{name}: {status.get('readyReplicas', 0)}/{want} ready, {_ready(status)}"
    entries = status.get("subsetStatuses") or []
    remote = any(s.get("cluster") for s in entries)
    rows: list[tuple[str, ...]] = [
        ("SUBSET", *(("CLUSTER",) if remote else ()), "DESIRED", "REPLICAS", "READY", "UPDATED", "REASON")
    ]
    for s in entries:
        rows.append(
            (
                s["name"],
                *((s.get("cluster") or "-",) if remote else ()),
                str(s.get("desired", 0)),
                str(s.get("replicas", 0)),
                str(s.get("readyReplicas", 0)),
                str(s.get("updatedReplicas", 0)),
                s.get("reason", ""),
            )
        )
    return _table(head, rows)


def render_spread_table(obj: JSON) -> str:
    """A WorkloadSpread's subsets in spec order: the pods each holds (``status.subsetStatuses``),
    its maximum (the spec's ``maxReplicas``, ``-`` for none) and why (the status entry's
    ``reason`` and ``message``); on top, the target, the pods in no subset and Ready."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    entries = {str(s.get("name")): s for s in status.get("subsetStatuses") or [] if isinstance(s, dict)}
    ref = spec.get("targetRef") or {}
    placed = sum(int(s.get("replicas") or 0) for s in entries.values())
    head = (
        f"{obj['metadata']['name']} ({ref.get('kind')} {ref.get('name')}): {placed} pod(s) in subsets, "
        f"{status.get('unplacedReplicas', 0)} in none, {_ready(status)}"
    )
    rows: list[tuple[str, ...]] = [("SUBSET", "REPLICAS", "MAX", "REASON", "MESSAGE")]
    for subset in spec.get("subsets") or []:
        entry = entries.get(str(subset.get("name")), {})
        maximum = subset.get("maxReplicas")
        rows.append(
            (
                str(subset.get("name")),
                str(entry.get("replicas", 0)),
                "-" if maximum is None else str(maximum),
                str(entry.get("reason", "")),
                str(entry.get("message", "")),
            )
        )
    return _table(head, rows)


def _ready(status: JSON) -> str:
    ready: JSON = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
    reason = ready.get("reason", "waiting for the controller")
    return f"Ready={ready.get('status', '?')} ({reason}: {ready.get('message', '')})"


def _table(head: str, rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)
    return "\n".join(["", head, *lines])


def workload_resource(obj: JSON) -> Resource:
    """Where a WorkloadSpread's target lives, from its own ``apiVersion`` and ``kind``."""
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    kind = str(obj.get("kind", ""))
    plural = WORKLOAD_PLURALS.get(kind)
    if plural is None:
        raise LookupError(f"the demo cannot create a {kind}; it creates {', '.join(WORKLOAD_PLURALS)}")
    return Resource(group, version, plural, True, kind)


def _print_usage(
    cluster: LocalCluster, path: Traversable, resource: Resource, *, members: Sequence[Plane], served: str
) -> None:
    """What runs where, and what to try; ``served`` is the version the API server says it is."""
    kubectl = cluster.binaries.kubectl
    scale = "deployments,clonesets.apps.kruise.io" if resource.kind == WS_KIND else f"{resource.plural}.{GROUP}"
    lines = [
        "",
        f"Kubernetes {served} is running at {cluster.server}",
        f"  kubeconfig: {cluster.admin_kubeconfig}",
        f"  kubectl:    {kubectl}",
        f"  logs:       {cluster.log_dir}",
        *(["Member clusters (joined as `united join` joins one):", *fleet.usage(members)] if members else []),
        "",
        f"The united controller is running; {path.name} is applied in namespace {NAMESPACE!r}.",
        "Try, in another terminal:",
        f"  export KUBECONFIG={cluster.admin_kubeconfig}",
        f"  {kubectl} -n {NAMESPACE} get {resource.plural}.{GROUP},deployments,pods -o wide",
        f"  {kubectl} -n {NAMESPACE} scale {scale} --all --replicas=20",
        "",
        READY_LINE,
    ]
    print("\n".join(lines), flush=True)
