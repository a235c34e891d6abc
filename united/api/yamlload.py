"""Load YAML someone else wrote (manifests, STATE files, kubeconfigs, kustomizations) with
bounded cost.

PyYAML shares an aliased node instead of copying it, so loading an alias bomb (each
anchor a list of nine aliases of the previous one) is cheap; whoever walks the result
then is not: a few hundred bytes expand to gigabytes when validated, serialized or
copied. A self-referencing alias (``&a [*a]``) makes the walk endless, and a document
nested a few hundred levels deep overflows the composer's own recursion. So this loader
counts, while composing:

* **what every alias adds** when expanded (a scalar weighs its length plus one, a
  collection one plus its items), refusing a stream once the sum passes
  :data:`MAX_ALIAS_EXPANSION`: ordinary anchors (a shared env list, a repeated
  resources block) stay far below it;
* **aliases to a node still being composed**, refused (the result would be cyclic);
* **nesting**, refused beyond :data:`~united.api.decode.MAX_DEPTH` containers, the depth
  the controller decodes objects to.

Each refusal is a :class:`yaml.composer.ComposerError` with a mark, so callers report it as
any other YAML syntax error, at its line and column.
"""

from __future__ import annotations

from typing import Any, Final, cast

import yaml
from yaml.composer import ComposerError
from yaml.error import Mark
from yaml.events import AliasEvent, CollectionStartEvent, Event, NodeEvent
from yaml.nodes import Node

from united.api.decode import MAX_DEPTH

MAX_ALIAS_EXPANSION: Final = 1024 * 1024
"""Weight (about the bytes they would serialize to) all aliases of a stream may add when
expanded: twice the largest ``spec`` the controller accepts."""


class BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader with bounded alias expansion and nesting (see the module)."""

    def __init__(self, stream: str | bytes) -> None:
        super().__init__(stream)
        self._weights: dict[str, int] = {}
        self._expanded = 0
        self._weight = 0
        self._depth = 0

    def compose_document(self) -> Node | None:
        self._weights = {}
        return super().compose_document()

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event: Event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, AliasEvent):
            if event.anchor is not None and event.anchor in self.anchors:
                weight = self._weights.get(event.anchor)
                if weight is None:
                    raise _refusal(f"alias *{event.anchor} refers to its own anchor", event)
                self._expanded += weight
                self._weight += weight
                if self._expanded > MAX_ALIAS_EXPANSION:
                    raise _refusal(f"aliases expand to more than {MAX_ALIAS_EXPANSION} bytes", event)
            return super().compose_node(parent, index)
        anchor = event.anchor if isinstance(event, NodeEvent) else None
        collection = isinstance(event, CollectionStartEvent)
        if collection:
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise _refusal(f"nested deeper than {MAX_DEPTH} levels", event)
        before = self._weight
        node = super().compose_node(parent, index)
        if collection:
            self._depth -= 1
            self._weight += 1
        elif node is not None:
            self._weight += len(node.value) + 1
        if anchor is not None:
            self._weights[anchor] = self._weight - before
        return node


def _refusal(problem: str, event: Event) -> ComposerError:
    return ComposerError(None, None, problem, cast(Mark, event.start_mark))


def load(text: str, loader: type[BoundedLoader] = BoundedLoader) -> Any:
    """The single document in ``text`` (``None`` when empty)."""
    return yaml.load(text, Loader=loader)


def load_all(text: str, loader: type[BoundedLoader] = BoundedLoader) -> list[Any]:
    """Every document in ``text``, ``None`` for empty ones."""
    return list(yaml.load_all(text, Loader=loader))
