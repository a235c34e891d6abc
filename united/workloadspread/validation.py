"""Validation of a WorkloadSpread, as OpenKruise's validating webhook does it.

The rules, their order and their messages are OpenKruise's, with the error
paths in ``v1beta1`` spelling whatever the manifest's version, as upstream reports them.
Where we differ, on purpose:

* a custom workload whitelist is not supported: any kind but the five built-in ones is
  refused (``TargetReference's GroupKind is not permitted.``);
* the patch is checked against a pod, not the cached workload (offline there is none): it must
  merge, leave the pod's name, generateName, namespace and ownerReferences alone, and give a
  pod that passes the pod rules (:mod:`united.placement.podtemplate`);
* ``maxReplicas: "50"`` (no ``%``) is refused: OpenKruise's validation reads it as 50 %
  and its webhook then as an error;
* every subset is checked (OpenKruise stops at the first bad ``maxReplicas``), and values
  are printed as they were written (upstream prints Go structs);
* no ``295 / (n - 1)`` cap on ``rescheduleCriticalSeconds`` (kruise#1088): see
  :data:`MAX_RESCHEDULE_CRITICAL_SECONDS`;
* ``minReplicas`` per subset is ours (kruise#2227): the same type as ``maxReplicas``, at
  most it, and percentages that sum to at most 100 %;
* the size limits of :mod:`united.api.limits` apply, as to a UnitedDeployment, and subset names
  have at most :data:`MAX_SUBSET_NAME` characters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeVar

from united.api import selector as label_selector
from united.api.document import Json
from united.api.field import FieldError, Path, forbidden, invalid, required, show, too_long, too_many
from united.api.intstr import IntOrStr, scaled
from united.api.limits import MAX_PATCH_BYTES, MAX_PLACEMENT_BYTES, MAX_SUBSETS, size
from united.api.names import dns_label_errors, dns_subdomain_errors
from united.placement.constraints import node_selector_term_errors, preferred_terms_errors, toleration_errors
from united.placement.patch import PatchError
from united.placement.podtemplate import RESTART_ALWAYS, RESTART_POLICIES, pod_template_errors
from united.placement.subset import place
from united.workloadspread.model import ADAPTIVE, FIXED, Spec, Subset, TargetRef, WorkloadSpread

SPEC = Path("spec")
TARGET_REF = SPEC.child("targetRef")
SUBSETS = SPEC.child("subsets")
STRATEGY = SPEC.child("scheduleStrategy")

#: The workloads a WorkloadSpread may target: kind -> the API groups it may come from.
TARGET_KINDS: Final[Mapping[str, tuple[str, ...]]] = {
    "CloneSet": ("apps.kruise.io",),
    "Deployment": ("apps",),
    "ReplicaSet": ("apps",),
    "Job": ("batch",),
    "StatefulSet": ("apps", "apps.kruise.io"),
}

MAX_RESCHEDULE_CRITICAL_SECONDS: Final = 3600
"""Upper bound of ``rescheduleCriticalSeconds``, whatever the number of subsets.

