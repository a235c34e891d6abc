"""Validation, as OpenKruise's validating webhook does it.

Run on a *defaulted* model (:mod:`united.uniteddeployment.defaults`), like the webhook after the mutating
one. Every rule reports a :class:`~united.api.field.FieldError`. OpenKruise's quirks are
fixed and the fixes named here:

* messages print the real ``spec.replicas`` (OpenKruise prints a memory address);
* the Advanced StatefulSet label error uses its own path;
* a tolerations change is reported once;
* CloneSet templates are validated too (OpenKruise accepts any CloneSet template, then
  creates children its own selector cannot find, forever);
* derived names must fit: the revision label and StatefulSet/CloneSet pod labels have a
  63-character limit that OpenKruise leaves to fail at pod creation;
* a subset patch must apply, and may not move pods out of their child's selector or touch
  the pod template's name, namespace or owner references;
* ``topology.rounding`` and ``subsets[].weight`` are ours; with ``Monotone`` the
  replica sums are checked with the monotone numbers, not the half-up ones;
* ``subsets[].cluster`` is ours, in our group only; whether that ``Cluster`` exists is
  the controller's to say (``ClusterNotFound``): offline validation cannot know;
* what one UnitedDeployment may ask is bounded (:mod:`united.api.limits`): OpenKruise
  merges any number of patches of any size on its one reconcile loop.

:func:`checks` runs the rules in steps of bounded cost, so that the controller can let its
event loop breathe between subsets; :func:`validate` is all the steps at once.
"""

from __future__ import annotations

from collections.abc import Iterator

from united.api import selector as label_selector
from united.api.field import (
    FieldError,
    Path,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)
from united.api.groups import GROUP
from united.api.intstr import INT32_MAX, resolve
from united.api.limits import (
    MAX_PATCH_BYTES,
    MAX_PLACEMENT_BYTES,
    MAX_REVISION_HISTORY,
    MAX_SUBSETS,
    MAX_TEMPLATE_BYTES,
    size,
)
from united.api.names import (
    GENERATE_NAME_PREFIX_MAX,
    LABEL_VALUE_MAX,
    REVISION_HASH_MAX,
    STATEFULSET_NAME_MAX,
    dns_label_errors,
    dns_subdomain_errors,
)
from united.placement.constraints import node_selector_term_errors, toleration_errors
from united.placement.patch import PatchError
from united.placement.podtemplate import items, pod_template_errors
from united.placement.subset import place
from united.uniteddeployment.allocation import ZERO_WEIGHTS, AllocationError, shared, split
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import (
    ADAPTIVE,
    ADVANCED_STATEFUL_SET,
    CLONE_SET,
    DEPLOYMENT,
    FIXED,
    HALF_UP,
    MANUAL,
    MONOTONE,
    PROGRESSIVE,
    STATEFUL_SET,
    TEMPLATE_VARIANTS,
    Spec,
    Subset,
    Template,
    UnitedDeployment,
    duration_seconds,
)

SPEC = Path("spec")
SUBSETS = SPEC.child("topology").child("subsets")
#: Kinds whose pods carry ``<workload name>-<hash>`` in a label, capping the workload name.
_REVISION_LABELLED_PODS = (STATEFUL_SET, ADVANCED_STATEFUL_SET, CLONE_SET)


def validate(ud: UnitedDeployment) -> list[FieldError]:
    """Create rules; an empty list means valid."""
    return [e for step in checks(ud) for e in step]


def checks(ud: UnitedDeployment) -> Iterator[list[FieldError]]:
    """The create rules' errors in steps: the spec as a whole, then one step per subset (each
    merges and validates that subset's patch), then the update strategy. Beyond the limits
    nothing is merged: too many subsets are not looked at one by one, and no patch is merged
    into a template that is too long."""
    keys = Keys(ud.group)
    errors = _metadata(ud)
    spec = ud.spec
    if spec.replicas is not None and spec.replicas < 0:
        errors.append(invalid(SPEC.child("replicas"), spec.replicas, "must be greater than or equal to 0"))
    limit = spec.revision_history_limit
    if limit is not None and limit < 0:
        errors.append(invalid(SPEC.child("revisionHistoryLimit"), limit, "must be greater than or equal to 0"))
    if limit is not None and limit > MAX_REVISION_HISTORY:
        errors.append(
            invalid(SPEC.child("revisionHistoryLimit"), limit, f"must be less than or equal to {MAX_REVISION_HISTORY}")
        )
    errors += _selector(spec)
    errors += _schedule(spec)
    errors += _apportionment(spec)
    template = spec.template
    if template is not None and size({"metadata": template.metadata, "spec": template.spec}) > MAX_TEMPLATE_BYTES:
        errors.append(too_long(SPEC.child("template").child(template.variant), MAX_TEMPLATE_BYTES))
        template = None
    else:
        errors += _template(spec)
    if len(spec.subsets) > MAX_SUBSETS:
        errors.append(too_many(SUBSETS, len(spec.subsets), MAX_SUBSETS))
    else:
        errors += _subset_replicas(spec)
        yield errors
        errors = []
        names: set[str] = set()
        for i, s in enumerate(spec.subsets):
            yield _subset(ud, keys, template, i, s, names)
    yield errors + _update_strategy(spec, ud.group) + _progressive(ud)


