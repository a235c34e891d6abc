"""The UnitedDeployment model: typed, immutable, parsed from a raw manifest.

Parsing is where wrong types are caught: the structural CRD schema catches them on a
cluster, but ``united validate`` must catch them offline with the same ``field: message``
errors, and the controller must never crash on a manifest that slipped past a schema
(``/scale`` and older CRDs bypass it). Pod templates and subset patches stay raw dicts:
they are opaque to us and must round-trip unchanged into the children.

The same model reads ``apps.united.io/v1alpha1`` and OpenKruise's ``apps.kruise.io``
``v1alpha1``/``v1beta1`` manifests: their specs are identical.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from united.api.document import Json
from united.api.field import ManifestError, Path, invalid, not_supported, required
from united.api.groups import GROUP, KRUISE_GROUP
from united.api.intstr import INT32_MAX, IntOrStr
from united.api.reader import Reader

VERSION = "v1alpha1"
KIND = "UnitedDeployment"
PLURAL = "uniteddeployments"
API_VERSIONS = (f"{GROUP}/{VERSION}", f"{KRUISE_GROUP}/v1alpha1", f"{KRUISE_GROUP}/v1beta1")

#: Template variants in OpenKruise's precedence order (first set one wins).
STATEFUL_SET = "statefulSetTemplate"
ADVANCED_STATEFUL_SET = "advancedStatefulSetTemplate"
CLONE_SET = "cloneSetTemplate"
DEPLOYMENT = "deploymentTemplate"
TEMPLATE_VARIANTS = (STATEFUL_SET, ADVANCED_STATEFUL_SET, CLONE_SET, DEPLOYMENT)

ADAPTIVE = "Adaptive"
FIXED = "Fixed"
MANUAL = "Manual"
PROGRESSIVE = "Progressive"
#: ``spec.topology.rounding``: OpenKruise's per-subset half-up rounding (default), or ours.
HALF_UP = "HalfUp"
MONOTONE = "Monotone"


@dataclass(frozen=True, slots=True)
class Subset:
    """One entry of ``spec.topology.subsets``: where pods go and how many."""

    name: str
    node_selector_term: Json | None = None
    tolerations: tuple[Json, ...] | None = None
    replicas: IntOrStr | None = None
    min_replicas: IntOrStr | None = None
    max_replicas: IntOrStr | None = None
    patch: Json | None = None
    weight: int | None = None
    """Share of what fixed subsets leave, in proportion (Sainte-Laguë); unset counts as 1."""
    cluster: str | None = None
    """The ``Cluster`` whose API server holds the child; None (absent or ``""``): the host."""

    @property
    def elastic(self) -> bool:
        return self.min_replicas is not None or self.max_replicas is not None


@dataclass(frozen=True, slots=True)
class Template:
    """One workload template variant, kept raw: ``{metadata, spec}`` of the child kind."""

    variant: str
    metadata: Json
    spec: Json

    @property
    def pod_template(self) -> Json:
        template = self.spec.get("template")
        return template if isinstance(template, dict) else {}


@dataclass(frozen=True, slots=True)
class Adaptive:
    reschedule_critical_seconds: int | None = None
    unschedulable_duration: int | None = None
    reserve_unschedulable_pods: bool = False


@dataclass(frozen=True, slots=True)
class ScheduleStrategy:
    type: str = ""
    adaptive: Adaptive | None = None

    @property
    def is_adaptive(self) -> bool:
        return self.type == ADAPTIVE

    @property
    def reserves(self) -> bool:
        """Reservation mode is only effective with ``type: Adaptive``."""
        return self.is_adaptive and self.adaptive is not None and self.adaptive.reserve_unschedulable_pods


@dataclass(frozen=True, slots=True)
class Wave:
    """One step of a progressive rollout: its subsets update together, then it may pause."""

    subsets: tuple[str, ...] = ()
    pause: bool = False
    duration: IntOrStr | None = None
    """A timed pause, as written; None with ``pause`` means until resumed."""

    @property
    def pause_seconds(self) -> int | None:
        """The timed pause in seconds (validation has refused durations that do not parse)."""
        return None if self.duration is None else duration_seconds(self.duration)


@dataclass(frozen=True, slots=True)
class Progressive:
    paused: bool = False
    waves: tuple[Wave, ...] = ()
    max_unavailable: IntOrStr | None = None
    progress_deadline_seconds: int | None = None


@dataclass(frozen=True, slots=True)
class UpdateStrategy:
    type: str = ""
    partitions: Mapping[str, int] | None = None
    progressive: Progressive | None = None


@dataclass(frozen=True, slots=True)
class Selector:
    """A ``metav1.LabelSelector`` kept as given; matching lives in ``united.api.selector``."""

    match_labels: Mapping[str, str] = field(default_factory=dict)
    match_expressions: tuple[Json, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def to_dict(self) -> Json:
        out: Json = {}
        if self.match_labels:
            out["matchLabels"] = dict(self.match_labels)
        if self.match_expressions:
            out["matchExpressions"] = [dict(e) for e in self.match_expressions]
        return out


@dataclass(frozen=True, slots=True)
class Spec:
    replicas: int | None = None
    selector: Selector | None = None
    templates: tuple[Template, ...] = ()
    subsets: tuple[Subset, ...] = ()
    schedule: ScheduleStrategy = ScheduleStrategy()
    update: UpdateStrategy = UpdateStrategy()
    revision_history_limit: int | None = None
    rounding: str = ""

    @property
    def monotone(self) -> bool:
        return self.rounding == MONOTONE

    @property
    def weighted(self) -> bool:
        return any(s.weight is not None for s in self.subsets)

    @property
    def template(self) -> Template | None:
        """The variant the controller uses: the first set one in OpenKruise's order."""
        for variant in TEMPLATE_VARIANTS:
            for t in self.templates:
                if t.variant == variant:
                    return t
        return None

    def subset(self, name: str) -> Subset | None:
        return next((s for s in self.subsets if s.name == name), None)


