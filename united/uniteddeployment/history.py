"""ControllerRevision history of a UnitedDeployment (as OpenKruise keeps it), decided from data.

Each reconcile: adopt the namespace's orphaned revisions that match the selector (as
OpenKruise's claim does), then find the revision whose Data equals the template
(semantically, see :func:`united.uniteddeployment.revision.same`) — reuse it when it is the newest, or bump
its revision number when an old one comes back (a rollback); otherwise create one, probing
past hash collisions and names taken by anyone else's revisions with a collision count that
is returned so it can be persisted (OpenKruise never persists it). History beyond
``revisionHistoryLimit`` is trimmed oldest first, never touching the current or updated
revision (OpenKruise can drop those from its view)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from united.api import selector as label_selector
from united.api.document import Json
from united.uniteddeployment import revision
from united.uniteddeployment.children import controller_uid, deleting, labels_of, name_of, namespace_of, uid_of
from united.uniteddeployment.keys import REVISION_HASH_LABEL
from united.uniteddeployment.model import Template, UnitedDeployment


@dataclass
class HistoryPlan:
    updated: str
    """Name of the revision the template is at."""
    collision_count: int
    create: Json | None = None
    bump: tuple[str, int] | None = None
    """(name, new revision number) of an older revision that becomes the newest again."""
    delete: list[str] = field(default_factory=list)
    adopt: list[Json] = field(default_factory=list)
    """Orphaned revisions to take over (they count as ours from now on)."""


CHANGE_CAUSE = "kubernetes.io/change-cause"
"""Why a template changed, as the user recorded it on the UnitedDeployment (kubectl's annotation)."""


def number(obj: Mapping[str, Any]) -> int:
    value = obj.get("revision")
    return value if isinstance(value, int) else 0


def ordered(revisions: Iterable[Mapping[str, Any]]) -> list[Json]:
    def key(o: Mapping[str, Any]) -> tuple[int, str, str]:
        meta = o.get("metadata") or {}
        return number(o), str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")

    return [dict(o) for o in sorted(revisions, key=key)]


class Likeness:
    """Whether revisions hold a template's Data (:func:`united.uniteddeployment.revision.same`), each revision
    compared once: comparing costs the template's size, and a ControllerRevision's Data is
    immutable, so the answer is kept by the revision's uid for as long as the template is kept."""

    def __init__(self, template: Template) -> None:
        self.template = template
        self._wanted: Any = None
        self._known: dict[str, bool] = {}

    def __call__(self, obj: Mapping[str, Any]) -> bool:
        uid = uid_of(obj)
        known = self._known.get(uid) if uid else None
        if known is None:
            if self._wanted is None:
                self._wanted = revision.comparable(self.template)
            known = revision.same(obj.get("data") or {}, self._wanted)
            if uid:
                self._known[uid] = known
        return known

    def known(self, obj: Mapping[str, Any]) -> bool:
        return uid_of(obj) in self._known

    def keep(self, revisions: Iterable[Mapping[str, Any]]) -> None:
        """Forget the revisions not in ``revisions`` (deleted ones): memory stays one entry per
        revision of the UnitedDeployment."""
        uids = {uid_of(r) for r in revisions}
        self._known = {u: v for u, v in self._known.items() if u in uids}


def plan(
    ud: UnitedDeployment,
    revisions: Iterable[Mapping[str, Any]],
    *,
    owner_reference: Json,
    current: str | None,
    collision_count: int = 0,
    others: Iterable[Mapping[str, Any]] = (),
    taken: Callable[[str], bool] | None = None,
    likeness: Likeness | None = None,
) -> HistoryPlan:
    """Decide what to adopt, create, bump and delete. ``revisions`` are the ones this UD owns,
    ``others`` other revisions of its namespace (its orphans may be adopted), ``taken`` whether a
    name is held by a revision that is not ours (default: by one of ``others``) — a lookup, so
    a pass need not read every revision of the namespace to probe a name; ``likeness`` (of the
    UD's template) may be kept between calls."""
    others = list(others)
    template = ud.spec.template
    assert template is not None
    same = likeness if likeness is not None else Likeness(template)
    adopt = [dict(r) for r in others if _adoptable(ud, r)]
    history = ordered([*(r for r in revisions if namespace_of(r) == ud.namespace), *adopt])
    by_name = {name_of(r): r for r in history}
    if taken is None:
        names = {name_of(r) for r in others}
        taken = names.__contains__
    newest = number(history[-1]) if history else 0
    result: HistoryPlan
    equal = [r for r in history if same(r)]
    if equal:
        chosen = equal[-1]
        result = HistoryPlan(updated=name_of(chosen), collision_count=collision_count, adopt=adopt)
        if chosen is not history[-1]:
            result.bump = (name_of(chosen), newest + 1)
    else:
        count = collision_count
        name = revision.name(ud.name, template, count)
        while name in by_name or taken(name):
            count += 1
            name = revision.name(ud.name, template, count)
        result = HistoryPlan(
            updated=name,
            collision_count=count,
            create=body(ud, template, name=name, number=newest + 1, owner_reference=owner_reference, count=count),
            adopt=adopt,
        )
    limit = ud.spec.revision_history_limit if ud.spec.revision_history_limit is not None else 10
    keep = {result.updated, current or ""}
    total = len(history) + (1 if result.create else 0)
    for r in history:
        if total <= max(limit, 0):
            break
        if name_of(r) in keep:
            continue
        result.delete.append(name_of(r))
        total -= 1
    return result


def _adoptable(ud: UnitedDeployment, obj: Mapping[str, Any]) -> bool:
    """An orphan of the UD's namespace that its selector matches."""
    if controller_uid(obj) is not None or deleting(obj) or deleting(ud.raw) or namespace_of(obj) != ud.namespace:
        return False
    return ud.spec.selector is not None and label_selector.parse(ud.spec.selector.to_dict()).matches(labels_of(obj))


def body(
    ud: UnitedDeployment, template: Template, *, name: str, number: int, owner_reference: Json, count: int
) -> Json:
    """A ControllerRevision labelled with the template labels (for every variant: OpenKruise
    leaves CloneSet revisions unlabelled, so it never finds them again), carrying the
    UnitedDeployment's change cause as a Deployment's ReplicaSet does, for ``rollout history``."""
    data = revision.data(template)
    labels = {**(template.metadata.get("labels") or {}), REVISION_HASH_LABEL: revision.hash_text(data, count)}
    meta: Json = {"name": name, "labels": labels, "ownerReferences": [owner_reference]}
    cause = ((ud.raw.get("metadata") or {}).get("annotations") or {}).get(CHANGE_CAUSE)
    if isinstance(cause, str) and cause:
        meta["annotations"] = {CHANGE_CAUSE: cause}
    if ud.namespace:
        meta["namespace"] = ud.namespace
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": meta,
        "data": json.loads(data),
        "revision": number,
    }
