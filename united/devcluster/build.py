"""Provisioning the local control plane's binaries, one cache directory per Kubernetes version.

* **1.20.2**: etcd from Debian, Kubernetes compiled from Debian's source package with
  Debian's Go 1.19; nothing is downloaded except through apt.
* **newer releases** (:mod:`united.devcluster.versions`): kube-apiserver,
  kube-controller-manager, kube-scheduler and kubectl built from ``k8s.io/kubernetes``'s Go
  module, etcd 3.6 from ``go.etcd.io/etcd/server/v3``, through wrapper modules
  (:mod:`united.devcluster.gomodules`); nothing is downloaded except from the Go module proxy.

The result lives in ``${XDG_CACHE_HOME:-~/.cache}/united/kube-<version>/`` and is described
by a stamp file that is written *last*: a stamp that is missing, unreadable or does not match
the expected version and binaries means the previous run did not finish, so the whole build
is redone from a clean tree. A second run with a good stamp returns at once. An ``flock``
serialises concurrent runs (two pytest sessions, CI and a demo).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from united.devcluster import gomodules
from united.devcluster.sources import needs_deb_src, parse_sources, render_deb_src
from united.devcluster.versions import DEBIAN, DEFAULT, ETCD_MODULE_VERSION, KubeVersion

KUBE_VERSION = str(DEBIAN)
"""The version built from Debian's sources."""
DEBIAN_SUITE = "bookworm"
KUBE_BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
APT_PACKAGES = (
    "etcd-server",
    "golang-go",
    "golang-github-modern-go-reflect2-dev",
    "dpkg-dev",
    "rsync",
    "openssl",
)
TEST_APT_PACKAGES = ("lua5.1",)
"""Not for the build (``united demo`` does not need them): what the tests run besides the control
plane, e.g. Debian's Lua 5.1 for the Argo CD health check (tests/unit/argocd). ``.ci/run`` installs both."""
REFLECT2_SOURCE = Path("/usr/share/gocode/src/github.com/modern-go/reflect2")
REFLECT2_VENDORED = Path("vendor/github.com/modern-go/reflect2")
OPENAPI_NULL_CHECK = "data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data))"
OPENAPI_TYPE_CHECKS = (
    Path("vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go"),
    Path("vendor/github.com/go-openapi/validate/type.go"),
)
ETCD = Path("/usr/bin/etcd")
DEBIAN_GO = Path("/usr/bin/go")
"""Debian's ``golang-go`` link to its Go 1.19: the 1.20 sources do not build with a newer Go."""
APT_SOURCES_DIR = Path("/etc/apt/sources.list.d")
APT_SOURCES_LIST = Path("/etc/apt/sources.list")
DEB_SRC_FILE = APT_SOURCES_DIR / "united-deb-src.sources"
STAMP_FORMAT = 2
GO_CANDIDATES = (Path("/usr/local/go/bin/go"),)
"""Where a module build looks for a Go new enough (after ``UNITED_GO``, before ``PATH``)."""
GO_VARIABLE = "UNITED_GO"
MODULE_GO_HINT = "1.26"
"""The Go the newest release needs (its go.mod's ``go`` line), for the message when there is none."""
BUILD_JOBS = 2
"""``go build -p``: two packages at a time; two links at once take about 4 GiB."""
TRASH_PREFIX = ".removing-"
"""A finished module build's caches (5 GB of small files) are moved aside under the lock and
removed after it, so runs waiting on the lock need not wait minutes for the deletion."""
APT_HINT = (
    "apt could not fetch from the package archive: check the network and the apt sources "
    "(/etc/apt/sources.list*), then run it again"
)

Progress = Callable[[str], None]


class ProvisionError(RuntimeError):
    """A provisioning step failed; ``log`` is the build log to read, ``hint`` what a person
    can do about it."""

    def __init__(self, message: str, *, log: Path, hint: str = "") -> None:
        super().__init__(f"{message} (build log: {log})")
        self.message = message
        self.log = log
        self.hint = hint or f"the build log says what went wrong: {log}"