@dataclass(frozen=True, slots=True)
class UnitedDeployment:
    api_version: str
    """As read; the controller names it by the version owner references should name (its
    kind's preferred version), which the garbage collector maps without a lookup."""
    name: str
    namespace: str
    spec: Spec
    uid: str = ""
    generation: int = 0
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    #: The object as read; status and unknown metadata are carried, never interpreted here.
    raw: Json = field(default_factory=dict, compare=False, repr=False)

    @property
    def group(self) -> str:
        return self.api_version.split("/", 1)[0]


_SPEC_FIELDS = frozenset({"replicas", "selector", "template", "topology", "updateStrategy", "revisionHistoryLimit"})
_SUBSET_FIELDS = frozenset(
    {"name", "nodeSelectorTerm", "tolerations", "replicas", "minReplicas", "maxReplicas", "patch", "weight", "cluster"}
)


def parse(obj: Any) -> UnitedDeployment:
    """Turn a raw manifest into a model, or raise :class:`ManifestError` with every type error found."""
    r = Reader()
    root = Path()
    doc = r.obj(obj, root)
    if doc is None:
        raise ManifestError(r.errors or [invalid(root, obj, "a UnitedDeployment manifest must be an object")])
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
    name = r.string(meta.get("name"), meta_path.child("name")) or ""
    namespace = r.string(meta.get("namespace"), meta_path.child("namespace")) or ""
    uid = r.string(meta.get("uid"), meta_path.child("uid")) or ""
    generation = meta.get("generation") if isinstance(meta.get("generation"), int) else 0
    labels = r.str_map(meta.get("labels"), meta_path.child("labels"))
    annotations = r.str_map(meta.get("annotations"), meta_path.child("annotations"))
    spec_path = root.child("spec")
    raw_spec = r.obj(doc.get("spec"), spec_path, _SPEC_FIELDS)
    if raw_spec is None and "spec" not in doc:
        r.fail(required(spec_path))
    spec = _spec(r, raw_spec or {}, spec_path)
    if r.errors:
        raise ManifestError(r.errors)
    return UnitedDeployment(
        api_version=api_version or "",
        name=name,
        namespace=namespace,
        uid=uid,
        generation=generation or 0,
        labels=labels,
        annotations=annotations,
        spec=spec,
        raw=doc,
    )


def _spec(r: Reader, raw: Json, path: Path) -> Spec:
    return Spec(
        replicas=r.int32(raw.get("replicas"), path.child("replicas")),
        selector=_selector(r, raw.get("selector"), path.child("selector")),
        templates=_templates(r, raw.get("template"), path.child("template")),
        subsets=_subsets(r, raw.get("topology"), path.child("topology")),
        schedule=_schedule(r, raw.get("topology"), path.child("topology")),
        update=_update(r, raw.get("updateStrategy"), path.child("updateStrategy")),
        revision_history_limit=r.int32(raw.get("revisionHistoryLimit"), path.child("revisionHistoryLimit")),
        rounding=_rounding(r, raw.get("topology"), path.child("topology")),
    )


