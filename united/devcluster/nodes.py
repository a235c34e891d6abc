"""The node simulator: fake Nodes and the kubelet work that the tests depend on.

There is no kubelet or container runtime in the local control plane, so this plays
their part for the Nodes it owns:

* creates Nodes with topology labels, capacity and taints, keeps them Ready with
  heartbeat conditions, and removes the ``node.kubernetes.io/not-ready`` taint that
  the API server's admission adds at creation (node lifecycle is off, so nothing
  else would);
* makes every pod the scheduler binds to one of its Nodes Running and Ready through
  ``pods/status`` (or Running and not Ready, for a Node whose pods are switched to
  "not ready");
* force-deletes (grace period 0) bound pods that got a deletionTimestamp, which a
  kubelet would have finished;
* knobs for tests: make a Node or a zone full (allocatable pods 0: nothing more
  fits, existing pods stay), cordon it, stop marking its pods ready.

Pod IPs are made up from 127.244.0.0/16: status strings that nothing connects to.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from united.api.timestamp import now_rfc3339
from united.kube.client import JSON, NODES, PODS, KubeClient, PatchType
from united.kube.errors import AlreadyExists, ApiError, Conflict, NotFound

from .background import Background
from .reflector import Reflector, object_key

log = logging.getLogger(__name__)

ZONE_LABEL = "topology.kubernetes.io/zone"
ARCH_LABEL = "kubernetes.io/arch"
OS_LABEL = "kubernetes.io/os"
HOSTNAME_LABEL = "kubernetes.io/hostname"
POOL_LABEL = "node.united.dev/pool"
SIMULATED_LABEL = "node.united.dev/simulated"
# Added by the API server's TaintNodesByCondition admission on create; only the
# node lifecycle controller (off here) or a kubelet would ever remove them.
CONDITION_TAINTS = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/unschedulable",
    }
)
KUBELET_VERSION = "v1.20.2"
"""What a simulated kubelet reports until it has read the API server's own version."""


@dataclass(frozen=True)
class Taint:
    """A node taint (``effect`` is NoSchedule, PreferNoSchedule or NoExecute)."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"

    def to_json(self) -> JSON:
        taint: JSON = {"key": self.key, "effect": self.effect}
        if self.value:
            taint["value"] = self.value
        return taint


@dataclass(frozen=True)
class NodeSpec:
    """What a simulated Node looks like: labels, capacity and taints."""

    name: str
    zone: str | None = None
    arch: str = "amd64"
    pool: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    cpu: str = "8"
    memory: str = "32Gi"
    pods: int = 110
    taints: tuple[Taint, ...] = ()

    def all_labels(self) -> dict[str, str]:
        labels = {
            HOSTNAME_LABEL: self.name,
            ARCH_LABEL: self.arch,
            OS_LABEL: "linux",
            SIMULATED_LABEL: "true",
        }
        if self.zone:
            labels[ZONE_LABEL] = self.zone
        if self.pool:
            labels[POOL_LABEL] = self.pool
        labels.update(self.labels)
        return labels


def zone_nodes(
    zones: Sequence[str] = ("zone-a", "zone-b", "zone-c"),
    *,
    per_zone: int = 1,
    prefix: str = "sim",
    **spec: Any,
) -> list[NodeSpec]:
    """``per_zone`` nodes in each zone, named ``<prefix>-<zone>-<i>``."""
    return [NodeSpec(name=f"{prefix}-{zone}-{i}", zone=zone, **spec) for zone in zones for i in range(per_zone)]


_REQUIRED_TERMS = ("nodeSelectorTerm", "requiredNodeSelector", "requiredNodeSelectorTerm")
"""A subset's required node selector term: UnitedDeployment's, WorkloadSpread's (v1beta1, v1alpha1)."""


def subset_nodes(manifest: Mapping[str, Any], *, prefix: str, per_subset: int = 1, **spec: Any) -> list[NodeSpec]:
    """Nodes that satisfy each subset of a UnitedDeployment or WorkloadSpread manifest: ``In``
    takes the first value, ``Exists`` sets ``"true"`` (other operators need nothing). Lets the
    demo and the e2e tests run any sample, whatever labels its subsets select on."""
    out = []
    extra: Mapping[str, str] = spec.pop("labels", {})
    body = manifest.get("spec") or {}
    subsets = body.get("subsets") or (body.get("topology") or {}).get("subsets") or []
    for i, subset in enumerate(subsets):
        labels: dict[str, str] = {}
        term: Mapping[str, Any] = next((subset[k] for k in _REQUIRED_TERMS if subset.get(k)), {})
        for expr in term.get("matchExpressions") or []:
            if expr.get("operator") == "In" and expr.get("values"):
                labels[expr["key"]] = str(expr["values"][0])
            elif expr.get("operator") == "Exists":
                labels[expr["key"]] = "true"
        arch = labels.pop(ARCH_LABEL, "amd64")
        zone = labels.pop(ZONE_LABEL, None)
        out += [
            NodeSpec(name=f"{prefix}-{i}-{n}", arch=arch, zone=zone, labels={**extra, **labels}, **spec)
            for n in range(per_subset)
        ]
    return out


