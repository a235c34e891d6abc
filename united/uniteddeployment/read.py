"""What one UnitedDeployment pass reads, gathered before anything is decided or written.

The children this UD owns or may adopt, in the host and in every member cluster its subsets (or
its previous status) name, with our own recent writes in place of what the caches lack
(:mod:`united.runtime.expectations`); its revisions; each child's pods; and, in the passes that
would create a child, the one LIST that finds ours that lost their subset label. The result is
a :class:`~united.uniteddeployment.planner.Seen`, which the pure planner turns into writes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from united.api.document import Json
from united.api.selector import parse as parse_selector
from united.kube import Resource
from united.kube.client import CONTROLLER_REVISIONS
from united.multicluster.health import CLUSTER_NOT_FOUND, CLUSTER_SYNCING
from united.uniteddeployment import history, revision, sync
from united.uniteddeployment.children import Claim, claim, name_of, strays
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import Template, UnitedDeployment
from united.uniteddeployment.planner import Revisions, Seen
from united.uniteddeployment.resources import resource_of
from united.uniteddeployment.sites import Site, Store, claim_remote

if TYPE_CHECKING:
    from united.uniteddeployment.reconciler import Reconciler

SETTLE_SECONDS = 30.0
"""After a start, how long a pass waits for member clusters to be registered and their caches
to sync before it reports them as missing or syncing: a restart must not flap statuses (nor
write anything) while the ``Cluster`` objects are read and the member informers list."""


def finalizers(obj: Mapping[str, Any]) -> list[str]:
    return [str(f) for f in (obj.get("metadata") or {}).get("finalizers") or ()]


async def read(
    r: Reconciler, ud: UnitedDeployment, obj: Json, previous: Json, generation: int, host: Site
) -> tuple[Seen, dict[str | None, Site]]:
    """Everything the pass over ``ud`` decides from (its child kind is served), and the sites
    by cluster (None: the host) its writes may go to."""
    template = ud.spec.template
    assert template is not None
    variant = template.variant
    keys = Keys(ud.group)
    key = f"{ud.namespace}/{ud.name}"
    resource = resource_of(variant)
    store = r.caches.children[variant]
    host.children = store
    revisions = await read_revisions(r, ud, key)
    claimed = claim(ud, r.expectations.fresh(key, resource, candidates(ud, store)), keys)
    sites: dict[str, Site] = {}
    elsewhere: list[tuple[Site, Json]] = []
    known = {}
    settling = False
    if r.caches.members is not None or any(s.cluster for s in ud.spec.subsets):

        def fresh(cached: list[Json], cluster: str) -> list[Json]:
            return r.expectations.fresh(key, resource, cached, cluster=cluster)

        found = claim_remote(ud, previous, keys, r.caches.members, host, claimed, variant, fresh)
        sites, elsewhere, known = found.sites, found.elsewhere, found.known
        settling = time.monotonic() - r.started < SETTLE_SECONDS and any(
            s.reason in (CLUSTER_SYNCING, CLUSTER_NOT_FOUND) for s in sites.values()
        )
    i, now = sync.Inputs(ud, previous, keys, r.seconds()), r.clock()
    if settling:  # just started: members are being read; nothing to say yet
        return Seen(i, key, generation, now, variant, revisions, claimed, host, settling=True), {None: host}
    await recover(r, ud, previous, keys, resource, claimed, sites)
    others = [
        (other, child)
        for other, cache in r.caches.children.items()
        if other != variant
        for child in cache.by_owner(ud.uid, ud.namespace)
    ]

    def template_of(name: str) -> Template | None:
        stored = r.caches.revisions.get(f"{ud.namespace}/{name}")
        return revision.template_of((stored or {}).get("data"), variant) if stored else None

    targets = {site.cluster: site for site in [host, *sites.values(), *(site for site, _ in elsewhere)]}
    seen = Seen(
        i,
        key,
        generation,
        now,
        variant,
        revisions,
        claimed,
        host,
        sites=sites,
        elsewhere=elsewhere,
        known=known,
        pods=await pods_by_subset(ud, keys, claimed.by_subset, sites, host),
        others=others,
        template_of=template_of,
        finalizers=finalizers(obj),
        owner_settled=r._written.newer(key, obj) is None,
        blueprints=r.blueprints,
    )
    return seen, targets


def candidates(ud: UnitedDeployment, store: Store) -> list[Json]:
    """Children this UD may keep or adopt: its own and the namespace's orphans (from the
    stores' indexes, so a pass costs what it owns, not what the namespace holds). Only its
    own namespace: anything elsewhere that names our uid is forged."""
    return [*store.by_owner(ud.uid, ud.namespace), *store.orphans(ud.namespace)]


async def read_revisions(r: Reconciler, ud: UnitedDeployment, key: str) -> Revisions:
    """This UD's revisions (our own writes standing in for a lagging cache), the namespace's
    orphans, and the template's likeness: every owned revision compared, one per step of the loop."""
    cache = r.caches.revisions
    owned = r.expectations.fresh(key, CONTROLLER_REVISIONS, cache.by_owner(ud.uid, ud.namespace))
    mine = {name_of(x) for x in owned}
    orphans = [x for x in cache.orphans(ud.namespace) if name_of(x) not in mine]

    def taken(name: str) -> bool:
        return name not in mine and cache.get(f"{ud.namespace}/{name}") is not None

    template = ud.spec.template
    assert template is not None
    kept = r.likeness.get(key)
    if kept is None or (kept.template is not template and kept.template != template):
        kept = r.likeness[key] = history.Likeness(template)
    kept.keep(owned)
    for x in owned:
        if not kept.known(x):
            kept(x)
            await asyncio.sleep(0)
    return Revisions(owned, orphans, taken, kept)