def _selector(r: Reader, value: Any, path: Path) -> Selector | None:
    raw = r.obj(value, path, frozenset({"matchLabels", "matchExpressions"}))
    if raw is None:
        return None
    expressions = r.requirements(raw.get("matchExpressions"), path.child("matchExpressions"))
    return Selector(
        match_labels=r.str_map(raw.get("matchLabels"), path.child("matchLabels")),
        match_expressions=expressions,
    )


def _templates(r: Reader, value: Any, path: Path) -> tuple[Template, ...]:
    raw = r.obj(value, path, frozenset(TEMPLATE_VARIANTS))
    out = []
    for variant in TEMPLATE_VARIANTS:
        p = path.child(variant)
        t = r.obj((raw or {}).get(variant), p, frozenset({"metadata", "spec"}))
        if t is None:
            continue
        metadata = r.obj(t.get("metadata"), p.child("metadata")) or {}
        for key in ("labels", "annotations"):
            r.str_map(metadata.get(key), p.child("metadata").child(key))
        spec = r.obj(t.get("spec"), p.child("spec"))
        if spec is None:
            if "spec" not in t:
                r.fail(required(p.child("spec")))
            continue
        template = r.obj(spec.get("template"), p.child("spec").child("template"))
        if template is not None:
            tmeta = r.obj(template.get("metadata"), p.child("spec").child("template").child("metadata"))
            for key in ("labels", "annotations"):
                r.str_map((tmeta or {}).get(key), p.child("spec").child("template").child("metadata").child(key))
            r.obj(template.get("spec"), p.child("spec").child("template").child("spec"))
        out.append(Template(variant=variant, metadata=metadata, spec=spec))
    return tuple(out)


def _subsets(r: Reader, value: Any, path: Path) -> tuple[Subset, ...]:
    topology = r.obj(value, path, frozenset({"subsets", "scheduleStrategy", "rounding"})) or {}
    subsets_path = path.child("subsets")
    out = []
    for i, item in enumerate(r.array(topology.get("subsets"), subsets_path) or []):
        p = subsets_path.index(i)
        raw = r.obj(item, p, _SUBSET_FIELDS)
        if raw is None:
            if item is None:
                r.fail(invalid(p, None, "must be an object"))
            continue
        term = r.obj(
            raw.get("nodeSelectorTerm"), p.child("nodeSelectorTerm"), frozenset({"matchExpressions", "matchFields"})
        )
        if term is not None:
            for key in ("matchExpressions", "matchFields"):
                r.requirements(term.get(key), p.child("nodeSelectorTerm").child(key))
        tolerations = r.maps(raw.get("tolerations"), p.child("tolerations"))
        for j, t in enumerate(tolerations or ()):
            tp = p.child("tolerations").index(j)
            for key in ("key", "operator", "value", "effect"):
                r.string(t.get(key), tp.child(key))
            seconds = t.get("tolerationSeconds")
            if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
                r.fail(invalid(tp.child("tolerationSeconds"), seconds, "must be an integer"))
        patch = raw.get("patch")
        out.append(
            Subset(
                name=r.string(raw.get("name"), p.child("name")) or "",
                node_selector_term=term,
                tolerations=tolerations,
                replicas=r.int_or_str(raw.get("replicas"), p.child("replicas")),
                min_replicas=r.int_or_str(raw.get("minReplicas"), p.child("minReplicas")),
                max_replicas=r.int_or_str(raw.get("maxReplicas"), p.child("maxReplicas")),
                patch=r.obj(patch, p.child("patch")),
                weight=r.int32(raw.get("weight"), p.child("weight")),
                cluster=r.string(raw.get("cluster"), p.child("cluster")) or None,
            )
        )
    return tuple(out)


def _rounding(r: Reader, value: Any, path: Path) -> str:
    topology = value if isinstance(value, dict) else {}
    return r.string(topology.get("rounding"), path.child("rounding")) or ""


