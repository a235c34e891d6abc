"""What the command line prints: JSON documents and aligned tables."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from united.api.field import FieldError

EXIT_OK, EXIT_FAILURE, EXIT_INVALID = 0, 1, 2
"""The command line's exit codes: success, an internal failure, bad input."""


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2)
    sys.stdout.write("\n")


def print_table(rows: Sequence[Sequence[str]]) -> None:
    """Columns padded to their widest cell; the last one (a free-text message) is not padded."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1])


def fail(errors: Sequence[FieldError], *, json_out: bool) -> int:
    """Bad input: the errors as ``field.path: message`` lines on stderr (and as JSON on stdout
    with ``-o json``), exit 2."""
    if json_out:
        print_json({"valid": False, "errors": [e.as_dict() for e in errors]})
    for e in errors:
        print(e, file=sys.stderr)
    return EXIT_INVALID