@dataclass(frozen=True)
class Layout:
    """Where provisioning puts things. One directory per Kubernetes version."""

    root: Path
    version: KubeVersion = DEFAULT

    @classmethod
    def default(cls, version: KubeVersion | None = None, env: Mapping[str, str] | None = None) -> Layout:
        """``version``'s cache directory (default: the default version), honouring
        ``XDG_CACHE_HOME`` like other tools do."""
        env = os.environ if env is None else env
        version = version or DEFAULT
        base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
        return cls(Path(base) / "united" / f"kube-{version}", version)

    @property
    def bin_dir(self) -> Path:
        return self.root / "bin"

    @property
    def src_dir(self) -> Path:
        return self.root / "src"

    @property
    def go_cache(self) -> Path:
        return self.root / "go-build"

    @property
    def gopath(self) -> Path:
        """A module build's own GOPATH (its module cache), removed after a build."""
        return self.root / "gopath"

    @property
    def modules_dir(self) -> Path:
        """A module build's wrapper modules (``kube/go.mod``, ``etcd/go.mod``), kept for reading."""
        return self.root / "modules"

    @property
    def stamp(self) -> Path:
        return self.root / "stamp.json"

    @property
    def build_log(self) -> Path:
        return self.root / "build.log"

    @property
    def lock(self) -> Path:
        return self.root / ".lock"

    @property
    def runs_dir(self) -> Path:
        """Kept logs of failed cluster runs."""
        return self.root / "runs"


@dataclass(frozen=True)
class Binaries:
    """Absolute paths of the control-plane programs, and the Kubernetes version they are
    (which decides their flags, :mod:`united.devcluster.cluster`)."""

    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kubectl: Path
    version: KubeVersion = DEFAULT

    @classmethod
    def from_layout(cls, layout: Layout, *, etcd: Path = ETCD) -> Binaries:
        """The binaries in ``layout``: a module build's etcd is its own, 1.20's ``etcd``."""
        return cls(
            etcd=etcd if layout.version.from_debian else layout.bin_dir / "etcd",
            kube_apiserver=layout.bin_dir / "kube-apiserver",
            kube_controller_manager=layout.bin_dir / "kube-controller-manager",
            kube_scheduler=layout.bin_dir / "kube-scheduler",
            kubectl=layout.bin_dir / "kubectl",
            version=layout.version,
        )


def debian_go_env(environ: Mapping[str, str], *, cache: Path, go: Path = DEBIAN_GO) -> dict[str, str]:
    """The environment ``make`` runs in: Debian's Go first on ``PATH`` whatever ``go`` the
    machine puts first, its own ``GOROOT`` (none inherited), and no toolchain switching."""
    env = {k: v for k, v in environ.items() if k not in ("GOROOT", "GOPATH", "GOBIN")}
    go_bin = go.resolve().parent
    env["PATH"] = os.pathsep.join([str(go_bin), env.get("PATH", "")])
    env.update(CGO_ENABLED="0", GOCACHE=str(cache), GOFLAGS="", GOTOOLCHAIN="local")
    return env


def built_binaries(version: KubeVersion) -> tuple[str, ...]:
    """What a build of ``version`` puts in its ``bin/``: a module build makes etcd too."""
    return KUBE_BINARIES if version.from_debian else (*KUBE_BINARIES, "etcd")


def expected_stamp(version: KubeVersion = DEBIAN) -> dict[str, object]:
    """What a finished build's stamp says; anything else means "rebuild"."""
    stamp: dict[str, object] = {"format": STAMP_FORMAT, "version": str(version)}
    stamp["binaries"] = list(built_binaries(version))
    if not version.from_debian:
        stamp["etcd"] = ETCD_MODULE_VERSION
    return stamp


