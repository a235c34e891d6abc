"""Repeated failures, logged once per step with a count instead of once per attempt.

Why: when the API server goes away, every informer fails, backs off and fails again —
seven informers at a 0.5 s initial backoff wrote ~100 near-identical lines in 20 s, each
a repr of the HTTP library's internals, burying the one line that mattered. A person
needs to read *what* fails (``cannot reach https://…: connection refused``), *since when*
and *for whom*; a log pipeline needs the same as fields (``resource``, ``error_type``,
``attempt``).

How: failures are grouped by what went wrong (the error's type, reason and message), not
by who saw it, so several informers failing the same way share one group. A group's first
failure is logged at once; later ones are counted and logged when the group's current
step has passed, with the count and the resources affected since the previous line; the
step doubles from ``first_step`` up to ``max_step`` (a dead API server for 20 s gives about
six lines, for an hour about seventy). When every resource of a group has recovered, one
line says so, with the total and the duration. The informers report here, and so do the
reconciles that got no answer (``uniteddeployment ns/web``), so an outage is one story.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from united.kube.errors import ApiError

__all__ = ["LISTED", "FailureLog", "error_type"]

log = structlog.get_logger(__name__)

LISTED = 20
"""Resources named in a line at most; ``unlisted`` counts the rest (a thousand keys retrying
through an outage are one line, not a page)."""


def error_type(error: BaseException) -> str:
    """A short, stable name for the kind of failure: the API reason (``Forbidden``,
    ``ConnectionRefused``, ``Timeout``...) when there is one, else the exception's class."""
    if isinstance(error, ApiError) and error.reason:
        return error.reason
    return type(error).__name__


@dataclass
class _Group:
    message: str
    kind: str
    since: float
    next_line: float
    step: float
    total: int = 0
    unlogged: int = 0
    failing: set[str] = field(default_factory=set)
    """Resources whose last attempt failed this way."""
    recent: set[str] = field(default_factory=set)
    """Resources that failed this way since the group's last line."""


class FailureLog:
    """See the module docstring. ``clock`` is monotonic seconds (injectable for tests)."""

    def __init__(
        self,
        *,
        logger: Any = None,
        first_step: float = 1.0,
        max_step: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = logger if logger is not None else log
        self.first_step = first_step
        self.max_step = max_step
        self._clock = clock
        self._groups: dict[tuple[str, str], _Group] = {}

    def failed(self, *, resource: str, error: BaseException, attempt: int, **fields: Any) -> None:
        """``resource`` failed with ``error`` on its ``attempt``-th try in a row."""
        now = self._clock()
        kind, message = error_type(error), str(error) or type(error).__name__
        key = (kind, message)
        group = self._groups.get(key)
        for other_key, other in list(self._groups.items()):
            # Failing differently now (a cut watch, then connection refused) is no recovery.
            other.failing.discard(resource)
            if not other.failing and other_key != key:
                del self._groups[other_key]
        if group is None:
            group = self._groups[key] = _Group(message, kind, now, now + self.first_step, self.first_step)
            group.total = 1
            group.failing.add(resource)
            self._log.warning(
                f"{message}; retrying with backoff",
                resource=resource,
                error_type=kind,
                attempt=attempt,
                **fields,
            )
            return
        group.total += 1
        group.unlogged += 1
        group.failing.add(resource)
        group.recent.add(resource)
        if now < group.next_line:
            return
        recent = sorted(group.recent)
        if len(recent) > LISTED:
            fields["unlisted"] = len(recent) - LISTED
        self._log.warning(
            f"{message}; still failing",
            resource=resource,
            error_type=kind,
            attempt=attempt,
            resources=recent[:LISTED],
            failures=group.unlogged,
            seconds=round(now - group.since, 1),
            **fields,
        )
        group.step = min(group.step * 2, self.max_step)
        group.next_line = now + group.step
        group.unlogged = 0
        group.recent.clear()

    def recovered(self, resource: str) -> None:
        """``resource`` works again (its LIST or watch succeeded); the last resource of a
        group to recover logs one line for the whole group."""
        now = self._clock()
        for key, group in list(self._groups.items()):
            if resource not in group.failing:
                continue
            group.failing.discard(resource)
            if group.failing:
                continue
            del self._groups[key]
            self._log.info(
                f"recovered: {group.message}",
                resource=resource,
                error_type=group.kind,
                failures=group.total,
                seconds=round(now - group.since, 1),
            )

    @property
    def failing(self) -> dict[str, set[str]]:
        """Resources failing now, by error message."""
        return {group.message: set(group.failing) for group in self._groups.values()}
