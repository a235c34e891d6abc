"""Summarise a ``py-spy record --format raw`` profile (collapsed stacks, ``a;b;c count``):
the functions with the most samples on top of the stack (self) and anywhere on it
(inclusive). ``python -m bench.profile FILE [--top N]``."""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path


def _idle(leaf: str) -> bool:
    """Leaf frames of threads that wait (a pool thread blocked on its queue, the loop in epoll):
    py-spy does not always recognise them as idle; they are reported apart, not as work."""
    return (leaf.startswith("_worker (") and leaf.endswith("futures/thread.py)")) or leaf.startswith(
        ("EpollSelector.select (", "select (")
    )


_LINE = re.compile(r"^(?P<stack>.*) (?P<count>\d+)$")
_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^:()]*)(?::\d+)?\)$")


def _function(frame: str) -> str:
    """``func (path/to/file.py:12)`` -> ``func (to/file.py)``; line numbers merged."""
    m = _FRAME.match(frame.strip())
    if not m:
        return frame.strip()
    parts = m.group("file").split("/")
    short = "/".join(parts[-2:]) if len(parts) > 1 else parts[0]
    for marker in ("site-packages/", "lib/python3.11/"):
        if marker in m.group("file"):
            short = m.group("file").split(marker, 1)[1]
    return f"{m.group('func')} ({short})"


def summarise(path: Path, *, top: int = 25) -> dict[str, object]:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = idle = 0
    for line in path.read_text().splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        count = int(m.group("count"))
        frames = [_function(f) for f in m.group("stack").split(";") if f]
        if not frames:
            continue
        # py-spy prefixes the thread ("process 1:\"MainThread\""); skip non-code frames.
        frames = [f for f in frames if "(" in f] or frames
        if _idle(frames[-1]):
            idle += count
            continue
        total += count
        own[frames[-1]] += count
        for f in set(frames):
            inclusive[f] += count
    return {
        "samples": total,
        "idle_samples": idle,
        "self": [(f, n, 100.0 * n / max(total, 1)) for f, n in own.most_common(top)],
        "inclusive": [(f, n, 100.0 * n / max(total, 1)) for f, n in inclusive.most_common(top)],
    }


def render(summary: dict[str, object]) -> str:
    out = [f"samples: {summary['samples']} busy, {summary['idle_samples']} idle (not shown)", "", "self %  function"]
    out += [f"{pct:6.1f}  {f}" for f, _, pct in summary["self"]]  # type: ignore[attr-defined]
    out += ["", "incl %  function"]
    out += [f"{pct:6.1f}  {f}" for f, _, pct in summary["inclusive"]]  # type: ignore[attr-defined]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__.splitlines()[0])
    p.add_argument("file", type=Path)
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args(argv)
    print(render(summarise(args.file, top=args.top)), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
