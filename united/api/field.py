"""Field paths and field errors in the Kubernetes style.

Every problem with a manifest is reported as ``field.path: message`` (for example
``spec.topology.subsets[1].name: Duplicate value: "subset-a"``), the same shape the
Kubernetes API server uses, so users can paste an error next to ``kubectl explain`` and
tools can parse it. The message prefixes (``Required value``, ``Invalid value``,
``Duplicate value``, ``Unsupported value``, ``Forbidden``) match apimachinery's
``field.ErrorType`` strings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Path:
    """An immutable field path; ``Path("spec").child("replicas")`` renders ``spec.replicas``."""

    text: str = ""

    def child(self, name: str) -> Path:
        return Path(f"{self.text}.{name}" if self.text else name)

    def index(self, i: int) -> Path:
        return Path(f"{self.text}[{i}]")

    def key(self, k: str) -> Path:
        return Path(f"{self.text}[{k}]")

    def __str__(self) -> str:
        return self.text or "<root>"


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem at one field; ``str()`` gives the ``field: message`` line the CLI prints."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"

    def as_dict(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message}


class ManifestError(Exception):
    """Raised where a manifest cannot be turned into a model at all; carries every error found."""

    def __init__(self, errors: Iterable[FieldError]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(str(e) for e in self.errors))


def show(value: Any) -> str:
    """Render a value the way apimachinery does in messages: strings quoted, scalars bare."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # Go's %q keeps printable non-ASCII
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return "array"
    return "object"


def required(path: Path, detail: str = "") -> FieldError:
    return FieldError(str(path), "Required value" + (f": {detail}" if detail else ""))


def invalid(path: Path, value: Any, detail: str) -> FieldError:
    return FieldError(str(path), f"Invalid value: {show(value)}: {detail}")


def duplicate(path: Path, value: Any) -> FieldError:
    return FieldError(str(path), f"Duplicate value: {show(value)}")


def forbidden(path: Path, detail: str) -> FieldError:
    return FieldError(str(path), f"Forbidden: {detail}")


def too_many(path: Path, count: int, limit: int) -> FieldError:
    return FieldError(str(path), f"Too many: {count}: must have at most {limit} items")


def too_long(path: Path, limit: int) -> FieldError:
    return FieldError(str(path), f"Too long: must have at most {limit} bytes")


def not_supported(path: Path, value: Any, supported: Iterable[str]) -> FieldError:
    options = ", ".join(json.dumps(s) for s in supported)
    return FieldError(str(path), f"Unsupported value: {show(value)}: supported values: {options}")