async def recover(
    r: Reconciler,
    ud: UnitedDeployment,
    previous: Json,
    keys: Keys,
    resource: Resource,
    claimed: Claim,
    sites: Mapping[str, Site],
) -> None:
    """Before creating a child for a subset the cache shows none for, look for ours that
    lost its subset label (:func:`~united.uniteddeployment.children.strays`): one namespaced LIST, of our
    selector's workloads without that label, in the passes that would create — so it holds
    after a restart too, needs no cache of objects the informers cannot see, and no verb
    the controller does not have. Such a child is kept, and its label written back."""
    missing = {s.name for s in ud.spec.subsets if s.name not in sites}
    missing -= claimed.by_subset.keys() | claimed.terminating.keys()
    if not missing or ud.spec.selector is None or not previous.get("subsetStatuses"):
        # A UD whose status never listed its subsets has no child to lose (those it just
        # created stand in the expectations): a cold start makes no extra LIST.
        return
    ours = str(parse_selector(ud.spec.selector.to_dict()))
    unlabelled = ",".join(filter(None, (ours, f"!{keys.subset_name}")))
    listed = await r.client.list(resource, namespace=ud.namespace, label_selector=unlabelled)
    claimed.by_subset.update(strays(ud, listed.items, keys, missing))


async def pods_by_subset(
    ud: UnitedDeployment, keys: Keys, by_subset: Mapping[str, Json], sites: Mapping[str, Site], host: Site
) -> dict[str, list[Json]]:
    """Each child's pods: those its selector matches in the pod cache (which holds only
    pods carrying the subset-name label). A selector that pins that label (ours always
    do) reads only the pods with that value, from the cache's index, so a pass costs its
    own pods, not subsets x the namespace's; other selectors scan the namespace, one
    child per step of the loop."""
    out = {}
    for subset, child in by_subset.items():
        pods = sites.get(subset, host).pods
        if pods is None:
            continue
        raw = (child.get("spec") or {}).get("selector") or {}
        sel = parse_selector(raw)
        value = (raw.get("matchLabels") or {}).get(keys.subset_name)
        candidates = pods.labelled(ud.namespace, value) if isinstance(value, str) else pods.list(ud.namespace)
        out[subset] = [p for p in candidates if sel.matches((p.get("metadata") or {}).get("labels") or {})]
        await asyncio.sleep(0)
    return out
