"""``united render``: the child workloads exactly as the controller would create them."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import yaml

from united.api.field import ManifestError, Path
from united.api.names import label_value_errors
from united.cli.output import EXIT_OK, print_json
from united.cli.plan import allocation, what_if
from united.multicluster.identity import RemoteKeys
from united.uniteddeployment import revision
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.render import render


def register(sub: Any) -> None:
    c = sub.add_parser("render", help="print the child workloads exactly as the controller would create them")
    what_if(c, outputs=("yaml", "json"))
    c.add_argument("--revision", metavar="R", help="revision name for the children (default: computed)")
    c.add_argument(
        "--host-cluster-id",
        default="",
        metavar="ID",
        help="the host's identity in a remote child's owner-cluster labels (united run --cluster-id, "
        "else the host's kube-system namespace uid; default empty, like the owner uid offline)",
    )
    c.set_defaults(func=_render)


def _render(args: argparse.Namespace) -> int:
    errors = label_value_errors(args.host_cluster_id, Path("--host-cluster-id"))
    if errors:
        raise ManifestError(errors)
    ud, plan = allocation(args)
    template = ud.spec.template
    assert template is not None
    name = args.revision or revision.name(ud.name, template)
    keys = Keys(ud.group)
    remote = RemoteKeys(keys, args.host_cluster_id)
    children = [
        render(
            ud,
            subset=s,
            replicas=plan[s.name].replicas,
            partition=plan[s.name].partition,
            revision=name,
            keys=keys,
            remote=remote if s.cluster else None,
        ).object
        for s in ud.spec.subsets
    ]
    if args.output == "json":
        print_json(children)
        return EXIT_OK
    documents = []
    for s, child in zip(ud.spec.subsets, children, strict=True):
        where = f"# subset {s.name} -> cluster {s.cluster}\n" if s.cluster else ""
        documents.append(where + yaml.safe_dump(child, sort_keys=False, default_flow_style=False))
    sys.stdout.write("---\n".join(documents))
    return EXIT_OK
