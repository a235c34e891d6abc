"""Building Kubernetes and etcd from their Go modules: the wrapper modules, flags and environment.

``k8s.io/kubernetes`` requires its staging modules (``k8s.io/api``, ``k8s.io/client-go`` …) at
``v0.0.0`` and points them at ``./staging/…`` with ``replace`` directives, which Go ignores
when the module is a dependency. A small wrapper module therefore pins each one to the
``v0.N.M`` released with ``v1.N.M``; the list is read from that release's own go.mod (it grows
from release to release), never kept by hand. Everything here is pure text and mappings, so it
is unit-tested without a build; :mod:`united.devcluster.build` runs the steps.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from united.devcluster.versions import KubeVersion

KUBERNETES_MODULE = "k8s.io/kubernetes"
ETCD_SERVER_MODULE = "go.etcd.io/etcd/server/v3"
"""Its root package is etcd's ``main``: ``go build`` of it is the ``etcd`` binary."""
WRAPPER_MODULE = "united.dev/devcluster-build"
KUBE_PACKAGES = {
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
    "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
    "kubectl": "k8s.io/kubernetes/cmd/kubectl",
}
VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
"""Where ``/version`` and ``--version`` read from (upstream's ``hack/lib/version.sh`` sets both)."""
STAGING_PREFIX = "./staging/"

_LINE_COMMENT = re.compile(r"//.*$")


@dataclass(frozen=True)
class GoMod:
    """What a wrapper needs from a go.mod: its ``go`` and ``godebug`` lines, its requirements
    and its replacements (``old => new``, ``new`` being ``path version`` or a local path)."""

    go: str
    godebug: tuple[str, ...]
    requires: dict[str, str]
    replaces: dict[str, str]


def parse_go_mod(text: str) -> GoMod:
    """Parse the directives of a go.mod (single-line and parenthesised blocks alike)."""
    go = ""
    godebug: list[str] = []
    requires: dict[str, str] = {}
    replaces: dict[str, str] = {}
    block = ""
    for raw in text.splitlines():
        line = _LINE_COMMENT.sub("", raw).strip()
        if not line:
            continue
        if block:
            if line == ")":
                block = ""
                continue
            verb, rest = block, line
        else:
            verb, _, rest = line.partition(" ")
            rest = rest.strip()
            if rest == "(":
                block = verb
                continue
        if verb == "go":
            go = rest
        elif verb == "godebug":
            godebug.append(rest)
        elif verb == "require":
            path, _, version = rest.partition(" ")
            requires[path] = version.strip()
        elif verb == "replace":
            old, arrow, new = rest.partition("=>")
            if arrow:
                replaces[old.split()[0]] = " ".join(new.split())
    if not go:
        raise ValueError("the go.mod has no 'go' directive")
    return GoMod(go=go, godebug=tuple(godebug), requires=requires, replaces=replaces)


def staging_modules(mod: GoMod) -> list[str]:
    """The staging modules: required at ``v0.0.0`` and replaced by a ``./staging/`` path."""
    return sorted(
        path
        for path, target in mod.replaces.items()
        if target.startswith(STAGING_PREFIX) and mod.requires.get(path) == "v0.0.0"
    )


def replace_block(mod: GoMod, version: KubeVersion) -> list[str]:
    """The wrapper's replacements: each staging module pinned to ``v0.N.M``, and any replacement
    by a released module version copied as it is. ``ValueError`` when the go.mod has no staging
    modules, or replaces a module by some other local directory (a wrapper cannot follow it)."""
    staging = staging_modules(mod)
    if not staging:
        raise ValueError(f"{KUBERNETES_MODULE} {version.tag}'s go.mod names no staging modules")
    lines = [f"{path} => {path} {version.staging_version}" for path in staging]
    for path, target in sorted(mod.replaces.items()):
        if target.startswith(STAGING_PREFIX):
            continue
        if target.startswith((".", "/")):
            raise ValueError(f"{KUBERNETES_MODULE} {version.tag}'s go.mod replaces {path} by a directory: {target}")
        lines.append(f"{path} => {target}")
    return lines


def kube_wrapper_go_mod(kubernetes_go_mod: str, version: KubeVersion) -> str:
    """The wrapper module that builds ``version``'s binaries, from that release's go.mod: the
    same ``go`` and ``godebug`` lines (the main module's decide the runtime's defaults), the
    requirement, and :func:`replace_block`."""
    mod = parse_go_mod(kubernetes_go_mod)
    return _wrapper(KUBERNETES_MODULE, version.tag, mod, replace_block(mod, version))


def etcd_wrapper_go_mod(etcd_go_mod: str, etcd_version: str) -> str:
    """The wrapper that builds etcd ``etcd_version`` from ``go.etcd.io/etcd/server/v3``. Its
    go.mod replaces its sibling modules by directories of etcd's repository, but also requires
    each at the same release, which is what a dependency gets: only the ``go`` line is copied."""
    return _wrapper(ETCD_SERVER_MODULE, etcd_version, parse_go_mod(etcd_go_mod), [])


