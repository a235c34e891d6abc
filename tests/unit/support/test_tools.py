"""tests/support/tools.py: a Go tool is built once into its cache directory, the stamp is the
proof of a finished build, and a failed build leaves nothing that looks finished."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.tools import GoTool, ToolBuildError, ensure_tool, is_built, tool_dir

TOOL = GoTool("fake", "example.com/fake/cmd/fake", "v1.2.3")


def fake_go(tmp_path: Path, *, fail: bool = False) -> tuple[Path, Path]:
    """A ``go`` that records its arguments and installs an executable into ``$GOBIN``."""
    calls = tmp_path / "calls"
    go = tmp_path / "go"
    body = "exit 3" if fail else 'mkdir -p "$GOBIN" && printf "#!/bin/sh\\n" > "$GOBIN/fake" && chmod +x "$GOBIN/fake"'
    go.write_text(f'#!/bin/sh\necho "$@ $GOMODCACHE" >> {calls}\n{body}\n')
    go.chmod(0o755)
    return go, calls


def test_a_tool_is_built_once_with_its_own_caches_and_the_stamp_last(tmp_path: Path) -> None:
    go, calls = fake_go(tmp_path)
    root = tmp_path / "tools"
    binary = ensure_tool(TOOL, root=root, go=go)
    assert binary == root / "fake-v1.2.3" / "bin" / "fake" and os.access(binary, os.X_OK)
    assert ensure_tool(TOOL, root=root, go=go) == binary
    assert calls.read_text().splitlines() == [f"install example.com/fake/cmd/fake@v1.2.3 {tool_dir(TOOL, root)}/gomod"]
    assert json.loads((tool_dir(TOOL, root) / "stamp.json").read_text())["version"] == "v1.2.3"
    assert not (tool_dir(TOOL, root) / "gomod").exists()


def test_a_missing_stamp_or_another_version_means_a_clean_rebuild(tmp_path: Path) -> None:
    go, calls = fake_go(tmp_path)
    root = tmp_path / "tools"
    ensure_tool(TOOL, root=root, go=go)
    (tool_dir(TOOL, root) / "stamp.json").unlink()
    assert not is_built(TOOL, root)
    ensure_tool(TOOL, root=root, go=go)
    newer = GoTool(TOOL.name, TOOL.package, "v1.2.4")
    ensure_tool(newer, root=root, go=go)
    assert len(calls.read_text().splitlines()) == 3
    assert is_built(TOOL, root) and is_built(newer, root)


def test_a_failed_build_raises_with_its_log_and_leaves_no_stamp(tmp_path: Path) -> None:
    go, _ = fake_go(tmp_path, fail=True)
    root = tmp_path / "tools"
    with pytest.raises(ToolBuildError, match=r"build\.log"):
        ensure_tool(TOOL, root=root, go=go)
    assert not is_built(TOOL, root)
    assert not (tool_dir(TOOL, root) / "stamp.json").exists()