def validate_update(old: UnitedDeployment, new: UnitedDeployment) -> list[FieldError]:
    """Update rules on top of the create rules.

    The controller itself has no old object to compare with (there is no webhook); these
    rules serve ``united validate --old`` in pipelines. Note that our controller rolls out
    ``nodeSelectorTerm``/``tolerations`` changes, so their immutability is only what
    OpenKruise enforces, kept for manifests that must stay valid there.
    """
    errors = validate(new)
    old_t, new_t = old.spec.template, new.spec.template
    if old_t is not None and new_t is not None and old_t.variant == new_t.variant:
        errors += _template_update(old_t, new_t)
    old_subsets = {s.name: s for s in old.spec.subsets}
    for i, s in enumerate(new.spec.subsets):
        before = old_subsets.get(s.name)
        if before is None:
            continue
        if (before.node_selector_term or {}) != (s.node_selector_term or {}):
            errors.append(forbidden(SUBSETS.index(i).child("nodeSelectorTerm"), "may not be changed in an update"))
        if list(before.tolerations or ()) != list(s.tolerations or ()):
            errors.append(forbidden(SUBSETS.index(i).child("tolerations"), "may not be changed in an update"))
    return errors


def _metadata(ud: UnitedDeployment) -> list[FieldError]:
    path = Path("metadata").child("name")
    if not ud.name:
        return [required(path, "name or generateName is required")]
    errors = dns_subdomain_errors(ud.name, path)
    limit = LABEL_VALUE_MAX - REVISION_HASH_MAX - 1
    if not errors and len(ud.name) > limit:
        errors.append(
            invalid(
                path,
                ud.name,
                f"must be no more than {limit} characters: revision names (<name>-<hash>) are label values, "
                f"limited to {LABEL_VALUE_MAX} characters",
            )
        )
    if ud.namespace:
        errors += dns_label_errors(ud.namespace, Path("metadata").child("namespace"))
    return errors


def _selector(spec: Spec) -> list[FieldError]:
    path = SPEC.child("selector")
    if spec.selector is None:
        return [required(path)]
    errors = label_selector.errors(spec.selector.to_dict(), path)
    if not errors and spec.selector.empty:
        errors.append(invalid(path, spec.selector.to_dict(), "empty selector is invalid for statefulset"))
    return errors


def _schedule(spec: Spec) -> list[FieldError]:
    path = SPEC.child("topology").child("scheduleStrategy")
    errors: list[FieldError] = []
    if spec.schedule.type not in ("", FIXED, ADAPTIVE):
        errors.append(not_supported(path.child("type"), spec.schedule.type, (ADAPTIVE, FIXED)))
    adaptive = spec.schedule.adaptive
    if adaptive is not None:
        for name, value in (
            ("rescheduleCriticalSeconds", adaptive.reschedule_critical_seconds),
            ("unschedulableDuration", adaptive.unschedulable_duration),
        ):
            if value is not None and value < 0:
                errors.append(invalid(path.child("adaptive").child(name), value, "must be greater than or equal to 0"))
    template = spec.template
    if spec.schedule.reserves and template is not None and template.variant in (STATEFUL_SET, ADVANCED_STATEFUL_SET):
        errors.append(
            invalid(
                path,
                "object",
                "only stateless workloads (Deployment and CloneSet) are supported by reserved rescheduling",
            )
        )
    return errors


