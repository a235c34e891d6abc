"""Log lines are JSON objects with the reconcile context, library lines included;
the console renderer is used on terminals."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import logging
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
import structlog

from united import log as united_log
from united.log import add_logging_arguments, bind_reconcile, configure_logging, get_logger, resolve_format


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """Undo configure_logging: our handler, root level, library levels, structlog config."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    library_levels = {name: logging.getLogger(name).level for name in ("aiohttp.access", "kubernetes_asyncio")}
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)
    for name, library_level in library_levels.items():
        logging.getLogger(name).setLevel(library_level)
    structlog.reset_defaults()
    structlog.contextvars.clear_contextvars()


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


@pytest.mark.usefixtures("restore_logging")
def test_json_lines_carry_level_logger_utc_timestamp_and_fields() -> None:
    out = io.StringIO()
    configure_logging(log_format="json", stream=out)
    get_logger("united.test").info("subset created", subset="zone-a", replicas=3)

    (line,) = _lines(out)
    assert line["event"] == "subset created"
    assert line["level"] == "info"
    assert line["logger"] == "united.test"
    assert line["subset"] == "zone-a"
    assert line["replicas"] == 3
    stamp = datetime.fromisoformat(line["timestamp"])
    assert stamp.utcoffset() is not None and stamp.utcoffset().total_seconds() == 0  # type: ignore[union-attr]


@pytest.mark.usefixtures("restore_logging")
def test_bind_reconcile_adds_ud_and_a_fresh_reconcile_id_then_unbinds() -> None:
    out = io.StringIO()
    configure_logging(log_format="json", stream=out)
    log = get_logger("united.controller")

    with bind_reconcile("ns/web") as first_id:
        log.info("reconciling")
    with bind_reconcile("ns/api", controller="uniteddeployment") as second_id:
        log.info("reconciling")
    log.info("idle")

    first, second, idle = _lines(out)
    assert (first["ud"], first["reconcile_id"]) == ("ns/web", first_id)
    assert (second["ud"], second["reconcile_id"], second["controller"]) == ("ns/api", second_id, "uniteddeployment")
    assert first_id != second_id
    uuid.UUID(first_id)
    assert "ud" not in idle and "reconcile_id" not in idle


@pytest.mark.usefixtures("restore_logging")
async def test_the_reconcile_context_follows_tasks_and_does_not_leak_between_them() -> None:
    out = io.StringIO()
    configure_logging(log_format="json", stream=out)
    log = get_logger("united.controller")

    async def reconcile(key: str) -> str:
        with bind_reconcile(key) as reconcile_id:
            await asyncio.sleep(0)  # let the other reconcile interleave
            await asyncio.create_task(asyncio.to_thread(lambda: None))
            log.info("done")
            return reconcile_id

    ids = await asyncio.gather(reconcile("ns/a"), reconcile("ns/b"))
    lines = {line["ud"]: line["reconcile_id"] for line in _lines(out)}
    assert lines == {"ns/a": ids[0], "ns/b": ids[1]}


@pytest.mark.usefixtures("restore_logging")
def test_stdlib_library_lines_are_json_with_the_same_fields() -> None:
    out = io.StringIO()
    configure_logging(log_format="json", stream=out)
    with bind_reconcile("ns/web") as reconcile_id:
        logging.getLogger("aiohttp.client").warning("connection to %s reset", "apiserver")
        logging.getLogger("asyncio").error("Task exception was never retrieved")

    aiohttp_line, asyncio_line = _lines(out)
    assert aiohttp_line["event"] == "connection to apiserver reset"
    assert aiohttp_line["level"] == "warning"
    assert aiohttp_line["logger"] == "aiohttp.client"
    assert aiohttp_line["reconcile_id"] == reconcile_id
    assert "timestamp" in aiohttp_line
    assert asyncio_line["logger"] == "asyncio"
    assert asyncio_line["level"] == "error"


@pytest.mark.usefixtures("restore_logging")
def test_exceptions_become_one_string_field_and_the_line_stays_json() -> None:
    out = io.StringIO()
    configure_logging(log_format="json", stream=out)
    try:
        raise RuntimeError("apiserver said no")
    except RuntimeError:
        get_logger("united").exception("reconcile failed")
        logging.getLogger("kubernetes_asyncio.rest").error("stdlib too", exc_info=True)

    ours, theirs = _lines(out)
    for line in (ours, theirs):
        assert "Traceback" in line["exception"]
        assert "RuntimeError: apiserver said no" in line["exception"]
    assert ours["level"] == "error"


@pytest.mark.usefixtures("restore_logging")
def test_the_level_filters_our_lines_and_quiets_chatty_libraries() -> None:
    out = io.StringIO()
    configure_logging(log_format="json", stream=out, level="warning")
    get_logger("united").info("hidden")
    get_logger("united").warning("shown")
    logging.getLogger("kubernetes_asyncio.rest").info("response body")
    assert [line["event"] for line in _lines(out)] == ["shown"]

    out = io.StringIO()
    configure_logging(log_format="json", stream=out, level=logging.DEBUG)
    get_logger("united").debug("details")
    logging.getLogger("kubernetes_asyncio.rest").info("response body")
    assert [line["event"] for line in _lines(out)] == ["details"]


@pytest.mark.usefixtures("restore_logging")
def test_reconfiguring_replaces_our_handler_only() -> None:
    root = logging.getLogger()
    before = [h for h in root.handlers if h is not united_log._handler]  # another test's call may have left ours
    first = configure_logging(log_format="json", stream=io.StringIO())
    second = configure_logging(log_format="json", stream=io.StringIO())
    assert first not in root.handlers
    assert second in root.handlers
    assert all(handler in root.handlers for handler in before)


@pytest.mark.usefixtures("restore_logging")
def test_console_format_is_human_readable() -> None:
    out = io.StringIO()
    configure_logging(log_format="console", stream=out)
    with bind_reconcile("ns/web"):
        get_logger("united").info("subset created", subset="zone-a")
    text = out.getvalue()
    assert "subset created" in text
    assert "subset=zone-a" in text
    assert "ud=ns/web" in text
    with pytest.raises(ValueError):
        json.loads(text)


def test_auto_format_is_json_unless_on_a_terminal() -> None:
    assert resolve_format("auto", io.StringIO()) == "json"
    assert resolve_format("auto", Terminal()) == "console"
    assert resolve_format("json", Terminal()) == "json"
    assert resolve_format("console", io.StringIO()) == "console"
    with pytest.raises(ValueError):
        resolve_format("xml", io.StringIO())  # type: ignore[arg-type]


@pytest.mark.usefixtures("restore_logging")
def test_an_unknown_level_is_rejected() -> None:
    with pytest.raises(ValueError):
        configure_logging(level="chatty", stream=io.StringIO())


def test_command_line_options() -> None:
    parser = argparse.ArgumentParser()
    add_logging_arguments(parser)
    args = parser.parse_args(["--log-format", "console", "--log-level", "debug"])
    assert (args.log_format, args.log_level) == ("console", "DEBUG")
    assert parser.parse_args([]).log_format == "auto"
    with pytest.raises(SystemExit):
        parser.parse_args(["--log-format", "xml"])
