"""Which ControllerRevision ``kubectl united rollout undo`` restores, and the patch that does it.

Like ``kubectl rollout undo``, the rollback is client-side: the chosen revision's template is
copied back into ``spec.template``; the controller then sees a template it has a revision for
(it bumps that revision's number, :mod:`united.uniteddeployment.history`) and rolls it out as
any other change. Revisions hold ``{"spec": {"template": {<variant>: {...}, "$patch": "replace"}}}``
(:mod:`united.uniteddeployment.revision`).

"Previous" is the newest revision whose template differs from the current one, so two undos
in a row toggle between two templates, as kubectl's do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from united.api.document import Json
from united.uniteddeployment import revision
from united.uniteddeployment.history import CHANGE_CAUSE, number, ordered
from united.uniteddeployment.model import TEMPLATE_VARIANTS, Template


class RevisionError(LookupError):
    """There is nothing to roll back to; the message says why, in kubectl's words."""


def owned(revisions: Iterable[Mapping[str, Any]], uid: str) -> list[Json]:
    """The revisions the object with ``uid`` controls, oldest first."""
    return ordered(
        r
        for r in revisions
        if any(
            ref.get("uid") == uid and ref.get("controller")
            for ref in (r.get("metadata") or {}).get("ownerReferences") or ()
        )
    )


def template_of(rev: Mapping[str, Any]) -> Json:
    """The ``spec.template`` a revision holds (without the ``$patch`` marker)."""
    stored = ((rev.get("data") or {}).get("spec") or {}).get("template")
    if not isinstance(stored, Mapping) or not any(k in stored for k in TEMPLATE_VARIANTS):
        name = (rev.get("metadata") or {}).get("name", "")
        raise RevisionError(f"revision {name} holds no UnitedDeployment template")
    return {k: v for k, v in stored.items() if k != "$patch"}


def _current(spec_template: Mapping[str, Any]) -> Template | None:
    for variant in TEMPLATE_VARIANTS:
        body = spec_template.get(variant)
        if isinstance(body, Mapping):
            return Template(variant, dict(body.get("metadata") or {}), dict(body.get("spec") or {}))
    return None


def choose(history: list[Json], spec_template: Mapping[str, Any], *, to_revision: int = 0) -> Json | None:
    """The revision to restore from ``history`` (oldest first): number ``to_revision``, or with 0
    the newest one whose template differs from ``spec_template``. None: the current template is
    already that revision's (nothing to do)."""
    current = _current(spec_template)

    def same(rev: Json) -> bool:
        return current is not None and revision.same((rev.get("data") or {}), current)

    if to_revision:
        found = [r for r in history if number(r) == to_revision]
        if not found:
            raise RevisionError(f"unable to find specified revision {to_revision} in history")
        return None if same(found[-1]) else found[-1]
    for rev in reversed(history):
        if not same(rev):
            return rev
    raise RevisionError("no rollout history found" if not history else "no previous revision to roll back to")


def undo_patch(
    obj: Mapping[str, Any], revisions: Iterable[Mapping[str, Any]], *, to_revision: int = 0
) -> tuple[list[Json], int] | None:
    """The JSON patch that restores the chosen revision's template into ``obj`` and that revision's
    number; None when the template is that revision's already. The patch carries the resourceVersion
    read, so the API server refuses it (Conflict) if the object changed since."""
    meta = obj.get("metadata") or {}
    history = owned(revisions, str(meta.get("uid", "")))
    chosen = choose(history, (obj.get("spec") or {}).get("template") or {}, to_revision=to_revision)
    if chosen is None:
        return None
    ops = [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": meta.get("resourceVersion", "")},
        {"op": "replace", "path": "/spec/template", "value": template_of(chosen)},
    ]
    return ops, number(chosen)


def history_rows(revisions: Iterable[Mapping[str, Any]], uid: str) -> list[tuple[int, str]]:
    """``(revision number, change cause)`` of each revision the object with ``uid`` controls,
    oldest first, as ``kubectl rollout history`` lists them (``<none>`` when no cause was set)."""
    return [
        (number(r), str(((r.get("metadata") or {}).get("annotations") or {}).get(CHANGE_CAUSE) or "<none>"))
        for r in owned(revisions, uid)
    ]


def revision_template(revisions: Iterable[Mapping[str, Any]], uid: str, to_revision: int) -> Json:
    """The template revision ``to_revision`` holds (``rollout history --revision N``)."""
    found = [r for r in owned(revisions, uid) if number(r) == to_revision]
    if not found:
        raise RevisionError(f"unable to find the specified revision {to_revision}")
    return template_of(found[-1])
