"""The multi-cluster part of ``united demo``: a sample whose subsets name clusters
(``subsets[].cluster``) gets one member control plane per cluster named, started together with
the host's (:mod:`united.devcluster.planes`), each joined as ``united join`` joins a member
(:mod:`united.multicluster.join`: its role applied, its kubeconfig Secret and ``Cluster`` in
the host), so the controller converges one UnitedDeployment across all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from united.devcluster.build import Binaries
from united.devcluster.nodes import subset_nodes
from united.devcluster.planes import Plane
from united.kube.client import JSON, KubeClient
from united.multicluster import join

READY_SECONDS = 120.0
"""How long a member's ``Cluster`` may take to become Ready (two shared cores, a cold start)."""


def clusters(doc: JSON) -> list[str]:
    """The clusters a UnitedDeployment's subsets name, in order of appearance (host: none)."""
    named = [s.get("cluster") for s in _subsets(doc)]
    return list(dict.fromkeys(str(name) for name in named if name))


def part(doc: JSON, cluster: str | None) -> JSON:
    """``doc`` with only the subsets in ``cluster`` (``None``: the host's)."""
    subsets = [s for s in _subsets(doc) if (s.get("cluster") or None) == cluster]
    spec = doc.get("spec") or {}
    return {**doc, "spec": {**spec, "topology": {**(spec.get("topology") or {}), "subsets": subsets}}}


def _subsets(doc: JSON) -> list[dict[str, Any]]:
    subsets = ((doc.get("spec") or {}).get("topology") or {}).get("subsets") or []
    return [s for s in subsets if isinstance(s, dict)]


def member_planes(binaries: Binaries, doc: JSON) -> list[Plane]:
    """One lean member plane per cluster ``doc`` names, with two nodes that fit each of its
    subsets there (not started)."""
    return [
        Plane(
            binaries,
            name=name,
            nodes=subset_nodes(part(doc, name), prefix=name, per_subset=2, cpu="64", memory="256Gi"),
        )
        for name in clusters(doc)
    ]


async def join_members(host: KubeClient, planes: Sequence[Plane], *, say: Callable[[str], None]) -> None:
    """Join every member plane to ``host`` (the controller must be running: this waits for each
    ``Cluster`` to be Ready); a member that is not Ready in time is a :class:`join.JoinError`."""
    for plane in planes:
        say(f"joining {plane.name} (manifests/member, its kubeconfig Secret and Cluster in the host) ...")
        membership = join.Membership(
            plane.name,
            join.endpoint(plane.admin_kubeconfig, context=None),
            all_namespaces=True,  # a local demo: every namespace of its host, created as needed
            create_namespaces=True,
        )
        async with await plane.client() as member:
            cluster = await join.join(host, member, membership, wait=READY_SECONDS, say=say)
        if not join.is_ready(cluster):
            raise join.JoinError("host", join.ready_line(plane.name, cluster))
        say(join.ready_line(plane.name, cluster))


def usage(planes: Sequence[Plane]) -> list[str]:
    """Where each member runs, for the demo's usage text."""
    return [f"  {p.name}: Kubernetes at {p.server}, kubeconfig {p.admin_kubeconfig}" for p in planes]
