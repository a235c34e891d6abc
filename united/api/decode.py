"""Decode LIST pages and watch events so that one bad object costs one object.

Pod templates are schemaless, so anyone who may create a UnitedDeployment (or a
ControllerRevision: its ``data`` is free-form) can store an object nested thousands of
levels deep. ``json.loads`` then raises ``RecursionError`` (CPython 3.12 has a fixed C
recursion limit, so ``sys.setrecursionlimit`` is no fix; 3.13 decodes it and leaves the
recursion to whoever walks the result). A LIST page is one JSON document: one such item
would make the whole page, and so the whole cluster-wide cache, unreadable forever.

The rules here:

* **A maximum depth**, :data:`MAX_DEPTH` (100) containers from the object's root.
  Kubernetes objects are rarely deeper than ~30 (a UnitedDeployment's pod template with
  affinity terms is ~20), so 100 leaves room for any real manifest and bounds every
  recursive walk downstream (``compact``, render's deep copy, strategic merge,
  validation, ``json.dumps``) far below any recursion limit. A deeper object is
  *undecodable*: the controller does not read it, whatever this interpreter could do.
* **The fast path is unchanged**: ``json.loads`` of the whole page or event, then a
  depth check per item (:func:`bound`; :func:`within` stops at the limit, so its own
  recursion is bounded). Measured on 500 cached-child Deployments of 2 KB: 4 ms per
  page against 7 ms for ``json.loads`` (8 µs an item, ~0.03 s for the 3,500 objects of a
  500-UnitedDeployment cold start). A watch event skips it when its line holds no more
  brackets than the limit allows (counted at C speed: the usual case).
* **Only when ``json.loads`` fails with ``RecursionError``**, a linear, iterative
  scanner (:class:`_Scanner`) finds each item's extent and depth in ``items`` without
  recursion, decodes the items that are within the limit one by one and skips the
  others without decoding them at all.
* **A skipped item is reported, not dropped silently**: :class:`Undecodable` carries a
  stub of the object — ``apiVersion``, ``kind``, ``metadata`` (every field within the
  limit, never ``managedFields``, whose ``fieldsV1`` mirrors the object's nesting) and
  ``status`` when it is within the limit — so callers can log its key and uid and a
  controller can post an Event on it and patch its status.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

import orjson

from united.api.document import Json

MAX_DEPTH = 100
"""Containers (objects and arrays) an object may nest, its root included."""

_STUB_FIELDS = ("apiVersion", "kind", "metadata", "status")
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_STRUCTURE = re.compile(r'[\[\]{}"]')
_STRING_REST = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_SCALAR = re.compile(r"[^,\]}\s]+")


class Undecodable(NamedTuple):
    """An object the client would not decode: what is known of it, and why."""

    object: Json
    """A stub: ``apiVersion``, ``kind``, ``metadata`` and ``status`` where readable."""
    reason: str


class Page(NamedTuple):
    """A decoded LIST page: its own fields (``items`` excluded), the items, the skipped."""

    fields: Json
    items: list[Json]
    skipped: list[Undecodable]


def loads(data: bytes | str) -> Any:
    """``orjson`` (2-3x faster than ``json`` on Kubernetes objects: every answer and watch event
    goes through here). Nesting past its 1024 levels goes to ``json.loads``, so the outcomes stay
    what they were: ``RecursionError`` for the too deep, ``ValueError`` for what is not JSON.
    An integer outside 64 bits becomes a float, as the API server itself stores one (Go's
    unstructured decoding: int64, else float64), so its answers never hold one."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def dumps(value: Any) -> bytes:
    """Compact JSON of a request body: ``orjson`` (an order of magnitude faster than
    ``json.dumps``), ``json`` for what it refuses (integers beyond 64 bits, nesting past 254)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, separators=(",", ":")).encode()


def within(value: Any, levels: int = MAX_DEPTH) -> bool:
    """True when ``value`` nests at most ``levels`` containers, itself included (a scalar: 0).

    Stops descending at the limit, so its recursion never goes deeper than ``levels``."""
    kind = type(value)
    if kind is not dict and kind is not list:
        return True
    if levels <= 0:
        return False
    for child in value.values() if kind is dict else value:
        child_kind = type(child)
        if (child_kind is dict or child_kind is list) and not within(child, levels - 1):
            return False
    return True


def small(data: bytes | str, *, levels: int = MAX_DEPTH) -> Any:
    """One short JSON value someone else wrote (an annotation), nested at most ``levels`` deep.

    Raises ``ValueError`` for what is not JSON and for what is nested deeper, never
    ``RecursionError``: such a value is one bad field, not a traceback in whoever reads it.
    The caller bounds the length; this bounds the nesting."""
    try:
        value = loads(data)
    except RecursionError:
        raise ValueError(f"nested deeper than {levels} levels") from None
    if _brackets(data) > levels and not within(value, levels):
        raise ValueError(f"nested deeper than {levels} levels")
    return value


def _reason(too_deep: list[str], levels: int) -> str:
    fields = ", ".join(too_deep) or "the object"
    return f"{fields}: nested deeper than {levels} levels, more than the controller reads"


def bound(obj: Json, *, levels: int = MAX_DEPTH) -> Undecodable | None:
    """``None`` when decoded ``obj`` is within ``levels``; else what to report instead of it.

    ``metadata.managedFields`` does not count: its ``fieldsV1`` mirrors the object's own
    nesting a few levels deeper, so an object just within the limit would fail on it. When it
    is the only part too deep, it is dropped from ``obj`` (in place) and ``obj`` is kept."""
    if within(obj, levels):
        return None
    metadata = obj.get("metadata")
    meta = {k: v for k, v in metadata.items() if k != "managedFields"} if isinstance(metadata, dict) else metadata
    too_deep = [k for k, v in obj.items() if not within(meta if k == "metadata" else v, levels - 1)]
    if not too_deep:
        if isinstance(metadata, dict):
            metadata.pop("managedFields", None)
        return None
    stub: Json = {}
    for name in _STUB_FIELDS:
        value = obj.get(name)
        if name == "metadata" and isinstance(meta, dict):
            value = {k: v for k, v in meta.items() if within(v, levels - 2)}
        if value is not None and within(value, levels - 1):
            stub[name] = value
    return Undecodable(stub, _reason(too_deep, levels))


class _Scanner:
    """Walks JSON text without recursion: extents and depths of values, members of objects.

    Used only for documents ``json.loads`` could not decode, so clarity wins over speed; still
    linear (regular expressions skip strings and everything between brackets)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def skip_space(self, pos: int) -> int:
        match = _WHITESPACE.match(self.text, pos)
        assert match is not None  # the pattern matches the empty string
        return match.end()

    def expect(self, pos: int, char: str) -> int:
        pos = self.skip_space(pos)
        if self.text[pos : pos + 1] != char:
            raise ValueError(f"expected {char!r} at offset {pos}")
        return self.skip_space(pos + 1)

    def string_end(self, pos: int) -> int:
        """The end of the string whose opening quote is just before ``pos``."""
        match = _STRING_REST.match(self.text, pos)
        if match is None:
            raise ValueError(f"unterminated string at offset {pos}")
        return match.end()

    def value(self, pos: int) -> tuple[int, int]:
        """The end of the value starting at ``pos``, and its depth."""
        text = self.text
        first = text[pos : pos + 1]
        if first == '"':
            return self.string_end(pos + 1), 0
        if first not in ("{", "["):
            match = _SCALAR.match(text, pos)
            if match is None:
                raise ValueError(f"expected a value at offset {pos}")
            return match.end(), 0
        depth = deepest = 0
        search = _STRUCTURE.search
        while True:
            match = search(text, pos)
            if match is None:
                raise ValueError("unterminated container")
            char = match.group()
            pos = match.end()
            if char == '"':
                pos = self.string_end(pos)
            elif char in "{[":
                depth += 1
                deepest = max(deepest, depth)
            else:
                depth -= 1
                if depth == 0:
                    return pos, deepest

    def members(self, pos: int) -> Iterator[tuple[str, int, int, int]]:
        """``(key, start, end, depth)`` of each member of the object starting at ``pos``."""
        pos = self.expect(pos, "{")
        if self.text[pos : pos + 1] == "}":
            return
        while True:
            if self.text[pos : pos + 1] != '"':
                raise ValueError(f"expected a key at offset {pos}")
            end = self.string_end(pos + 1)
            key, pos = str(json.loads(self.text[pos:end])), end
            start = self.expect(pos, ":")
            end, depth = self.value(start)
            yield key, start, end, depth
            pos = self.skip_space(end)
            if self.text[pos : pos + 1] == "}":
                return
            pos = self.expect(pos, ",")

    def elements(self, pos: int) -> Iterator[tuple[int, int, int]]:
        """``(start, end, depth)`` of each element of the array starting at ``pos``."""
        pos = self.expect(pos, "[")
        if self.text[pos : pos + 1] == "]":
            return
        while True:
            end, depth = self.value(pos)
            yield pos, end, depth
            pos = self.skip_space(end)
            if self.text[pos : pos + 1] == "]":
                return
            pos = self.expect(pos, ",")

    def decode(self, start: int, end: int) -> Any:
        return json.loads(self.text[start:end])

    def object(self, pos: int, levels: int) -> Json | Undecodable:
        """The object starting at ``pos``, decoded member by member (``metadata`` field by
        field, without ``managedFields``, as :func:`bound` does); or, when some member is
        deeper than ``levels`` allows, the stub of what could be read."""
        decoded: Json = {}
        too_deep: list[str] = []
        for key, start, end, depth in self.members(pos):
            if key == "metadata" and self.text[start : start + 1] == "{":
                decoded[key] = meta = {}
                for name, s, e, d in self.members(start):
                    if name == "managedFields":
                        continue
                    if d > levels - 2:
                        too_deep.append(f"metadata.{name}")
                    else:
                        meta[name] = self.decode(s, e)
            elif depth > levels - 1:
                too_deep.append(key)
            else:
                decoded[key] = self.decode(start, end)
        if not too_deep:
            return decoded
        stub = {k: v for k, v in decoded.items() if k in _STUB_FIELDS}
        return Undecodable(stub, _reason(too_deep, levels))


