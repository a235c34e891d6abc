"""``united run`` as a subprocess, and what the bench reads from it: ``/metrics``
(``rest_client_requests_total``, reconciles, queue depth), CPU seconds and RSS from
``/proc/<pid>``. Optionally under ``py-spy record`` (the profile of a cold start)."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import aiohttp

from united.api.document import Json
from united.devcluster.ports import free_port

WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024

Labels = frozenset[tuple[str, str]]
Samples = dict[tuple[str, Labels], float]


_LIBC = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a child before exec: SIGTERM when the bench dies, so no controller outlives it."""
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def parse_metrics(text: str) -> Samples:
    """Prometheus text format to ``{(name, labels): value}`` (no escapes in our label values)."""
    out: Samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name, _, rest = head.partition("{")
        labels: list[tuple[str, str]] = []
        for part in rest.rstrip("}").split('",') if rest else ():
            key, _, val = part.partition("=")
            if key:
                labels.append((key.strip(), val.strip().strip('"')))
        try:
            out[(name, frozenset(labels))] = float(value)
        except ValueError:
            continue
    return out


def total(samples: Samples, name: str, **labels: str) -> float:
    """Sum of ``name``'s samples whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


def writes_by(samples: Samples) -> dict[str, int]:
    """API writes by ``VERB resource`` (``PATCH uniteddeployments/status``)."""
    out: dict[str, int] = {}
    for (name, labels), value in samples.items():
        if name != "rest_client_requests_total":
            continue
        d = dict(labels)
        if d.get("verb") in WRITE_VERBS and value:
            key = f"{d['verb']} {d.get('resource', '')}"
            out[key] = out.get(key, 0) + int(value)
    return out


def diff_counts(after: Mapping[str, int], before: Mapping[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in sorted(after.items()) if v != before.get(k, 0)}


def proc_cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from ``/proc/<pid>/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def py_spy() -> str | None:
    """The ``py-spy`` that ``--profile`` runs: on ``PATH``, else beside this Python (a venv's)."""
    beside = Path(sys.executable).with_name("py-spy")
    return shutil.which("py-spy") or (str(beside) if beside.is_file() else None)


class CpuLedger:
    """CPU seconds by process, summed over the windows a scenario charges to a case: where a
    scale event's CPU went (the API server's share against the controller's own), per event.

    ``read`` returns cumulative CPU seconds by process name; :meth:`start` takes a reading,
    :meth:`charge` adds what each process used since that reading to ``case``."""

    def __init__(self, read: Callable[[], Mapping[str, float]]) -> None:
        self._read = read
        self._spent: dict[str, dict[str, float]] = {}
        self._events: dict[str, int] = {}

    def start(self) -> dict[str, float]:
        return dict(self._read())

    def charge(self, case: str, since: Mapping[str, float], *, events: int) -> None:
        into = self._spent.setdefault(case, {})
        self._events[case] = self._events.get(case, 0) + events
        for name, seconds in self._read().items():
            if name in since:
                into[name] = into.get(name, 0.0) + seconds - since[name]

    def per_event_ms(self, case: str) -> dict[str, float]:
        """Milliseconds of CPU per event by process, and their ``total``."""
        events = self._events.get(case, 0)
        if not events:
            return {}
        out = {name: 1000 * seconds / events for name, seconds in sorted(self._spent[case].items())}
        out["total"] = sum(out.values())
        return out


def proc_rss_kb(pid: int) -> int:
    """``VmRSS`` of a process in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def _children(pid: int) -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                out += [int(p) for p in (task / "children").read_text().split()]
    return out


class ControllerProcess:
    """One ``python -m united run`` with its own metrics port and log file."""

    def __init__(
        self,
        kubeconfig: Path,
        *,
        namespaces: Sequence[str],
        workers: int | None,
        log_dir: Path,
        name: str = "controller",
        source: Path | None = None,
        profile: Path | None = None,
        extra: Sequence[str] = (),
    ) -> None:
        self.kubeconfig = kubeconfig
        self.namespaces = tuple(namespaces)
        self.workers = workers
        self.log_path = log_dir / f"{name}.log"
        self.source = source
        """A source tree to run instead of the installed ``united`` (``PYTHONPATH``), to
        measure a proposed patch side by side."""
        self.profile = profile
        self.extra = tuple(extra)
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid = 0
        """The controller's own pid (not py-spy's when profiling)."""
        self.scrapes = 0
        """``/metrics`` scrapes so far (each costs the controller CPU, see :meth:`net_cpu`)."""
        self.spawned_at = 0.0
        self.ready_at = 0.0

    def argv(self) -> list[str]:
        argv = [sys.executable, "-m", "united", "run", "--kubeconfig", str(self.kubeconfig)]
        argv += ["--http-port", str(self.port), "--log-format", "json"]
        if self.workers is not None:
            argv += ["--workers", str(self.workers)]
        for ns in self.namespaces:
            argv += ["--namespace", ns]
        argv += self.extra
        if self.profile is not None:
            spy = py_spy()
            if spy is None:
                raise FileNotFoundError("py-spy")
            output = str(self.profile.resolve())
            argv = [spy, "record", "--format", "raw", "--rate", "200", "--output", output, "--", *argv]
        return argv

    async def mark(self) -> None:
        """Before :meth:`start`: where the counts of :meth:`writes` start (its own metrics
        start at zero with the process; a subclass counting elsewhere takes a baseline)."""

    def start(self) -> None:
        self.port = free_port()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        if self.source is not None:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(self.source), env.get("PYTHONPATH", "")) if p)
        with self.log_path.open("ab") as log:
            self.spawned_at = time.monotonic()
            # ``python -m`` puts the working directory first on sys.path: run from the source
            # tree, or the checkout we were started from would shadow it.
            cwd = self.source if self.source is not None else None
            self.proc = subprocess.Popen(
                self.argv(), stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd, preexec_fn=die_with_parent
            )
        self.pid = self.proc.pid

    async def wait_ready(self, *, within: float = 120.0) -> float:
        """Wait for ``/readyz`` (informers synced); return seconds since spawn."""
        assert self.proc is not None
        deadline = time.monotonic() + within
        async with aiohttp.ClientSession() as session:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"controller exited with {self.proc.returncode}; see {self.log_path}")
                with contextlib.suppress(aiohttp.ClientError, OSError, TimeoutError):
                    async with session.get(
                        f"http://127.0.0.1:{self.port}/readyz", timeout=aiohttp.ClientTimeout(1)
                    ) as r:
                        if r.status == 200:
                            self.ready_at = time.monotonic()
                            if self.profile is not None:
                                self.pid = self._python_pid()
                            return self.ready_at - self.spawned_at
                await asyncio.sleep(0.05)
        raise RuntimeError(f"controller not ready within {within:g} s; see {self.log_path}")

    def _python_pid(self) -> int:
        assert self.proc is not None
        children = _children(self.proc.pid)
        return children[0] if children else self.proc.pid

    async def samples(self) -> Samples:
        self.scrapes += 1
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{self.port}/metrics", timeout=aiohttp.ClientTimeout(10)) as r,
        ):
            return parse_metrics(await r.text())

    async def writes(self) -> dict[str, int]:
        return writes_by(await self.samples())

    async def reconciles(self) -> int:
        return int(total(await self.samples(), "controller_runtime_reconcile_total"))

    async def idle(self) -> bool:
        """Nothing queued, nothing being reconciled."""
        s = await self.samples()
        return total(s, "workqueue_depth") == 0 and total(s, "controller_runtime_active_workers") == 0

    async def wait_idle(self, *, quiet: float = 0.5, within: float = 300.0) -> None:
        """Wait until the controller has been idle for ``quiet`` seconds in a row."""
        deadline = time.monotonic() + within
        since: float | None = None
        while time.monotonic() < deadline:
            if await self.idle():
                since = since or time.monotonic()
                if time.monotonic() - since >= quiet:
                    return
            else:
                since = None
            await asyncio.sleep(0.05)
        raise TimeoutError(f"controller not idle within {within:g} s")

    def cpu_seconds(self) -> float:
        return proc_cpu_seconds(self.pid)

    async def scrape_cpu(self, *, n: int = 10) -> float:
        """CPU seconds one ``/metrics`` scrape costs the controller now (idle, every series
        present): a phase the bench watches by polling ``/metrics`` is reported net of it (with
        500 UDs a scrape renders thousands of series; polling every 50 ms would otherwise count
        as the controller's own work)."""
        before = self.cpu_seconds()
        for _ in range(n):
            await self.samples()
        return max(0.0, (self.cpu_seconds() - before) / n)

    async def net_cpu(self, gross: float, scrapes: int) -> Json:
        """``gross`` CPU seconds of a phase in which the bench scraped ``scrapes`` times."""
        cost = await self.scrape_cpu()
        return {"cpu_seconds": max(0.0, gross - scrapes * cost), "gross_cpu_seconds": gross,
                "scrapes": scrapes, "cpu_seconds_per_scrape": cost}  # fmt: skip

    def rss_kb(self) -> int:
        return proc_rss_kb(self.pid)

    def stop(self, *, timeout: float = 60.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            # Under py-spy, signal the controller: py-spy writes its profile when its child exits.
            target = self.pid if self.profile is not None and self.pid != self.proc.pid else self.proc.pid
            with contextlib.suppress(ProcessLookupError):
                os.kill(target, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        code = self.proc.returncode
        self.proc = None
        return code
