"""``united demo``: a local control plane (or an existing cluster), the controller and a
sample converging."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from united.cli.output import EXIT_INVALID
from united.devcluster import versions

EXISTING = "--kubeconfig, --context or --current-context"


def register(sub: Any) -> None:
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
    on = d.add_argument_group(
        "on an existing cluster",
        "Run the demo on a cluster you have (kind, minikube, a dev cluster) instead of starting one: it creates "
        "only what it needs there and removes exactly that on exit (see docs/demo.md).",
    )
    on.add_argument("--kubeconfig", metavar="FILE", help="that cluster's kubeconfig (its current context)")
    on.add_argument(
        "--context", metavar="NAME", help="a context of --kubeconfig (default: $KUBECONFIG or ~/.kube/config)"
    )
    on.add_argument(
        "--current-context",
        action="store_true",
        help="the current context of $KUBECONFIG or ~/.kube/config (the cluster kubectl uses now)",
    )
    on.add_argument(
        "--namespace", metavar="NAME", help="namespace to create for the sample; it must not exist (default: demo)"
    )
    on.add_argument(
        "--webhook-host",
        metavar="ADDRESS",
        help="this machine's address as the cluster's API server reaches it, for the pod webhooks "
        "(default: 127.0.0.1, right for a control plane on this machine)",
    )
    d.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    from united.devcluster import existing

    try:
        target = existing.choose_target(
            kubeconfig=args.kubeconfig, context=args.context, current_context=args.current_context, env=os.environ
        )
        if target is None:
            for flag, value in (("--namespace", args.namespace), ("--webhook-host", args.webhook_host)):
                if value is not None:
                    raise existing.UsageError(flag, f"only with {EXISTING} (the demo's own cluster uses 'demo')")
        elif args.kube_version is not None:
            raise existing.UsageError("--kube-version", f"the existing cluster runs its own: drop it or {EXISTING}")
        version = versions.chosen(args.kube_version, os.environ)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INVALID
    if target is not None:
        return existing.run(
            target=target,
            sample=args.sample,
            namespace=args.namespace or existing.DEFAULT_NAMESPACE,
            webhook_host=args.webhook_host or existing.DEFAULT_WEBHOOK_HOST,
        )
    from united.devcluster.demo import run

    return run(sample=args.sample, version=version)
