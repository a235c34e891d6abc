"""Read manifests and state files from disk or stdin, turning every failure into field errors.

YAML is read as Kubernetes reads it (YAML 1.1 scalars via PyYAML's safe loader) except that
timestamps stay strings: a date-looking label value must not become a Python ``date``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from united.api import yamlload
from united.api.field import FieldError, ManifestError, Path, invalid
from united.uniteddeployment.admission import admit
from united.uniteddeployment.allocation import SubsetState
from united.uniteddeployment.model import KIND, UnitedDeployment
from united.workloadspread import model as workloadspread

#: The kinds a manifest file is read for, in the order commands look for them.
KINDS = (KIND, workloadspread.KIND)


class _Loader(yamlload.BoundedLoader):
    """The bounded safe loader without the timestamp resolver."""


_Loader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for ch, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass(frozen=True, slots=True)
class Source:
    """The UnitedDeployment or WorkloadSpread found in a file (or its only document, whatever
    it is), notes about what else was there, and the other documents."""

    document: Any
    notes: list[str] = field(default_factory=list)
    others: list[Any] = field(default_factory=list)


def read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise ManifestError([FieldError(path, f"cannot read: {e.strerror or e}")]) from e
    except UnicodeDecodeError as e:
        raise ManifestError([FieldError(path, f"not UTF-8 text: {e.reason}")]) from e


def load_documents(text: str, *, name: str) -> list[Any]:
    try:
        return [d for d in yamlload.load_all(text, _Loader) if d is not None]
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        raise ManifestError([FieldError(name, f"invalid YAML{where}: {problem}")]) from e


def load(path: str) -> Source:
    """The first UnitedDeployment or WorkloadSpread in ``path`` (``-`` for stdin)."""
    name = "<stdin>" if path == "-" else path
    docs = load_documents(read_text(path), name=name)
    if not docs:
        raise ManifestError([FieldError(name, "no YAML documents found")])
    for i, doc in enumerate(docs):
        if isinstance(doc, dict) and doc.get("kind") in KINDS:
            notes = []
            if len(docs) > 1:
                notes.append(
                    f"{name}: using the {doc['kind']} in document {i + 1}; ignoring {len(docs) - 1} other document(s)"
                )
            return Source(document=doc, notes=notes, others=docs[:i] + docs[i + 1 :])
    if len(docs) == 1:
        # Not a UnitedDeployment; parsing reports what is wrong with it (a list: "<root>: ... must be an object").
        return Source(document=docs[0])
    raise ManifestError([FieldError(name, f"no UnitedDeployment or WorkloadSpread among {len(docs)} documents")])


@dataclass(frozen=True, slots=True)
class State:
    """A STATE file: what exists per subset, and for how long each unreachable subset's
    cluster has been so (``math.inf`` when the file does not say)."""

    subsets: dict[str, SubsetState] = field(default_factory=dict)
    unreachable: dict[str, float] = field(default_factory=dict)


def load_state(path: str) -> State:
    """Parse a STATE file: ``{"subsets": {name: {replicas, readyReplicas, unschedulable, reservedPods,
    clusterUnreachable, unreachableSeconds}}}``."""
    name = "<stdin>" if path == "-" else path
    docs = load_documents(read_text(path), name=name)
    return parse_state(docs[0] if docs else {})


_STATE_FIELDS = {
    "replicas": int,
    "readyReplicas": int,
    "unschedulable": bool,
    "reservedPods": int,
    "clusterUnreachable": bool,
    "unreachableSeconds": int,
}


_ALONE = "needs clusterUnreachable: true"


def parse_state(doc: Any) -> State:
    entries = state_entries(doc, _STATE_FIELDS)
    errors = [
        invalid(Path("state").child("subsets").key(name).child("unreachableSeconds"), seconds, _ALONE)
        for name, values in entries.items()
        if (seconds := values.get("unreachableSeconds")) is not None and not values.get("clusterUnreachable")
    ]
    if errors:
        raise ManifestError(errors)
    return State(
        subsets={
            name: SubsetState(
                replicas=values.get("replicas", 0),
                ready_replicas=values.get("readyReplicas", 0),
                unschedulable=values.get("unschedulable", False),
                reserved_pods=values.get("reservedPods", 0),
                unreachable=values.get("clusterUnreachable", False),
            )
            for name, values in entries.items()
        },
        unreachable={
            name: float(values.get("unreachableSeconds", math.inf))
            for name, values in entries.items()
            if values.get("clusterUnreachable")
        },
    )


def state_entries(doc: Any, fields: Mapping[str, type]) -> dict[str, dict[str, Any]]:
    """The checked fields of each subset of a STATE document ``{"subsets": {<name>: {...}}}``:
    ``fields`` maps each allowed field to ``int`` (a count, at least 0) or ``bool``."""
    root = Path("state")
    if not isinstance(doc, Mapping) or set(doc) - {"subsets"}:
        raise ManifestError([invalid(root, doc, 'must be an object {"subsets": {<name>: {...}}}')])
    subsets = doc.get("subsets") or {}
    if not isinstance(subsets, Mapping):
        raise ManifestError([invalid(root.child("subsets"), subsets, "must be an object keyed by subset name")])
    errors: list[FieldError] = []
    out: dict[str, dict[str, Any]] = {}
    for sname, entry in subsets.items():
        p = root.child("subsets").key(str(sname))
        entry = {} if entry is None else entry
        if not isinstance(entry, Mapping):
            errors.append(invalid(p, entry, "must be an object"))
            continue
        values: dict[str, Any] = {}
        for key, value in entry.items():
            kind = fields.get(key)
            if kind is None:
                errors.append(FieldError(str(p.child(key)), "Unknown field: supported fields: " + ", ".join(fields)))
            elif not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                errors.append(invalid(p.child(key), value, f"must be {'a boolean' if kind is bool else 'an integer'}"))
            elif isinstance(value, int) and not isinstance(value, bool) and value < 0:
                errors.append(invalid(p.child(key), value, "must be greater than or equal to 0"))
            else:
                values[key] = value
        out[str(sname)] = values
    if errors:
        raise ManifestError(errors)
    return out


def read(file: str) -> Source:
    """``load``, with its notes (other documents ignored) on stderr."""
    source = load(file)
    for note in source.notes:
        print(f"note: {note}", file=sys.stderr)
    return source


def read_united(file: str, *, replicas: int | None = None) -> UnitedDeployment:
    """The file's UnitedDeployment, parsed, defaulted and validated (``replicas``: as /scale)."""
    return admit(read(file).document, replicas=replicas)
