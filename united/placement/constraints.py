"""Validation of what a subset writes into its pods' scheduling: a required node selector
term, preferred scheduling terms and tolerations.

The rules and messages are Kubernetes core's (``ValidateNodeSelectorTerm``,
``ValidatePreferredSchedulingTerms``, ``ValidateTolerations``), so that a subset is refused
where the API server would later refuse its pods. UnitedDeployment and WorkloadSpread
subsets share them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from united.api.document import Json
from united.api.field import FieldError, Path, forbidden, invalid, not_supported, required
from united.api.names import label_key_errors, label_value_errors

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def node_selector_term_errors(term: Json, path: Path) -> list[FieldError]:
    """``ValidateNodeSelectorTerm``; a term read from a schemaless place may hold anything."""
    errors: list[FieldError] = []
    for field, allowed_keys in (("matchExpressions", None), ("matchFields", ("metadata.name",))):
        reqs = term.get(field) or []
        if not isinstance(reqs, list):
            errors.append(invalid(path.child(field), reqs, "must be an array"))
            continue
        for i, req in enumerate(reqs):
            p = path.child(field).index(i)
            shape = _requirement_shape(req, p)
            if shape:
                errors += shape
                continue
            key, op, values = req.get("key"), req.get("operator"), req.get("values") or []
            if not key:
                errors.append(required(p.child("key")))
            elif allowed_keys is not None:
                if key not in allowed_keys:
                    errors.append(not_supported(p.child("key"), key, allowed_keys))
            else:
                errors += label_key_errors(key, p.child("key"))
            ops = OPERATORS if allowed_keys is None else ("In", "NotIn")
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


def _requirement_shape(req: Any, path: Path) -> list[FieldError]:
    """A requirement must be ``{key: string, operator: string, values: [string]}`` before its
    rules can be checked."""
    if not isinstance(req, dict):
        return [invalid(path, req, "must be an object")]
    errors = [
        invalid(path.child(field), req[field], "must be a string")
        for field in ("key", "operator")
        if req.get(field) is not None and not isinstance(req[field], str)
    ]
    values = req.get("values")
    if values is not None and not isinstance(values, list):
        errors.append(invalid(path.child("values"), values, "must be an array"))
    elif values:
        errors += [
            invalid(path.child("values").index(j), v, "must be a string")
            for j, v in enumerate(values)
            if not isinstance(v, str)
        ]
    return errors


def toleration_errors(t: Json, path: Path) -> list[FieldError]:
    """``ValidateTolerations`` for one toleration."""
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
    if effect not in (None, "") and effect not in EFFECTS:
        errors.append(not_supported(path.child("effect"), effect, EFFECTS))
    if t.get("tolerationSeconds") is not None and effect != "NoExecute":
        errors.append(
            invalid(path.child("effect"), effect, "effect must be 'NoExecute' when `tolerationSeconds` is set")
        )
    return errors


def preferred_terms_errors(terms: Sequence[Json], path: Path) -> list[FieldError]:
    """Each term's weight is 1-100 and its ``preference`` a valid node selector term."""
    errors: list[FieldError] = []
    for i, term in enumerate(terms):
        weight = term.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= 100:
            errors.append(invalid(path.index(i).child("weight"), weight, "must be in the range 1-100"))
        preference = term.get("preference")
        if isinstance(preference, dict):
            errors += node_selector_term_errors(preference, path.index(i).child("preference"))
        elif preference is not None:
            errors.append(invalid(path.index(i).child("preference"), preference, "must be an object"))
    return errors
