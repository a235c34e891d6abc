"""Int-or-percent values: an integer, or a whole percentage of a total (UnitedDeployment
replicas, WorkloadSpread maxReplicas).

One parser serves validation and every allocator so that "what the webhook accepts" and
"what the allocator computes" can never drift apart.
"""

from __future__ import annotations

import re

#: Kubernetes ``int32`` ceiling, the bound of every replica count.
INT32_MAX = 2**31 - 1

#: ``intstr.IntOrString`` as it arrives in JSON.
IntOrStr = int | str

_PERCENT = re.compile(r"^([+-]?[0-9]+)%$")


def resolve(total: int, value: IntOrStr) -> int:
    """Resolve ``value`` against ``total`` (``-1`` when ``spec.replicas`` is unset).

    Percentages round half up, each on its own: ``floor((total * n + 50) / 100)``. Raises
    ``ValueError`` with OpenKruise's wording; callers decide whether that is fatal.
    """
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"subset replicas ({value}) should not be less than 0")
        return value
    if total < 0:
        raise ValueError(f"subset replicas ({value}) should not be string when unitedDeployment replicas is empty")
    match = _PERCENT.match(value)
    if match is None:
        raise ValueError(f"subset replicas ({value}) only support integer value or percentage value with a suffix '%'")
    n = int(match.group(1))
    if not -(2**31) <= n <= INT32_MAX:
        raise ValueError(f"subset replicas ({value}) is out of range")
    if not 0 <= n <= 100:
        raise ValueError(f"subset replicas ({value}) should be in range [0, 100]")
    return (total * n + 50) // 100


def is_percent(value: IntOrStr | None) -> bool:
    return isinstance(value, str)


_ATOI = re.compile(r"^[+-]?[0-9]+$")


def scaled(value: IntOrStr, total: int, *, round_up: bool = True) -> int:
    """Strict ``intstr.GetScaledValueFromIntOrPercent(value, total, roundUp)``: an integer as
    is, or ``"N%"`` of ``total`` rounded up (or down). What WorkloadSpread's webhook and
    controller compute ``maxReplicas`` with, and a Deployment's ``maxSurge`` (up) and
    ``maxUnavailable`` (down); raises ``ValueError`` for any other string."""
    if isinstance(value, int):
        return value
    if not value.endswith("%") or not _ATOI.match(value[:-1]):
        raise ValueError(f"invalid value for IntOrString: invalid type: string is not a percentage: {value!r}")
    share = int(value[:-1]) * total
    return -(-share // 100) if round_up else share // 100


def legacy_scaled(value: IntOrStr, total: int) -> int:
    """Lenient ``intstr.GetValueFromIntOrPercent(value, total, roundUp=true)``: every ``%`` is
    dropped and any string is a percentage (``"50"`` is 50 %). What WorkloadSpread's validation
    and deletion cost use; raises ``ValueError`` when what remains is not an integer."""
    if isinstance(value, int):
        return value
    digits = value.replace("%", "")
    if not _ATOI.match(digits):
        raise ValueError(f"invalid value for IntOrString: invalid value {value!r}")
    return -((-int(digits) * total) // 100)


def int_value(value: IntOrStr) -> int:
    """``IntOrString.IntValue()``: an integer as is, a string parsed as one, else 0."""
    if isinstance(value, int):
        return value
    return int(value) if _ATOI.match(value) else 0