def is_provisioned(layout: Layout, *, etcd: Path = ETCD) -> bool:
    """True when the stamp matches the layout's version and every binary (and etcd) is an
    executable file."""
    try:
        stamp = json.loads(layout.stamp.read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(stamp, dict):
        return False
    expected = expected_stamp(layout.version)
    if {k: stamp.get(k) for k in expected} != expected:
        return False
    binaries = Binaries.from_layout(layout, etcd=etcd)
    paths = [layout.bin_dir / name for name in KUBE_BINARIES] + [binaries.etcd]
    return all(p.is_file() and os.access(p, os.X_OK) for p in paths)


def missing_packages(packages: Sequence[str]) -> list[str]:
    """The Debian packages of ``packages`` that are not installed."""
    missing = []
    for package in packages:
        result = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", package],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0 or "install ok installed" not in result.stdout:
            missing.append(package)
    return missing


def read_apt_sources() -> dict[str, str]:
    """The text of every apt source file, keyed by path."""
    files: dict[str, str] = {}
    candidates = [APT_SOURCES_LIST, *sorted(APT_SOURCES_DIR.glob("*.list"))]
    candidates += sorted(APT_SOURCES_DIR.glob("*.sources"))
    for path in candidates:
        if path.is_file():
            files[str(path)] = path.read_text(errors="replace")
    return files


def provision(
    version: KubeVersion | None = None,
    *,
    layout: Layout | None = None,
    progress: Progress | None = None,
    force: bool = False,
) -> Binaries:
    """Make sure etcd and the Kubernetes binaries of ``version`` exist (default: the
    layout's version, else the default version); build them if needed.

    Returns at once when the cache is complete (unless ``force``). Otherwise, for 1.20.2,
    installs the apt packages (as root), adds the ``deb-src`` entry, fetches and patches the
    source, runs ``make`` (about 6 minutes on 2 cores); for a newer release, builds from the
    Go modules (:class:`_ModuleBuilder`). Then installs the binaries and writes the stamp.
    Raises :class:`ProvisionError` naming the failed step.
    """
    if layout is None:
        layout = Layout.default(version)
    elif version is not None and version != layout.version:
        raise ValueError(f"layout {layout.root} is for Kubernetes {layout.version}, not {version}")
    report = progress or _print_progress
    try:
        layout.root.mkdir(parents=True, exist_ok=True)
        with _locked(layout, report):
            if not force and is_provisioned(layout):
                return Binaries.from_layout(layout)
            builder = _DebianBuilder if layout.version.from_debian else _ModuleBuilder
            builder(layout, report).run()
        for trash in layout.root.glob(f"{TRASH_PREFIX}*"):
            shutil.rmtree(trash, ignore_errors=True)
    except OSError as exc:
        raise ProvisionError(
            f"cannot provision into {layout.root}: {exc.strerror or exc}",
            log=layout.build_log,
            hint="make that directory writable, or point XDG_CACHE_HOME at a writable directory",
        ) from exc
    if not is_provisioned(layout):
        raise ProvisionError("the build finished but the result is incomplete", log=layout.build_log)
    return Binaries.from_layout(layout)


def _print_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextmanager
def _locked(layout: Layout, report: Progress) -> Iterator[None]:
    with layout.lock.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            report(f"waiting for another provisioning run to finish ({layout.lock})")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class _Steps:
    """What every build shares: its log, progress lines, timing and the failure paragraph."""

    def __init__(self, layout: Layout, report: Progress) -> None:
        self.layout = layout
        self.report = report
        self.started = time.monotonic()

    def _elapsed(self) -> str:
        seconds = int(time.monotonic() - self.started)
        return f"{seconds // 60}m{seconds % 60:02d}s"

    def _fail(self, message: str, *, hint: str = "") -> ProvisionError:
        with self.layout.build_log.open("a") as log:
            log.write(f"\n!! {message}\n")
        return ProvisionError(message, log=self.layout.build_log, hint=hint)

    def _note(self, text: str) -> None:
        with self.layout.build_log.open("a") as log:
            log.write(f"\n== {text}\n")

    def _run(
        self,
        argv: Sequence[str],
        *,
        label: str,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        heartbeat: bool = False,
        hint: str = "",
    ) -> None:
        """Run one step, its output appended to the build log; on a terminal a live
        line shows elapsed time and the last output line, elsewhere a line every 30 s."""
        log_path = self.layout.build_log
        with log_path.open("a") as log:
            log.write(f"\n== {label}: {' '.join(argv)} (cwd={cwd or os.getcwd()})\n")
            log.flush()
            try:
                proc = subprocess.Popen(
                    list(argv),
                    cwd=cwd,
                    env=dict(os.environ if env is None else env),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    errors="replace",
                )
            except OSError as exc:
                raise self._fail(f"{label}: cannot run {argv[0]}: {exc}") from exc
            last = [""]
            assert proc.stdout is not None
            reader = threading.Thread(target=_copy_lines, args=(proc.stdout, log, last), daemon=True)
            reader.start()
            started = time.monotonic()
            tty = sys.stderr.isatty()
            next_note = started + 30
            while True:
                try:
                    code = proc.wait(timeout=1)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if not heartbeat:
                    continue
                now = time.monotonic()
                elapsed = int(now - started)
                line = f"      {label}: {elapsed // 60}m{elapsed % 60:02d}s  {last[0][:70]}"
                if tty:
                    sys.stderr.write("\r\x1b[K" + line)
                    sys.stderr.flush()
                elif now >= next_note:
                    self.report(line)
                    next_note = now + 30
            reader.join()
            proc.stdout.close()
            if heartbeat and tty:
                sys.stderr.write("\r\x1b[K")
                sys.stderr.flush()
        if code != 0:
            raise self._fail(f"step '{label}' failed with exit code {code}", hint=hint)

    def _output(self, argv: Sequence[str], *, label: str, env: Mapping[str, str], hint: str = "") -> str:
        """Run a short command and return its standard output; its errors go to the build log."""
        self._note(f"{label}: {' '.join(argv)}")
        try:
            result = subprocess.run(
                list(argv), env=dict(env), cwd=self.layout.root, capture_output=True, text=True, check=False
            )
        except OSError as exc:
            raise self._fail(f"{label}: cannot run {argv[0]}: {exc}", hint=hint) from exc
        with self.layout.build_log.open("a") as log:
            log.write(result.stderr)
        if result.returncode != 0:
            raise self._fail(f"step '{label}' failed with exit code {result.returncode}", hint=hint)
        return result.stdout

    def _install(self, built: Path, names: Sequence[str]) -> None:
        """Move the built ``names`` from ``built`` into ``bin/`` (replacing it whole)."""
        staging = self.layout.root / "bin.new"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        for name in names:
            if not (built / name).is_file():
                raise self._fail(f"the build succeeded but {built / name} is missing")
            shutil.copy2(built / name, staging / name)
        shutil.rmtree(self.layout.bin_dir, ignore_errors=True)
        staging.rename(self.layout.bin_dir)


class _DebianBuilder(_Steps):
    """The provisioning steps of 1.20.2 from Debian's sources, in order; each appends to the build log."""

    def run(self) -> None:
        layout = self.layout
        layout.stamp.unlink(missing_ok=True)
        layout.build_log.write_text(f"united devcluster build of Kubernetes {KUBE_VERSION}\n")
        self.report(f"provisioning Kubernetes {KUBE_VERSION} into {layout.root}")
        self.report(f"  build log: {layout.build_log}")
        self._packages()
        self._deb_src()
        tree = self._fetch_source()
        self._patch_reflect2(tree)
        self._patch_empty_strings(tree)
        self._make(tree)
        self._install_tree(tree)
        layout.stamp.write_text(json.dumps(expected_stamp(), indent=2) + "\n")
        self.report(f"provisioned in {self._elapsed()}; binaries in {layout.bin_dir}")
        shutil.rmtree(layout.src_dir, ignore_errors=True)
        shutil.rmtree(layout.go_cache, ignore_errors=True)

    def _packages(self) -> None:
        try:
            missing = missing_packages(APT_PACKAGES)
        except FileNotFoundError as exc:
            raise self._fail(
                f"this is not a Debian or Ubuntu system: {exc.filename or 'dpkg-query'} was not found",
                hint=f"run it on Debian {DEBIAN_SUITE} (or Ubuntu with Go >= 1.18), e.g. in a python:3.11-bookworm "
                "container; the control plane is built from Debian's packages",
            ) from exc
        if not missing:
            self.report("[1/6] apt packages: present")
            return
        if os.geteuid() != 0:
            raise self._fail(
                "missing Debian packages: " + " ".join(missing) + " (installing them needs root)",
                hint=f"run it once as root (it installs them), or first: sudo apt-get install -y {' '.join(missing)}",
            )
        self.report(f"[1/6] apt packages: installing {' '.join(missing)}")
        self._run(["apt-get", "update"], label="apt-get update", hint=APT_HINT)
        self._run(
            ["apt-get", "install", "-y", "--no-install-recommends", *missing],
            label="apt-get install",
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
            hint=APT_HINT,
        )

    def _deb_src(self) -> None:
        entries = parse_sources(read_apt_sources())
        if not needs_deb_src(entries, DEBIAN_SUITE):
            self.report(f"[2/6] deb-src for {DEBIAN_SUITE}/main: present")
            return
        try:
            stanza = render_deb_src(entries, DEBIAN_SUITE)
        except LookupError as exc:
            raise self._fail(str(exc)) from exc
        if os.geteuid() != 0:
            raise self._fail(f"apt has no deb-src entry; as root, write {DEB_SRC_FILE}:\n{stanza}")
        self.report(f"[2/6] deb-src for {DEBIAN_SUITE}/main: adding {DEB_SRC_FILE}")
        DEB_SRC_FILE.write_text(stanza)
        self._run(["apt-get", "update"], label="apt-get update", hint=APT_HINT)

    def _fetch_source(self) -> Path:
        src = self.layout.src_dir
        shutil.rmtree(src, ignore_errors=True)
        src.mkdir(parents=True)
        self.report("[3/6] source: apt-get source kubernetes")
        self._run(["apt-get", "source", "kubernetes"], label="apt-get source", cwd=src, hint=APT_HINT)
        trees = [p for p in src.glob("kubernetes-*") if p.is_dir()]
        if len(trees) != 1 or KUBE_VERSION not in trees[0].name:
            names = ", ".join(p.name for p in trees) or "none"
            raise self._fail(f"expected one kubernetes-*{KUBE_VERSION}* source tree, found {names}")
        return trees[0]

    def _patch_reflect2(self, tree: Path) -> None:
        self.report("[4/6] patch: vendored modern-go/reflect2 1.0.1 -> Debian's 1.0.2 (Go >= 1.18)")
        target = tree / REFLECT2_VENDORED
        if not target.is_dir() or not REFLECT2_SOURCE.is_dir():
            raise self._fail(f"cannot patch reflect2: {target} or {REFLECT2_SOURCE} is missing")
        for old in target.iterdir():
            if old.suffix in (".go", ".s") and not old.name.endswith("_test.go"):
                old.unlink()
        copied = []
        for new in sorted(REFLECT2_SOURCE.iterdir()):
            if new.suffix in (".go", ".s") and not new.name.endswith("_test.go"):
                shutil.copy2(new, target / new.name)
                copied.append(new.name)
        with self.layout.build_log.open("a") as log:
            log.write(f"\n== reflect2 patch: copied {' '.join(copied)}\n")

    def _patch_empty_strings(self, tree: Path) -> None:
        """Go >= 1.18 makes ``reflect.ValueOf("")`` point at the runtime's shared zero value,
        so the vendored OpenAPI type check ``DeepEqual(Zero(T), ValueOf(v))`` calls every
        empty string in a custom resource ``null`` and rejects it ("must be of type string").
        Built with the Go of its day, that comparison only ever matched ``nil``; say so."""
        self.report('[4/6] patch: OpenAPI validation treats "" as null under Go >= 1.18')
        patched = []
        for relative in OPENAPI_TYPE_CHECKS:
            path = tree / relative
            text = path.read_text() if path.is_file() else ""
            if OPENAPI_NULL_CHECK not in text:
                raise self._fail(f"cannot patch {relative}: the null check was not found")
            path.write_text(text.replace(OPENAPI_NULL_CHECK, "data == nil"))
            patched.append(str(relative))
        with self.layout.build_log.open("a") as log:
            log.write(f"\n== empty-string patch: {' '.join(patched)}\n")

    def _make(self, tree: Path) -> None:
        what = " ".join(f"cmd/{name}" for name in KUBE_BINARIES)
        self.report(f'[5/6] compile: make WHAT="{what}" (about 6 minutes on 2 cores)')
        self._run(
            ["make", f"WHAT={what}"],
            label="make",
            cwd=tree,
            env=debian_go_env(os.environ, cache=self.layout.go_cache),
            heartbeat=True,
        )

    def _install_tree(self, tree: Path) -> None:
        self.report(f"[6/6] install: {self.layout.bin_dir}")
        self._install(tree / "_output" / "bin", KUBE_BINARIES)
        self._run([str(self.layout.bin_dir / "kube-apiserver"), "--version"], label="version")


class _ModuleBuilder(_Steps):
    """A release newer than 1.20 from the Go modules, in order; each step appends to the build log.

    Everything lands under the version's cache directory: the wrapper modules, a GOPATH and
    build cache of the build's own (removed once the binaries are in, so a fresh machine's
    build needs nothing but a Go and the module proxy), and the binaries."""

    def run(self) -> None:
        layout = self.layout
        version = layout.version
        layout.stamp.unlink(missing_ok=True)
        what = f"Kubernetes {version} and etcd {ETCD_MODULE_VERSION.lstrip('v')} from Go modules"
        layout.build_log.write_text(f"united devcluster build of {what}\n")
        self.report(f"provisioning {what} into {layout.root}")
        self.report(f"  build log: {layout.build_log}")
        built = layout.root / "built"
        for stale in (layout.gopath, layout.go_cache, built):
            shutil.rmtree(stale, ignore_errors=True)
        go, toolchain = self._go()
        env = gomodules.module_go_env(
            os.environ, go=go, gopath=layout.gopath, cache=layout.go_cache, toolchain=toolchain
        )
        build_date = self._wrappers(go, env, toolchain)
        self.report(f"[3/5] compile: {' '.join(KUBE_BINARIES)} (about 20 minutes on 2 cores, cold)")
        ldflags = gomodules.version_ldflags(version, build_date=build_date)
        self._run(
            [str(go), "build", "-p", str(BUILD_JOBS), "-trimpath", "-ldflags", ldflags, "-o", f"{built}/",
             *gomodules.KUBE_PACKAGES.values()],
            label="go build kubernetes",
            cwd=layout.modules_dir / "kube",
            env=env,
            heartbeat=True,
            hint=self._proxy_hint(env),
        )  # fmt: skip
        self.report(f"[4/5] compile: etcd {ETCD_MODULE_VERSION}")
        self._run(
            [str(go), "build", "-p", str(BUILD_JOBS), "-trimpath", "-ldflags", "-s -w", "-o", str(built / "etcd"),
             gomodules.ETCD_SERVER_MODULE],
            label="go build etcd",
            cwd=layout.modules_dir / "etcd",
            env=env,
            heartbeat=True,
            hint=self._proxy_hint(env),
        )  # fmt: skip
        self.report(f"[5/5] install: {layout.bin_dir}")
        self._install(built, built_binaries(version))
        self._check_version("kube-apiserver", f"Kubernetes {version.tag}")
        self._check_version("etcd", f"etcd Version: {ETCD_MODULE_VERSION.lstrip('v')}")
        layout.stamp.write_text(json.dumps(expected_stamp(version), indent=2) + "\n")
        self.report(f"provisioned in {self._elapsed()}; binaries in {layout.bin_dir}")
        trash = Path(tempfile.mkdtemp(prefix=TRASH_PREFIX, dir=layout.root))
        for scratch in (layout.gopath, layout.go_cache, built):
            if scratch.exists():
                scratch.rename(trash / scratch.name)

    def _go(self) -> tuple[Path, str]:
        """[1/5] The Go to build with (``UNITED_GO``, else the newest of /usr/local/go and
        ``PATH``'s), and the toolchain setting: ``local``, unless ``GOTOOLCHAIN`` names a release
        (``go1.27.3``), which the go command then fetches from the module proxy."""
        named = os.environ.get(GO_VARIABLE)
        which = shutil.which("go")
        candidates = [Path(named)] if named else [*GO_CANDIDATES, *([Path(which)] if which else [])]
        found: list[tuple[tuple[int, ...], Path, str]] = []
        for candidate in dict.fromkeys(candidates):
            reported = _go_version(candidate)
            if reported:
                found.append((gomodules.go_numbers(reported), candidate, reported))
        if not found:
            raise self._fail(
                "no Go found to build with" + (f" ({GO_VARIABLE}={named} does not run)" if named else ""),
                hint=f"install Go {MODULE_GO_HINT} or newer (https://go.dev/dl/, e.g. into /usr/local/go), "
                f"or name one with {GO_VARIABLE}=/path/to/bin/go",
            )
        _, go, reported = max(found)
        toolchain = os.environ.get("GOTOOLCHAIN", "")
        toolchain = toolchain if gomodules.names_release(toolchain) else "local"
        fetched = "" if toolchain == "local" else f"; GOTOOLCHAIN={toolchain} (fetched from the module proxy)"
        self.report(f"[1/5] go: {reported} ({go}){fetched}")
        return go, toolchain

    def _wrappers(self, go: Path, env: Mapping[str, str], toolchain: str) -> str:
        """[2/5] Download the two release go.mods, check the Go is new enough, write the wrapper
        modules; returns the Kubernetes release's date (the binaries' ``buildDate``)."""
        version = self.layout.version
        kube = f"{gomodules.KUBERNETES_MODULE}@{version.tag}"
        etcd = f"{gomodules.ETCD_SERVER_MODULE}@{ETCD_MODULE_VERSION}"
        self.report(f"[2/5] modules: {kube}, {etcd} (from {env.get('GOPROXY') or 'the default Go module proxy'})")
        text = self._output([str(go), "mod", "download", "-json", kube, etcd], label="go mod download", env=env,
                            hint=self._proxy_hint(env))  # fmt: skip
        try:
            found = {entry["Path"]: entry for entry in gomodules.json_stream(text)}
            kube_mod = Path(found[gomodules.KUBERNETES_MODULE]["GoMod"]).read_text()
            etcd_mod = Path(found[gomodules.ETCD_SERVER_MODULE]["GoMod"]).read_text()
            released = json.loads(Path(found[gomodules.KUBERNETES_MODULE]["Info"]).read_text())["Time"]
            wrappers = {
                "kube": gomodules.kube_wrapper_go_mod(kube_mod, version),
                "etcd": gomodules.etcd_wrapper_go_mod(etcd_mod, ETCD_MODULE_VERSION),
            }
        except (OSError, KeyError, TypeError, ValueError) as exc:
            raise self._fail(f"cannot read what the module proxy served for {kube} and {etcd}: {exc}") from exc
        reported = _go_version(go)
        for name, wrapper in wrappers.items():
            needed = gomodules.parse_go_mod(wrapper).go
            if toolchain == "local" and not gomodules.go_version_at_least(reported, needed):
                raise self._fail(
                    f"{name} needs Go {needed} or newer; {go} is {reported}",
                    hint=f"install Go {needed} or newer (or name it with {GO_VARIABLE}), or let the go command "
                    f"fetch one from the module proxy: GOTOOLCHAIN=go{needed}",
                )
            directory = self.layout.modules_dir / name
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir(parents=True)
            (directory / "go.mod").write_text(wrapper)
        self._note(f"wrapper modules in {self.layout.modules_dir}; buildDate {released}")
        return str(released)

    def _check_version(self, name: str, expected: str) -> None:
        """The installed binary says the version it was built as (the ldflags took)."""
        binary = self.layout.bin_dir / name
        said = self._output([str(binary), "--version"], label=f"{name} --version", env=os.environ)
        if expected not in said:
            raise self._fail(f"{binary} --version says {said.strip()!r}, not {expected!r}")

    @staticmethod
    def _proxy_hint(env: Mapping[str, str]) -> str:
        proxy = env.get("GOPROXY") or "https://proxy.golang.org (the default)"
        return (
            f"if the log shows a download failing: the Go module proxy ({proxy}) could not be reached or "
            "does not serve that version; check the network and GOPROXY, then run it again"
        )


def _go_version(go: Path) -> str:
    """``go env GOVERSION`` of that Go itself (never a toolchain it would switch to), or ""."""
    env = {**os.environ, "GOTOOLCHAIN": "local"}
    env.pop("GOROOT", None)
    try:
        result = subprocess.run([str(go), "env", "GOVERSION"], env=env, capture_output=True, text=True, check=False)
    except OSError:
        return ""
    return result.stdout.strip() if result.returncode == 0 else ""


def _copy_lines(stream: IO[str], log: IO[str], last: list[str]) -> None:
    for line in stream:
        log.write(line)
        log.flush()
        if line.strip():
            last[0] = line.strip()


def tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a log, for error messages."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
