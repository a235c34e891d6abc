"""The WorkloadSpread pod webhook as the bench runs it, and what the admission and scale-out
scenarios share: the controller serving its webhook, the spreads and the placement check.

The controller runs as ``united run`` under its ServiceAccount with ``--webhook-port`` and
``--webhook-url``, as in the e2e suite and the demo: it creates its CA and serving pair in its
Secret (``united-webhook-certs`` in ``united-system``), serves HTTPS on loopback and publishes
both webhook configurations with that CA as ``caBundle``. In a cluster the configurations ship
in ``manifests/base`` and reach the pods through a Service; the API server's call, the TLS and
the handler are the same. A namespace labelled ``workloadspread.united.io/webhook=disabled`` is
never sent to the webhook (the configurations' namespaceSelector): the floor's pods live there.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bench.controller import ControllerProcess
from bench.env import create_namespace
from bench.scenarios import Context
from united.api.document import Json
from united.api.groups import GROUP
from united.controller.webhooks import MUTATING, VALIDATING
from united.devcluster.installation import install_controller
from united.devcluster.nodes import ZONE_LABEL
from united.devcluster.ports import free_port
from united.kube.client import NAMESPACES, SERVICE_ACCOUNTS, KubeClient, PatchType
from united.kube.errors import NotFound
from united.workloadspread.injection import matched
from united.workloadspread.reconciler import ws_resource
from united.workloadspread.webhookconfig import EXCLUDE_LABEL, EXCLUDED, NAME

SPREADS = ws_resource(GROUP)
NOBODY = "bench-nobody"
"""The pods' ``schedulerName``: no scheduler takes them, so scheduling adds no load to either side."""


async def prepare_namespace(client: KubeClient, name: str, *, excluded: bool = False) -> str:
    """A namespace ready for pods (its default ServiceAccount has its token: until then the
    API server refuses pods); ``excluded``: never sent to the pod webhook (the floor's)."""
    await create_namespace(client, name)
    if excluded:
        patch = {"metadata": {"labels": {EXCLUDE_LABEL: EXCLUDED}}}
        await client.patch(NAMESPACES, name, patch, patch_type=PatchType.MERGE)

    secrets = await makes_token_secrets(client)

    async def token() -> bool:
        try:
            account = await client.get(SERVICE_ACCOUNTS, "default", namespace=name)
        except NotFound:
            return False
        return bool(account.get("secrets")) or not secrets

    await until(token, within=60, what=f"the default ServiceAccount's token in {name}")
    return name


async def makes_token_secrets(client: KubeClient) -> bool:
    """Whether the API server's ServiceAccounts get token Secrets (before 1.24), without which
    it refuses pods; from 1.24 a namespace takes pods once its ServiceAccount exists."""
    info = json.loads(await client.get_path("/version"))
    minor = int("".join(c for c in str(info.get("minor", "")) if c.isdigit()) or 0)
    return str(info.get("major")) == "1" and minor < 24


async def remove_configurations(client: KubeClient) -> None:
    """No webhook configured: pods are created without any call to us."""
    for resource in (MUTATING, VALIDATING):
        with contextlib.suppress(NotFound):
            await client.delete(resource, NAME)


async def trusted(client: KubeClient) -> bool:
    """Both configurations exist and carry our CA on every webhook."""
    try:
        configs = [await client.get(resource, NAME) for resource in (MUTATING, VALIDATING)]
    except NotFound:
        return False
    return all(w.get("clientConfig", {}).get("caBundle") for c in configs for w in c.get("webhooks") or ())


async def until(check: Any, *, within: float, what: str) -> None:
    """Poll ``await check()`` until true."""
    deadline = time.monotonic() + within
    while not await check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {within:g} s")
        await asyncio.sleep(0.1)


async def serving(ctx: Context, *, namespaces: Sequence[str], name: str) -> ControllerProcess:
    """``united run`` with its webhook server, once ready and trusted by the API server (under
    ``py-spy record`` into ``<name>.raw`` with ``--profile``: ``python -m bench.profile`` reads it)."""
    await install_controller(ctx.client, dev_webhooks=True)
    port = free_port()
    flags = ("--webhook-port", str(port), "--webhook-host", "127.0.0.1", "--webhook-url", f"https://127.0.0.1:{port}")
    profile = ctx.profile_dir / f"{name}.raw" if ctx.profile_dir else None
    ctl = ctx.controller(namespaces, name=name, profile=profile, extra=flags)
    ctl.start()
    await ctl.wait_ready()
    await until(lambda: trusted(ctx.client), within=60, what="the webhook configurations with our CA")
    return ctl


