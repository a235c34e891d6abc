"""The WorkloadSpread model: typed, immutable, parsed from a raw manifest, spec and status.

Field names follow OpenKruise's ``v1beta1`` (``requiredNodeSelector``,
``preferredNodeSelector``): it is upstream's storage version and conversion hub, and its
validating webhook reports every error with those names, even for ``v1alpha1`` requests.
Our ``apps.united.io/v1alpha1`` uses them too, so an error reads the same whichever group a
manifest came through. A ``apps.kruise.io/v1alpha1`` manifest is read with its own spellings
(``requiredNodeSelectorTerm``, ``preferredNodeSelectorTerms``) into the same model.

The status is modelled too: the pod webhook books slots in it and the controller recounts
it, and both must read what the other wrote. Times stay the RFC 3339 strings the API server
stores (second precision); :mod:`united.workloadspread` code compares them as such.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from united.api.document import Json
from united.api.field import ManifestError, Path, invalid, not_supported, required
from united.api.groups import GROUP, KRUISE_GROUP
from united.api.intstr import IntOrStr
from united.api.reader import Reader

VERSION = "v1alpha1"
KRUISE_ALPHA = f"{KRUISE_GROUP}/v1alpha1"
KRUISE_BETA = f"{KRUISE_GROUP}/v1beta1"
KIND = "WorkloadSpread"
PLURAL = "workloadspreads"
API_VERSIONS = (f"{GROUP}/{VERSION}", KRUISE_ALPHA, KRUISE_BETA)

ADAPTIVE = "Adaptive"
FIXED = "Fixed"

#: Pod annotation naming the WorkloadSpread and subset a pod was placed in (JSON).
MATCHED_ANNOTATION = "apps.kruise.io/matched-workloadspread"
#: Pod annotation the workload controllers read on scale-in (Kubernetes 1.21+, CloneSet).
DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
#: WorkloadSpread annotation: adopt pre-existing pods without copying the patch's metadata.
IGNORE_PATCH_EXISTING_PODS_ANNOTATION = "workloadspread.kruise.io/ignore-patch-existing-pods-metadata"
#: Status key for pods of workloads whose pods carry no version label.
VERSION_IGNORED = "versionIgnored"
#: Name of the bucket of pods that belong to no subset (reported, never written to status).
FAKE_SUBSET = "kruise.io/workloadspread-fake-subset-name"


def group_of(api_version: str) -> str:
    """The group of an ``apiVersion`` (``""`` for the core group's ``v1``)."""
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


@dataclass(frozen=True, slots=True)
class TargetRef:
    """``spec.targetRef``: the workload whose pods are spread; only the *group* of
    ``apiVersion`` matters when matching (the version may change)."""

    api_version: str
    kind: str
    name: str

    @property
    def group(self) -> str:
        return group_of(self.api_version)


@dataclass(frozen=True, slots=True)
class TargetFilter:
    """``spec.targetFilter``: manage only some of the workload's pods."""

    selector: Json | None = None
    replicas_paths: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Subset:
    """One entry of ``spec.subsets``: where pods go and how many at most (and, ours, at least)."""

    name: str
    required_node_selector: Json | None = None
    preferred_node_selector: tuple[Json, ...] | None = None
    tolerations: tuple[Json, ...] | None = None
    max_replicas: IntOrStr | None = None
    min_replicas: IntOrStr | None = None
    patch: Json | None = None


@dataclass(frozen=True, slots=True)
class ScheduleStrategy:
    type: str = ""
    #: ``adaptive`` was given (OpenKruise's rules depend on its presence, not its content).
    adaptive: bool = False
    reschedule_critical_seconds: int | None = None
    disable_simulation_schedule: bool = False

    @property
    def reschedules(self) -> bool:
        """Adaptive rescheduling is on: type Adaptive, an ``adaptive`` block, seconds > 0."""
        return (
            self.type == ADAPTIVE
            and self.adaptive
            and self.reschedule_critical_seconds is not None
            and self.reschedule_critical_seconds > 0
        )


@dataclass(frozen=True, slots=True)
class Spec:
    target_ref: TargetRef | None
    subsets: tuple[Subset, ...] = ()
    target_filter: TargetFilter | None = None
    schedule_strategy: ScheduleStrategy = field(default_factory=ScheduleStrategy)

    def subset(self, name: str) -> Subset | None:
        return next((s for s in self.subsets if s.name == name), None)


@dataclass(frozen=True, slots=True)
class SubsetStatus:
    """One subset's bookkeeping. ``missing_replicas`` is ``-1`` for a subset without a
    maximum; ``creating_pods``/``deleting_pods`` map a pod name (or the uid the webhook gave a
    pod without a name) to the RFC 3339 time of its booking."""

    name: str
    replicas: int = 0
    missing_replicas: int = -1
    creating_pods: Mapping[str, str] = field(default_factory=dict)
    deleting_pods: Mapping[str, str] = field(default_factory=dict)
    conditions: tuple[Json, ...] = ()
    #: Ours: why the subset looks as it does (the controller's aggregate entries only).
    reason: str = ""
    message: str = ""

    def to_dict(self) -> Json:
        out: Json = {"name": self.name, "replicas": self.replicas, "missingReplicas": self.missing_replicas}
        if self.creating_pods:
            out["creatingPods"] = dict(self.creating_pods)
        if self.deleting_pods:
            out["deletingPods"] = dict(self.deleting_pods)
        if self.conditions:
            out["conditions"] = [dict(c) for c in self.conditions]
        if self.reason:
            out["reason"] = self.reason
        if self.message:
            out["message"] = self.message
        return out


@dataclass(frozen=True, slots=True)
class Status:
    observed_generation: int = 0
    subset_statuses: tuple[SubsetStatus, ...] = ()
    #: Per pod-template version (``pod-template-hash`` etc.), what the webhook books against.
    versioned: Mapping[str, tuple[SubsetStatus, ...]] = field(default_factory=dict)
    #: Everything else the status carried (our conditions, counts): kept, never interpreted here.
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Json:
        out: Json = dict(self.extra)
        out["observedGeneration"] = self.observed_generation
        out["subsetStatuses"] = [s.to_dict() for s in self.subset_statuses]
        if self.versioned:
            out["versionedSubsetStatuses"] = {v: [s.to_dict() for s in ss] for v, ss in self.versioned.items()}
        return out


@dataclass(frozen=True, slots=True)
class WorkloadSpread:
    api_version: str
    name: str
    namespace: str
    spec: Spec
    status: Status = field(default_factory=Status)
    uid: str = ""
    generation: int = 0
    resource_version: str = ""
    deleting: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    #: The object as read; unknown metadata is carried, never interpreted here.
    raw: Json = field(default_factory=dict, compare=False, repr=False)

    @property
    def group(self) -> str:
        return self.api_version.split("/", 1)[0]


_SPEC_FIELDS = frozenset({"targetRef", "targetFilter", "subsets", "scheduleStrategy"})
_BETA_SUBSET = ("requiredNodeSelector", "preferredNodeSelector")
_ALPHA_SUBSET = ("requiredNodeSelectorTerm", "preferredNodeSelectorTerms")
_COMMON_SUBSET = frozenset({"name", "tolerations", "maxReplicas", "minReplicas", "patch"})


def subset_field_names(api_version: str) -> tuple[str, str]:
    """The (required, preferred) subset field names in ``api_version``'s spelling."""
    return _ALPHA_SUBSET if api_version == KRUISE_ALPHA else _BETA_SUBSET


def parse(obj: Any) -> WorkloadSpread:
    """Turn a raw manifest into a model, or raise :class:`ManifestError` with every type error found."""
    r = Reader()
    root = Path()
    doc = r.obj(obj, root)
    if doc is None:
        raise ManifestError(r.errors or [invalid(root, obj, "a WorkloadSpread manifest must be an object")])
    api_version = r.string(doc.get("apiVersion"), root.child("apiVersion"))
    if doc.get("apiVersion") in (None, ""):
        r.fail(required(root.child("apiVersion")))
    elif api_version is not None and api_version not in API_VERSIONS:
        r.fail(not_supported(root.child("apiVersion"), api_version, API_VERSIONS))
    kind = r.string(doc.get("kind"), root.child("kind"))
    if doc.get("kind") in (None, ""):
        r.fail(required(root.child("kind")))
    elif kind is not None and kind != KIND:
        r.fail(not_supported(root.child("kind"), kind, [KIND]))
    meta_path = root.child("metadata")
    meta = r.obj(doc.get("metadata"), meta_path) or {}
    spec_path = root.child("spec")
    raw_spec = r.obj(doc.get("spec"), spec_path, _SPEC_FIELDS)
    if raw_spec is None and "spec" not in doc:
        r.fail(required(spec_path))
    spec = _spec(r, raw_spec or {}, spec_path, api_version or "")
    status = _status(r, doc.get("status"), root.child("status"))
    if r.errors:
        raise ManifestError(r.errors)
    generation = meta.get("generation")
    return WorkloadSpread(
        api_version=api_version or "",
        name=r.string(meta.get("name"), meta_path.child("name")) or "",
        namespace=r.string(meta.get("namespace"), meta_path.child("namespace")) or "",
        uid=r.string(meta.get("uid"), meta_path.child("uid")) or "",
        generation=generation if isinstance(generation, int) and not isinstance(generation, bool) else 0,
        resource_version=str(meta.get("resourceVersion") or ""),
        deleting=bool(meta.get("deletionTimestamp")),
        labels=r.str_map(meta.get("labels"), meta_path.child("labels")),
        annotations=r.str_map(meta.get("annotations"), meta_path.child("annotations")),
        spec=spec,
        status=status,
        raw=doc,
    )


def _spec(r: Reader, raw: Json, path: Path, api_version: str) -> Spec:
    ref_path = path.child("targetRef")
    ref = r.obj(raw.get("targetRef"), ref_path, frozenset({"apiVersion", "kind", "name"}))
    target_ref = None
    if ref is not None:
        target_ref = TargetRef(
            api_version=r.string(ref.get("apiVersion"), ref_path.child("apiVersion")) or "",
            kind=r.string(ref.get("kind"), ref_path.child("kind")) or "",
            name=r.string(ref.get("name"), ref_path.child("name")) or "",
        )
    return Spec(
        target_ref=target_ref,
        target_filter=_filter(r, raw.get("targetFilter"), path.child("targetFilter")),
        subsets=_subsets(r, raw.get("subsets"), path.child("subsets"), api_version),
        schedule_strategy=_schedule(r, raw.get("scheduleStrategy"), path.child("scheduleStrategy")),
    )


def _filter(r: Reader, value: Any, path: Path) -> TargetFilter | None:
    raw = r.obj(value, path, frozenset({"selector", "replicasPathList"}))
    if raw is None:
        return None
    selector = r.obj(raw.get("selector"), path.child("selector"), frozenset({"matchLabels", "matchExpressions"}))
    if selector is not None:
        r.str_map(selector.get("matchLabels"), path.child("selector").child("matchLabels"))
        r.requirements(selector.get("matchExpressions"), path.child("selector").child("matchExpressions"))
    paths: list[str] = []
    for i, item in enumerate(r.array(raw.get("replicasPathList"), path.child("replicasPathList")) or []):
        s = r.string(item, path.child("replicasPathList").index(i))
        if s is not None:
            paths.append(s)
    return TargetFilter(selector=selector, replicas_paths=tuple(paths))


def _subsets(r: Reader, value: Any, path: Path, api_version: str) -> tuple[Subset, ...]:
    required_key, preferred_key = subset_field_names(api_version)
    out = []
    for i, item in enumerate(r.array(value, path) or []):
        p = path.index(i)
        raw = r.obj(item, p, _COMMON_SUBSET | {required_key, preferred_key})
        if raw is None:
            if item is None:
                r.fail(invalid(p, None, "must be an object"))
            continue
        term = r.obj(raw.get(required_key), p.child(required_key), frozenset({"matchExpressions", "matchFields"}))
        for key in ("matchExpressions", "matchFields"):
            if term is not None:
                r.requirements(term.get(key), p.child(required_key).child(key))
        preferred = r.maps(raw.get(preferred_key), p.child(preferred_key))
        tolerations = r.maps(raw.get("tolerations"), p.child("tolerations"))
        for j, t in enumerate(tolerations or ()):
            tp = p.child("tolerations").index(j)
            for key in ("key", "operator", "value", "effect"):
                r.string(t.get(key), tp.child(key))
            seconds = t.get("tolerationSeconds")
            if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
                r.fail(invalid(tp.child("tolerationSeconds"), seconds, "must be an integer"))
        out.append(
            Subset(
                name=r.string(raw.get("name"), p.child("name")) or "",
                required_node_selector=term,
                preferred_node_selector=preferred,
                tolerations=tolerations,
                max_replicas=r.int_or_str(raw.get("maxReplicas"), p.child("maxReplicas")),
                min_replicas=r.int_or_str(raw.get("minReplicas"), p.child("minReplicas")),
                patch=r.obj(raw.get("patch"), p.child("patch")),
            )
        )
    return tuple(out)


def _schedule(r: Reader, value: Any, path: Path) -> ScheduleStrategy:
    raw = r.obj(value, path, frozenset({"type", "adaptive"})) or {}
    adaptive = r.obj(
        raw.get("adaptive"),
        path.child("adaptive"),
        frozenset({"disableSimulationSchedule", "rescheduleCriticalSeconds"}),
    )
    a = adaptive or {}
    return ScheduleStrategy(
        type=r.string(raw.get("type"), path.child("type")) or "",
        adaptive=adaptive is not None,
        reschedule_critical_seconds=r.int32(
            a.get("rescheduleCriticalSeconds"), path.child("adaptive").child("rescheduleCriticalSeconds")
        ),
        disable_simulation_schedule=bool(
            r.boolean(a.get("disableSimulationSchedule"), path.child("adaptive").child("disableSimulationSchedule"))
        ),
    )


_STATUS_FIELDS = ("observedGeneration", "subsetStatuses", "versionedSubsetStatuses")


def _status(r: Reader, value: Any, path: Path) -> Status:
    raw = r.obj(value, path)
    if raw is None:
        return Status()
    generation = raw.get("observedGeneration")
    versioned_raw = r.obj(raw.get("versionedSubsetStatuses"), path.child("versionedSubsetStatuses")) or {}
    return Status(
        observed_generation=generation if isinstance(generation, int) and not isinstance(generation, bool) else 0,
        subset_statuses=_subset_statuses(r, raw.get("subsetStatuses"), path.child("subsetStatuses")),
        versioned={
            v: _subset_statuses(r, items, path.child("versionedSubsetStatuses").key(v))
            for v, items in versioned_raw.items()
        },
        extra={k: v for k, v in raw.items() if k not in _STATUS_FIELDS},
    )


def _subset_statuses(r: Reader, value: Any, path: Path) -> tuple[SubsetStatus, ...]:
    out = []
    for i, item in enumerate(r.maps(value, path) or ()):
        p = path.index(i)
        missing = r.int32(item.get("missingReplicas"), p.child("missingReplicas"))
        out.append(
            SubsetStatus(
                name=r.string(item.get("name"), p.child("name")) or "",
                replicas=r.int32(item.get("replicas"), p.child("replicas")) or 0,
                missing_replicas=-1 if missing is None else missing,
                creating_pods=r.str_map(item.get("creatingPods"), p.child("creatingPods")),
                deleting_pods=r.str_map(item.get("deletingPods"), p.child("deletingPods")),
                conditions=r.maps(item.get("conditions"), p.child("conditions")) or (),
                reason=r.string(item.get("reason"), p.child("reason")) or "",
                message=r.string(item.get("message"), p.child("message")) or "",
            )
        )
    return tuple(out)
