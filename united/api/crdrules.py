"""The CRDs' validation rules (``x-kubernetes-validations``, CEL) and the API servers that know them.

The CRDs under ``crds/`` carry a few rules that repeat the validation module's (``scripts/gen_crds.py``
says which), so that a server with CRD validation rules refuses a bad spec at once, with its field
path. Servers before :data:`RULES_SINCE` do not know the field: their API server drops it silently,
but ``kubectl`` (whose client-side validation reads the server's OpenAPI) refuses the whole CRD. So
whoever installs for such a server sends the CRDs without them (:func:`for_server`); the
controller's own validation still reports those specs in status and Events, as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from united.api.document import Json

RULES = "x-kubernetes-validations"
RULES_SINCE = (1, 25)
"""CRD validation rules are on by default from this release (beta; GA in 1.29)."""


def without_rules(value: Any) -> Any:
    """``value`` (a CRD or any part of it) with every ``x-kubernetes-validations`` removed; a copy."""
    if isinstance(value, dict):
        return {k: without_rules(v) for k, v in value.items() if k != RULES}
    if isinstance(value, list):
        return [without_rules(v) for v in value]
    return value


def knows_rules(release: tuple[int, int] | None) -> bool:
    """Whether a server of ``release`` (None: unknown, assumed current) applies the rules."""
    return release is None or release >= RULES_SINCE


def for_server(docs: Iterable[Json], release: tuple[int, int] | None) -> list[Json]:
    """``docs`` as a server of ``release`` accepts them: CRDs without rules before :data:`RULES_SINCE`."""
    if knows_rules(release):
        return list(docs)
    return [without_rules(d) if d.get("kind") == "CustomResourceDefinition" else d for d in docs]


__all__ = ["RULES", "RULES_SINCE", "for_server", "knows_rules", "without_rules"]
