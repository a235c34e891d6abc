"""Validation, as OpenKruise's validating webhook does it (reference sections 4.2 to 4.4).

Run on a *defaulted* model (:mod:`united.uniteddeployment.defaults`), like the webhook after the mutating
one. Every rule reports a :class:`~united.api.field.FieldError`. The reference's quirks are
fixed and the fixes named here:

* messages print the real ``spec.replicas`` (the reference prints a memory address);
* the Advanced StatefulSet label error uses its own path;
* a tolerations change is reported once;
* CloneSet templates are validated too (the reference accepts any CloneSet template, then
  creates children its own selector cannot find, forever);
* derived names must fit: the revision label and StatefulSet/CloneSet pod labels have a
  63-character limit that the reference leaves to fail at pod creation;
* a subset patch must apply, and may not move pods out of their child's selector or touch
  the pod template's name, namespace or owner references;
* what one UnitedDeployment may ask is bounded (:mod:`united.api.limits`): the reference
  merges any number of patches of any size on its one reconcile loop.

:func:`checks` runs the rules in steps of bounded cost, so that the controller can let its
event loop breathe between subsets; :func:`validate` is all the steps at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

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
    label_key_errors,
    label_value_errors,
)
from united.placement import selector as label_selector
from united.placement.intstr import INT32_MAX, resolve
from united.placement.patch import PatchError
from united.placement.subset import place
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import (
    ADAPTIVE,
    ADVANCED_STATEFUL_SET,
    CLONE_SET,
    DEPLOYMENT,
    FIXED,
    MANUAL,
    STATEFUL_SET,
    TEMPLATE_VARIANTS,
    Json,
    Spec,
    Subset,
    Template,
    UnitedDeployment,
)

SPEC = Path("spec")
SUBSETS = SPEC.child("topology").child("subsets")
#: Kinds whose pods carry ``<workload name>-<hash>`` in a label, capping the workload name.
_REVISION_LABELLED_PODS = (STATEFUL_SET, ADVANCED_STATEFUL_SET, CLONE_SET)
_RESTART_ALWAYS = ("Always",)
_PROTOCOLS = ("TCP", "UDP", "SCTP")
_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


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
    yield errors + _update_strategy(spec)


def validate_update(old: UnitedDeployment, new: UnitedDeployment) -> list[FieldError]:
    """Update rules on top of the create rules (reference 4.4).

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
        for c in _items(
            template.spec.get("volumeClaimTemplates"), tpath.child("spec").child("volumeClaimTemplates"), errors
        )
        if isinstance(c, dict) and isinstance(c.get("metadata"), dict) and isinstance(c["metadata"].get("name"), str)
    }