def _split(items: list[Any], levels: int) -> tuple[list[Json], list[Undecodable]]:
    good: list[Json] = []
    skipped: list[Undecodable] = []
    for item in items:
        problem = bound(item, levels=levels) if isinstance(item, dict) else None
        if problem is None:
            good.append(item)
        else:
            skipped.append(problem)
    return good, skipped


def _brackets(data: bytes | str) -> int:
    """An upper bound of the nesting depth of JSON text, at C speed: every container opens
    with one of these characters (those inside strings only make the bound looser)."""
    return data.count(b"{") + data.count(b"[") if isinstance(data, bytes) else data.count("{") + data.count("[")


def document(data: bytes | str, *, levels: int = MAX_DEPTH) -> Any:
    """Decode one answer (a GET, a write's answer); an object nested deeper than ``levels`` is
    returned as its stub (``apiVersion``, ``kind``, ``metadata``, ``status``), so a write to
    such an object (a status patch reporting it) still reads its resourceVersion, and no
    caller walks what the controller does not read. Raises ``ValueError`` for non-JSON."""
    try:
        value = loads(data)
    except RecursionError:
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        scanner = _Scanner(text)
        start = scanner.skip_space(0)
        if text[start : start + 1] != "{":
            raise ValueError("too deep, and not an object") from None
        found = scanner.object(start, levels)
        return found.object if isinstance(found, Undecodable) else found
    problem = bound(value, levels=levels) if isinstance(value, dict) else None
    return value if problem is None else problem.object


