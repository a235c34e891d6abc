"""Where a UnitedDeployment's children live: the informer caches the reconciler reads, and
the sites — the host, or a member cluster with its client, stores and health.

A subset's site is read once per pass (:func:`site_of`): whether it can be used now, and if
not why (the status reports it and no request goes there). A UnitedDeployment being deleted
with remote children waits for their deletion in every usable cluster
(:func:`delete_remote_children`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from united.api.decode import Undecodable
from united.api.document import Json
from united.api.timestamp import format_time
from united.kube import ApiError, KubeClient, NotFound, Resource
from united.kube.client import NAMESPACES
from united.kube.errors import AlreadyExists
from united.multicluster.health import CLUSTER_NOT_FOUND, CLUSTER_SYNCING, NAMESPACE_NOT_ALLOWED
from united.uniteddeployment.children import Claim, claim, controller_uid, deleting
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.lastknown import LastKnown, last_known
from united.uniteddeployment.model import UnitedDeployment
from united.uniteddeployment.render import KINDS
from united.uniteddeployment.resources import resource_of

if TYPE_CHECKING:
    from united.multicluster.identity import RemoteKeys
    from united.multicluster.member import Members


class Store(Protocol):
    def get(self, key: str) -> Json | None: ...
    def by_owner(self, uid: str, namespace: str | None = None) -> list[Json]: ...
    def orphans(self, namespace: str) -> list[Json]: ...
    def list(self, namespace: str | None = None) -> list[Json]: ...


class PodStore(Store, Protocol):
    def labelled(self, namespace: str, value: str) -> list[Json]: ...


@dataclass
class Caches:
    """Read side of the controller: informer stores, keyed by what they hold."""

    uniteddeployments: Store
    revisions: Store
    pods: PodStore
    """Indexed by the subset-name label's value."""
    children: dict[str, Store] = field(default_factory=dict)
    """By template variant (``deploymentTemplate`` …); only kinds the cluster serves."""
    unavailable: dict[str, str] = field(default_factory=dict)
    """By template variant: why a served kind cannot be used yet (``cannot list …: 403 …``)."""
    undecodable: Mapping[str, Undecodable] = field(default_factory=dict)
    """UnitedDeployments the informers skipped as unreadable (too deeply nested), by key."""
    members: Members | None = None
    """The member clusters (None until ``Cluster`` objects are served, and in the kruise group)."""
    owner_api_version: str | None = None
    """The ``apiVersion`` owner references name UnitedDeployments by: the one discovery prefers
    for the kind (None until known: the version read)."""


@dataclass
class Site:
    """Where a subset's child lives: the host (``cluster`` None) or a member cluster."""

    cluster: str | None
    client: KubeClient | None
    children: Store | None
    pods: PodStore | None
    owner_of: Callable[[Mapping[str, Any]], str | None] = controller_uid
    usable: bool = True
    """Reads and writes may go there now (host: always; member: ``Member.usable``)."""
    synced: bool = True
    """Its stores were listed at least once in this process: the last-known state."""
    reason: str = ""
    """Why not usable: the member's ``Ready`` reason, ``ClusterNotFound``, ``NamespaceNotAllowed``,
    ``ClusterSyncing``."""
    since: float = 0.0
    detail: str = ""
    remote: RemoteKeys | None = None
    suspect: Callable[[], None] | None = None
    create_namespaces: bool = False
    """The member's ``Cluster`` lets the controller create a missing namespace there."""


POD_SECURITY_PREFIX = "pod-security.kubernetes.io/"


def pod_security_labels(namespace: Mapping[str, Any]) -> dict[str, str]:
    """The Pod Security admission labels (``pod-security.kubernetes.io/*``) of a host namespace,
    for the namespace the controller creates in a member: its pods must meet the same level."""
    labels = (namespace.get("metadata") or {}).get("labels") or {}
    return {k: str(v) for k, v in labels.items() if isinstance(k, str) and k.startswith(POD_SECURITY_PREFIX)}


def site_of(members: Members | None, cluster: str, namespace: str, variant: str) -> Site:
    """The site of ``cluster`` for a UD in ``namespace``; unusable (with the reason) when there
    is no such ``Cluster``, it does not admit this namespace, or cannot be used now."""
    member = members.get(cluster) if members is not None else None
    remote = members.remote if members is not None else None
    if member is None or remote is None:
        return Site(cluster, None, None, None, usable=False, synced=False, reason=CLUSTER_NOT_FOUND)
    if not member.spec.allows(namespace):
        return Site(cluster, None, None, None, usable=False, synced=False, reason=NAMESPACE_NOT_ALLOWED)
    member.ensure(variant)
    children, pods = member.stores(variant)
    usable = member.usable(variant)
    health = member.health
    reason = "" if usable else (health.reason if not health.ready else CLUSTER_SYNCING)
    return Site(
        cluster,
        member.client,
        children,
        pods,
        owner_of=remote.owner_of,
        usable=usable,
        synced=member.synced(variant),
        reason=reason,
        since=health.since,
        detail="" if health.ready else health.message,
        remote=remote,
        suspect=member.suspect,
        create_namespaces=member.spec.create_namespaces,
    )


