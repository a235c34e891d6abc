"""What the command line prints: JSON documents and aligned tables."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2)
    sys.stdout.write("\n")


def print_table(rows: Sequence[Sequence[str]]) -> None:
    """Columns padded to their widest cell; the last one (a free-text message) is not padded."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1])