@dataclass
class NodeState:
    """A simulated node's spec and its current knob settings."""

    spec: NodeSpec
    full: bool = False
    cordoned: bool = False
    pods_ready: bool = True


def node_object(state: NodeState) -> JSON:
    """The Node to create (its status is written separately, see :func:`node_status`)."""
    spec: JSON = {"taints": [t.to_json() for t in state.spec.taints]}
    if state.cordoned:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": state.spec.name, "labels": state.spec.all_labels()},
        "spec": spec,
    }


def node_status(state: NodeState, *, now: str, kubelet_version: str = KUBELET_VERSION) -> JSON:
    """A healthy kubelet's node status, with ``now`` as heartbeat; a full node has
    allocatable pods 0 (capacity unchanged) so the scheduler fits nothing more."""
    spec = state.spec
    capacity = {"cpu": spec.cpu, "memory": spec.memory, "pods": str(spec.pods)}
    allocatable = {**capacity, "pods": "0" if state.full else str(spec.pods)}

    def condition(kind: str, status: str, reason: str, message: str) -> JSON:
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }

    return {
        "capacity": capacity,
        "allocatable": allocatable,
        "conditions": [
            condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "simulated"),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "simulated"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID", "simulated"),
            condition("Ready", "True", "KubeletReady", "simulated kubelet is posting ready status"),
        ],
        "addresses": [{"type": "Hostname", "address": spec.name}],
        "nodeInfo": {
            "architecture": spec.arch,
            "operatingSystem": "linux",
            "kubeletVersion": kubelet_version,
            "kubeProxyVersion": kubelet_version,
            "containerRuntimeVersion": "simulated://1.0",
            "kernelVersion": "",
            "osImage": "united node simulator",
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
        },
    }


def wanted_taints(current: Iterable[JSON], spec: NodeSpec) -> list[JSON]:
    """The node's taints as the simulator wants them: the spec's, plus any added by
    someone else (a test), minus the condition taints a healthy kubelet clears."""
    own = [t.to_json() for t in spec.taints]
    own_keys = {(t["key"], t["effect"]) for t in own}
    others = [
        t for t in current if t.get("key") not in CONDITION_TAINTS and (t.get("key"), t.get("effect")) not in own_keys
    ]
    return own + others


