"""Timestamps as the API writes them: RFC 3339 in UTC, whole seconds (``metav1.Time``).

Every kind reads condition and annotation times and writes its own; one parser and one
formatter keep them comparable.
"""

from __future__ import annotations

import datetime
import math
import time
from typing import Any


def parse_time(value: Any) -> float | None:
    """RFC 3339 (``2026-01-02T03:04:05Z``, fractions allowed) to epoch seconds; None if absent."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.UTC)
    return parsed.timestamp()


def format_time(seconds: float) -> str:
    """Epoch seconds to the API's RFC 3339 (whole seconds, as metav1.Time serialises)."""
    return datetime.datetime.fromtimestamp(math.floor(seconds), datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_rfc3339() -> str:
    """The current time as the API writes it."""
    return format_time(time.time())