def pod_template_errors(
    pod: Mapping[str, Any],
    path: Path,
    sel: label_selector.Selector | None,
    *,
    claims: frozenset[str] | set[str] = frozenset(),
) -> list[FieldError]:
    """The parts of Kubernetes' pod-template validation a workload's template must pass.

    Not all of it: the API server re-validates every child it stores. These are the rules
    users break most, caught before any child is touched. ``claims`` are the workload's
    volumeClaimTemplates, which containers may mount like volumes.
    """
    errors: list[FieldError] = []
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    lpath = path.child("metadata").child("labels")
    for k, v in labels.items():
        errors += label_key_errors(k, lpath)
        if isinstance(v, str):
            errors += label_value_errors(v, lpath.key(k))
        else:
            errors.append(invalid(lpath.key(k), v, "must be a string"))
    if sel is not None and not sel.matches(labels):
        errors.append(invalid(lpath, labels, "`selector` does not match template `labels`"))
    spec = pod.get("spec")
    spath = path.child("spec")
    if not isinstance(spec, dict):
        return [*errors, required(spath)]
    policy = spec.get("restartPolicy")
    if policy is not None and policy not in _RESTART_ALWAYS:
        errors.append(not_supported(spath.child("restartPolicy"), policy, _RESTART_ALWAYS))
    if spec.get("activeDeadlineSeconds") is not None:
        errors.append(
            forbidden(spath.child("activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicaSet is not Supported")
        )
    errors += _placement_shape(spec, spath)
    volumes = _named(spec.get("volumes"), spath.child("volumes"), errors) | set(claims)
    seen: set[str] = set()
    containers = spec.get("containers")
    if not containers:
        errors.append(required(spath.child("containers")))
    for field in ("initContainers", "containers"):
        for i, c in enumerate(_items(spec.get(field), spath.child(field), errors)):
            errors += _container(c, spath.child(field).index(i), seen, volumes)
    return errors


def _items(value: Any, path: Path, errors: list[FieldError]) -> list[Any]:
    """A list field of a pod template; null is an empty list, anything else not a list an error."""
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append(invalid(path, value, "must be an array"))
        return []
    return value


def _placement_shape(spec: Mapping[str, Any], path: Path) -> list[FieldError]:
    """The pod fields a subset's placement writes into must have their API types."""
    errors: list[FieldError] = []
    for i, t in enumerate(_items(spec.get("tolerations"), path.child("tolerations"), errors)):
        if not isinstance(t, dict):
            errors.append(invalid(path.child("tolerations").index(i), t, "must be an object"))
    node = spec
    for field in ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"):
        path = path.child(field)
        value = node.get(field)
        if value is None:
            return errors
        if not isinstance(value, dict):
            return [*errors, invalid(path, value, "must be an object")]
        node = value
    terms = path.child("nodeSelectorTerms")
    for i, term in enumerate(_items(node.get("nodeSelectorTerms"), terms, errors)):
        if not isinstance(term, dict):
            errors.append(invalid(terms.index(i), term, "must be an object"))
        else:
            _items(term.get("matchExpressions"), terms.index(i).child("matchExpressions"), errors)
    return errors


def _named(items: Any, path: Path, errors: list[FieldError]) -> set[str]:
    names: set[str] = set()
    if not isinstance(items, list):
        if items is not None:
            errors.append(invalid(path, items, "must be an array"))
        return names
    for i, item in enumerate(items):
        name = item.get("name") if isinstance(item, dict) else None
        if not name:
            errors.append(required(path.index(i).child("name")))
        elif not isinstance(name, str):
            errors.append(invalid(path.index(i).child("name"), name, "must be a string"))
        elif dns_label_errors(name, path.index(i).child("name")):
            errors += dns_label_errors(name, path.index(i).child("name"))
        elif name in names:
            errors.append(duplicate(path.index(i).child("name"), name))
        else:
            names.add(name)
    return names


def _container(c: Any, path: Path, seen: set[str], volumes: set[str]) -> list[FieldError]:
    if not isinstance(c, dict):
        return [invalid(path, c, "must be an object")]
    errors: list[FieldError] = []
    name = c.get("name")
    if not name:
        errors.append(required(path.child("name")))
    elif not isinstance(name, str):
        errors.append(invalid(path.child("name"), name, "must be a string"))
    else:
        errors += dns_label_errors(name, path.child("name"))
        if name in seen:
            errors.append(duplicate(path.child("name"), name))
        seen.add(name)
    if not c.get("image"):
        errors.append(required(path.child("image")))
    port_names: set[str] = set()
    for i, port in enumerate(_items(c.get("ports"), path.child("ports"), errors)):
        p = path.child("ports").index(i)
        if not isinstance(port, dict):
            errors.append(invalid(p, port, "must be an object"))
            continue
        number = port.get("containerPort")
        if number is None:
            errors.append(required(p.child("containerPort")))
        elif isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= 65535:
            errors.append(invalid(p.child("containerPort"), number, "must be between 1 and 65535, inclusive"))
        protocol = port.get("protocol")
        if protocol is not None and protocol not in _PROTOCOLS:
            errors.append(not_supported(p.child("protocol"), protocol, _PROTOCOLS))
        pname = port.get("name")
        if pname and not isinstance(pname, str):
            errors.append(invalid(p.child("name"), pname, "must be a string"))
        elif pname:
            if pname in port_names:
                errors.append(duplicate(p.child("name"), pname))
            port_names.add(pname)
    for i, env in enumerate(_items(c.get("env"), path.child("env"), errors)):
        if not isinstance(env, dict) or not env.get("name"):
            errors.append(required(path.child("env").index(i).child("name")))
    for i, mount in enumerate(_items(c.get("volumeMounts"), path.child("volumeMounts"), errors)):
        m = path.child("volumeMounts").index(i)
        if not isinstance(mount, dict):
            errors.append(invalid(m, mount, "must be an object"))
            continue
        if not mount.get("name"):
            errors.append(required(m.child("name")))
        elif not isinstance(mount["name"], str):
            errors.append(invalid(m.child("name"), mount["name"], "must be a string"))
        elif mount["name"] not in volumes:
            errors.append(FieldError(str(m.child("name")), f"Not found: {mount['name']!r}".replace("'", '"')))
        if not mount.get("mountPath"):
            errors.append(required(m.child("mountPath")))
    return errors


def _subset_replicas(spec: Spec) -> list[FieldError]:
    """Reference 4.3 (``validateSubsetReplicasV1beta1``), with the real numbers in messages."""
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
    if s.node_selector_term is not None:
        if size(s.node_selector_term) > MAX_PLACEMENT_BYTES:
            errors.append(too_long(path.child("nodeSelectorTerm"), MAX_PLACEMENT_BYTES))
        else:
            errors += _node_selector_term(s.node_selector_term, path.child("nodeSelectorTerm"))
    if s.tolerations is not None and size(s.tolerations) > MAX_PLACEMENT_BYTES:
        errors.append(too_long(path.child("tolerations"), MAX_PLACEMENT_BYTES))
    else:
        for j, t in enumerate(s.tolerations or ()):
            errors += _toleration(t, path.child("tolerations").index(j))
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


def _node_selector_term(term: Json, path: Path) -> list[FieldError]:
    errors: list[FieldError] = []
    for field, allowed_keys in (("matchExpressions", None), ("matchFields", ("metadata.name",))):
        for i, req in enumerate(term.get(field) or ()):
            p = path.child(field).index(i)
            key, op, values = req.get("key"), req.get("operator"), req.get("values") or []
            if not key:
                errors.append(required(p.child("key")))
            elif allowed_keys is not None:
                if key not in allowed_keys:
                    errors.append(not_supported(p.child("key"), key, allowed_keys))
            else:
                errors += label_key_errors(key, p.child("key"))
            ops = _OPERATORS if allowed_keys is None else ("In", "NotIn")
            if op not in ops:
                errors.append(not_supported(p.child("operator"), op, ops))
            elif op in ("In", "NotIn") and not values:
                errors.append(required(p.child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
            elif op in ("Exists", "DoesNotExist") and values:
                errors.append(
                    forbidden(p.child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
                )
            elif op in ("Gt", "Lt") and (len(values) != 1 or not str(values[0]).lstrip("-").isdigit()):
                errors.append(
                    required(p.child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'")
                )
            if allowed_keys is not None and op in ("In", "NotIn") and len(values) != 1:
                errors.append(
                    required(
                        p.child("values"),
                        "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                    )
                )
    return errors


def _toleration(t: Json, path: Path) -> list[FieldError]:
    errors: list[FieldError] = []
    key, op, value, effect = t.get("key"), t.get("operator"), t.get("value"), t.get("effect")
    if key:
        errors += label_key_errors(key, path.child("key"))
    if not key and op != "Exists":
        errors.append(
            invalid(
                path.child("operator"),
                op,
                'operator must be Exists when `key` is empty, which means "match all values and all keys"',
            )
        )
    if op not in (None, "", "Equal", "Exists"):
        errors.append(not_supported(path.child("operator"), op, ("Equal", "Exists")))
    if op == "Exists" and value:
        errors.append(invalid(path.child("operator"), op, "value must be empty when `operator` is 'Exists'"))
    elif value:
        errors += label_value_errors(str(value), path.child("value"))
    if effect not in (None, "") and effect not in _EFFECTS:
        errors.append(not_supported(path.child("effect"), effect, _EFFECTS))
    if t.get("tolerationSeconds") is not None and effect != "NoExecute":
        errors.append(
            invalid(path.child("effect"), effect, "effect must be 'NoExecute' when `tolerationSeconds` is set")
        )
    return errors


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


def _update_strategy(spec: Spec) -> list[FieldError]:
    path = SPEC.child("updateStrategy")
    errors: list[FieldError] = []
    kind = spec.update.type or MANUAL
    if kind != MANUAL:
        errors.append(not_supported(path.child("type"), spec.update.type, (MANUAL,)))
    names = {s.name for s in spec.subsets}
    ppath = path.child("manualUpdate").child("partitions")
    for name, value in (spec.update.partitions or {}).items():
        if name not in names:
            errors.append(invalid(ppath, name, f"subset {name} does not exist"))
        if value < 0:
            errors.append(invalid(ppath.key(name), value, "must be greater than or equal to 0"))
    return errors


STATEFUL_SET_MUTABLE = frozenset(
    {"template", "updateStrategy", "persistentVolumeClaimRetentionPolicy", "minReadySeconds", "ordinals", "replicas"}
)
"""StatefulSet spec fields an update may change (reference 4.4; the API server agrees)."""
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
