"""The UnitedDeployment API: model, defaults, validation.

:func:`admit` is the one path every consumer takes — the CLI and the controller alike —
so that "valid" means the same thing offline and on a cluster.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from united.api import defaults
from united.api.field import FieldError, ManifestError, Path
from united.api.model import UnitedDeployment, parse
from united.api.validation import validate

__all__ = ["FieldError", "ManifestError", "Path", "UnitedDeployment", "admit"]


def admit(obj: Any, *, replicas: int | None = None) -> UnitedDeployment:
    """Parse, default and validate a raw object; raise :class:`ManifestError` with every error.

    ``replicas`` overrides ``spec.replicas`` before validation, exactly as a write to the
    scale subresource would (that is what ``united plan --replicas`` simulates).
    """
    ud = parse(obj)
    if replicas is not None:
        ud = dataclasses.replace(ud, spec=dataclasses.replace(ud.spec, replicas=replicas))
    ud = defaults.apply(ud)
    errors = validate(ud)
    if errors:
        raise ManifestError(errors)
    return ud
