"""A CRD taken away for the length of a measurement (the memory scenario's install without
WorkloadSpreads); the garbage collector waited for after a CRD is installed."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator

from bench.env import create_namespace
from bench.workload import united_deployment
from united.api.groups import GROUP
from united.data import crds, documents
from united.kube.apply import apply
from united.kube.client import CONFIG_MAPS, CRDS, KubeClient, Resource
from united.kube.discovery import served
from united.kube.errors import NotFound
from united.kube.wait import eventually
from united.workloadspread.reconciler import ws_resource


@contextlib.asynccontextmanager
async def without_workload_spreads(client: KubeClient) -> AsyncIterator[None]:
    """The WorkloadSpread CRD deleted (a UnitedDeployment-only install: the controller caches
    only the children and pods with the subset label) until the block ends, then put back."""
    ws = ws_resource(GROUP)
    await client.delete(CRDS, f"{ws.plural}.{ws.group}")

    async def gone() -> None:
        assert not await served(client, ws), f"{ws.plural} still served"

    await eventually(gone, within=120, what="the WorkloadSpread CRD gone")
    try:
        yield
    finally:
        await apply(client, [d for d in documents(*crds(GROUP)) if d["spec"]["names"]["plural"] == ws.plural])


PROBE_NAMESPACE = "bench-collector-probe"


async def collector_maps(
    client: KubeClient, resource: Resource, *, namespace: str = PROBE_NAMESPACE, within: float = 180.0
) -> float:
    """Wait until kube-controller-manager's garbage collector knows every served version of
    ``resource``, a kind just installed; the seconds waited. The collector learns new kinds and
    versions only on its periodic resync (every 30 s); until then, an object whose owner
    reference names a version it cannot map is retried again and again, each time reading
    (GET) the object and its owner: a cost of the install, not of either side, which fell
    on whichever side's scenarios ran soonest after it. Proof: a dependent per served
    version, all collected once their owner is deleted, which needs each version mapped."""
    started = time.monotonic()
    await create_namespace(client, namespace)
    crd = await client.get(CRDS, f"{resource.plural}.{resource.group}")
    served = [v["name"] for v in crd["spec"]["versions"] if v.get("served")]
    probe = united_deployment("probe", namespace, subsets=1, replicas=0, group=resource.group)
    owner = await client.create(resource, probe, namespace=namespace)
    ref = {"kind": resource.kind, "name": "probe", "uid": owner["metadata"]["uid"]}
    for version in served:
        refs = [{"apiVersion": f"{resource.group}/{version}", **ref}]
        await client.create(CONFIG_MAPS, {"metadata": {"name": f"probe-{version}", "ownerReferences": refs}},
                            namespace=namespace)  # fmt: skip
    await client.delete(resource, "probe", namespace=namespace)

    async def collected() -> None:
        for version in served:
            with contextlib.suppress(NotFound):
                await client.get(CONFIG_MAPS, f"probe-{version}", namespace=namespace)
                raise AssertionError(f"the dependent owned through {version} is still there")

    await eventually(collected, within=within, what="the garbage collector mapping the kind just installed")
    return time.monotonic() - started
