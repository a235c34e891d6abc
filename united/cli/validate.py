"""``united validate``: a manifest checked offline as the API server and the controller would,
with the update rules against ``--old``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from united.api.field import FieldError, ManifestError, Path, invalid
from united.cli.manifest import Source, read
from united.cli.output import EXIT_OK, fail, print_json
from united.uniteddeployment.admission import admit
from united.uniteddeployment.validation import validate_update
from united.workloadspread import model as workloadspread
from united.workloadspread.admission import admit as admit_spread
from united.workloadspread.validation import conflicts
from united.workloadspread.validation import validate_update as validate_spread_update


def register(sub: Any) -> None:
    v = sub.add_parser("validate", help="check a manifest offline; exit 2 with field errors if invalid")
    v.add_argument("file", metavar="FILE", help="manifest file, or - for stdin")
    v.add_argument("--old", metavar="OLD", help="the current object: also apply the update rules")
    v.add_argument("-o", "--output", choices=("text", "json"), default="text")
    v.set_defaults(func=_validate)


def _validate(args: argparse.Namespace) -> int:
    errors: list[FieldError] = []
    try:
        source = read(args.file)
        old = read(args.old) if args.old else None
        kind = _kind(source.document)
        if old is not None and _kind(old.document) != kind:
            raise ManifestError([invalid(Path("--old"), _kind(old.document), f"must be a {kind}, as FILE is")])
        errors = _validate_spread(source, old) if kind == workloadspread.KIND else _validate_united(source, old)
    except ManifestError as e:
        errors = e.errors
    if errors:
        return fail(errors, json_out=args.output == "json")
    if args.output == "json":
        print_json({"valid": True, "errors": []})
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
