"""The Kubernetes versions the local control plane runs, and what differs between them.

Two ends are built and tested: **1.20.2** from Debian bookworm's source package (the
floor: CI runs on it) and the **newest** release built from its Go modules (see
``docs/kubernetes-versions.md``). Other releases from 1.30 on build the module way too,
untested. Everything here is pure, so the choices are unit-tested without a build.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

VERSION_VARIABLE = "UNITED_KUBE_VERSION"
"""Which version the e2e and chaos fixtures run (unset: the default)."""

_PATTERN = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True, order=True)
class KubeVersion:
    """A Kubernetes release ``major.minor.patch``; ``str()`` is ``1.36.3``, ``tag`` ``v1.36.3``."""

    major: int
    minor: int
    patch: int

    @classmethod
    def parse(cls, text: str) -> KubeVersion:
        """``1.36.3`` or ``v1.36.3``; ``ValueError`` for anything else (pre-releases included)."""
        match = _PATTERN.fullmatch(text.strip())
        if match is None:
            raise ValueError(f"{text!r} is not a Kubernetes release (like {NEWEST})")
        return cls(*(int(part) for part in match.groups()))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    @property
    def tag(self) -> str:
        return f"v{self}"

    @property
    def from_debian(self) -> bool:
        """Built from Debian's source package (else from the Go modules)."""
        return self == DEBIAN

    @property
    def staging_version(self) -> str:
        """The version of the staging modules (``k8s.io/api`` …) released with it: ``v0.N.M``."""
        return f"v0.{self.minor}.{self.patch}"

    def at_least(self, minor: int) -> bool:
        return (self.major, self.minor) >= (1, minor)


DEBIAN = KubeVersion(1, 20, 2)
NEWEST = KubeVersion(1, 37, 2)
FLOOR = DEBIAN
"""The oldest release tested: the e2e tests marked ``compat`` run on it too."""
DEFAULT = NEWEST
"""What runs when nothing is asked for: the demo, the e2e and chaos suites."""
MODULE_FLOOR = KubeVersion(1, 30, 0)
"""The oldest release built from modules: etcd 3.6 and the flags below are known to fit from here."""
ETCD_MODULE_VERSION = "v3.6.16"
"""etcd for the module builds: the newest 3.6 patch (Kubernetes 1.34-1.37 pair with 3.6)."""
ALIASES = {"default": DEFAULT, "newest": NEWEST, "floor": FLOOR}


def resolve(text: str) -> KubeVersion:
    """The version a person asked for: a release or an alias (``newest``, ``default``,
    ``floor``). ``ValueError`` says what can be built when this cannot."""
    alias = ALIASES.get(text.strip().lower())
    if alias is not None:
        return alias
    version = KubeVersion.parse(text)
    if version.from_debian or version >= MODULE_FLOOR:
        return version
    raise ValueError(
        f"{version} cannot be built here: {DEBIAN} comes from Debian's sources, "
        f"{MODULE_FLOOR.major}.{MODULE_FLOOR.minor} and newer from Go modules (newest tested: {NEWEST})"
    )


def requested(environ: Mapping[str, str]) -> KubeVersion:
    """The version ``UNITED_KUBE_VERSION`` asks for, else the default."""
    text = environ.get(VERSION_VARIABLE, "").strip()
    if not text:
        return DEFAULT
    try:
        return resolve(text)
    except ValueError as exc:
        raise ValueError(f"{VERSION_VARIABLE}: {exc}") from exc


def chosen(asked: str | None, environ: Mapping[str, str], *, option: str = "--kube-version") -> KubeVersion:
    """The version an ``option`` asks for, else :func:`requested`'s; ``ValueError`` starts with
    the name of whichever said something wrong (``--kube-version: …``)."""
    if asked is None:
        return requested(environ)
    try:
        return resolve(asked)
    except ValueError as exc:
        raise ValueError(f"{option}: {exc}") from exc


# What changed between the ends that the local control plane has to follow.


def has_insecure_port_flag(version: KubeVersion) -> bool:
    """kube-apiserver's ``--insecure-port`` (only ``0`` allowed since 1.20) is gone in 1.24."""
    return not version.at_least(24)


def controller_manager_has_port_flag(version: KubeVersion) -> bool:
    """kube-controller-manager's insecure ``--port`` is gone in 1.24."""
    return not version.at_least(24)


def scheduler_has_port_flag(version: KubeVersion) -> bool:
    """kube-scheduler's insecure serving is gone in 1.23 (``--port`` a no-op, then removed)."""
    return not version.at_least(23)


def makes_token_secrets(version: KubeVersion) -> bool:
    """Before 1.24 every ServiceAccount gets a token Secret, and the ServiceAccount admission
    plugin refuses pods until it exists; from 1.24 pods get projected tokens and no Secret is
    made (the namespace is usable once its ``default`` ServiceAccount exists)."""
    return not version.at_least(24)
