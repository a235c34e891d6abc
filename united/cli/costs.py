"""``united costs WS.yaml PODS.yaml``: the deletion cost the controller would write on each pod.

PODS is a ``v1 List`` or several YAML documents: the pods, and optionally the target workload
(its ``spec.replicas`` and latest version) and its ReplicaSets. Without the workload every pod
given is taken as the target's, the replicas are ``--replicas`` (else the active pods), and
the latest version is the version of the most recently created pod. Pods the controller would
adopt offline cannot be told (that needs the nodes): a pod without this spread's annotation
counts as unplaced. Prints ``{"<pod name>": cost}`` for every active pod of the target.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from united.api.document import Json
from united.api.field import FieldError, ManifestError, Path, invalid, required
from united.api.timestamp import parse_time
from united.cli.output import print_json
from united.cli.spread import documents
from united.workloadspread.admission import admit
from united.workloadspread.cost import KINDS, costs
from united.workloadspread.matching import is_active, selects
from united.workloadspread.model import KIND, WorkloadSpread
from united.workloadspread.pods import group, pods_of, replicas_of
from united.workloadspread.version import pod_version, workload_version


def add_parser(sub: Any) -> None:
    c = sub.add_parser("costs", help="show the pod-deletion-cost the controller would write on each pod")
    c.add_argument("file", metavar="WS", help="WorkloadSpread manifest, or - for stdin")
    c.add_argument("pods", metavar="PODS", help="the pods (a v1 List or YAML documents), and optionally the target")
    c.add_argument("--replicas", type=int, metavar="N", help="the target's replicas (default: the workload's)")
    c.add_argument("-o", "--output", choices=("json",), default="json")
    c.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    ws_docs = documents(args.file)
    found = [d for d in ws_docs if isinstance(d, dict) and d.get("kind") == KIND]
    ws = admit(found[0] if found else (ws_docs[0] if len(ws_docs) == 1 else None))
    if args.replicas is not None and args.replicas < 0:
        raise ManifestError([invalid(Path("--replicas"), args.replicas, "must be greater than or equal to 0")])
    pods, workload, replicasets = _objects(ws, documents(args.pods), args.pods)
    target = ws.spec.target_ref
    assert target is not None
    if target.kind not in KINDS:
        print(f"note: {target.kind} ignores pod-deletion-cost; the controller writes none", file=sys.stderr)
    if workload is not None:
        mine = pods_of(ws, workload=workload, replicasets=replicasets, pods=pods)
        latest = workload_version(target.kind, workload, replicasets=replicasets)
        replicas = replicas_of(ws, workload) if args.replicas is None else args.replicas
    else:
        mine = [p for p in pods if selects(ws, p)]
        latest = _newest_version(mine)
        replicas = sum(1 for p in mine if is_active(p)) if args.replicas is None else args.replicas
    if latest is None:
        raise ManifestError(
            [
                FieldError(
                    args.pods,
                    f"the latest version of {target.kind} {target.name} cannot be "
                    "told yet (its current ReplicaSet or revision is not among the objects)",
                )
            ]
        )
    print_json(costs(ws, group(ws, mine, adopted={}), replicas=replicas, latest=latest))
    return 0


def _objects(ws: WorkloadSpread, docs: Sequence[Any], name: str) -> tuple[list[Json], Json | None, list[Json]]:
    """Pods, the target workload and ReplicaSets among the documents (a ``List``'s items)."""
    root = Path(name)
    items: list[tuple[Path, Any]] = [(root.index(i), d) for i, d in enumerate(docs)]
    if len(docs) == 1 and isinstance(docs[0], dict) and docs[0].get("kind") == "List":
        items = [(root.child("items").index(i), d) for i, d in enumerate(docs[0].get("items") or [])]
    target = ws.spec.target_ref
    assert target is not None
    pods, replicasets, workload, errors = [], [], None, []
    for path, doc in items:
        kind = doc.get("kind") if isinstance(doc, dict) else None
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
            errors.append(required(path.child("metadata").child("name")))
        elif kind == "Pod":
            pods.append(doc)
        elif kind == target.kind and meta["name"] == target.name:
            workload = doc
        elif kind == "ReplicaSet":
            replicasets.append(doc)
        else:
            errors.append(
                invalid(
                    path.child("kind"), kind, f"must be a Pod, the target {target.kind} {target.name} or a ReplicaSet"
                )
            )
    if errors:
        raise ManifestError(errors)
    return pods, workload, replicasets


def _newest_version(pods: Sequence[Json]) -> str | None:
    """The version of the most recently created pod (the last given among equals)."""
    newest = None
    best = float("-inf")
    for pod in pods:
        created = parse_time((pod.get("metadata") or {}).get("creationTimestamp"))
        when = float("-inf") if created is None else created
        if when >= best:
            newest, best = pod, when
    return pod_version(newest) if newest is not None else ""
