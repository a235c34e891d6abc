"""Which live workloads are this UnitedDeployment's children, decided
from plain data so the rules can be tested exhaustively.

The controller-ref rules of Kubernetes: only workloads in the UnitedDeployment's own
namespace are ever considered (an ownerReference is namespace-local, and anyone may write any
uid into one); a workload controlled by someone else is never touched; one we control is
kept while it still matches our selector and carries a subset label, and released otherwise;
an orphan that matches is adopted. Several children for one subset (a crash between create
and status write, a manual copy) are reduced to one: OpenKruise keeps an arbitrary one, we
keep the oldest (then by name), so every replica of the controller picks the same survivor.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from united.api import selector as label_selector
from united.api.document import Json
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import UnitedDeployment


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref.get("uid"))
    return None


def deleting(obj: Mapping[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def name_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def uid_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def subset_of(obj: Mapping[str, Any], keys: Keys) -> str:
    """The subset a child belongs to: the subset-name in its ``spec.selector``, which we set at
    creation and the API server keeps immutable, else (a workload we did not create) its label.
    Labels are anyone's to edit: a child relabelled by hand must not pass for another subset's
    (it would win that subset as the older one, its healthy sibling would be deleted, and its
    selector patched in vain); its label is written back instead."""
    selector = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return str(selector.get(keys.subset_name) or labels_of(obj).get(keys.subset_name) or "")


def _age_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")


@dataclass
class Claim:
    """The outcome of looking at the candidate workloads of one kind."""

    by_subset: dict[str, Json] = field(default_factory=dict)
    """One live child per subset name (adopted ones included)."""
    adopt: list[Json] = field(default_factory=list)
    release: list[Json] = field(default_factory=list)
    duplicates: list[Json] = field(default_factory=list)
    terminating: dict[str, Json] = field(default_factory=dict)
    """Subsets whose only child is being deleted: wait for it rather than create a second."""


def claim(
    ud: UnitedDeployment,
    candidates: Iterable[Mapping[str, Any]],
    keys: Keys,
    *,
    owner_of: Callable[[Mapping[str, Any]], str | None] = controller_uid,
) -> Claim:
    """Sort candidate workloads (same namespace, one kind) into keep/adopt/release/duplicate.
    ``owner_of`` reads who controls a workload: its controller ownerReference, or in a member
    cluster its owner labels (``RemoteKeys.owner_of``; there only our own are candidates, so
    nothing is ever adopted)."""
    sel = label_selector.parse(ud.spec.selector.to_dict()) if ud.spec.selector else None
    mine: dict[str, list[Json]] = {}
    out = Claim()
    ud_deleting = deleting(ud.raw)
    for raw in candidates:
        if namespace_of(raw) != ud.namespace:
            continue
        obj = dict(raw)
        owner = owner_of(obj)
        labels = labels_of(obj)
        subset = subset_of(obj, keys)
        matches = sel is not None and sel.matches(labels) and bool(subset)
        if owner is not None and owner != ud.uid:
            continue
        if owner == ud.uid:
            if not matches:
                if not ud_deleting:
                    out.release.append(obj)
                continue
        elif not matches or ud_deleting or deleting(obj):
            continue
        else:
            out.adopt.append(obj)
        mine.setdefault(subset, []).append(obj)
    for subset, objs in mine.items():
        live = sorted((o for o in objs if not deleting(o)), key=_age_key)
        if not live:
            out.terminating[subset] = objs[0]
            continue
        out.by_subset[subset] = live[0]
        out.duplicates.extend(live[1:])
    return out


def strays(
    ud: UnitedDeployment, listed: Iterable[Mapping[str, Any]], keys: Keys, subsets: Collection[str]
) -> dict[str, Json]:
    """Our children that lost their subset label, for the ``subsets`` that have no child in
    the cache: the informers watch only labelled workloads, so to them such a child was
    deleted, and the subset would get a second workload fighting the first over its pods.
    Of ``listed``, only those :func:`claim` keeps that this UnitedDeployment already controls
    (its namespace, its uid, its selector, not being deleted) and whose immutable
    ``spec.selector`` names the subset; the oldest per subset. The diff writes the label back."""
    own = [o for o in listed if controller_uid(o) == ud.uid and keys.subset_name not in labels_of(o)]
    return {s: child for s, child in claim(ud, own, keys).by_subset.items() if s in subsets}


def same(obj: Mapping[str, Any]) -> dict[str, str] | None:
    """Delete preconditions naming the object read: deletes go by name, and the name may belong
    to another object by the time the request arrives."""
    uid = uid_of(obj)
    return {"uid": uid} if uid else None
