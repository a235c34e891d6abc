"""What the WorkloadSpread e2e and chaos tests share: a Deployment under a spread with one
subset per simulated zone, watched by an :class:`~.occupancy.Occupancy`, and (for the chaos
suite's own controllers) the flags that make ``united run`` serve the pod webhook."""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import AsyncIterator, Mapping
from typing import Any

from tests.e2e.workloadspread.occupancy import Occupancy
from tests.support.controller import LOG_DIR
from united.api.groups import GROUP
from united.controller.webhooks import MUTATING, VALIDATING
from united.devcluster.cluster import LocalCluster
from united.devcluster.installation import install_controller
from united.devcluster.nodes import ZONE_LABEL
from united.devcluster.ports import free_port
from united.kube.client import DEPLOYMENTS, NAMESPACES, KubeClient, PatchType
from united.kube.errors import NotFound
from united.kube.wait import eventually
from united.workloadspread.reconciler import ws_resource
from united.workloadspread.webhookconfig import NAME, targets_of

JSON = dict[str, Any]
SPREADS = ws_resource(GROUP)
APP = "web"
SPREAD = "spread"
VERSION_LABEL = "pod-template-hash"


def spread(maxima: Mapping[str, int | None], *, strategy: JSON | None = None) -> JSON:
    """A spread of the ``web`` Deployment: one subset per zone named after it, in order."""
    subsets = []
    for zone, maximum in maxima.items():
        subset: JSON = {"name": zone, "requiredNodeSelector": {
            "matchExpressions": [{"key": ZONE_LABEL, "operator": "In", "values": [zone]}]}}  # fmt: skip
        if maximum is not None:
            subset["maxReplicas"] = maximum
        subsets.append(subset)
    spec: JSON = {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": APP}, "subsets": subsets}
    if strategy is not None:
        spec["scheduleStrategy"] = strategy
    return {"apiVersion": SPREADS.api_version, "kind": "WorkloadSpread", "metadata": {"name": SPREAD}, "spec": spec}


def deployment(replicas: int) -> JSON:
    labels = {"app": APP}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": APP},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {
                "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.2"}]}},
        },
    }  # fmt: skip


@contextlib.asynccontextmanager
async def webhook_flags(cluster: LocalCluster, *, namespace: str | None = None) -> AsyncIterator[tuple[str, ...]]:
    """The ``united run`` flags that serve the pod webhook at ``https://127.0.0.1:PORT`` with
    the controller's Secret in ``namespace`` (None: a fresh one, deleted on exit; the shipped
    Role grants the ServiceAccount its Secret in ``united-system`` only). On exit the webhook
    configurations are removed, so later tests' pods do not call a stopped server."""
    port = free_port()
    # Short: the serving certificate's common name is "united-webhook.<namespace>.svc" (64 at most).
    controller_ns = namespace or f"ws-e2e-{secrets.token_hex(3)}"
    async with await KubeClient.from_kubeconfig(cluster.admin_kubeconfig) as kube:
        await install_controller(kube, dev_webhooks=True)
        if namespace is None:
            await kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": controller_ns}})  # fmt: skip
        try:
            yield ("--webhook-port", str(port), "--webhook-host", "127.0.0.1", "--webhook-url",
                   f"https://127.0.0.1:{port}", "--controller-namespace", controller_ns)  # fmt: skip
        finally:
            for resource in (MUTATING, VALIDATING):
                with contextlib.suppress(NotFound):
                    await kube.delete(resource, NAME)
            if namespace is None:
                with contextlib.suppress(NotFound):
                    await kube.delete(NAMESPACES, controller_ns)


async def sent_to_webhook(kube: KubeClient, namespace: str) -> None:
    """The pod webhooks' selectors let ``namespace`` through (on 1.22+ the controller names the
    namespaces that hold spreads, within about a second of one appearing). A configuration the
    controller has not written yet (its requests may be going through faults) is not there yet."""
    for resource in (MUTATING, VALIDATING):
        try:
            configuration = await kube.get(resource, NAME)
        except NotFound as exc:
            raise AssertionError(f"no {resource.plural} {NAME} yet") from exc
        for webhook in configuration["webhooks"]:
            targets = targets_of(webhook.get("namespaceSelector"))
            assert targets is None or namespace in targets, targets


