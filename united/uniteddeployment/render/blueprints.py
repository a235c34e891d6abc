"""Blueprints of each UnitedDeployment's children, kept between passes.

Every pass renders every subset's child to compare it with the live one. Placing the pod
template into a subset (merging its patch) and digesting the result costs about template +
patch per subset: at the limits (:mod:`united.api.limits`) seconds of CPU per pass, on every
pod event and resync, though the result changes only with what :func:`~united.uniteddeployment.render.blueprint`
reads: the template, the selector, the owner (api version, name, namespace, uid), the keys,
the revision and the subset's placement and patch. Those are kept with the blueprints and
compared by value; by identity first, as the admitted UnitedDeployment is itself kept per
generation, so a pass after a pod event compares nothing, and one after a scale compares the
template once without merging anything.

A kept blueprint has no pod template, and shares the rest of the template's spec with the
admitted UnitedDeployment: 200 placed copies of a 128 KiB template would add as much memory
again as the child cache holds. It serves the diff, which reads no pod template while the live
child carries our spec digest; a child that does not gets a full render (:attr:`Rendered.complete`).
Memory is one entry per UnitedDeployment, with one blueprint per subset of its spec.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from united.api.document import Json
from united.multicluster.identity import RemoteKeys
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import Subset, UnitedDeployment
from united.uniteddeployment.render import Rendered, blueprint, finish, kind_of


@dataclass
class _Entry:
    ud: UnitedDeployment
    revision: str
    keys: Keys
    by_subset: dict[str, tuple[Subset, Json]] = field(default_factory=dict)

    def serves(self, ud: UnitedDeployment, revision: str, keys: Keys) -> bool:
        if self.revision != revision or self.keys != keys:
            return False
        if self.ud is not ud:
            if _inputs(self.ud) != _inputs(ud):
                return False
            self.ud = ud
            names = {s.name for s in ud.spec.subsets}
            self.by_subset = {n: kept for n, kept in self.by_subset.items() if n in names}
        return True


class Blueprints:
    """The blueprints of each UnitedDeployment, by key."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    def render(
        self,
        key: str,
        ud: UnitedDeployment,
        *,
        subset: Subset,
        replicas: int,
        partition: int,
        revision: str,
        keys: Keys,
        complete: bool,
        remote: RemoteKeys | None = None,
    ) -> Rendered:
        """:func:`~united.uniteddeployment.render.render`, from the kept blueprint when there is one and a
        ``complete`` child (with its pod template) is not asked for; a full render is kept."""
        entry = self._entries.get(key)
        if entry is None or not entry.serves(ud, revision, keys):
            entry = self._entries[key] = _Entry(ud, revision, keys)
        kind = kind_of(ud)
        kept = entry.by_subset.get(subset.name)
        if not complete and kept is not None and _placement(kept[0]) == _placement(subset):
            entry.by_subset[subset.name] = (subset, kept[1])
            return replace(finish(kept[1], kind, replicas, partition), complete=False)
        made = blueprint(ud, subset=subset, revision=revision, keys=keys, remote=remote)
        entry.by_subset[subset.name] = (subset, _slim(made, ud))
        return finish(made, kind, replicas, partition)

    def forget(self, key: str) -> None:
        self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)


def _inputs(ud: UnitedDeployment) -> tuple[Any, ...]:
    """What a blueprint reads of the UnitedDeployment, besides its subset."""
    return ud.api_version, ud.name, ud.namespace, ud.uid, ud.spec.template, ud.spec.selector


def _placement(subset: Subset) -> tuple[Any, ...]:
    """What a blueprint reads of its subset (not its replicas); its cluster decides whether it
    carries owner labels or an ownerReference (the host identity is the process's)."""
    return subset.name, subset.node_selector_term, subset.tolerations, subset.patch, subset.cluster


def _slim(made: Json, ud: UnitedDeployment) -> Json:
    """``made`` without its pod template, its other spec values shared with the template's
    (they are equal: :func:`~united.uniteddeployment.render.blueprint` copies them)."""
    template = ud.spec.template
    assert template is not None
    spec = {k: v if k == "selector" else template.spec[k] for k, v in made["spec"].items() if k != "template"}
    return {**made, "spec": spec}
