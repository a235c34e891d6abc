"""``united plan``: the allocation (which subset gets how many replicas, the partition, and why),
or where a WorkloadSpread's new pods land."""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from typing import Any

from united.api.field import FieldError, ManifestError, Path, invalid
from united.cli import spread as spread_commands
from united.cli.manifest import State, load_state, read_united
from united.cli.output import EXIT_OK, print_json, print_table
from united.uniteddeployment import adaptive
from united.uniteddeployment.allocation import AllocationError, Plan, SubsetState, allocate
from united.uniteddeployment.model import UnitedDeployment


def register(sub: Any) -> None:
    c = sub.add_parser(
        "plan", help="show how replicas (a WorkloadSpread: --replicas new pods) would be spread over subsets, and why"
    )
    what_if(c, outputs=("table", "json"))
    c.set_defaults(func=_plan)


def what_if(c: argparse.ArgumentParser, *, outputs: tuple[str, str]) -> None:
    """The arguments ``plan`` and ``render`` share: a manifest, and what-if replicas and state."""
    c.add_argument("file", metavar="FILE", help="manifest file, or - for stdin")
    c.add_argument("--replicas", type=int, metavar="N", help="what-if: override spec.replicas (as /scale would)")
    c.add_argument("--state", metavar="STATE", help="YAML/JSON describing existing children per subset")
    c.add_argument("-o", "--output", choices=outputs, default=outputs[0])


def allocation(args: argparse.Namespace) -> tuple[UnitedDeployment, Plan]:
    ud = read_united(args.file, replicas=args.replicas)
    state = load_state(args.state) if args.state else State()
    names = {s.name for s in ud.spec.subsets}
    for extra in sorted(set(state.subsets) - names):
        print(f"note: state subset {extra!r} is not in the topology; its child would be deleted", file=sys.stderr)
    try:
        return ud, allocate(ud.spec, _outages(ud, state))
    except AllocationError as e:
        raise ManifestError([FieldError("spec.topology.subsets", str(e))]) from e


def _outages(ud: UnitedDeployment, state: State) -> dict[str, SubsetState]:
    """The subsets' states, each unreachable one decided as the controller would: with
    Adaptive scheduling, marked once its cluster has been unreachable for
    ``rescheduleCriticalSeconds`` (other allocators keep its last-known counts)."""
    settings = adaptive.Settings.of(ud.spec)
    out = dict(state.subsets)
    errors = []
    for name, seconds in state.unreachable.items():
        subset = ud.spec.subset(name)
        if subset is None:
            continue
        if subset.cluster is None:
            path = Path("state").child("subsets").key(name).child("clusterUnreachable")
            errors.append(invalid(path, True, f"subset {name} has no cluster: it runs where the UnitedDeployment is"))
            continue
        if settings is None:
            continue
        st = out[name]
        decision = adaptive.cluster_down(
            settings,
            subset=name,
            cluster=subset.cluster,
            since=0.0,
            now=seconds if math.isfinite(seconds) else settings.critical,
            previous=None,
            replicas=st.replicas,
        )
        if decision.unschedulable:
            out[name] = dataclasses.replace(st, unschedulable=True, reserved_pods=decision.held)
    if errors:
        raise ManifestError(errors)
    return out


def _plan(args: argparse.Namespace) -> int:
    docs = spread_commands.documents(args.file)
    if spread_commands.is_workloadspread(docs):
        return spread_commands.plan_command(args, docs)
    ud, plan = allocation(args)
    clusters = {s.name: s.cluster for s in ud.spec.subsets}
    if args.output == "json":
        subsets = [
            {
                "name": a.name,
                "replicas": a.replicas,
                "partition": a.partition,
                "reason": a.reason,
                "message": a.message,
                "cluster": clusters.get(a.name),
            }
            for a in plan.subsets
        ]
        print_json({"name": ud.name, "replicas": plan.replicas, "allocator": plan.allocator, "subsets": subsets})
        return EXIT_OK
    print(f"UnitedDeployment {ud.name}: {plan.replicas} replicas, allocator {plan.allocator}")
    remote = any(clusters.values())
    rows = [("SUBSET", *(("CLUSTER",) if remote else ()), "REPLICAS", "PARTITION", "REASON", "MESSAGE")]
    rows += [
        (
            a.name,
            *((clusters.get(a.name) or "-",) if remote else ()),
            str(a.replicas),
            str(a.partition),
            a.reason,
            a.message,
        )
        for a in plan.subsets
    ]
    print_table(rows)
    return EXIT_OK
