"""Test tools built from their Go modules: helm (chart tests) and promtool (alert-rule tests).

The project's machines have Go and the module proxy but no package for either tool, so the
tests build them once into ``${XDG_CACHE_HOME:-~/.cache}/united/tools/<name>-<version>/``.
Like the control-plane build, a stamp is written *last* (a missing or different stamp means
"rebuild from a clean directory") and an ``flock`` serialises concurrent pytest sessions, so
``python -m pytest`` on a fresh machine builds each tool exactly once.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

GO = Path(os.environ.get("UNITED_GO", "/usr/local/go/bin/go"))
STAMP_FORMAT = 1


@dataclass(frozen=True)
class GoTool:
    """One binary installed with ``go install <package>@<version>``."""

    name: str
    package: str
    version: str


HELM = GoTool("helm", "helm.sh/helm/v3/cmd/helm", "v3.22.0")
PROMTOOL = GoTool("promtool", "github.com/prometheus/prometheus/cmd/promtool", "v0.316.0")
BUILD_TIMEOUT = 3600.0
"""A cold promtool build on a loaded two-core machine takes many minutes; only a hang should hit this."""


class ToolBuildError(RuntimeError):
    """``go install`` failed; the message names the log to read."""


def tools_root(env: Mapping[str, str] | None = None) -> Path:
    """The cache location, honouring ``XDG_CACHE_HOME`` like the control-plane build does."""
    environ = os.environ if env is None else env
    base = Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "united" / "tools"


def _stamp(tool: GoTool) -> dict[str, object]:
    return {"format": STAMP_FORMAT, "name": tool.name, "package": tool.package, "version": tool.version}


def tool_dir(tool: GoTool, root: Path) -> Path:
    """One directory per tool and version, so a version bump never reuses an old binary."""
    return root / f"{tool.name}-{tool.version}"


def is_built(tool: GoTool, root: Path) -> bool:
    """True when the stamp matches this tool and version and the binary is executable."""
    directory = tool_dir(tool, root)
    try:
        stamp = json.loads((directory / "stamp.json").read_text())
    except (OSError, ValueError):
        return False
    binary = directory / "bin" / tool.name
    return stamp == _stamp(tool) and binary.is_file() and os.access(binary, os.X_OK)


def ensure_tool(tool: GoTool, *, root: Path | None = None, go: Path = GO) -> Path:
    """The path of the tool's binary, building it first if no finished build is cached.

    The build uses its own module and build caches inside the tool's directory, so it
    neither depends on nor pollutes a developer's Go caches, and the time printed is a
    cold build's.
    """
    root = tools_root() if root is None else root
    directory = tool_dir(tool, root)
    binary = directory / "bin" / tool.name
    if is_built(tool, root):
        return binary
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{tool.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if is_built(tool, root):
                return binary
            _build(tool, directory, go)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return binary


def _build(tool: GoTool, directory: Path, go: Path) -> None:
    if directory.exists():
        _remove(directory)
    directory.mkdir(parents=True)
    log = directory / "build.log"
    env = {
        **os.environ,
        "GOBIN": str(directory / "bin"),
        "GOMODCACHE": str(directory / "gomod"),
        "GOCACHE": str(directory / "gocache"),
        "GOFLAGS": "-mod=mod -modcacherw",
        "CGO_ENABLED": "0",
        "GOTOOLCHAIN": "local",
    }
    load = os.getloadavg()[0]
    print(f"building {tool.name} {tool.version} with {go} (load average {load:.1f})", file=sys.stderr)
    started = time.monotonic()
    with open(log, "w") as out:
        result = subprocess.run(
            [str(go), "install", f"{tool.package}@{tool.version}"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=BUILD_TIMEOUT,
            check=False,
        )
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        raise ToolBuildError(f"go install {tool.package}@{tool.version} failed (build log: {log})")
    for cache in ("gomod", "gocache"):
        _remove(directory / cache)
    (directory / "stamp.json").write_text(json.dumps(_stamp(tool), indent=2) + "\n")
    print(f"built {tool.name} {tool.version} in {elapsed:.0f} s (load average {load:.1f})", file=sys.stderr)


def _remove(path: Path) -> None:
    """Module caches are read-only by default; ``-modcacherw`` keeps them removable."""
    shutil.rmtree(path, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.support.tools [helm|promtool ...]``: build ahead of a test run."""
    names = argv if argv is not None else sys.argv[1:]
    known = {tool.name: tool for tool in (HELM, PROMTOOL)}
    for name in names or list(known):
        if name not in known:
            print(f"tools: unknown tool {name!r} (known: {', '.join(known)})", file=sys.stderr)
            return 2
        print(ensure_tool(known[name]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
