"""``united run``: the controller against a cluster; its flags checked before anything starts."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from united.api.field import FieldError, ManifestError, Path, invalid
from united.api.groups import GROUP, KRUISE_GROUP
from united.api.names import dns_label_errors, dns_subdomain_errors
from united.api.selector import text_errors
from united.cli.output import EXIT_INVALID
from united.controller.settings import Settings
from united.log import add_logging_arguments, configure_logging

_DEFAULTS = Settings()
"""``united run``'s defaults are the manager's."""

_LEASE_TIMINGS = (
    ("lease_duration", "how long a standby waits for an unrenewed Lease before taking over (default %(default)s)"),
    ("renew_deadline", "how long the leader may go without renewing before it stops writing (default %(default)s)"),
    ("retry_period", "seconds between Lease attempts (default %(default)s)"),
)
"""The elector's timings as flags (controller-runtime's names), by its parameter names."""


def register(sub: Any) -> None:
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
        "--webhook-namespaces",
        choices=("targeted", "all"),
        default=_DEFAULTS.webhook_namespaces,
        help="targeted (default): on Kubernetes 1.22+ only namespaces holding a WorkloadSpread reach the pod "
        "webhooks (up to 200, then all; a spread's creation adds its namespace before it returns); "
        "all: every namespace but kube-system and the controller's",
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


def _lease_flag(name: str) -> str:
    return "--leader-election-" + name.replace("_", "-")


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from united.controller.kinds import KINDS
    from united.controller.manager import run
    from united.kube.errors import ConfigError
    from united.runtime.leader import timing_problems

    errors = flag_errors(args)
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
        webhook_namespaces=args.webhook_namespaces,
        webhook_client_ca=args.webhook_client_ca,
        cluster_id=args.cluster_id,
        create_member_namespaces=args.create_member_namespaces,
        settle_heap=True,
    )
    try:
        return asyncio.run(run(settings, KINDS))
    except ConfigError as e:
        print(e, file=sys.stderr)
        return EXIT_INVALID


def flag_errors(args: argparse.Namespace) -> list[FieldError]:
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