def is_pod_ready(pod: JSON) -> bool:
    """Whether the pod's Ready condition is True."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def is_sidecar(container: JSON) -> bool:
    """An init container with ``restartPolicy: Always`` (Kubernetes 1.28+, GA 1.33): it keeps
    running beside the containers, and the pod is Ready only when it is ready too."""
    return container.get("restartPolicy") == "Always"


def pod_status(pod: JSON, *, ready: bool, pod_ip: str, now: str) -> JSON:
    """The status a kubelet would report for a started pod (all containers running,
    ready or not; init containers completed, sidecar ones running beside them), keeping
    existing transition and start times where nothing changed."""
    old = pod.get("status") or {}
    old_conditions = {c.get("type"): c for c in old.get("conditions") or []}
    ready_s = "True" if ready else "False"
    spec = pod.get("spec") or {}
    inits = spec.get("initContainers") or []
    sidecars = [c.get("name", "") for c in inits if is_sidecar(c)]
    containers = [*sidecars, *(c.get("name", "") for c in spec.get("containers") or [])]

    def condition(kind: str, status: str) -> JSON:
        prev = old_conditions.get(kind) or {}
        since = prev.get("lastTransitionTime") if prev.get("status") == status else None
        cond: JSON = {
            "type": kind,
            "status": status,
            "lastProbeTime": None,
            "lastTransitionTime": since or now,
        }
        if status != "True":
            cond["reason"] = "ContainersNotReady"
            cond["message"] = f"containers with unready status: [{' '.join(containers)}]"
        return cond

    started = old.get("startTime") or now
    previous = {c.get("name"): c for key in ("initContainerStatuses", "containerStatuses") for c in old.get(key) or []}

    def running(container: JSON, *, is_ready: bool) -> JSON:
        name = container.get("name", "")
        since = (((previous.get(name) or {}).get("state") or {}).get("running") or {}).get("startedAt") or started
        return {**_container_status(pod, container), "ready": is_ready, "started": True,
                "state": {"running": {"startedAt": since}}}  # fmt: skip

    def completed(container: JSON) -> JSON:
        state = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": started}}
        return {**_container_status(pod, container), "ready": True, "started": False, "state": state}

    statuses = [running(c, is_ready=ready) for c in spec.get("containers") or []]
    init_statuses = [running(c, is_ready=ready) if is_sidecar(c) else completed(c) for c in inits]
    extra: JSON = {"initContainerStatuses": init_statuses} if init_statuses else {}
    return {
        "phase": "Running",
        "conditions": [
            condition("Initialized", "True"),
            condition("Ready", ready_s),
            condition("ContainersReady", ready_s),
            condition("PodScheduled", "True"),
        ],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": started,
        "containerStatuses": statuses,
        **extra,
    }


def _container_status(pod: JSON, container: JSON) -> JSON:
    name = container.get("name", "")
    return {"name": name, "image": container.get("image", ""), "imageID": "",
            "containerID": f"simulated://{object_key(pod)[0]}/{object_key(pod)[1]}/{name}",
            "restartCount": 0, "lastState": {}}  # fmt: skip


def status_differs(pod: JSON, desired: JSON) -> bool:
    """Whether writing ``desired`` would change anything that matters."""
    old = pod.get("status") or {}

    def summary(status: JSON) -> tuple[Any, ...]:
        conditions = sorted((c.get("type"), c.get("status")) for c in status.get("conditions") or [])
        containers = sorted(
            (c.get("name"), c.get("ready"), "running" in (c.get("state") or {}))
            for key in ("initContainerStatuses", "containerStatuses")
            for c in status.get(key) or []
        )
        return status.get("phase"), tuple(conditions), tuple(containers), status.get("podIP")

    return summary(old) != summary(desired)


class NodeSimulator(Background):
    """Plays the kubelet of its Nodes. ``async with NodeSimulator(client) as sim``
    (or ``start``/``stop``); then ``add_node`` and the knobs.

    It only ever touches Nodes it created and pods bound to them.
    """

    def __init__(self, client: KubeClient, *, heartbeat_interval: float = 10.0) -> None:
        self.client = client
        self.heartbeat_interval = heartbeat_interval
        self.nodes: dict[str, NodeState] = {}
        self._pods = Reflector(client, PODS, self._on_pod)
        self._tasks: list[asyncio.Task[None]] = []
        self._ips: dict[str, str] = {}
        self._next_ip = 0
        self.kubelet_version = KUBELET_VERSION

    async def start(self) -> None:
        """Start watching pods and heartbeating; returns once the first list is done. The
        kubelets report the API server's version, as a cluster's nodes of the same release do."""
        with contextlib.suppress(ApiError, ValueError, KeyError, TypeError):
            self.kubelet_version = str(json.loads(await self.client.get_path("/version"))["gitVersion"])
        self._tasks = [
            asyncio.create_task(self._pods.run(), name="node-simulator-pods"),
            asyncio.create_task(self._heartbeat(), name="node-simulator-heartbeat"),
        ]
        waiter = asyncio.create_task(self._pods.synced.wait())
        done, _ = await asyncio.wait([waiter, self._tasks[0]], return_when=asyncio.FIRST_COMPLETED)
        if waiter not in done:
            waiter.cancel()
            await self._tasks[0]

    async def stop(self, *, delete_nodes: bool = False) -> None:
        """Stop the loops; optionally delete this simulator's Nodes (and their pods)."""
        await super().stop()
        if delete_nodes:
            for name in list(self.nodes):
                await self.remove_node(name)

    # --- nodes -------------------------------------------------------------------

    async def add_node(self, spec: NodeSpec) -> None:
        """Create (or adopt, if it exists) a Ready node."""
        state = NodeState(spec)
        self.nodes[spec.name] = state
        try:
            await self.client.create(NODES, node_object(state))
        except AlreadyExists:
            await self.client.patch(
                NODES,
                spec.name,
                {"metadata": {"labels": spec.all_labels()}, "spec": {"unschedulable": None}},
                patch_type=PatchType.MERGE,
            )
        await self._sync_node(state)

    async def add_nodes(self, specs: Iterable[NodeSpec]) -> None:
        await asyncio.gather(*(self.add_node(spec) for spec in specs))

    async def remove_node(self, name: str) -> None:
        """Delete the node and force-delete its pods (as pod GC eventually would)."""
        self.nodes.pop(name, None)
        with contextlib.suppress(NotFound):
            await self.client.delete(NODES, name)
        for pod in list(self._pods.cache.values()):
            if (pod.get("spec") or {}).get("nodeName") == name:
                await self._force_delete(pod)

    def zone(self, zone: str) -> list[str]:
        """Names of this simulator's nodes in ``zone``."""
        return [n for n, s in self.nodes.items() if s.spec.zone == zone]

    def _named(self, name: str) -> NodeState:
        try:
            return self.nodes[name]
        except KeyError:
            raise KeyError(f"{name!r} is not a simulated node") from None

    async def set_full(self, name: str, full: bool = True) -> None:
        """Full: allocatable pods 0, so no new pod fits; pods already there stay."""
        state = self._named(name)
        state.full = full
        await self._write_status(state)

    async def cordon(self, name: str, cordoned: bool = True) -> None:
        """Set ``spec.unschedulable`` (the ``kubectl cordon`` of the node)."""
        state = self._named(name)
        state.cordoned = cordoned
        await self.client.patch(
            NODES,
            name,
            {"spec": {"unschedulable": True if cordoned else None}},
            patch_type=PatchType.MERGE,
        )

    async def set_pods_ready(self, name: str, ready: bool = True) -> None:
        """Whether the node's pods are reported Ready (they stay Running either way);
        existing pods flip at once, as after a failing readiness probe."""
        state = self._named(name)
        state.pods_ready = ready
        for pod in list(self._pods.cache.values()):
            if (pod.get("spec") or {}).get("nodeName") == name:
                await self._on_pod("SYNC", pod)

    async def set_zone_full(self, zone: str, full: bool = True) -> None:
        for name in self._zone_or_fail(zone):
            await self.set_full(name, full)

    async def cordon_zone(self, zone: str, cordoned: bool = True) -> None:
        for name in self._zone_or_fail(zone):
            await self.cordon(name, cordoned)

    async def set_zone_pods_ready(self, zone: str, ready: bool = True) -> None:
        for name in self._zone_or_fail(zone):
            await self.set_pods_ready(name, ready)

    def _zone_or_fail(self, zone: str) -> list[str]:
        names = self.zone(zone)
        if not names:
            raise KeyError(f"no simulated node in zone {zone!r}")
        return names

    async def reset(self, *, keep: Iterable[str] | None = None) -> None:
        """Undo every knob; with ``keep``, also remove nodes not named in it."""
        if keep is not None:
            kept = set(keep)
            for name in [n for n in self.nodes if n not in kept]:
                await self.remove_node(name)
        for state in self.nodes.values():
            if state.cordoned:
                await self.cordon(state.spec.name, False)
            if state.full:
                await self.set_full(state.spec.name, False)
            if not state.pods_ready:
                await self.set_pods_ready(state.spec.name, True)

    async def _sync_node(self, state: NodeState) -> None:
        await self._write_status(state)
        node = await self.client.get(NODES, state.spec.name)
        current = (node.get("spec") or {}).get("taints") or []
        taints = wanted_taints(current, state.spec)
        if taints != current:
            await self.client.patch(
                NODES,
                state.spec.name,
                {"spec": {"taints": taints or None}},
                patch_type=PatchType.MERGE,
            )

    async def _write_status(self, state: NodeState) -> None:
        await self.client.patch(
            NODES,
            state.spec.name,
            {"status": node_status(state, now=now_rfc3339(), kubelet_version=self.kubelet_version)},
            patch_type=PatchType.MERGE,
            subresource="status",
        )

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_interval)
            for state in list(self.nodes.values()):
                try:
                    await self._sync_node(state)
                except NotFound:
                    log.warning("simulated node %s was deleted behind our back", state.spec.name)
                except ApiError as exc:
                    log.warning("heartbeat of %s failed: %s", state.spec.name, exc)

    # --- pods --------------------------------------------------------------------

    def _pod_ip(self, pod: JSON) -> str:
        uid = str((pod.get("metadata") or {}).get("uid", ""))
        if uid not in self._ips:
            n = self._next_ip
            self._next_ip += 1
            self._ips[uid] = f"127.244.{(n // 250) % 256}.{n % 250 + 1}"
        return self._ips[uid]

    async def _on_pod(self, kind: str, pod: JSON) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        if kind == "DELETED" or not node or node not in self.nodes:
            if kind == "DELETED":
                self._ips.pop(str((pod.get("metadata") or {}).get("uid", "")), None)
            return
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            await self._force_delete(pod)
            return
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        desired = pod_status(pod, ready=self.nodes[node].pods_ready, pod_ip=self._pod_ip(pod), now=now_rfc3339())
        if not status_differs(pod, desired):
            return
        namespace, name = object_key(pod)
        with contextlib.suppress(NotFound):
            await self.client.patch(
                PODS,
                name,
                {"status": desired},
                namespace=namespace,
                subresource="status",
                patch_type=PatchType.MERGE,
            )

    async def _force_delete(self, pod: JSON) -> None:
        namespace, name = object_key(pod)
        uid = (pod.get("metadata") or {}).get("uid")
        with contextlib.suppress(NotFound, Conflict):
            await self.client.delete(
                PODS,
                name,
                namespace=namespace,
                grace_period_seconds=0,
                preconditions={"uid": str(uid)} if uid else None,
            )