def _schedule(r: Reader, value: Any, path: Path) -> ScheduleStrategy:
    topology = value if isinstance(value, dict) else {}
    p = path.child("scheduleStrategy")
    raw = r.obj(topology.get("scheduleStrategy"), p, frozenset({"type", "adaptive"}))
    if raw is None:
        return ScheduleStrategy()
    ap = p.child("adaptive")
    adaptive_raw = r.obj(
        raw.get("adaptive"),
        ap,
        frozenset(
            {
                "rescheduleCriticalSeconds",
                "unschedulableDuration",
                "unschedulableLastSeconds",
                "reserveUnschedulablePods",
            }
        ),
    )
    adaptive = None
    if adaptive_raw is not None:
        adaptive = Adaptive(
            reschedule_critical_seconds=r.int32(
                adaptive_raw.get("rescheduleCriticalSeconds"), ap.child("rescheduleCriticalSeconds")
            ),
            unschedulable_duration=_duration(r, adaptive_raw, ap),
            reserve_unschedulable_pods=bool(
                r.boolean(adaptive_raw.get("reserveUnschedulablePods"), ap.child("reserveUnschedulablePods"))
            ),
        )
    return ScheduleStrategy(type=r.string(raw.get("type"), p.child("type")) or "", adaptive=adaptive)


def _duration(r: Reader, adaptive: Json, path: Path) -> int | None:
    """``unschedulableDuration``, or OpenKruise v1.8's name for it when only that is set."""
    legacy = r.int32(adaptive.get("unschedulableLastSeconds"), path.child("unschedulableLastSeconds"))
    current = r.int32(adaptive.get("unschedulableDuration"), path.child("unschedulableDuration"))
    return legacy if current is None else current


def _update(r: Reader, value: Any, path: Path) -> UpdateStrategy:
    raw = r.obj(value, path, frozenset({"type", "manualUpdate", "progressive"}))
    if raw is None:
        return UpdateStrategy()
    progressive = _progressive(r, raw.get("progressive"), path.child("progressive"))
    mp = path.child("manualUpdate")
    manual = r.obj(raw.get("manualUpdate"), mp, frozenset({"partitions"}))
    partitions: dict[str, int] | None = None
    if manual is not None:
        pp = mp.child("partitions")
        raw_partitions = r.obj(manual.get("partitions"), pp)
        partitions = {}
        for k, v in (raw_partitions or {}).items():
            n = r.int32(v, pp.key(k))
            if n is not None:
                partitions[k] = n
    return UpdateStrategy(
        type=r.string(raw.get("type"), path.child("type")) or "", partitions=partitions, progressive=progressive
    )


def _progressive(r: Reader, value: Any, path: Path) -> Progressive | None:
    known = frozenset({"paused", "waves", "maxUnavailable", "progressDeadlineSeconds"})
    raw = r.obj(value, path, known)
    if raw is None:
        return None
    waves = []
    wp = path.child("waves")
    for i, item in enumerate(r.array(raw.get("waves"), wp) or []):
        p = wp.index(i)
        wave = r.obj(item, p, frozenset({"subsets", "pause"})) or {}
        names = tuple(
            r.string(n, p.child("subsets").index(j)) or ""
            for j, n in enumerate(r.array(wave.get("subsets"), p.child("subsets")) or [])
        )
        pause = r.obj(wave.get("pause"), p.child("pause"), frozenset({"duration"}))
        duration = r.int_or_str((pause or {}).get("duration"), p.child("pause").child("duration"))
        waves.append(Wave(subsets=names, pause=pause is not None, duration=duration))
    return Progressive(
        paused=bool(r.boolean(raw.get("paused"), path.child("paused"))),
        waves=tuple(waves),
        max_unavailable=r.int_or_str(raw.get("maxUnavailable"), path.child("maxUnavailable")),
        progress_deadline_seconds=r.int32(raw.get("progressDeadlineSeconds"), path.child("progressDeadlineSeconds")),
    )


_DURATION = re.compile(r"^(?:([0-9]{1,10})h)?(?:([0-9]{1,10})m)?(?:([0-9]{1,10})s)?$")


def duration_seconds(value: Any) -> int:
    """A pause duration in whole seconds: an integer, or a Go duration string of hours,
    minutes and seconds (``90s``, ``5m``, ``1h30m``). Fractions and smaller units are refused:
    a pause is checked to the second. At most ``INT32_MAX`` seconds, as an integer may be: the
    pause becomes a timer, and a tenant's 400-digit duration must not overflow it."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError("must be greater than or equal to 0")
        return value
    match = _DURATION.match(value) if isinstance(value, str) and value else None
    if match is None:
        raise ValueError("must be a duration such as 60s, 5m or 1h30m, or an integer number of seconds")
    h, m, s = (int(g or 0) for g in match.groups())
    seconds = h * 3600 + m * 60 + s
    if seconds > INT32_MAX:
        raise ValueError(f"must be at most {INT32_MAX} seconds")
    return seconds