def _template(spec: Spec) -> list[FieldError]:
    path = SPEC.child("template")
    if not spec.templates:
        return [required(path, "should provide one of " + ", ".join(TEMPLATE_VARIANTS))]
    if len(spec.templates) > 1:
        return [invalid(path, "object", "should provide only one of " + ", ".join(TEMPLATE_VARIANTS))]
    template = spec.templates[0]
    tpath = path.child(template.variant)
    errors: list[FieldError] = []
    sel = label_selector.parse(spec.selector.to_dict()) if spec.selector and not _selector(spec) else None
    labels = template.metadata.get("labels") or {}
    if sel is not None and not sel.matches(labels):
        errors.append(
            invalid(tpath.child("metadata").child("labels"), labels, "`selector` does not match template `labels`")
        )
    if template.spec.get("replicas") is not None:
        errors.append(
            invalid(
                tpath.child("spec").child("replicas"),
                template.spec["replicas"],
                f"replicas in {template.variant} will not be used",
            )
        )
    strategy = template.spec.get("updateStrategy")
    strategy = {} if strategy is None else strategy
    spath = tpath.child("spec").child("updateStrategy")
    if template.variant in (STATEFUL_SET, ADVANCED_STATEFUL_SET, CLONE_SET) and not isinstance(strategy, dict):
        errors.append(invalid(spath, strategy, "must be an object"))
        strategy = {}
    if template.variant in (STATEFUL_SET, ADVANCED_STATEFUL_SET):
        rolling = strategy.get("rollingUpdate")
        if rolling is not None and not isinstance(rolling, dict):
            errors.append(invalid(spath.child("rollingUpdate"), rolling, "must be an object"))
        if (
            (strategy.get("type") or "RollingUpdate") == "RollingUpdate"
            and isinstance(rolling, dict)
            and rolling.get("partition") is not None
        ):
            errors.append(
                invalid(
                    tpath.child("spec").child("updateStrategy").child("rollingUpdate").child("partition"),
                    rolling["partition"],
                    f"partition in {template.variant} will not be used",
                )
            )
    ppath = tpath.child("spec").child("template")
    if "template" not in template.spec:
        errors.append(required(ppath))
    else:
        claims = _claims(template, tpath, errors)
        errors += pod_template_errors(template.pod_template, ppath, sel, claims=claims)
    return errors


def _claims(template: Template, tpath: Path, errors: list[FieldError]) -> set[str]:
    """Names of the template's volumeClaimTemplates, which its pods may mount like volumes."""
    return {
        c["metadata"]["name"]
        for c in items(
            template.spec.get("volumeClaimTemplates"), tpath.child("spec").child("volumeClaimTemplates"), errors
        )
        if isinstance(c, dict) and isinstance(c.get("metadata"), dict) and isinstance(c["metadata"].get("name"), str)
    }


def _subset_replicas(spec: Spec) -> list[FieldError]:
    """OpenKruise's subset replicas rule (``validateSubsetReplicasV1beta1``), with the real numbers in messages."""
    total = spec.replicas if spec.replicas is not None else -1
    errors: list[FieldError] = []
    fixed_sum, fixed_count, elastic, bounded = 0, 0, False, 0
    min_sum, max_sum = 0, 0
    for i, s in enumerate(spec.subsets):
        path = SUBSETS.index(i)
        if s.replicas is not None:
            fixed_count += 1
            fixed_sum += _replica_value(total, s.replicas, path.child("replicas"), errors)
        lo, hi = 0, 1_000_000
        if s.min_replicas is not None:
            elastic = True
            lo = _replica_value(total, s.min_replicas, path.child("minReplicas"), errors)
        if s.max_replicas is not None:
            elastic = True
            bounded += 1
            hi = _replica_value(total, s.max_replicas, path.child("maxReplicas"), errors)
        min_sum += lo
        max_sum += hi
        if lo > hi:
            errors.append(
                invalid(
                    path.child("minReplicas"), lo, f"subset[{i}].minReplicas must be less than or equal to maxReplicas"
                )
            )
    if fixed_count and elastic:
        errors.append(
            invalid(
                SUBSETS, "array", "subset.replicas and subset.minReplicas/subset.maxReplicas are mutually exclusive"
            )
        )
        return errors
    if elastic:
        if total == -1:
            errors.append(
                invalid(
                    SUBSETS, "array", "spec.replicas must be not empty if subset.minReplicas/subset.maxReplicas is set"
                )
            )
        if bounded >= len(spec.subsets):
            errors.append(invalid(SUBSETS, "array", "at least one subset.maxReplicas must be empty"))
        if min_sum > max_sum:
            errors.append(
                invalid(
                    SUBSETS,
                    "array",
                    "sum of indicated subset.minReplicas should not be greater than "
                    "sum of indicated subset.maxReplicas",
                )
            )
    elif total >= 0 and spec.monotone:
        try:
            split(spec)
        except AllocationError as e:
            errors.append(invalid(SUBSETS, "array", str(e)))
    elif total >= 0:
        if fixed_sum > total:
            errors.append(
                invalid(
                    SUBSETS,
                    "array",
                    f"sum of indicated subset replicas {fixed_sum} should not be greater than "
                    f"UnitedDeployment replicas {total}",
                )
            )
        elif spec.subsets and fixed_count == len(spec.subsets) and fixed_sum != total:
            errors.append(
                invalid(
                    SUBSETS,
                    "array",
                    f"if replicas of all subsets are provided, the sum of indicated subset replicas {fixed_sum} "
                    f"should equal UnitedDeployment replicas {total}",
                )
            )
    elif fixed_count != len(spec.subsets):
        errors.append(
            invalid(
                SUBSETS,
                "array",
                "if UnitedDeployment replicas is not provided, replicas of all subsets should be provided",
            )
        )
    if total > 0 and not spec.subsets:
        errors.append(required(SUBSETS, f"at least one subset is needed to place {total} replicas"))
    return errors


