"""Validation of a pod template (or a pod): the parts of Kubernetes core's ``ValidatePodSpec``
users break most, caught before anything is stored.

Not all of it: the API server re-validates every object it stores. A UnitedDeployment's
workload template and a WorkloadSpread subset's patched pod share these rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from united.api import selector as label_selector
from united.api.field import FieldError, Path, duplicate, forbidden, invalid, not_supported, required
from united.api.names import dns_label_errors, label_key_errors, label_value_errors

#: Restart policies of pods a ReplicaSet, StatefulSet or CloneSet runs.
RESTART_ALWAYS = ("Always",)
#: Every restart policy a pod may have (a Job's pods too).
RESTART_POLICIES = ("Always", "OnFailure", "Never")
#: The one restart policy an init container may have: ``Always`` makes it a sidecar (Kubernetes
#: 1.28+, GA 1.33), started in order before the containers and running beside them.
SIDECAR = ("Always",)
_PROTOCOLS = ("TCP", "UDP", "SCTP")


def pod_template_errors(
    pod: Mapping[str, Any],
    path: Path,
    sel: label_selector.Selector | None,
    *,
    claims: frozenset[str] | set[str] = frozenset(),
    restart_policies: tuple[str, ...] = RESTART_ALWAYS,
) -> list[FieldError]:
    """The parts of Kubernetes' pod-template validation a workload's template must pass.

    ``claims`` are the workload's volumeClaimTemplates, which containers may mount like
    volumes. ``restart_policies`` are those the pod's controller allows: only ``Always``
    (and no ``activeDeadlineSeconds``) for the long-running workloads, any for a pod that
    may belong to a Job.
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
    if policy is not None and policy not in restart_policies:
        errors.append(not_supported(spath.child("restartPolicy"), policy, restart_policies))
    if restart_policies == RESTART_ALWAYS and spec.get("activeDeadlineSeconds") is not None:
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
        for i, c in enumerate(items(spec.get(field), spath.child(field), errors)):
            errors += _container(c, spath.child(field).index(i), seen, volumes)
            if field == "initContainers" and isinstance(c, dict) and c.get("restartPolicy") not in (None, *SIDECAR):
                policy_path = spath.child(field).index(i).child("restartPolicy")
                errors.append(not_supported(policy_path, c.get("restartPolicy"), SIDECAR))
    return errors


def items(value: Any, path: Path, errors: list[FieldError]) -> list[Any]:
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
    for i, t in enumerate(items(spec.get("tolerations"), path.child("tolerations"), errors)):
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
    for i, term in enumerate(items(node.get("nodeSelectorTerms"), terms, errors)):
        if not isinstance(term, dict):
            errors.append(invalid(terms.index(i), term, "must be an object"))
        else:
            items(term.get("matchExpressions"), terms.index(i).child("matchExpressions"), errors)
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
    for i, port in enumerate(items(c.get("ports"), path.child("ports"), errors)):
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
    for i, env in enumerate(items(c.get("env"), path.child("env"), errors)):
        if not isinstance(env, dict) or not env.get("name"):
            errors.append(required(path.child("env").index(i).child("name")))
    for i, mount in enumerate(items(c.get("volumeMounts"), path.child("volumeMounts"), errors)):
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
