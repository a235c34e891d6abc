"""``united demo``: a local control plane, the controller and a sample converging."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    d = sub.add_parser("demo", help="start a local control plane and show a UnitedDeployment converging")
    d.add_argument(
        "--sample", metavar="FILE", help="sample to apply: a UnitedDeployment, or a WorkloadSpread and its target"
    )
    d.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    from united.devcluster.demo import run

    return run(sample=args.sample)
