"""The WorkloadSpread API's one entry point: parse and validate, as the webhook admits one.

:func:`admit` is what every consumer calls — ``united validate`` and the controller alike —
so that "valid" means the same offline and on a cluster. OpenKruise has no defaulting
webhook for WorkloadSpread, so nothing is defaulted.
"""

from __future__ import annotations

from typing import Any

from united.api.field import ManifestError, Path, too_long
from united.api.limits import MAX_SPEC_BYTES, size
from united.workloadspread.model import WorkloadSpread, parse
from united.workloadspread.validation import validate


def admit(obj: Any) -> WorkloadSpread:
    """Parse and validate a raw object; raise :class:`ManifestError` with every error. A spec
    over :data:`~united.api.limits.MAX_SPEC_BYTES` is refused before it is parsed."""
    spec = obj.get("spec") if isinstance(obj, dict) else None
    if spec is not None and size(spec) > MAX_SPEC_BYTES:
        raise ManifestError([too_long(Path("spec"), MAX_SPEC_BYTES)])
    ws = parse(obj)
    errors = validate(ws)
    if errors:
        raise ManifestError(errors)
    return ws
