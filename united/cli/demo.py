"""``united demo``: a local control plane, the controller and a sample converging."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from united.cli.output import EXIT_INVALID
from united.devcluster import versions


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
    d.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    from united.devcluster.demo import run

    try:
        version = versions.chosen(args.kube_version, os.environ)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return EXIT_INVALID
    return run(sample=args.sample, version=version)
