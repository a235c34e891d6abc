"""Runs an Argo CD health script of manifests/argocd with Debian's ``lua5.1``, as Argo CD does:
the object in the global ``obj``, the script's returned table read as ``hs.status``/``hs.message``.

Argo CD embeds gopher-lua, a Lua 5.1; JSON ``null`` becomes ``nil`` there, and so here."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

SCRIPTS = Path(__file__).resolve().parents[3] / "manifests" / "argocd"


def literal(value: Any) -> str:
    """``value`` (decoded JSON) as a Lua table constructor."""
    if isinstance(value, Mapping):
        return "{" + "".join(f"[{literal(str(k))}]={literal(v)}," for k, v in value.items() if v is not None) + "}"
    if isinstance(value, list):
        return "{" + "".join(f"{literal(v)}," for v in value) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if value is None:
        return "nil"
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string literal is a Lua one (UTF-8 kept)


def health(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(status, message) of the health script on ``obj`` (one script serves every kind and group)."""
    lua = shutil.which("lua5.1")
    if lua is None:
        pytest.fail("the Argo CD health checks are tested with Debian's lua5.1: apt-get install lua5.1", pytrace=False)
    script = SCRIPTS / "health.lua"
    program = f"obj = {literal(json.loads(json.dumps(obj)))}\nlocal hs = dofile({json.dumps(str(script))})\n"
    program += 'io.write(hs.status, "\\n", hs.message or "")\n'
    done = subprocess.run([lua, "-"], input=program, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    status, _, message = done.stdout.partition("\n")
    return status, message
