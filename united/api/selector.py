"""Label selectors: validate, match, and render them as the canonical string.

The canonical string (``status.labelSelector``) is what HPA reads through the scale
subresource, so it must be the exact format of apimachinery's ``labels.Selector.String()``:
requirements sorted by key, ``k=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``, ``!k``,
joined by commas, with values sorted inside sets. ``matchLabels`` entries are equality
requirements (``k=v``); a ``matchExpressions`` ``In`` stays ``k in (v)`` even with one value,
as ``metav1.LabelSelectorAsSelector`` builds them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from united.api.field import FieldError, Path, invalid, not_supported, required
from united.api.names import label_key_errors, label_value_errors

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
#: The operator of a ``matchLabels`` entry (apimachinery's ``selection.Equals``).
EQUALS = "="


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator in ("In", EQUALS):
            return labels.get(self.key) in self.values
        if self.operator == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == "Exists":
            return self.key in labels
        return self.key not in labels

    def __str__(self) -> str:
        if self.operator == "Exists":
            return self.key
        if self.operator == "DoesNotExist":
            return f"!{self.key}"
        values = ",".join(sorted(self.values))
        if self.operator == EQUALS:
            return f"{self.key}={values}"
        return f"{self.key} {self.operator.lower()} ({values})"


@dataclass(frozen=True, slots=True)
class Selector:
    """A parsed selector; the empty selector matches everything (as in apimachinery)."""

    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in sorted(self.requirements, key=lambda r: r.key))


def parse(selector: Mapping[str, Any]) -> Selector:
    """Parse a ``metav1.LabelSelector`` dict; call :func:`errors` first for untrusted input."""
    reqs = [Requirement(k, EQUALS, (v,)) for k, v in (selector.get("matchLabels") or {}).items()]
    for e in selector.get("matchExpressions") or ():
        reqs.append(Requirement(e["key"], e["operator"], tuple(e.get("values") or ())))
    return Selector(tuple(reqs))


def errors(selector: Mapping[str, Any], path: Path) -> list[FieldError]:
    """Validate like apimachinery's ``ValidateLabelSelector``."""
    out: list[FieldError] = []
    for k, v in (selector.get("matchLabels") or {}).items():
        out += label_key_errors(k, path.child("matchLabels"))
        out += label_value_errors(v, path.child("matchLabels").key(k))
    for i, e in enumerate(selector.get("matchExpressions") or ()):
        p = path.child("matchExpressions").index(i)
        op, values = e.get("operator"), e.get("values") or []
        if not e.get("key"):
            out.append(required(p.child("key")))
        else:
            out += label_key_errors(e["key"], p.child("key"))
        if op not in OPERATORS:
            out.append(not_supported(p.child("operator"), op, OPERATORS))
        elif op in ("In", "NotIn") and not values:
            out.append(required(p.child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist") and values:
            out.append(
                invalid(p.child("values"), values, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
            )
        for j, v in enumerate(values):
            out += label_value_errors(v, p.child("values").index(j))
    return out


_TERM = re.compile(
    r"\s*(?:!\s*(?P<absent>[^\s,!=()<>]+)"
    r"|(?P<key>[^\s,!=()<>]+)\s*(?:(?P<op>==|!=|=|<|>)\s*(?P<value>[^\s,!=()<>]*)"
    r"|\s(?P<set>in|notin)\s*\((?P<values>[^()]*)\))?)\s*(?:,|$)"
)


def parse_text(text: str) -> Selector:
    """Parse a selector in its string form (:func:`text_errors` first for untrusted input), to
    match locally what a LIST's ``labelSelector`` would; ``ValueError`` for what
    :class:`Requirement` cannot express (``<``, ``>``) or cannot parse."""
    reqs: list[Requirement] = []
    pos = 0
    while pos < len(text):
        term = _TERM.match(text, pos)
        if term is None or term.end() == pos:
            raise ValueError(f"unable to parse requirement at character {pos + 1}")
        pos = term.end()
        if term["absent"]:
            reqs.append(Requirement(term["absent"], "DoesNotExist"))
        elif term["set"]:
            values = tuple(v.strip() for v in term["values"].split(","))
            reqs.append(Requirement(term["key"], "In" if term["set"] == "in" else "NotIn", values))
        elif term["op"] in ("=", "=="):
            reqs.append(Requirement(term["key"], EQUALS, (term["value"] or "",)))
        elif term["op"] == "!=":
            reqs.append(Requirement(term["key"], "NotIn", (term["value"] or "",)))
        elif term["op"]:
            raise ValueError(f"{term['key']}: {term['op']} is not supported here")
        else:
            reqs.append(Requirement(term["key"], "Exists"))
    return Selector(tuple(reqs))


def text_errors(text: str, path: Path) -> list[FieldError]:
    """Validate a selector in its string form (``a=b,c in (d,e),!f``, what ``--selector``
    and a LIST's ``labelSelector`` take), so a typo is reported before the API server
    refuses every LIST with it."""
    out: list[FieldError] = []
    pos = 0
    while pos < len(text):
        term = _TERM.match(text, pos)
        if term is None or term.end() == pos:
            return [invalid(path, text, f"unable to parse requirement at character {pos + 1}")]
        pos = term.end()
        key = term["absent"] or term["key"]
        out += label_key_errors(key, path)
        values = [v.strip() for v in term["values"].split(",")] if term["set"] else [term["value"] or ""]
        if term["op"] in ("<", ">") and not (term["value"] or "").isdigit():
            out.append(invalid(path, text, f"{key}: {term['op']} needs an integer value"))
        elif term["op"] or term["set"]:
            for value in values:
                out += label_value_errors(value, path)
    return out