def _wrapper(module: str, version: str, mod: GoMod, replaces: Sequence[str]) -> str:
    """A go.mod requiring ``module`` at ``version``, with ``mod``'s (its own go.mod's) ``go``
    and ``godebug`` lines and ``replaces``."""
    lines = [
        f"// Written by united.devcluster from {module} {version}'s go.mod; rewritten on every build.",
        f"module {WRAPPER_MODULE}",
        "",
        f"go {mod.go}",
        *(["", *(f"godebug {line}" for line in mod.godebug)] if mod.godebug else []),
        "",
        "require (",
        f"\t{module} {version}",
        ")",
    ]
    if replaces:
        lines += ["", "replace (", *(f"\t{line}" for line in replaces), ")"]
    return "\n".join(lines) + "\n"


def version_ldflags(version: KubeVersion, *, build_date: str, commit: str = "", tree_state: str = "archive") -> str:
    """``-ldflags`` for the Kubernetes binaries: stripped (as upstream's releases are), and the
    version variables set, so ``/version`` and ``--version`` say ``version`` instead of
    ``v0.0.0-master+$Format:%H$``. The module proxy serves no commit, so ``gitCommit`` is
    empty unless given; ``archive`` is what upstream says of a build outside a git tree."""
    values = {
        "gitVersion": version.tag,
        "gitMajor": str(version.major),
        "gitMinor": str(version.minor),
        "gitCommit": commit,
        "gitTreeState": tree_state,
        "buildDate": build_date,
    }
    for key, value in values.items():
        if any(c.isspace() or c in "'\"" for c in value):
            raise ValueError(f"{key} {value!r}: no spaces or quotes in an ldflags value")
    settings = [f"-X {pkg}.{key}={value}" for pkg in VERSION_PACKAGES for key, value in values.items()]
    return " ".join(["-s", "-w", *settings])


def go_version_at_least(reported: str, required: str) -> bool:
    """Whether Go ``reported`` (``go1.26.8``, as ``go env GOVERSION`` says) is at least a go.mod's
    ``go`` line (``1.26.0``, ``1.26``). A development build (``devel …``) counts as new enough."""
    if reported.startswith("devel"):
        return True
    return go_numbers(reported) >= go_numbers(required)


def go_numbers(text: str) -> tuple[int, ...]:
    """``go1.26.8``, ``1.26.8`` or ``1.26`` as ``(1, 26, 8)``, ``(1, 26, 0)``: comparable."""
    match = re.match(r"(?:go)?(\d+)\.(\d+)(?:\.(\d+))?", text)
    if match is None:
        raise ValueError(f"not a Go version: {text!r}")
    return tuple(int(part or 0) for part in match.groups())


def names_release(toolchain: str) -> bool:
    """Whether a ``GOTOOLCHAIN`` value names one Go release (``go1.27.3``), the only setting
    under which a module build lets the go command fetch a toolchain (``auto`` would do so
    silently whenever a module asks)."""
    return re.fullmatch(r"go\d+\.\d+(\.\d+)?", toolchain) is not None


def json_stream(text: str) -> list[Any]:
    """The JSON values ``go mod download -json`` prints one after the other."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    index = 0
    while True:
        while index < len(text) and text[index].isspace():
            index += 1
        if index == len(text):
            return values
        value, index = decoder.raw_decode(text, index)
        values.append(value)


def module_go_env(
    environ: Mapping[str, str],
    *,
    go: Path,
    gopath: Path,
    cache: Path,
    toolchain: str = "local",
) -> dict[str, str]:
    """The environment of every ``go`` command of a module build: ``go``'s directory first on
    ``PATH``, no inherited ``GOROOT``/``GOBIN``/``GOFLAGS``/workspace, a module cache and build
    cache of the build's own (a fresh machine's build needs nothing else, and removing the
    directory removes everything), writable module files (so they can be removed), no cgo,
    and ``toolchain`` (``local``: the Go at hand, never a download). The proxy settings
    (``GOPROXY``, ``GONOSUMDB`` …) are the person's."""
    drop = ("GOROOT", "GOBIN", "GOFLAGS", "GOPATH", "GOMODCACHE", "GOCACHE", "GOWORK", "GOTOOLCHAIN", "GOENV")
    env = {key: value for key, value in environ.items() if key not in drop}
    env["PATH"] = os.pathsep.join([str(go.parent), env.get("PATH", "")])
    env.update(
        GOPATH=str(gopath),
        GOMODCACHE=str(gopath / "pkg" / "mod"),
        GOCACHE=str(cache),
        GOFLAGS="-mod=mod -modcacherw -buildvcs=false",
        GOWORK="off",
        GOTOOLCHAIN=toolchain,
        CGO_ENABLED="0",
    )
    return env
