"""Reading raw JSON into typed models: type checks that collect every error instead of stopping.

Every kind's model parses with one :class:`Reader`, so a wrong type reads the same
``field.path: message`` whichever kind carries it.
"""

from __future__ import annotations

from typing import Any

from united.api.document import Json
from united.api.field import FieldError, Path, invalid
from united.api.intstr import INT32_MAX, IntOrStr


class Reader:
    """Type-checks raw JSON while walking it, collecting every error instead of stopping."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def fail(self, error: FieldError) -> None:
        self.errors.append(error)

    def obj(self, value: Any, path: Path, known: frozenset[str] | None = None) -> Json | None:
        if value is None:
            return None
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            self.fail(invalid(path, value, "must be an object"))
            return None
        if known is not None:
            for key in value:
                if key not in known:
                    self.fail(FieldError(str(path.child(key)), "Unknown field: the API server would drop it"))
        return value

    def array(self, value: Any, path: Path) -> list[Any] | None:
        if value is None:
            return None
        if not isinstance(value, list):
            self.fail(invalid(path, value, "must be an array"))
            return None
        return value

    def int32(self, value: Any, path: Path) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return self.int32(int(value), path)
            self.fail(invalid(path, value, "must be an integer"))
            return None
        if not -(2**31) <= value <= INT32_MAX:
            self.fail(invalid(path, value, f"must be a 32-bit integer (at most {INT32_MAX})"))
            return None
        return value

    def int_or_str(self, value: Any, path: Path) -> IntOrStr | None:
        if isinstance(value, str):
            return value
        if isinstance(value, dict | list):
            self.fail(invalid(path, value, 'must be an integer or a percentage string such as "20%"'))
            return None
        return self.int32(value, path)

    def string(self, value: Any, path: Path) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str):
            self.fail(invalid(path, value, "must be a string"))
            return None
        return value

    def boolean(self, value: Any, path: Path) -> bool | None:
        if value is None:
            return None
        if not isinstance(value, bool):
            self.fail(invalid(path, value, "must be a boolean"))
            return None
        return value

    def str_map(self, value: Any, path: Path) -> dict[str, str]:
        raw = self.obj(value, path)
        out: dict[str, str] = {}
        for k, v in (raw or {}).items():
            if v is None:
                self.fail(invalid(path.key(k), v, "must be a string"))
                continue
            s = self.string(v, path.key(k))
            if s is not None:
                out[k] = s
        return out

    def maps(self, value: Any, path: Path) -> tuple[Json, ...] | None:
        items = self.array(value, path)
        if items is None:
            return None
        out = []
        for i, item in enumerate(items):
            if item is None:
                self.fail(invalid(path.index(i), item, "must be an object"))
                continue
            m = self.obj(item, path.index(i))
            if m is not None:
                out.append(m)
        return tuple(out)

    def requirements(self, value: Any, path: Path) -> tuple[Json, ...]:
        """Label or node-selector requirements: ``{key, operator, values}`` objects."""
        items = self.maps(value, path) or ()
        for i, e in enumerate(items):
            p = path.index(i)
            self.string(e.get("key"), p.child("key"))
            self.string(e.get("operator"), p.child("operator"))
            for j, v in enumerate(self.array(e.get("values"), p.child("values")) or []):
                if v is None:
                    self.fail(invalid(p.child("values").index(j), v, "must be a string"))
                self.string(v, p.child("values").index(j))
        return items