def list_page(data: bytes | str, *, levels: int = MAX_DEPTH) -> Page:
    """Decode a LIST page, skipping (and describing) the items nested deeper than ``levels``.

    Raises ``ValueError`` when ``data`` is not a JSON object."""
    try:
        page = loads(data)
    except RecursionError:
        return _scan_page(data.decode("utf-8", "replace") if isinstance(data, bytes) else data, levels)
    if not isinstance(page, dict):
        raise ValueError("a LIST answer must be a JSON object")
    items, skipped = _split(page.pop("items", None) or [], levels)
    return Page(page, items, skipped)


def _scan_page(text: str, levels: int) -> Page:
    scanner = _Scanner(text)
    fields: Json = {}
    items: list[Json] = []
    skipped: list[Undecodable] = []
    for key, start, end, depth in scanner.members(scanner.skip_space(0)):
        if key != "items":
            if depth <= levels:
                fields[key] = scanner.decode(start, end)
            continue
        if text[start : start + 1] != "[":
            continue
        for item_start, item_end, item_depth in scanner.elements(start):
            item = scanner.decode(item_start, item_end) if item_depth <= levels else scanner.object(item_start, levels)
            if isinstance(item, Undecodable):
                skipped.append(item)
            elif isinstance(item, dict):
                items.append(item)
    return Page(fields, items, skipped)


def watch_event(data: bytes | str, *, levels: int = MAX_DEPTH) -> tuple[Json, Undecodable | None]:
    """Decode one watch event line: the event, and when its object is deeper than ``levels``,
    what to report instead (the event's ``object`` is then the stub).

    Raises ``ValueError`` when ``data`` is not a JSON object."""
    try:
        event = loads(data)
    except RecursionError:
        scanner = _Scanner(data.decode("utf-8", "replace") if isinstance(data, bytes) else data)
        event = {}
        problem: Undecodable | None = None
        for key, start, end, depth in scanner.members(scanner.skip_space(0)):
            if key == "object":
                found = scanner.object(start, levels)
                problem = found if isinstance(found, Undecodable) else None
                event[key] = found.object if isinstance(found, Undecodable) else found
            elif depth <= levels:
                event[key] = scanner.decode(start, end)
        return event, problem
    if not isinstance(event, dict):
        raise ValueError("a watch event must be a JSON object")
    obj = event.get("object")
    if not isinstance(obj, dict) or _brackets(data) <= levels + 1:
        return event, None
    problem = bound(obj, levels=levels)
    if problem is not None:
        event["object"] = problem.object
    return event, problem


__all__ = [
    "MAX_DEPTH",
    "Page",
    "Undecodable",
    "bound",
    "document",
    "dumps",
    "list_page",
    "loads",
    "small",
    "watch_event",
    "within",
]
