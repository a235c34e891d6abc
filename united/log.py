"""Structured logging for the controller: one configuration for our lines and the libraries'.

Why: in a cluster, logs are read by machines (Loki, Elasticsearch, ``kubectl logs |
jq``), so every line must be one JSON object carrying the same fields — time,
level, logger, and the reconcile context (``ud`` = namespace/name, ``reconcile_id``)
— including lines written by aiohttp, asyncio or kubernetes_asyncio through stdlib
``logging``. On a developer's terminal the same events are rendered for humans.

How:

* structlog loggers hand their event dicts to stdlib ``logging``
  (``ProcessorFormatter.wrap_for_formatter``), and one stdlib handler renders
  *every* record with :class:`structlog.stdlib.ProcessorFormatter`. Foreign
  (stdlib) records go through the same ``foreign_pre_chain``, so both kinds of line
  have identical fields;
* the chain is: contextvars merge (the reconcile context follows the asyncio task),
  log level, logger name, ISO-8601 UTC timestamp, stack/exception formatting, then
  the JSON or console renderer;
* ``--log-format auto`` picks JSON unless the output stream is a TTY.

:func:`bind_reconcile` binds ``ud`` and a fresh ``reconcile_id`` (a UUID, like
controller-runtime's ``reconcileID``) for the duration of one reconcile; context
variables are copied into tasks created inside it and restored on exit.
"""

from __future__ import annotations

import argparse
import logging
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal, TextIO

import structlog
from structlog.typing import Processor

LogFormat = Literal["json", "console", "auto"]
LOG_FORMATS: tuple[LogFormat, ...] = ("json", "console", "auto")

# Libraries whose DEBUG/INFO chatter (request bodies, access lines) is noise at INFO.
_QUIET_LIBRARIES = ("aiohttp.access", "kubernetes_asyncio")

_handler: logging.Handler | None = None


def _shared_processors() -> list[Processor]:
    """Processors applied to structlog events *and* to foreign stdlib records."""
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.ExtraAdder(),
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]


def resolve_format(log_format: LogFormat, stream: TextIO) -> Literal["json", "console"]:
    """``auto`` means JSON unless ``stream`` is an interactive terminal."""
    if log_format == "auto":
        isatty = getattr(stream, "isatty", None)
        return "console" if callable(isatty) and isatty() else "json"
    if log_format not in ("json", "console"):
        raise ValueError(f"unknown log format {log_format!r}; expected one of {', '.join(LOG_FORMATS)}")
    return log_format


def configure_logging(
    *,
    level: int | str = logging.INFO,
    log_format: LogFormat = "auto",
    stream: TextIO | None = None,
) -> logging.Handler:
    """Configure structlog and the root stdlib logger; return the installed handler.

    Idempotent: calling it again replaces the handler installed by the previous
    call (and only that one, so pytest's capture handlers survive).
    """
    global _handler
    out = stream if stream is not None else sys.stderr
    fmt = resolve_format(log_format, out)
    numeric_level = logging.getLevelName(level.upper()) if isinstance(level, str) else level
    if not isinstance(numeric_level, int):
        raise ValueError(f"unknown log level {level!r}")

    renderer: Processor
    final: list[Processor] = [structlog.stdlib.ProcessorFormatter.remove_processors_meta]
    if fmt == "json":
        # Tracebacks become one "exception" string field, so a line stays one JSON object.
        final += [structlog.processors.format_exc_info, structlog.processors.UnicodeDecoder()]
        renderer = structlog.processors.JSONRenderer()
    else:
        # The console renderer formats exceptions itself (and prettier); format_exc_info
        # before it would make it warn and print plain text instead.
        renderer = structlog.dev.ConsoleRenderer(colors=bool(getattr(out, "isatty", lambda: False)()))
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_shared_processors(),
        processors=[*final, renderer],
    )

    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *_shared_processors(),
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        # Not cached: reconfiguring (tests, CLI flags parsed late) must take effect for
        # loggers created at import time.
        cache_logger_on_first_use=False,
    )

    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    if _handler is not None:
        root.removeHandler(_handler)
    root.addHandler(handler)
    root.setLevel(numeric_level)
    for name in _QUIET_LIBRARIES:
        logging.getLogger(name).setLevel(max(numeric_level, logging.WARNING))
    _handler = handler
    return handler


def add_logging_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--log-format`` and ``--log-level`` to a command-line parser."""
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="auto",
        help="json (one object per line), console (human), or auto: json unless stderr is a terminal",
    )
    parser.add_argument(
        "--log-level",
        default="INFO",
        type=str.upper,
        choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
        help="minimum level to log (default: INFO)",
    )


def get_logger(name: str | None = None, **initial: Any) -> structlog.stdlib.BoundLogger:
    """A structlog logger named ``name`` with ``initial`` fields bound."""
    logger: structlog.stdlib.BoundLogger = structlog.stdlib.get_logger(name, **initial)
    return logger


@contextmanager
def bind_reconcile(ud_key: str, **extra: Any) -> Iterator[str]:
    """Bind ``ud`` (``namespace/name``), a fresh ``reconcile_id`` and ``extra`` to every
    log line emitted in this context (and in tasks started from it); yield the id."""
    reconcile_id = str(uuid.uuid4())
    with structlog.contextvars.bound_contextvars(ud=ud_key, reconcile_id=reconcile_id, **extra):
        yield reconcile_id


__all__ = [
    "LOG_FORMATS",
    "LogFormat",
    "add_logging_arguments",
    "bind_reconcile",
    "configure_logging",
    "get_logger",
    "resolve_format",
]
