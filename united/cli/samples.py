"""``united samples``: the packaged sample manifests, listed or printed."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from united import data
from united.api.field import FieldError, ManifestError
from united.cli.output import EXIT_OK


def register(sub: Any) -> None:
    s = sub.add_parser("samples", help="list the sample manifests, or print one")
    s.add_argument("name", nargs="?", metavar="NAME", help="the sample to print")
    s.set_defaults(func=_samples)


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
