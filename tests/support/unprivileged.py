"""Running ``united`` as an unprivileged user from a checkout anywhere.

The checkout (and its virtualenv) may live under a directory only root may enter, as
``mktemp -d`` makes or a clone under ``/root``. The unprivileged user then cannot import the
editable install, so it gets its own copy: the ``united`` package and the files of every
distribution it needs at run time, in a world-readable directory, put first on its
``PYTHONPATH`` for the base interpreter (not the virtualenv's link to it, which lives in the
checkout). Nothing is downloaded.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import united

NOBODY = 65534
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_distributions(root: str = "united") -> list[metadata.Distribution]:
    """The installed distributions ``root`` needs at run time, itself excluded (extras skipped)."""
    seen: dict[str, metadata.Distribution] = {}
    pending = [root]
    while pending:
        name = pending.pop()
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for requirement in dist.requires or ():
            if "extra" in requirement.partition(";")[2]:
                continue
            match = _NAME.match(requirement)
            if match and _canonical(match.group()) not in seen and _canonical(match.group()) != _canonical(root):
                pending.append(match.group())
        if _canonical(name) != _canonical(root):
            seen[_canonical(name)] = dist
    return list(seen.values())


def _dist_files(dist: metadata.Distribution) -> Iterator[tuple[Path, Path]]:
    """(source, path relative to site-packages) of every file a distribution installed there."""
    for file in dist.files or ():
        if (file.parts and file.parts[0] in ("..", "__pycache__")) or "__pycache__" in file.parts:
            continue
        source = Path(str(dist.locate_file(file)))
        if source.is_file():
            yield source, Path(*file.parts)


def readable_site(dest: Path) -> Path:
    """Copy ``united`` and its run-time dependencies into ``dest/site``, readable by everyone."""
    site = dest / "site"
    shutil.copytree(
        Path(united.__file__).parent, site / "united", ignore=shutil.ignore_patterns("__pycache__"), symlinks=False
    )
    for dist in runtime_distributions():
        for source, relative in _dist_files(dist):
            target = site / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    for path in [dest, *dest.rglob("*")]:
        mode = path.stat().st_mode
        path.chmod(mode | stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH | (0o111 if path.is_dir() else 0))
    return site


def _setpriv() -> list[str]:
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        raise RuntimeError("running as an unprivileged user needs root and util-linux's setpriv")
    return [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


@functools.cache
def nobody_interpreter() -> str:
    """An interpreter of this minor version that the unprivileged user can run. The virtualenv's
    own ``bin/python`` lives in the checkout, and a build under ``/root`` (pyenv's) cannot load its
    libpython as that user, so the candidates are tried as that user."""
    wanted = f"{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [
        getattr(sys, "_base_executable", sys.executable),
        f"/usr/bin/python{wanted}",
        f"/usr/local/bin/python{wanted}",
    ]
    for candidate in candidates:
        probe = subprocess.run(
            [*_setpriv(), candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2], sys.prefix)"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.split()[:1] == [wanted]:
            return candidate
    raise RuntimeError(f"no Python {wanted} the unprivileged user can run among {candidates}")


def nobody_argv(*args: str) -> list[str]:
    """``setpriv`` as the unprivileged user, then an interpreter it can run, with ``args``."""
    return [*_setpriv(), nobody_interpreter(), "-s", *args]