def delete_remote_children(
    members: Members | None, obj: Mapping[str, Any], previous: Mapping[str, Any], keys: Keys
) -> tuple[list[str], int, list[tuple[KubeClient, Resource, Json]]]:
    """For a UnitedDeployment being deleted with remote children: the clusters that block its
    deletion (why, one line each), how many children remain in the others, and the deletes to
    send (client, resource, child). Clusters: those of the spec and of the previous status,
    less those the abandon annotation names (``*``: all)."""
    meta = obj.get("metadata") or {}
    namespace, uid = str(meta.get("namespace") or ""), str(meta.get("uid") or "")
    spec = obj.get("spec") or {}
    variant = next(iter((spec.get("template") or {}) or {"deploymentTemplate": None}))
    clusters = {
        str(s.get("cluster"))
        for s in [*((spec.get("topology") or {}).get("subsets") or ()), *(previous.get("subsetStatuses") or ())]
        if isinstance(s, dict) and s.get("cluster")
    }
    abandoned = {
        c.strip() for c in str((meta.get("annotations") or {}).get(keys.abandon_remote_children, "")).split(",")
    }
    blocked: list[str] = []
    remaining = 0
    deletes: list[tuple[KubeClient, Resource, Json]] = []
    resource = resource_of(variant) if variant in KINDS else None
    for cluster in sorted(clusters):
        if "*" in abandoned or cluster in abandoned:
            continue
        member = members.get(cluster) if members is not None else None
        if member is None or resource is None:
            blocked.append(f"{cluster}: no Cluster object of that name")
            continue
        member.ensure(variant)
        children, _ = member.stores(variant)
        health = member.health
        if not health.ready:
            blocked.append(f"{cluster} unreachable since {format_time(health.since)}: {health.message}")
            continue
        if not member.usable(variant) or member.client is None:
            remaining += 1  # reachable, its caches syncing: soon
            continue
        for child in children.by_owner(uid, namespace):
            remaining += 1
            if not deleting(child):
                deletes.append((member.client, resource, child))
    return blocked, remaining, deletes


async def create_in(
    site: Site, resource: Resource, body: Json, *, namespace: str, host: KubeClient, keys: Keys, allowed: bool
) -> tuple[Json, int]:
    """Create ``body`` in ``site``; in a member whose namespace is missing, create the
    namespace first (labelled with our host identity; never deleted) when both the controller
    (``allowed``: ``--create-member-namespaces``) and the member's ``Cluster``
    (``createNamespaces``) allow it. The host namespace's Pod Security labels go with it: a
    namespace the controller makes must not admit pods its host namespace would refuse.
    Returns the answer and how many namespaces were created (0 or 1)."""
    assert site.client is not None
    try:
        return await site.client.create(resource, body, namespace=namespace), 0
    except NotFound as e:
        if site.remote is None or (e.body.get("details") or {}).get("kind") != "namespaces":
            raise
        if not (allowed and site.create_namespaces):
            why = (
                "the controller's namespace creation is off"
                if site.create_namespaces
                else f"Cluster {site.cluster} does not set createNamespaces: true"
            )
            raise ApiError(f"namespace {namespace} does not exist there ({why})", status=404) from None
    labels = pod_security_labels(await host.get(NAMESPACES, namespace))
    labels[keys.created_by_cluster] = site.remote.host_id
    made = 0
    with contextlib.suppress(AlreadyExists):
        await site.client.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": labels}}
        )
        made = 1
    return await site.client.create(resource, body, namespace=namespace), made


@dataclass
class Remote:
    """Where each remote subset's child lives, this UD's children in a site their subset is not
    in (moved, removed, duplicates: to be deleted), and the remote subsets whose cluster's
    stores never synced, with their previous status' counts."""

    sites: dict[str, Site] = field(default_factory=dict)
    elsewhere: list[tuple[Site, Json]] = field(default_factory=list)
    known: dict[str, LastKnown] = field(default_factory=dict)


def claim_remote(
    ud: UnitedDeployment,
    previous: Mapping[str, Any],
    keys: Keys,
    members: Members | None,
    host: Site,
    claimed: Claim,
    variant: str,
    fresh: Callable[[list[Json], str], list[Json]],
) -> Remote:
    """The remote subsets' sites, with this UD's children in member clusters merged into
    ``claimed`` (``fresh(cached, cluster)``: a cluster's cached children with our own recent
    writes): a child counts for subset S only in S's own site; one anywhere else (the subset
    moved or was removed), like a duplicate, goes to ``elsewhere``. Clusters looked at: those of
    the spec and those the previous status names (a removed or moved subset's child is there)."""
    named = {
        str(e.get("cluster"))
        for e in previous.get("subsetStatuses") or ()
        if isinstance(e, Mapping) and e.get("cluster")
    }
    spec = {s.name: s.cluster for s in ud.spec.subsets if s.cluster}
    by_cluster = {c: site_of(members, c, ud.namespace, variant) for c in sorted({*spec.values(), *named})}
    out = Remote({name: by_cluster[c] for name, c in spec.items()})
    for name in list(claimed.by_subset):
        if name in out.sites:  # now remote: the host's child goes
            out.elsewhere.append((host, claimed.by_subset.pop(name)))
    for cluster, site in by_cluster.items():
        if site.children is None or not site.synced:
            continue
        cached = site.children.by_owner(ud.uid, ud.namespace)
        found = claim(ud, fresh(cached, cluster), keys, owner_of=site.owner_of)
        for name, child in found.by_subset.items():
            if spec.get(name) == cluster:
                claimed.by_subset[name] = child
            else:
                out.elsewhere.append((site, child))
        for name, child in found.terminating.items():
            if spec.get(name) == cluster:
                claimed.terminating[name] = child
        out.elsewhere += [(site, child) for child in found.duplicates]
    for name, cluster in spec.items():
        if not out.sites[name].synced:
            known = last_known(previous, name, cluster)
            if known is not None:
                out.known[name] = known
    return out
