"""Provisioning: etcd from Debian, Kubernetes v1.20.2 compiled from Debian's source.

Nothing is downloaded except through apt. The result lives in a cache directory
(``${XDG_CACHE_HOME:-~/.cache}/united/kube-1.20.2/``) and is described by a stamp
file that is written *last*: a stamp that is missing, unreadable or does not match
the expected version and binaries means the previous run did not finish, so the
whole build is redone from a clean tree. A second run with a good stamp returns at
once. An ``flock`` serialises concurrent runs (two pytest sessions, CI and a demo).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from united.devcluster.sources import needs_deb_src, parse_sources, render_deb_src

KUBE_VERSION = "1.20.2"
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

    @classmethod
    def default(cls, env: Mapping[str, str] | None = None) -> Layout:
        """The cache location, honouring ``XDG_CACHE_HOME`` like other tools do."""
        env = os.environ if env is None else env
        base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
        return cls(Path(base) / "united" / f"kube-{KUBE_VERSION}")

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
    """Absolute paths of the control-plane programs."""

    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kubectl: Path

    @classmethod
    def from_layout(cls, layout: Layout, *, etcd: Path = ETCD) -> Binaries:
        return cls(
            etcd=etcd,
            kube_apiserver=layout.bin_dir / "kube-apiserver",
            kube_controller_manager=layout.bin_dir / "kube-controller-manager",
            kube_scheduler=layout.bin_dir / "kube-scheduler",
            kubectl=layout.bin_dir / "kubectl",
        )


def debian_go_env(environ: Mapping[str, str], *, cache: Path, go: Path = DEBIAN_GO) -> dict[str, str]:
    """The environment ``make`` runs in: Debian's Go first on ``PATH`` whatever ``go`` the
    machine puts first, its own ``GOROOT`` (none inherited), and no toolchain switching."""
    env = {k: v for k, v in environ.items() if k not in ("GOROOT", "GOPATH", "GOBIN")}
    go_bin = go.resolve().parent
    env["PATH"] = os.pathsep.join([str(go_bin), env.get("PATH", "")])
    env.update(CGO_ENABLED="0", GOCACHE=str(cache), GOFLAGS="", GOTOOLCHAIN="local")
    return env


def expected_stamp() -> dict[str, object]:
    """What a finished build's stamp says; anything else means "rebuild"."""
    return {"format": STAMP_FORMAT, "version": KUBE_VERSION, "binaries": list(KUBE_BINARIES)}


def is_provisioned(layout: Layout, *, etcd: Path = ETCD) -> bool:
    """True when the stamp matches and every binary (and etcd) is an executable file."""
    try:
        stamp = json.loads(layout.stamp.read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(stamp, dict):
        return False
    if {k: stamp.get(k) for k in expected_stamp()} != expected_stamp():
        return False
    paths = [layout.bin_dir / name for name in KUBE_BINARIES] + [etcd]
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
    *,
    layout: Layout | None = None,
    progress: Progress | None = None,
    force: bool = False,
) -> Binaries:
    """Make sure etcd and the Kubernetes binaries exist; build them if needed.

    Returns at once when the cache is complete (unless ``force``). Otherwise installs
    the apt packages (as root), adds the ``deb-src`` entry, fetches and patches the
    source, runs ``make`` (about 6 minutes on 2 cores), installs the binaries and
    writes the stamp. Raises :class:`ProvisionError` naming the failed step.
    """
    layout = layout or Layout.default()
    report = progress or _print_progress
    try:
        layout.root.mkdir(parents=True, exist_ok=True)
        with _locked(layout, report):
            if not force and is_provisioned(layout):
                return Binaries.from_layout(layout)
            _Builder(layout, report).run()
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


class _Builder:
    """The provisioning steps, in order; each appends to the build log."""

    def __init__(self, layout: Layout, report: Progress) -> None:
        self.layout = layout
        self.report = report
        self.started = time.monotonic()

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
        self._install(tree)
        layout.stamp.write_text(json.dumps(expected_stamp(), indent=2) + "\n")
        self.report(f"provisioned in {self._elapsed()}; binaries in {layout.bin_dir}")
        shutil.rmtree(layout.src_dir, ignore_errors=True)
        shutil.rmtree(layout.go_cache, ignore_errors=True)

    def _elapsed(self) -> str:
        seconds = int(time.monotonic() - self.started)
        return f"{seconds // 60}m{seconds % 60:02d}s"

    def _fail(self, message: str, *, hint: str = "") -> ProvisionError:
        with self.layout.build_log.open("a") as log:
            log.write(f"\n!! {message}\n")
        return ProvisionError(message, log=self.layout.build_log, hint=hint)

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
        self._run(["apt-get", "update"], label="apt-get update")
        self._run(
            ["apt-get", "install", "-y", "--no-install-recommends", *missing],
            label="apt-get install",
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
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
        self._run(["apt-get", "update"], label="apt-get update")

    def _fetch_source(self) -> Path:
        src = self.layout.src_dir
        shutil.rmtree(src, ignore_errors=True)
        src.mkdir(parents=True)
        self.report("[3/6] source: apt-get source kubernetes")
        self._run(["apt-get", "source", "kubernetes"], label="apt-get source", cwd=src)
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

    def _install(self, tree: Path) -> None:
        self.report(f"[6/6] install: {self.layout.bin_dir}")
        staging = self.layout.root / "bin.new"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        for name in KUBE_BINARIES:
            built = tree / "_output" / "bin" / name
            if not built.is_file():
                raise self._fail(f"make succeeded but {built} is missing")
            shutil.copy2(built, staging / name)
        shutil.rmtree(self.layout.bin_dir, ignore_errors=True)
        staging.rename(self.layout.bin_dir)
        self._run([str(self.layout.bin_dir / "kube-apiserver"), "--version"], label="version")

    def _run(
        self,
        argv: Sequence[str],
        *,
        label: str,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        heartbeat: bool = False,
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
            hint = (
                "apt could not fetch from the package archive: check the network and the apt sources "
                "(/etc/apt/sources.list*), then run it again"
                if argv[0] == "apt-get"
                else ""
            )
            raise self._fail(f"step '{label}' failed with exit code {code}", hint=hint)


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
