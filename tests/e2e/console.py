"""Long-running commands as a person runs them in a terminal: start, read their output until
a line appears, Ctrl-C."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Mapping
from pathlib import Path

STOP_WITHIN = 180
"""A safety net, not a figure: on a busy machine (other workers' control planes beside) a
control plane's orderly stop can take a minute."""


async def run_until(
    argv: list[str],
    ready: str,
    *,
    within: float = 120,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> tuple[asyncio.subprocess.Process, list[str]]:
    """Start ``argv`` (stderr merged into stdout) and read until a line contains ``ready``;
    the process and the lines read so far. Kills it if that does not happen ``within``."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
        cwd=cwd,
    )
    lines: list[str] = []
    try:
        await read_until(proc, lines, ready, within=within)
    except BaseException:
        proc.kill()
        await proc.communicate()
        raise
    return proc, lines


async def read_until(proc: asyncio.subprocess.Process, lines: list[str], text: str, *, within: float) -> None:
    """Append ``proc``'s output lines to ``lines`` until one read now contains ``text``."""

    async def until() -> None:
        assert proc.stdout is not None
        while True:
            raw = await proc.stdout.readline()
            if not raw:
                raise AssertionError(f"exited before printing {text!r}:\n" + "\n".join(lines))
            lines.append(raw.decode().rstrip())
            if text in lines[-1]:
                return

    await asyncio.wait_for(until(), timeout=within)


async def interrupt(proc: asyncio.subprocess.Process) -> str:
    """Ctrl-C: SIGINT, then the rest of the output once it has exited."""
    proc.send_signal(signal.SIGINT)
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=STOP_WITHIN)
    return out.decode()


def value(lines: list[str], prefix: str) -> str:
    """What follows ``prefix`` on the first line that has it."""
    return next(line.split(prefix, 1)[1].strip() for line in lines if prefix in line)
