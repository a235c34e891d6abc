"""The UnitedDeployment API: model, defaults, validation.

:func:`admit` is the one path every consumer takes — the CLI and the controller alike —
so that "valid" means the same thing offline and on a cluster.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator
from typing import Any

from united.api.field import FieldError, ManifestError, Path, too_long
from united.api.limits import MAX_SPEC_BYTES, size
from united.uniteddeployment import defaults
from united.uniteddeployment.model import UnitedDeployment, parse
from united.uniteddeployment.validation import checks

__all__ = ["FieldError", "ManifestError", "Path", "UnitedDeployment", "admission", "admit"]


def admit(obj: Any, *, replicas: int | None = None) -> UnitedDeployment:
    """Parse, default and validate a raw object; raise :class:`ManifestError` with every error.

    ``replicas`` overrides ``spec.replicas`` before validation, exactly as a write to the
    scale subresource would (that is what ``united plan --replicas`` simulates).
    """
    steps = admission(obj, replicas=replicas)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            ud: UnitedDeployment = done.value
            return ud


def admission(obj: Any, *, replicas: int | None = None) -> Generator[None, None, UnitedDeployment]:
    """:func:`admit` in steps: it pauses (``yield``) between validation steps, one per subset,
    where a caller on an event loop lets other tasks run; it returns the model. A spec over
    :data:`~united.api.limits.MAX_SPEC_BYTES` is refused before it is parsed."""
    spec = obj.get("spec") if isinstance(obj, dict) else None
    if spec is not None and size(spec) > MAX_SPEC_BYTES:
        raise ManifestError([too_long(Path("spec"), MAX_SPEC_BYTES)])
    ud = parse(obj)
    if replicas is not None:
        ud = dataclasses.replace(ud, spec=dataclasses.replace(ud.spec, replicas=replicas))
    ud = defaults.apply(ud)
    errors: list[FieldError] = []
    for step in checks(ud):
        errors += step
        yield
    if errors:
        raise ManifestError(errors)
    return ud
