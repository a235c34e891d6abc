"""The ``united`` command line: thin over the core and the runtime.

Exit codes: 0 success; 2 bad input (one ``field.path: message`` line per error on stderr,
never a traceback); 1 an unexpected internal failure. The JSON shapes printed with
``-o json`` are a public interface documented in ``docs/reference/cli.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
from collections.abc import Sequence
from typing import Any

import yaml

from united import __version__, data
from united.api.field import FieldError, ManifestError, Path, invalid
from united.api.groups import GROUP, KRUISE_GROUP
from united.api.names import dns_label_errors, dns_subdomain_errors, label_value_errors
from united.api.selector import text_errors
from united.controller.settings import Settings
from united.devcluster import versions
from united.log import add_logging_arguments, configure_logging
from united.manifest import Source, State, load, load_state
from united.multicluster import join_command
from united.multicluster.identity import RemoteKeys
from united.output import print_json as _print_json
from united.output import print_table
from united.uniteddeployment import adaptive, revision
from united.uniteddeployment.admission import admit
from united.uniteddeployment.allocation import AllocationError, Plan, SubsetState, allocate
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import UnitedDeployment
from united.uniteddeployment.render import render
from united.uniteddeployment.validation import validate_update
from united.workloadspread import commands as spread_commands
from united.workloadspread import cost_command
from united.workloadspread import model as workloadspread
from united.workloadspread.admission import admit as admit_spread
from united.workloadspread.validation import conflicts
from united.workloadspread.validation import validate_update as validate_spread_update

EXIT_OK, EXIT_FAILURE, EXIT_INVALID = 0, 1, 2


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        result: int = args.func(args)
        return result
    except ManifestError as e:
        return _fail(e.errors, json_out=getattr(args, "output", "") == "json")
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="united", description="UnitedDeployment controller and tools.")
    p.add_argument("--version", action="version", version=f"united {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    v = sub.add_parser("validate", help="check a manifest offline; exit 2 with field errors if invalid")
    v.add_argument("file", metavar="FILE", help="manifest file, or - for stdin")
    v.add_argument("--old", metavar="OLD", help="the current object: also apply the update rules")
    v.add_argument("-o", "--output", choices=("text", "json"), default="text")
    v.set_defaults(func=_validate)

    for name, help_text, outputs in (
        (
            "plan",
            "show how replicas (a WorkloadSpread: --replicas new pods) would be spread over subsets, and why",
            ("table", "json"),
        ),
        ("render", "print the child workloads exactly as the controller would create them", ("yaml", "json")),
    ):
        c = sub.add_parser(name, help=help_text)
        c.add_argument("file", metavar="FILE", help="manifest file, or - for stdin")
        c.add_argument("--replicas", type=int, metavar="N", help="what-if: override spec.replicas (as /scale would)")
        c.add_argument("--state", metavar="STATE", help="YAML/JSON describing existing children per subset")
        c.add_argument("-o", "--output", choices=outputs, default=outputs[0])
        if name == "render":
            c.add_argument("--revision", metavar="R", help="revision name for the children (default: computed)")
            c.add_argument(
                "--host-cluster-id",
                default="",
                metavar="ID",
                help="the host's identity in a remote child's owner-cluster labels (united run --cluster-id, "
                "else the host's kube-system namespace uid; default empty, like the owner uid offline)",
            )
        c.set_defaults(func=_plan if name == "plan" else _render)

    a = sub.add_parser("admit", help="show what the pod webhook would do to a pod of a WorkloadSpread's target")
    a.add_argument("file", metavar="WS", help="WorkloadSpread manifest (may carry a status), or - for stdin")
    a.add_argument("pod", metavar="POD", help="the pod, as created (CREATE) or as it is (DELETE, EVICT)")
    a.add_argument("--operation", choices=spread_commands.OPERATIONS, default="CREATE")
    a.add_argument("--replicas", type=int, metavar="N", help="the target's replicas (for percentages)")
    a.add_argument("-o", "--output", choices=("json", "yaml"), default="json")
    a.set_defaults(func=spread_commands.admit_command)
    cost_command.add_parser(sub)

    r = sub.add_parser("run", help="run the controller against a cluster")
    r.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then $KUBECONFIG, ~/.kube/config)")
    r.add_argument(
        "--api-group",
        default=GROUP,
        choices=(GROUP, KRUISE_GROUP),
        help=f"serve this group's UnitedDeployments ({KRUISE_GROUP} serves OpenKruise manifests)",
    )
    r.add_argument("--namespace", action="append", default=[], help="namespace to serve (repeatable; default all)")
    r.add_argument("--selector", help="label selector on UnitedDeployments, to shard over several controllers")
    r.add_argument("--workers", type=int, default=_DEFAULTS.workers, help="concurrent reconciles (default %(default)s)")
    r.add_argument("--leader-elect", action="store_true", help="elect a leader through a Lease (for >1 replica)")
    r.add_argument("--leader-election-namespace", default=_DEFAULTS.leader_election_namespace)
    r.add_argument("--leader-election-id", default=_DEFAULTS.leader_election_id, help="name of the Lease")
    for name, meaning in _LEASE_TIMINGS:
        default = getattr(_DEFAULTS, f"leader_election_{name}")
        r.add_argument(_lease_flag(name), type=float, default=default, metavar="SECONDS", help=meaning)
    r.add_argument("--http-port", type=int, default=_DEFAULTS.http_port, help="port for /healthz, /readyz and /metrics")
    r.add_argument(
        "--controller-namespace",
        default=_DEFAULTS.controller_namespace,
        help="the controller's own namespace: its webhook Secret, excluded from the pod webhooks",
    )
    r.add_argument("--webhook-port", type=int, help="serve the WorkloadSpread webhooks over HTTPS on this port")
    r.add_argument(
        "--webhook-host", default=_DEFAULTS.webhook_host, help="address the webhook server binds (default %(default)s)"
    )
    r.add_argument(
        "--webhook-url",
        metavar="URL",
        help="create the webhook configurations pointing at URL (e.g. https://127.0.0.1:9443); "
        "default: only patch the caBundle of the installed ones",
    )
    r.add_argument(
        "--webhook-failure-policy",
        choices=("Ignore", "Fail"),
        default=_DEFAULTS.webhook_failure_policy,
        help="Ignore (default): pods are created while no replica answers; Fail: they are refused",
    )
    r.add_argument(
        "--webhook-client-ca",
        metavar="FILE",
        help="serve the webhooks only to clients presenting a certificate this PEM CA signed "
        "(the API server's, from its admission configuration); default: any client",
    )
    r.add_argument(
        "--discovery-interval",
        type=float,
        default=_DEFAULTS.discovery_interval,
        help="seconds between checks for child kinds whose CRD appeared (CloneSet, Advanced StatefulSet)",
    )
    r.add_argument(
        "--cluster-id",
        metavar="ID",
        help="this host's identity in member clusters (owner labels); default: the uid of namespace kube-system",
    )
    r.add_argument(
        "--create-member-namespaces",
        action=argparse.BooleanOptionalAction,
        default=_DEFAULTS.create_member_namespaces,
        help="create a subset's namespace in a member cluster when it is missing there (default: on)",
    )
    add_logging_arguments(r)
    r.set_defaults(func=_run)

    join_command.add_parser(sub)

    d = sub.add_parser("demo", help="start a local control plane and show a UnitedDeployment converging")
    d.add_argument(
        "--sample", metavar="FILE", help="sample to apply: a UnitedDeployment, or a WorkloadSpread and its target"
    )
    d.add_argument(
        "--kube-version",
        metavar="V",
        help=f"Kubernetes release to run (built once if needed), 'newest' ({versions.NEWEST}) or 'default'; "
        f"default: ${versions.VERSION_VARIABLE}, else {versions.DEFAULT}",
    )
    d.set_defaults(func=_demo)

    i = sub.add_parser("install", help=f"apply (or print) the CRD and the controller {__version__} for a cluster")
    i.add_argument(
        "--api-group",
        default=GROUP,
        choices=(GROUP, KRUISE_GROUP),
        help=f"the group to serve ({KRUISE_GROUP}: the compat CRD and RBAC, for clusters without OpenKruise)",
    )
    i.add_argument("--print", action="store_true", dest="print_only", help="print the manifests, apply nothing")
    i.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then $KUBECONFIG, ~/.kube/config)")
    i.set_defaults(func=_install)

    s = sub.add_parser("samples", help="list the sample manifests, or print one")
    s.add_argument("name", nargs="?", metavar="NAME", help="the sample to print")
    s.set_defaults(func=_samples)
    return p


def _source(file: str) -> Source:
    source = load(file)
    for note in source.notes:
        print(f"note: {note}", file=sys.stderr)
    return source


def _load(file: str, *, replicas: int | None = None) -> UnitedDeployment:
    return admit(_source(file).document, replicas=replicas)


def _validate(args: argparse.Namespace) -> int:
    errors: list[FieldError] = []
    try:
        source = _source(args.file)
        old = _source(args.old) if args.old else None
        kind = _kind(source.document)
        if old is not None and _kind(old.document) != kind:
            raise ManifestError([invalid(Path("--old"), _kind(old.document), f"must be a {kind}, as FILE is")])
        errors = _validate_spread(source, old) if kind == workloadspread.KIND else _validate_united(source, old)
    except ManifestError as e:
        errors = e.errors
    if errors:
        return _fail(errors, json_out=args.output == "json")
    if args.output == "json":
        _print_json({"valid": True, "errors": []})
    else:
        print("valid")
    return EXIT_OK


def _kind(doc: Any) -> Any:
    return doc.get("kind") if isinstance(doc, dict) else None


def _validate_united(source: Source, old: Source | None) -> list[FieldError]:
    ud = admit(source.document)
    return validate_update(admit(old.document), ud) if old is not None else []


def _validate_spread(source: Source, old: Source | None) -> list[FieldError]:
    """A WorkloadSpread: the create rules, the conflict rule against the other WorkloadSpreads
    of the file (what the webhook lists in the namespace), and with ``old`` the update rules."""
    ws = admit_spread(source.document)
    others = []
    for doc in source.others:
        if _kind(doc) == workloadspread.KIND:
            try:
                others.append(workloadspread.parse(doc))
            except ManifestError:
                continue
    if others:
        print(f"note: the other WorkloadSpread(s) ({len(others)}) were read to check for conflicts", file=sys.stderr)
    errors = conflicts(ws, others)
    if old is not None:
        errors = validate_spread_update(admit_spread(old.document), ws) + errors
    return errors


def _allocate(args: argparse.Namespace) -> tuple[UnitedDeployment, Plan]:
    ud = _load(args.file, replicas=args.replicas)
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
    ud, plan = _allocate(args)
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
        _print_json({"name": ud.name, "replicas": plan.replicas, "allocator": plan.allocator, "subsets": subsets})
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


def _render(args: argparse.Namespace) -> int:
    errors = label_value_errors(args.host_cluster_id, Path("--host-cluster-id"))
    if errors:
        raise ManifestError(errors)
    ud, plan = _allocate(args)
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
        _print_json(children)
        return EXIT_OK
    documents = []
    for s, child in zip(ud.spec.subsets, children, strict=True):
        where = f"# subset {s.name} -> cluster {s.cluster}\n" if s.cluster else ""
        documents.append(where + yaml.safe_dump(child, sort_keys=False, default_flow_style=False))
    sys.stdout.write("---\n".join(documents))
    return EXIT_OK


_DEFAULTS = Settings()
"""``united run``'s defaults are the manager's."""
_LEASE_TIMINGS = (
    ("lease_duration", "how long a standby waits for an unrenewed Lease before taking over (default %(default)s)"),
    ("renew_deadline", "how long the leader may go without renewing before it stops writing (default %(default)s)"),
    ("retry_period", "seconds between Lease attempts (default %(default)s)"),
)
"""The elector's timings as flags (controller-runtime's names), by its parameter names."""


def _lease_flag(name: str) -> str:
    return "--leader-election-" + name.replace("_", "-")


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from united.controller.manager import run
    from united.kube.errors import ConfigError
    from united.runtime.leader import timing_problems

    errors = _run_flag_errors(args)
    timings = {name: float(getattr(args, f"leader_election_{name}")) for name, _ in _LEASE_TIMINGS}
    errors += [FieldError(_lease_flag(name), message) for name, message in timing_problems(**timings).items()]
    if errors:
        raise ManifestError(errors)
    configure_logging(log_format=args.log_format, level=args.log_level)
    settings = Settings(
        kubeconfig=args.kubeconfig,
        api_group=args.api_group,
        namespaces=tuple(args.namespace),
        selector=args.selector,
        workers=args.workers,
        leader_elect=args.leader_elect,
        leader_election_namespace=args.leader_election_namespace,
        leader_election_id=args.leader_election_id,
        leader_election_lease_duration=timings["lease_duration"],
        leader_election_renew_deadline=timings["renew_deadline"],
        leader_election_retry_period=timings["retry_period"],
        http_port=args.http_port,
        discovery_interval=args.discovery_interval,
        controller_namespace=args.controller_namespace,
        webhook_port=args.webhook_port,
        webhook_host=args.webhook_host,
        webhook_url=args.webhook_url,
        webhook_failure_policy=args.webhook_failure_policy,
        webhook_client_ca=args.webhook_client_ca,
        cluster_id=args.cluster_id,
        create_member_namespaces=args.create_member_namespaces,
    )
    try:
        return asyncio.run(run(settings))
    except ConfigError as e:
        print(e, file=sys.stderr)
        return EXIT_INVALID


def _run_flag_errors(args: argparse.Namespace) -> list[FieldError]:
    """What is wrong with ``united run``'s flags, found before anything starts."""
    errors = [*(text_errors(args.selector, Path("--selector")) if args.selector is not None else ())]
    if args.workers < 1:
        errors.append(invalid(Path("--workers"), args.workers, "must be at least 1"))
    if not 0 <= args.http_port <= 65535:
        errors.append(invalid(Path("--http-port"), args.http_port, "must be between 0 and 65535"))
    if not 0 < args.discovery_interval < math.inf:
        errors.append(invalid(Path("--discovery-interval"), args.discovery_interval, "must be a positive number"))
    for namespace in args.namespace:
        errors += dns_label_errors(namespace, Path("--namespace"))
    errors += dns_label_errors(args.controller_namespace, Path("--controller-namespace"))
    if args.webhook_port is not None and not 0 <= args.webhook_port <= 65535:
        errors.append(invalid(Path("--webhook-port"), args.webhook_port, "must be between 0 and 65535"))
    if args.webhook_url is not None:
        from united.workloadspread.webhookconfig import url_problem

        problem = url_problem(args.webhook_url)
        if problem is not None:
            errors.append(invalid(Path("--webhook-url"), args.webhook_url, problem))
        elif args.webhook_port is None:
            errors.append(FieldError("--webhook-url", "needs --webhook-port (the server the URL reaches)"))
    if args.webhook_client_ca is not None:
        from united.controller.webhooks import client_ca

        try:
            client_ca(args.webhook_client_ca)
        except ValueError as exc:
            errors.append(invalid(Path("--webhook-client-ca"), args.webhook_client_ca, str(exc)))
        if args.webhook_port is None:
            errors.append(FieldError("--webhook-client-ca", "needs --webhook-port (the server it protects)"))
    if args.leader_elect:
        errors += dns_label_errors(args.leader_election_namespace, Path("--leader-election-namespace"))
        errors += dns_subdomain_errors(args.leader_election_id, Path("--leader-election-id"))
    return errors