async def delete_namespaces(client: KubeClient, names: Sequence[str], *, within: float = 300) -> None:
    """Delete the namespaces and wait until they are gone, so their pods' deletion does not
    load the scenarios that follow."""
    for name in names:
        with contextlib.suppress(NotFound):
            await client.delete(NAMESPACES, name)

    async def gone() -> bool:
        listed = {n["metadata"]["name"] for n in (await client.list(NAMESPACES)).items}
        return not listed & set(names)

    await until(gone, within=within, what="the bench's namespaces deleted")


def maxima_for(pods: int, subsets: int) -> list[int]:
    """Equal ``maxReplicas`` for ``subsets`` subsets whose sum just exceeds ``pods``, so every
    pod is booked (a subset without a maximum books nothing) and all but the last fill up."""
    each = math.ceil(pods / subsets)
    if each * subsets == pods:
        each += 1
    return [each] * subsets


def spread(name: str, namespace: str, *, target: str, maxima: Sequence[int | None]) -> Json:
    """A WorkloadSpread of Deployment ``target``: subsets ``s0``, ``s1``… with these maxima."""
    subsets: list[Json] = []
    for j, maximum in enumerate(maxima):
        selector = {"matchExpressions": [{"key": ZONE_LABEL, "operator": "In", "values": [f"zone-{j}"]}]}
        subset: Json = {"name": f"s{j}", "requiredNodeSelector": selector}
        if maximum is not None:
            subset["maxReplicas"] = maximum
        subsets.append(subset)
    return {
        "apiVersion": SPREADS.api_version,
        "kind": "WorkloadSpread",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target}, "subsets": subsets},
    }


async def create_spread(client: KubeClient, doc: Json, *, within: float = 60) -> None:
    """Create the spread and wait until the controller has observed it (its caches hold it)."""
    meta = doc["metadata"]
    await client.create(SPREADS, doc, namespace=meta["namespace"])

    async def observed() -> bool:
        ws = await client.get(SPREADS, meta["name"], namespace=meta["namespace"])
        return bool((ws.get("status") or {}).get("observedGeneration") == 1)

    await until(observed, within=within, what=f"the controller observes {meta['name']}")


def zone_of(pod: Mapping[str, Any]) -> set[str]:
    """The zones a pod's required node affinity allows (where its subset's selector put it)."""
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    terms = (affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or ()
    return {
        value
        for term in terms
        for expr in term.get("matchExpressions") or ()
        if expr.get("key") == ZONE_LABEL and expr.get("operator") == "In"
        for value in expr.get("values") or ()
    }


def placement(pods: Iterable[Mapping[str, Any]], *, spread: str, maxima: Sequence[int | None]) -> Json:
    """Where admission put ``pods``: count per subset, pods without a subset of ``spread``, the
    subsets holding more than their maximum, and the placed pods whose node affinity does not
    require their subset's zone (both must be none)."""
    counts = {f"s{j}": 0 for j in range(len(maxima))}
    unplaced = wrong = 0
    for pod in pods:
        m = matched(dict(pod))
        if m is None or m.name != spread or m.subset not in counts:
            unplaced += 1
            continue
        counts[m.subset] += 1
        if zone_of(pod) != {f"zone-{m.subset[1:]}"}:
            wrong += 1
    over = {s: n for (s, n), limit in zip(counts.items(), maxima, strict=True) if limit is not None and n > limit}
    return {"counts": counts, "maxima": list(maxima), "unplaced": unplaced, "over_filled": over, "wrong_zone": wrong}


__all__ = [
    "NOBODY",
    "SPREADS",
    "create_spread",
    "delete_namespaces",
    "maxima_for",
    "placement",
    "prepare_namespace",
    "remove_configurations",
    "serving",
    "spread",
    "trusted",
    "until",
]
