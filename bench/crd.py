"""A CRD taken away for the length of a measurement (the memory scenario's install without
WorkloadSpreads)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from united.api.groups import GROUP
from united.data import crds, documents
from united.kube.apply import apply
from united.kube.client import CRDS, KubeClient
from united.kube.discovery import served
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