def _apportionment(spec: Spec) -> list[FieldError]:
    """``rounding`` and ``weight``: a weight shares what fixed subsets leave, so it means nothing
    next to ``replicas``; reservation fills subsets in order and takes no weights."""
    errors: list[FieldError] = []
    if spec.rounding not in ("", HALF_UP, MONOTONE):
        errors.append(not_supported(SPEC.child("topology").child("rounding"), spec.rounding, (HALF_UP, MONOTONE)))
    for i, s in enumerate(spec.subsets):
        path = SUBSETS.index(i).child("weight")
        if s.weight is None:
            continue
        if s.replicas is not None:
            errors.append(forbidden(path, "may not be set with replicas: a weight shares what fixed subsets leave"))
        elif s.weight < 0:
            errors.append(invalid(path, s.weight, "must be greater than or equal to 0"))
        if spec.schedule.reserves:
            errors.append(forbidden(path, "not supported with reserveUnschedulablePods, which fills subsets in order"))
    sharing = [s for s in spec.subsets if s.replicas is None]
    if not errors and sharing and all(s.weight == 0 for s in sharing):
        left = shared(spec)
        if left > 0:
            errors.append(invalid(SUBSETS, "array", ZERO_WEIGHTS.format(left=left)))
    return errors


def _replica_value(total: int, value: int | str, path: Path, errors: list[FieldError]) -> int:
    try:
        n = resolve(total, value)
    except ValueError as e:
        errors.append(invalid(path, value, str(e)))
        return 0
    if n > INT32_MAX:
        errors.append(invalid(path, value, f"must be at most {INT32_MAX}"))
    return n


def _subset(
    ud: UnitedDeployment, keys: Keys, template: Template | None, i: int, s: Subset, names: set[str]
) -> list[FieldError]:
    """One subset's rules; ``names`` are the subsets before it (``s`` is added)."""
    spec = ud.spec
    path = SUBSETS.index(i)
    errors: list[FieldError] = []
    if not s.name:
        errors.append(required(path.child("name")))
    elif s.name in names:
        errors.append(duplicate(path.child("name"), s.name))
    else:
        name_errors = dns_label_errors(s.name, path.child("name"))
        errors += name_errors
        if not name_errors and template is not None and template.variant in _REVISION_LABELLED_PODS:
            errors += _child_name_fits(ud.name, s.name, template.variant, path.child("name"))
    names.add(s.name)
    errors += _cluster(ud, s, path.child("cluster"))
    if s.node_selector_term is not None:
        if size(s.node_selector_term) > MAX_PLACEMENT_BYTES:
            errors.append(too_long(path.child("nodeSelectorTerm"), MAX_PLACEMENT_BYTES))
        else:
            errors += node_selector_term_errors(s.node_selector_term, path.child("nodeSelectorTerm"))
    if s.tolerations is not None and size(s.tolerations) > MAX_PLACEMENT_BYTES:
        errors.append(too_long(path.child("tolerations"), MAX_PLACEMENT_BYTES))
    else:
        for j, t in enumerate(s.tolerations or ()):
            errors += toleration_errors(t, path.child("tolerations").index(j))
    if spec.schedule.is_adaptive and s.replicas is not None:
        errors.append(
            forbidden(
                path.child("replicas"), "specify replicas use minReplicas/maxReplicas to enable adaptive strategy"
            )
        )
    if s.patch is not None and size(s.patch) > MAX_PATCH_BYTES:
        errors.append(too_long(path.child("patch"), MAX_PATCH_BYTES))
    elif s.patch is not None and template is not None:
        errors += _patch(spec, template, s, keys, path.child("patch"))
    return errors