OpenKruise caps it at ``295 / (n - 1)`` so that a pod can try every subset within the
300 s a subset stays marked unschedulable; with four subsets that is 98 s, less than a
cluster autoscaler needs to bring up a node (kruise#1088). Our controller instead keeps a
subset unschedulable for ``max(300, (n - 1) * rescheduleCriticalSeconds + 5)`` seconds, so
any value lets a pod visit every subset before the first one is tried again, and the
bound only keeps a typo (seconds for milliseconds) from parking pods for days: an hour
covers the slowest node provisioning we know of (GPU and bare-metal pools)."""

MAX_SUBSET_NAME: Final = 63
"""The longest subset name (ours: OpenKruise has none). It bounds the cost of the CRD's CEL rule
that subset names are unique (``scripts/gen_crds.py``), whose schema says the same."""

T = TypeVar("T", dict[str, Any], list[Any])
_META_FIELDS = ("name", "generateName", "namespace", "ownerReferences")
_PROBE_META: Final[Json] = {
    "name": "pod-of-the-workload",
    "generateName": "workload-",
    "namespace": "namespace-of-the-workload",
    "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "workload", "uid": "uid", "controller": True}
    ],
}
"""What a pod of the target carries that a subset patch must leave alone."""


def validate(ws: WorkloadSpread) -> list[FieldError]:
    """Create rules; an empty list means valid."""
    spec = ws.spec
    return [
        *_metadata(ws),
        *_target_ref(spec.target_ref),
        *_subsets(spec),
        *_schedule(spec),
        *_target_filter(spec),
    ]


def validate_update(old: WorkloadSpread, new: WorkloadSpread) -> list[FieldError]:
    """Update rules on top of the create rules (R6): the target's group, kind and name, and
    the object's own name and namespace, are immutable; the target's version may change."""
    errors = validate(new)
    meta = Path("metadata")
    for field, before, after in (("name", old.name, new.name), ("namespace", old.namespace, new.namespace)):
        if before != after:
            errors.append(invalid(meta.child(field), after, "field is immutable"))
    a, b = old.spec.target_ref, new.spec.target_ref
    if a is not None and b is not None and _identity(a) != _identity(b):
        errors.append(invalid(TARGET_REF, "object", "change TargetReference is not permitted for WorkloadSpread"))
    return errors


def conflicts(ws: WorkloadSpread, others: Iterable[WorkloadSpread]) -> list[FieldError]:
    """R5: another WorkloadSpread of the namespace targeting the same workload (group, kind,
    name; the version is ignored). The first conflict is reported, as upstream does."""
    ref = ws.spec.target_ref
    if ref is None:
        return []
    for other in others:
        if other.name == ws.name or other.namespace != ws.namespace or other.spec.target_ref is None:
            continue
        if _identity(other.spec.target_ref) == _identity(ref):
            return [
                invalid(
                    TARGET_REF, "object", f"ws.spec.targetRef is in conflict with other WorkloadSpread {other.name}"
                )
            ]
    return []


def _identity(ref: TargetRef) -> tuple[str | None, str, str]:
    return _group(ref.api_version), ref.kind, ref.name


def _group(api_version: str) -> str | None:
    """The group of ``apiVersion`` (``""`` for the core group), None when it does not parse."""
    if api_version.count("/") > 1:
        return None
    group, slash, version = api_version.rpartition("/")
    return None if slash and not (group and version) else group


def _metadata(ws: WorkloadSpread) -> list[FieldError]:
    meta = Path("metadata")
    errors = (
        dns_subdomain_errors(ws.name, meta.child("name"))
        if ws.name
        else [required(meta.child("name"), "name or generateName is required")]
    )
    if ws.namespace:
        errors += dns_label_errors(ws.namespace, meta.child("namespace"))
    return errors


def _target_ref(ref: TargetRef | None) -> list[FieldError]:
    """R1: a built-in workload kind from its own API group."""
    if ref is None:
        return [required(TARGET_REF, "no targetRef defined in WorkloadSpread")]
    if not (ref.api_version and ref.kind and ref.name):
        return [invalid(TARGET_REF, "object", "empty TargetReference is not valid for WorkloadSpread.")]
    groups = TARGET_KINDS.get(ref.kind)
    if groups is None:
        return [invalid(TARGET_REF, "object", "TargetReference's GroupKind is not permitted.")]
    if _group(ref.api_version) not in groups:
        return [invalid(TARGET_REF, "object", f"TargetReference is not valid for {ref.kind}.")]
    return []


def _subsets(spec: Spec) -> list[FieldError]:
    """R2: each subset's name, placement, patch and replica bounds, in OpenKruise's order."""
    if not spec.subsets:
        return [required(SUBSETS, "subsets number must >= 1 in WorkloadSpread")]
    if len(spec.subsets) > MAX_SUBSETS:
        return [too_many(SUBSETS, len(spec.subsets), MAX_SUBSETS)]
    kind = spec.target_ref.kind if spec.target_ref is not None else ""
    bounds, whole = _bounds(spec.subsets, kind)
    errors: list[FieldError] = []
    names: set[str] = set()
    for i, s in enumerate(spec.subsets):
        path = SUBSETS.index(i)
        if not s.name:
            errors.append(FieldError(str(path.child("name")), 'Invalid value: ""'))
        elif len(s.name) > MAX_SUBSET_NAME:
            errors.append(too_long(path.child("name"), MAX_SUBSET_NAME))
        elif s.name in names:
            errors.append(invalid(path.child("name"), s.name, f"duplicated subset name {s.name}"))
        names.add(s.name)
        errors += _placement(s, path)
        if s.patch is not None:
            errors += _patch(s.patch, path.child("patch"), kind)
        errors += bounds[i]
    return errors + whole


def _placement(s: Subset, path: Path) -> list[FieldError]:
    checks: tuple[tuple[str, Any, Callable[[Any, Path], list[FieldError]]], ...] = (
        ("requiredNodeSelector", s.required_node_selector, node_selector_term_errors),
        ("preferredNodeSelector", s.preferred_node_selector, preferred_terms_errors),
        ("tolerations", s.tolerations, _tolerations),
    )
    errors: list[FieldError] = []
    for field, value, check in checks:
        if value is None:
            continue
        if size(value) > MAX_PLACEMENT_BYTES:
            errors.append(too_long(path.child(field), MAX_PLACEMENT_BYTES))
        else:
            errors += check(value, path.child(field))
    return errors


def _tolerations(tolerations: tuple[Json, ...], path: Path) -> list[FieldError]:
    return [e for j, t in enumerate(tolerations) for e in toleration_errors(t, path.index(j))]


def _patch(patch: Json, path: Path, kind: str) -> list[FieldError]:
    """The patch merged into a pod of the target: it must apply, keep the pod's identity and
    ownership, and give a valid pod. The pod stands in for the workload's template, which is
    not at hand offline: it has every container and volume the patch names."""
    if size(patch) > MAX_PATCH_BYTES:
        return [too_long(path, MAX_PATCH_BYTES)]
    extra = sorted(set(patch) - {"metadata", "spec"})
    if extra:
        return [
            forbidden(path.child(extra[0]), "a subset patch applies to the pod: only metadata and spec may be patched")
        ]
    try:
        patched = place(_probe(patch), node_selector_term=None, tolerations=None, patch=patch)
    except PatchError as e:
        return [invalid(path.child(e.path) if e.path else path, "object", f"failed to merge patch: {e.message}")]
    meta = patched.get("metadata") or {}
    errors = [
        forbidden(path.child("metadata").child(field), f"may not change the pod's {field}")
        for field in _META_FIELDS
        if meta.get(field) != _PROBE_META[field]
    ]
    policies = RESTART_POLICIES if kind == "Job" else RESTART_ALWAYS
    return errors or pod_template_errors(patched, path, None, restart_policies=policies)


def _probe(patch: Json) -> Json:
    """A pod with the containers (and the volumes they mount) the patch merges into."""
    spec = _as(dict, patch.get("spec"))
    pod_spec: Json = {"containers": [{"name": "main", "image": "image-of-the-workload"}]}
    volumes: dict[str, Json] = {}
    for field in ("initContainers", "containers"):
        named = [c for c in _as(list, spec.get(field)) if isinstance(c, dict) and isinstance(c.get("name"), str)]
        if named:
            pod_spec[field] = [{"name": c["name"], "image": "image-of-the-workload"} for c in named]
        for c in named:
            for m in _as(list, c.get("volumeMounts")):
                if isinstance(m, dict) and isinstance(m.get("name"), str) and m["name"]:
                    volumes[m["name"]] = {"name": m["name"], "emptyDir": {}}
    if volumes:
        pod_spec["volumes"] = list(volumes.values())
    return {"metadata": dict(_PROBE_META), "spec": pod_spec}


def _as(kind: type[T], value: Any) -> T:
    """``value`` if it is a ``kind``, else an empty one (the probe ignores what is malformed:
    merging reports it)."""
    return value if isinstance(value, kind) else kind()


def _bounds(subsets: tuple[Subset, ...], kind: str) -> tuple[list[list[FieldError]], list[FieldError]]:
    """``maxReplicas`` (R2 a-d and the 100 % rule) and our ``minReplicas``: one type (integer or
    percentage) for all, integers for a StatefulSet, percentages that add up. The errors of
    each subset, and those of the list as a whole."""
    typed = next((v for s in subsets for v in (s.max_replicas, s.min_replicas) if v is not None), None)
    per: list[list[FieldError]] = [[] for _ in subsets]
    sums = {"maxReplicas": 0, "minReplicas": 0}
    over: set[str] = set()
    for i, s in enumerate(subsets):
        errors = per[i]
        values: dict[str, int] = {}
        for field, value in (("maxReplicas", s.max_replicas), ("minReplicas", s.min_replicas)):
            if value is None:
                continue
            path = SUBSETS.index(i).child(field)
            problem = _bound_problem(field, value, typed, kind)
            if problem:
                errors.append(invalid(path, value, problem))
                continue
            values[field] = n = scaled(value, 100)
            if isinstance(value, str):
                sums[field] += n
                if sums[field] > 100 and field not in over:
                    over.add(field)
                    errors.append(invalid(path, value, f"the sum of all subset's {field} exceeds 100% is no permitted"))
        low, high = values.get("minReplicas"), values.get("maxReplicas")
        if low is not None and high is not None and low > high:
            errors.append(
                invalid(
                    SUBSETS.index(i).child("minReplicas"),
                    s.min_replicas,
                    f"must be less than or equal to maxReplicas ({show(s.max_replicas)})",
                )
            )
    if any(per) or not isinstance(typed, str) or sums["maxReplicas"] >= 100 or subsets[-1].max_replicas is None:
        return per, []
    return per, [
        invalid(
            SUBSETS.index(0).child("maxReplicas"),
            f"{sums['maxReplicas']}%",
            "maxReplicas sum of all subsets must equal 100% when type is specified as percent",
        )
    ]


def _bound_problem(field: str, value: IntOrStr, typed: IntOrStr | None, kind: str) -> str:
    if isinstance(value, str) != isinstance(typed, str):
        if field == "maxReplicas":
            return "the maxReplicas type of all subsets must be the same"
        return "the minReplicas type must be the same as the maxReplicas type of all subsets"
    if kind == "StatefulSet" and isinstance(value, str):
        return f"the {field} type must be Int for StatefulSet"
    try:
        n = scaled(value, 100)
    except ValueError:
        hint = f': a percentage needs a "%" suffix ("{value}%")' if str(value).lstrip("+-").isdigit() else ""
        return f"{field} is not valid for subset{hint}"
    return f"{field} is not valid for subset" if n < 0 else ""


def _schedule(spec: Spec) -> list[FieldError]:
    """R3, without OpenKruise's ``295 / (n - 1)`` cap (see :data:`MAX_RESCHEDULE_CRITICAL_SECONDS`)."""
    strategy = spec.schedule_strategy
    errors: list[FieldError] = []
    if strategy.type not in ("", FIXED, ADAPTIVE):
        errors.append(invalid(STRATEGY.child("type"), strategy.type, "ScheduleStrategy's type is not valid"))
    if not strategy.adaptive:
        return errors
    if strategy.type != ADAPTIVE:
        errors.append(
            invalid(
                STRATEGY.child("type"),
                strategy.type,
                "the scheduleStrategy's type must be adaptive when using adaptive scheduleStrategy",
            )
        )
    if len(spec.subsets) > 1 and spec.subsets[-1].max_replicas is not None:
        errors.append(
            invalid(
                STRATEGY.child("adaptive"),
                "object",
                "the last subset's maxReplicas must be not specified when using adaptive scheduleStrategy",
            )
        )
    seconds = strategy.reschedule_critical_seconds
    if seconds is not None and not 0 <= seconds <= MAX_RESCHEDULE_CRITICAL_SECONDS:
        errors.append(
            invalid(
                STRATEGY.child("adaptive").child("rescheduleCriticalSeconds"),
                seconds,
                f"rescheduleCriticalSeconds < 0 or rescheduleCriticalSeconds > {MAX_RESCHEDULE_CRITICAL_SECONDS} "
                "is not permitted",
            )
        )
    return errors


def _target_filter(spec: Spec) -> list[FieldError]:
    """R4: the selector must be a valid label selector (a missing one is accepted)."""
    selector: Any = spec.target_filter.selector if spec.target_filter is not None else None
    if selector is None:
        return []
    return label_selector.errors(selector, SPEC.child("targetFilter").child("selector"))
