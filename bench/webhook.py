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
from united.kube.client import NAMESPACES, SERVICE_ACCOUNTS, KubeClient, PatchType, Resource
from united.kube.errors import ApiError, NotFound
from united.workloadspread.injection import matched
from united.workloadspread.model import KIND, PLURAL, subset_field_names
from united.workloadspread.webhookconfig import EXCLUDE_LABEL, EXCLUDED, NAME

WEBHOOK_KINDS = {"MutatingWebhookConfiguration": MUTATING, "ValidatingWebhookConfiguration": VALIDATING}
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


def spreads(group: str) -> Resource:
    """The WorkloadSpreads of ``group`` in ``v1alpha1``, the version both OpenKruise's and this
    project's ``apps.kruise.io`` serve (the peer comparison gives both sides the same objects)."""
    return Resource(group, "v1alpha1", PLURAL, True, KIND)


SPREADS = spreads(GROUP)


async def remove_configurations(client: KubeClient, published: Sequence[Json] = ()) -> None:
    """No webhook configured: pods are created without any call to us (nor to the configurations
    ``published`` by a peer)."""
    named = [(resource, NAME) for resource in (MUTATING, VALIDATING)]
    named += [(WEBHOOK_KINDS[d["kind"]], d["metadata"]["name"]) for d in published]
    for resource, name in named:
        with contextlib.suppress(NotFound):
            await client.delete(resource, name)


def webhook_configurations(docs: Iterable[Json]) -> list[Json]:
    """The webhook configurations among ``docs``."""
    return [d for d in docs if d.get("kind") in WEBHOOK_KINDS]


async def published(client: KubeClient, configurations: Sequence[Json]) -> bool:
    """Every webhook of ``configurations`` carries a ``caBundle`` in the cluster: their owner
    has published where and how it serves them."""
    for doc in configurations:
        try:
            live = await client.get(WEBHOOK_KINDS[doc["kind"]], doc["metadata"]["name"])
        except NotFound:
            return False
        hooks = live.get("webhooks") or ()
        if len(hooks) < len(doc.get("webhooks") or ()) or not all(w["clientConfig"].get("caBundle") for w in hooks):
            return False
    return True


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
    ``py-spy record`` into ``<name>.raw`` with ``--profile``: ``python -m bench.profile`` reads it);
    in a peer's turn, the peer serving the configurations it publishes (:func:`serving_published`)."""
    if ctx.published is not None:
        return await serving_published(ctx, ctx.published, namespaces=namespaces, name=name)
    await install_controller(ctx.client, dev_webhooks=True)
    port = free_port()
    flags = ("--webhook-port", str(port), "--webhook-host", "127.0.0.1", "--webhook-url", f"https://127.0.0.1:{port}")
    profile = ctx.profile_dir / f"{name}.raw" if ctx.profile_dir else None
    ctl = ctx.controller(namespaces, name=name, profile=profile, extra=flags)
    ctl.start()
    await ctl.wait_ready()
    await until(lambda: trusted(ctx.client), within=60, what="the webhook configurations with our CA")
    await ctl.mark()
    return ctl


async def serving_published(
    ctx: Context, configurations: Sequence[Json], *, namespaces: Sequence[str], name: str
) -> ControllerProcess:
    """A controller that fills in the url and ``caBundle`` of its own webhook configurations
    (OpenKruise's manager keeps the first copy it sees as its template, so they are created
    afresh), once it is ready and every webhook of them carries its CA."""
    await remove_configurations(ctx.client, configurations)
    for doc in configurations:
        await ctx.client.create(WEBHOOK_KINDS[doc["kind"]], doc)
    ctl = ctx.controller(namespaces, name=name)
    ctl.start()
    await ctl.wait_ready()
    await until(lambda: published(ctx.client, configurations), within=120, what="the peer's webhook configurations")
    await ctl.mark()
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


def spread(name: str, namespace: str, *, target: str, maxima: Sequence[int | None], group: str = GROUP) -> Json:
    """A ``v1alpha1`` WorkloadSpread of ``group`` for Deployment ``target``: subsets ``s0``,
    ``s1``… with these maxima (the required selector in that version's spelling)."""
    api_version = spreads(group).api_version
    required = subset_field_names(api_version)[0]
    subsets: list[Json] = []
    for j, maximum in enumerate(maxima):
        selector = {"matchExpressions": [{"key": ZONE_LABEL, "operator": "In", "values": [f"zone-{j}"]}]}
        subset: Json = {"name": f"s{j}", required: selector}
        if maximum is not None:
            subset["maxReplicas"] = maximum
        subsets.append(subset)
    return {
        "apiVersion": api_version,
        "kind": KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target}, "subsets": subsets},
    }


async def create_spread(client: KubeClient, doc: Json, *, within: float = 60) -> None:
    """Create the spread and wait until the controller has observed it (its caches hold it).
    Creation is retried while the API server refuses it: this project's ``apps.kruise.io`` CRD
    converts ``v1alpha1`` through the controller's webhook, trusted a moment after it starts."""
    meta = doc["metadata"]
    resource = spreads(doc["apiVersion"].split("/")[0])
    refused: list[ApiError] = []

    async def created() -> bool:
        try:
            await client.create(resource, doc, namespace=meta["namespace"])
        except ApiError as exc:
            refused[:] = [exc]
            return False
        return True

    try:
        await until(created, within=within, what=f"{meta['name']} created")
    except TimeoutError:
        raise refused[-1] if refused else TimeoutError(f"{meta['name']} not created") from None

    async def observed() -> bool:
        ws = await client.get(resource, meta["name"], namespace=meta["namespace"])
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
    "published",
    "remove_configurations",
    "serving",
    "serving_published",
    "spread",
    "spreads",
    "trusted",
    "until",
    "webhook_configurations",
]
