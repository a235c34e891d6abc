"""Capacity-safe shifts of replicas between subsets, decided from data.

When an allocation moves replicas — a subset removed, a percentage edited — the receivers grow
at once and the donors (a removed subset's child included) shrink only as far as the pods
that stay available allow: after any shrink, the available pods must still number at least
``spec.replicas`` minus the rollout budget. So a donor's pods go as the receivers' new pods
become available, and a removed subset's child goes last: it is *draining* until it has no
replica left, and only then deleted. A lower ``spec.replicas`` (an HPA scaling down) is never
held back: the pods above the new total may always go.

Pods above a child's ``spec.replicas`` are not counted as available: the workload is removing
them, whether or not the cache shows it yet, so a second pass never shrinks against the same
pods twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Holding:
    """One child as it is: its ``spec.replicas`` and its available pods."""

    replicas: int
    available: int


@dataclass(frozen=True, slots=True)
class Shift:
    replicas: dict[str, int]
    """Replicas to render per subset of the topology, and to keep per draining child."""
    draining: tuple[str, ...]
    """Children of removed subsets that keep replicas this pass."""
    drained: tuple[str, ...]
    """Children of removed subsets with nothing left to keep: to delete now."""


def shift(
    allocation: Mapping[str, int],
    children: Mapping[str, Holding],
    *,
    order: Sequence[str],
    total: int,
    budget: int,
) -> Shift:
    """The replicas to render this pass. ``allocation`` is what each subset of the topology
    (``order``) should have, ``children`` every child there is, removed subsets' included."""
    out = {name: allocation[name] for name in order}
    removed = sorted(set(children) - set(order))
    for name in removed:
        out[name] = 0
    available = {n: min(h.available, h.replicas) for n, h in children.items()}
    surplus = sum(max(0, h.replicas - out[n]) for n, h in children.items())
    awaited = sum(
        max(0, out[n] - available.get(n, 0)) for n in order if n not in children or children[n].replicas <= out[n]
    )
    # What the donors hold beyond what the receivers still wait for: a scale-down, not a shift.
    removable = max(surplus - awaited, sum(available.values()) - (total - budget), 0)
    for name in [*reversed(order), *removed]:
        have = children.get(name)
        want = out[name]
        if have is None or have.replicas <= want:
            continue
        cut = min(have.replicas - want, removable)
        removable -= cut
        out[name] = have.replicas - cut
    draining = tuple(n for n in removed if out[n] > 0)
    drained = tuple(n for n in removed if out[n] == 0)
    for name in drained:
        del out[name]
    return Shift(replicas=out, draining=draining, drained=drained)
