"""What "nothing lost, nothing duplicated" means when subsets live in several clusters.

:mod:`tests.chaos.invariants` reads the host only; here every UnitedDeployment of a namespace
is checked against the host and each member at once, with the pure core:

* exactly one child per subset, in the subset's own cluster (none in another cluster, none
  duplicated); every child carrying our subset label there is accounted for: a host child has a
  living controller owner; a member child of this host carries all three owner labels
  (``owner-uid``, ``owner-name``, ``owner-cluster``), no ownerReferences, and names a living
  UnitedDeployment (children another host made are not ours and not looked at);
* the children's ``spec.replicas`` are the allocation, adding up to ``spec.replicas``; each child
  has rolled out the UnitedDeployment's updated revision and reports its replicas ready;
* exactly ``spec.replicas`` pods of it run, all Ready, summed over the clusters (member pods of
  other hosts excluded);
* the status has caught up (as in :mod:`tests.chaos.invariants`), and names each remote
  subset's cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tests.chaos.invariants import _status_problems
from tests.e2e.controller.helpers import DEPLOYMENTS, PODS, UD
from united.api.selector import parse as parse_selector
from united.kube.client import JSON, KubeClient
from united.kube.errors import NotFound
from united.kube.wait import eventually
from united.uniteddeployment.admission import admit
from united.uniteddeployment.allocation import SubsetState, allocate
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.status import pod_ready

KEYS = Keys()
HOST = ""
"""The host's name among the clusters (a subset without ``cluster``)."""


def _controller(obj: JSON) -> str | None:
    return next((str(r.get("uid")) for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")), None)


async def _list(client: KubeClient, resource: Any, namespace: str) -> list[JSON]:
    try:
        return list((await client.list(resource, namespace=namespace, label_selector=KEYS.subset_name)).items)
    except NotFound:
        return []


async def violations(kube: KubeClient, members: Mapping[str, KubeClient], namespace: str, host_id: str) -> list[str]:
    """Every invariant broken in ``namespace`` right now, over the host and ``members``."""
    problems: list[str] = []
    uds = [u for u in (await kube.list(UD, namespace=namespace)).items if not u["metadata"].get("deletionTimestamp")]
    living = {u["metadata"]["uid"] for u in uds}
    clients = {HOST: kube, **members}
    children: dict[str, list[JSON]] = {}
    pods: dict[str, list[JSON]] = {}
    for cluster, client in clients.items():
        children[cluster], pods[cluster] = [], []
        for child in await _list(client, DEPLOYMENTS, namespace):
            labels, meta = child["metadata"].get("labels") or {}, child["metadata"]
            where = f"{cluster or 'host'}: Deployment {meta['name']}"
            if cluster == HOST:
                owner = _controller(child)
            elif labels.get(KEYS.owner_cluster) != host_id:
                continue  # another host's
            else:
                owner = labels.get(KEYS.owner_uid)
                if meta.get("ownerReferences"):
                    problems.append(f"{where}: ownerReferences in a member")
                if not (owner and labels.get(KEYS.owner_name)):
                    problems.append(f"{where}: without owner labels: {labels}")
            if owner not in living:
                problems.append(f"{where}: no living owner ({owner})")
            if not meta.get("deletionTimestamp"):
                children[cluster].append(child)
        pods[cluster] = [
            p
            for p in await _list(client, PODS, namespace)
            if not p["metadata"].get("deletionTimestamp")
            and (cluster == HOST or (p["metadata"].get("labels") or {}).get(KEYS.owner_cluster) == host_id)
        ]
    for obj in uds:
        problems += _ud_problems(obj, children, pods)
    return problems


def _ud_problems(obj: JSON, children: Mapping[str, list[JSON]], pods: Mapping[str, list[JSON]]) -> list[str]:
    name, uid = obj["metadata"]["name"], obj["metadata"]["uid"]
    spec = admit(obj).spec
    home = {s.name: s.cluster or HOST for s in spec.subsets}
    problems: list[str] = []
    mine: dict[str, JSON] = {}
    for cluster, listed in children.items():
        for child in listed:
            labels = child["metadata"].get("labels") or {}
            owner = _controller(child) if cluster == HOST else labels.get(KEYS.owner_uid)
            if owner != uid:
                continue
            subset, child_name = labels.get(KEYS.subset_name, ""), child["metadata"]["name"]
            if home.get(subset) != cluster:
                problems.append(f"{name}: child {child_name} of subset {subset} in {cluster or 'the host'}")
            elif subset in mine:
                problems.append(f"{name}: two children of {subset}: {mine[subset]['metadata']['name']}, {child_name}")
            else:
                mine[subset] = child
    missing = sorted(set(home) - set(mine))
    if missing:
        return [*problems, f"{name}: no child for subsets {missing}"]
    state = {
        s: SubsetState(
            replicas=int(c["spec"].get("replicas") or 0),
            ready_replicas=int((c.get("status") or {}).get("readyReplicas") or 0),
        )
        for s, c in mine.items()
    }
    want = {a.name: a.replicas for a in allocate(spec, state).subsets}
    have = {s: st.replicas for s, st in state.items()}
    if have != want or sum(want.values()) != spec.replicas:
        problems.append(f"{name}: children replicas {have}, allocation {want}, spec {spec.replicas}")
    updated = (obj.get("status") or {}).get("updatedRevision")
    for s, c in mine.items():
        status = c.get("status") or {}
        counts = [status.get(k) or 0 for k in ("replicas", "readyReplicas", "updatedReplicas")]
        if counts != [have[s]] * 3 or status.get("observedGeneration") != c["metadata"].get("generation"):
            problems.append(f"{name}/{s}: child status {status}")
        revision = (c["metadata"].get("labels") or {}).get(KEYS.revision)
        if revision != updated:
            problems.append(f"{name}/{s}: child at revision {revision}, not {updated}")
    selector = parse_selector(obj["spec"]["selector"])
    matching = [p for listed in pods.values() for p in listed if selector.matches(p["metadata"].get("labels") or {})]
    ready = sum(1 for p in matching if pod_ready(p))
    if len(matching) != spec.replicas or ready != spec.replicas:
        problems.append(f"{name}: {len(matching)} pods over the clusters, {ready} ready, want {spec.replicas}")
    clusters = {e["name"]: e.get("cluster") or HOST for e in (obj.get("status") or {}).get("subsetStatuses") or []}
    if clusters != home:
        problems.append(f"{name}: status clusters {clusters}, want {home}")
    return problems + _status_problems(obj, want)


async def wait_converged(
    kube: KubeClient, members: Mapping[str, KubeClient], namespace: str, host_id: str, *, within: float, what: str
) -> None:
    """Poll :func:`violations` until there are none; fail with the last list after ``within`` s."""

    async def clean() -> None:
        found = await violations(kube, members, namespace, host_id)
        assert not found, f"{len(found)} violations: " + "; ".join(found[:12])

    await eventually(clean, within=within, interval=0.5, what=what)
