"""The suite's figures (faults injected, kills survived, take-over times...), printed at the
end of the run and written to ``$UNITED_E2E_LOGS/chaos-figures.json`` for ``docs/reliability.md``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIGURES: dict[str, Any] = {}


def record(name: str, value: Any) -> None:
    FIGURES[name] = value


def write(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(FIGURES, indent=2, sort_keys=True) + "\n")