class Target:
    """The ``web`` Deployment under the spread, in one test's namespace."""

    def __init__(self, kube: KubeClient, namespace: str, maxima: Mapping[str, int | None], *,
                 by_version: bool = False) -> None:  # fmt: skip
        self.kube = kube
        self.namespace = namespace
        self.maxima = dict(maxima)
        self.occupancy = Occupancy(SPREAD, maxima, by=VERSION_LABEL if by_version else None)
        self.selector = f"app={APP}"

    async def create(self, *, strategy: JSON | None = None) -> None:
        """The target at 0 replicas and its spread, observed by the controller (so the
        webhook's caches hold it); scale with :meth:`patch`."""
        await self.kube.create(DEPLOYMENTS, deployment(0), namespace=self.namespace)
        await self.kube.create(SPREADS, spread(self.maxima, strategy=strategy), namespace=self.namespace)

        async def observed() -> None:
            assert (await self.status()).get("observedGeneration") == 1

        await eventually(observed, within=60, what="the controller observes the spread")
        await eventually(lambda: sent_to_webhook(self.kube, self.namespace), within=60,
                         what="the webhook selects the namespace")  # fmt: skip

    async def patch(self, spec: JSON) -> None:
        await self.kube.patch(DEPLOYMENTS, APP, {"spec": spec}, namespace=self.namespace, patch_type=PatchType.MERGE)

    async def status(self) -> JSON:
        ws = await self.kube.get(SPREADS, SPREAD, namespace=self.namespace)
        status: JSON = ws.get("status") or {}
        return status

    def total(self) -> int:
        return sum(self.occupancy.counts().values()) + self.occupancy.unplaced()

    async def status_agrees(self) -> None:
        """The status counts what the watch counts (per subset, and unplaced)."""
        status = await self.status()
        replicas = {s["name"]: s.get("replicas", 0) for s in status.get("subsetStatuses") or []}
        counts = self.occupancy.counts()
        assert replicas == {zone: counts.get(zone, 0) for zone in self.maxima}, (replicas, counts)
        assert status.get("unplacedReplicas", 0) == self.occupancy.unplaced(), status

    def report(self, test: str, seconds: float, **extra: Any) -> JSON:
        """Print the run's figures and append them to ``ws-figures.jsonl`` in the e2e log directory."""
        first = self.occupancy.violations[0] if self.occupancy.violations else None
        figures = {"test": test, "counts": self.occupancy.counts(), "peaks": self.occupancy.peaks,
                   "unplaced": self.occupancy.unplaced(), "unplaced_peak": self.occupancy.unplaced_peak,
                   "adopted": len(self.occupancy.adopted), "events": self.occupancy.events,
                   "violations": len(self.occupancy.violations),
                   "first_violation": None if first is None else {
                       "subset": first.subset, "count": first.count, "maximum": first.maximum,
                       "pod": first.pod, "adopted": first.pod in self.occupancy.adopted},
                   "seconds": round(seconds, 1), **extra}  # fmt: skip
        print(f"\nWorkloadSpread figures: {json.dumps(figures)}")
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        with (LOG_DIR / "ws-figures.jsonl").open("a") as out:
            out.write(json.dumps(figures) + "\n")
        return figures


class Latency:
    """The webhook's latency histogram for one path, read from ``/metrics`` text, so that two
    readings give the requests in between (``controller_runtime_webhook_latency_seconds``)."""

    NAME = "controller_runtime_webhook_latency_seconds"

    def __init__(self, metrics: str, path: str) -> None:
        self.buckets: dict[float, float] = {}
        self.sum = self.count = 0.0
        label = f'webhook="{path}"'
        for line in metrics.splitlines():
            if not line.startswith(self.NAME) or label not in line:
                continue
            head, _, value = line.rpartition(" ")
            if head.startswith(self.NAME + "_bucket"):
                bound = head.split('le="', 1)[1].split('"', 1)[0]
                self.buckets[float(bound)] = float(value)
            elif head.startswith(self.NAME + "_sum"):
                self.sum = float(value)
            elif head.startswith(self.NAME + "_count"):
                self.count = float(value)

    def since(self, earlier: Latency) -> JSON:
        """Requests since ``earlier``: their count, mean, and the bucket bounds holding p50 and p99."""
        count = self.count - earlier.count
        if count <= 0:
            return {"requests": 0}
        cumulative = sorted((bound, n - earlier.buckets.get(bound, 0.0)) for bound, n in self.buckets.items())

        def bound(q: float) -> float:
            return next(b for b, n in cumulative if n >= q * count)

        return {"requests": int(count), "mean_ms": round(1000 * (self.sum - earlier.sum) / count, 1),
                "p50_le_ms": 1000 * bound(0.5), "p99_le_ms": 1000 * bound(0.99)}  # fmt: skip