def _cluster(ud: UnitedDeployment, s: Subset, path: Path) -> list[FieldError]:
    if s.cluster is None:
        return []
    if ud.group != GROUP:
        return [forbidden(path, f"multi-cluster subsets need the {GROUP} group")]
    return dns_subdomain_errors(s.cluster, path)


def _child_name_fits(ud_name: str, subset: str, variant: str, path: Path) -> list[FieldError]:
    prefix = f"{ud_name}-{subset}-"
    longest = min(len(prefix), GENERATE_NAME_PREFIX_MAX) + 5
    if longest <= STATEFULSET_NAME_MAX:
        return []
    room = STATEFULSET_NAME_MAX - 5 - 2
    return [
        invalid(
            path,
            subset,
            f'child names "{prefix}" plus 5 characters must fit in {STATEFULSET_NAME_MAX} characters for '
            f"{variant} children (their pods' revision label is <child name>-<hash>, at most {LABEL_VALUE_MAX}); "
            f"the UnitedDeployment and subset names may have {room} characters together",
        )
    ]


def _patch(spec: Spec, template: Template, s: Subset, keys: Keys, path: Path) -> list[FieldError]:
    """A subset patch must apply cleanly and keep the pod inside its child's selector."""
    assert s.patch is not None
    extra = sorted(set(s.patch) - {"metadata", "spec"})
    if extra:
        return [
            forbidden(
                path.child(extra[0]),
                "a subset patch applies to the pod template: only metadata and spec may be patched",
            )
        ]
    base = dict(template.pod_template)
    base_meta = dict(base.get("metadata") or {})
    marker = "revision"
    base_meta["labels"] = {**(base_meta.get("labels") or {}), keys.subset_name: s.name, keys.revision: marker}
    base["metadata"] = base_meta
    try:
        patched = place(base, node_selector_term=None, tolerations=None, patch=s.patch)
    except PatchError as e:
        return [invalid(path.child(e.path) if e.path else path, "object", e.message)]
    errors: list[FieldError] = []
    meta = patched.get("metadata") or {}
    for field in ("name", "generateName", "namespace", "ownerReferences"):
        if meta.get(field) != base_meta.get(field):
            errors.append(
                forbidden(path.child("metadata").child(field), "may not be set on the pod template of a child")
            )
    labels = meta.get("labels") or {}
    guarded = {**(spec.selector.match_labels if spec.selector else {}), keys.subset_name: s.name, keys.revision: marker}
    for k, v in guarded.items():
        if labels.get(k) != v:
            errors.append(
                forbidden(
                    path.child("metadata").child("labels").key(k),
                    "may not change a label the child's selector or revision tracking uses",
                )
            )
    if spec.selector is not None and not errors and not label_selector.errors(spec.selector.to_dict(), SPEC):
        sel = label_selector.parse(spec.selector.to_dict())
        if not sel.matches(labels):
            errors.append(
                forbidden(path.child("metadata").child("labels"), "patched pod labels no longer match `selector`")
            )
    if not errors:
        errors += [
            FieldError(str(path), f"Invalid value: patched pod template: {e}")
            for e in pod_template_errors(
                patched, Path("template"), None, claims=_claims(template, Path("template"), [])
            )
        ]
    return errors


def _update_strategy(spec: Spec, group: str) -> list[FieldError]:
    path = SPEC.child("updateStrategy")
    errors: list[FieldError] = []
    kind = spec.update.type or MANUAL
    supported = (MANUAL, PROGRESSIVE) if group == GROUP else (MANUAL,)
    if kind not in supported:
        errors.append(not_supported(path.child("type"), spec.update.type, supported))
    names = {s.name for s in spec.subsets}
    ppath = path.child("manualUpdate").child("partitions")
    for name, value in (spec.update.partitions or {}).items():
        if name not in names:
            errors.append(invalid(ppath, name, f"subset {name} does not exist"))
        if value < 0:
            errors.append(invalid(ppath.key(name), value, "must be greater than or equal to 0"))
    return errors