def _demo(args: argparse.Namespace) -> int:
    from united.devcluster.demo import run

    try:
        version = versions.chosen(args.kube_version, os.environ)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    return run(sample=args.sample, version=version)


def _install(args: argparse.Namespace) -> int:
    import asyncio

    from united.devcluster.installation import install
    from united.kube.errors import ApiError, ConfigError

    docs = data.controller(args.api_group)
    if args.print_only:
        sys.stdout.write(yaml.safe_dump_all(docs, sort_keys=False))
        return EXIT_OK
    configure_logging(level="ERROR", log_format="console")
    try:
        asyncio.run(install(docs, kubeconfig=args.kubeconfig))
    except ConfigError as e:
        print(e, file=sys.stderr)
        return EXIT_INVALID
    except ApiError as e:
        raise ManifestError([FieldError("install", f"cannot apply to the cluster: {e.__cause__ or e.message}")]) from e
    for doc in docs:
        print(f"{doc['kind']}/{doc['metadata']['name']} applied")
    return EXIT_OK


def _samples(args: argparse.Namespace) -> int:
    if args.name is None:
        for name in data.samples():
            print(name)
        return EXIT_OK
    try:
        sys.stdout.write(data.sample(args.name).read_text(encoding="utf-8"))
    except LookupError as e:
        raise ManifestError([FieldError("NAME", str(e))]) from e
    return EXIT_OK


def _fail(errors: Sequence[FieldError], *, json_out: bool) -> int:
    if json_out:
        _print_json({"valid": False, "errors": [e.as_dict() for e in errors]})
    for e in errors:
        print(e, file=sys.stderr)
    return EXIT_INVALID