def _progressive(ud: UnitedDeployment) -> list[FieldError]:
    """The Progressive strategy: ours only (OpenKruise's CRD and controllers know no such type, so
    an ``apps.kruise.io`` manifest asking for it would roll everything at once there), with
    waves naming existing subsets at most once, a budget that parses, and child update
    strategies that can be held back."""
    spec = ud.spec
    path = SPEC.child("updateStrategy")
    ppath = path.child("progressive")
    progressive = spec.update.progressive
    if spec.update.type != PROGRESSIVE:
        if progressive is not None:
            return [forbidden(ppath, "may only be set with type Progressive")]
        return []
    if ud.group != GROUP:
        return []
    errors: list[FieldError] = []
    if spec.update.partitions:
        errors.append(forbidden(path.child("manualUpdate"), "may not be combined with type Progressive"))
    if progressive is None:
        return errors
    names = {s.name for s in spec.subsets}
    seen: set[str] = set()
    for i, wave in enumerate(progressive.waves):
        wpath = ppath.child("waves").index(i).child("subsets")
        if wave.duration is not None:
            try:
                duration_seconds(wave.duration)
            except ValueError as e:
                errors.append(
                    invalid(ppath.child("waves").index(i).child("pause").child("duration"), wave.duration, str(e))
                )
        if not wave.subsets:
            errors.append(required(wpath, "a wave names at least one subset"))
        for j, name in enumerate(wave.subsets):
            if name in seen:
                errors.append(duplicate(wpath.index(j), name))
            elif name not in names:
                errors.append(invalid(wpath.index(j), name, "not a subset of spec.topology.subsets"))
            seen.add(name)
    value = progressive.max_unavailable
    if value is not None:
        try:
            resolve(spec.replicas or 0, value)
        except ValueError:
            errors.append(
                invalid(ppath.child("maxUnavailable"), value, "must be an integer >= 0 or a percentage from 0% to 100%")
            )
    deadline = progressive.progress_deadline_seconds
    if deadline is not None and deadline <= 0:
        errors.append(invalid(ppath.child("progressDeadlineSeconds"), deadline, "must be greater than 0"))
    if spec.schedule.reserves:
        errors.append(
            forbidden(
                SPEC.child("topology").child("scheduleStrategy").child("adaptive").child("reserveUnschedulablePods"),
                "may not be combined with a Progressive update: both set the children's maxUnavailable",
            )
        )
    template = spec.template
    if template is not None:
        errors += _held_back(template)
    return errors


def _held_back(template: Template) -> list[FieldError]:
    """A child whose update strategy takes no partition or rolling ``maxUnavailable``
    (``OnDelete``, ``Recreate``) cannot be rolled wave by wave under a budget."""
    field = "strategy" if template.variant == DEPLOYMENT else "updateStrategy"
    strategy = template.spec.get(field)
    kind = strategy.get("type") if isinstance(strategy, dict) else None
    if kind in (None, "", "RollingUpdate") or template.variant == CLONE_SET:
        return []
    path = SPEC.child("template").child(template.variant).child("spec").child(field).child("type")
    return [invalid(path, kind, "a Progressive update needs RollingUpdate")]


STATEFUL_SET_MUTABLE = frozenset(
    {"template", "updateStrategy", "persistentVolumeClaimRetentionPolicy", "minReadySeconds", "ordinals", "replicas"}
)
"""StatefulSet spec fields an update may change (as OpenKruise's webhook; the API server agrees)."""
ADVANCED_STATEFUL_SET_MUTABLE = frozenset({"template", "updateStrategy", "replicas"})


def _template_update(old: Template, new: Template) -> list[FieldError]:
    if new.variant == STATEFUL_SET:
        mutable, words = (
            STATEFUL_SET_MUTABLE,
            "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy', 'minReadySeconds' and 'ordinals'",
        )
    elif new.variant == ADVANCED_STATEFUL_SET:
        mutable, words = ADVANCED_STATEFUL_SET_MUTABLE, "'template' and 'updateStrategy'"
    else:
        return []
    keys = (set(old.spec) | set(new.spec)) - mutable
    if any(old.spec.get(k) != new.spec.get(k) for k in keys):
        label = "statefulsetTemplate" if new.variant == STATEFUL_SET else "advancedStatefulSetTemplate"
        return [
            forbidden(
                SPEC.child("template").child(new.variant).child("spec"),
                f"updates to {label} spec for fields other than {words} are forbidden",
            )
        ]
    return []


__all__ = ["DEPLOYMENT", "pod_template_errors", "validate", "validate_update"]
