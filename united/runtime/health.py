"""The controller's HTTP endpoints: ``/healthz``, ``/readyz`` and ``/metrics``.

Why the two probes mean different things (controller-runtime's names and semantics):

* ``/healthz`` is the **liveness** probe: a failure makes the kubelet restart the
  pod. It therefore checks only what a restart can fix — that the event loop still
  answers (the handler runs on it) and that the registered core tasks (workers,
  informers, the leader elector...) have not died. It must never depend on reaching
  the API server: an API-server blip would otherwise restart every controller pod
  at once, a restart storm that makes the outage worse.
* ``/readyz`` is the **readiness** probe: registered checks such as "informer
  caches synced". It does not depend on being the leader, so standby replicas with
  warm caches are Ready too (and rollouts can proceed). At shutdown it is flipped to
  not-ready first, so nothing new is routed to a pod that is going away.

Both answer ``ok`` (200) or list the failing checks (503), in the same
``[+]name ok`` / ``[-]name failed: reason`` style as the API server's own probes (a
check says *why* it fails by raising: ``informers failed: not synced: pods (cannot list
pods: …)``); ``?verbose`` lists every check. A probe's failing checks are logged when
they change, not on every probe. ``/metrics`` serves what ``exposition`` returns (the
Prometheus text format of :meth:`~united.runtime.metrics.Metrics.exposition`), uncompressed:
rendering it is kept short because it runs on the controller's loop, and compressing it
would cost more CPU than the bytes it saves on a scrape.

The server is an aiohttp ``AppRunner`` with ``handle_signals=False`` (the manager owns
SIGTERM and decides the shutdown order: readiness off first, the server closed last),
accepting through a :class:`~united.runtime.connections.Listener`: any pod can reach this
port, so connections are capped (:data:`HTTP_LIMITS`, overall and per peer) and must send
their request within a deadline.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from united.runtime.connections import Closed, Limits, Listener

Check = Callable[[], bool | Awaitable[bool]]
"""A probe check: returns (or awaits) True when healthy; False or an exception means unhealthy."""

DEFAULT_CHECK_TIMEOUT = 5.0
HTTP_LIMITS = Limits(max_connections=64, max_per_peer=16)
"""Probes and scrapes: a kubelet and a Prometheus or two, a request at a time each."""

_log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outcome of one named check."""

    name: str
    ok: bool
    reason: str = ""


class HealthServer:
    """Liveness, readiness and metrics over HTTP; see the module docstring."""

    def __init__(
        self,
        *,
        exposition: Callable[[], bytes],
        check_timeout: float = DEFAULT_CHECK_TIMEOUT,
        limits: Limits | None = None,
        closed: Closed | None = None,
    ) -> None:
        self.limits = limits or HTTP_LIMITS
        self._closed = closed
        self.listener: Listener | None = None
        self._liveness: dict[str, Check] = {}
        self._readiness: dict[str, Check] = {}
        self._check_timeout = check_timeout
        self._shutting_down = False
        self._failing: dict[str, dict[str, str]] = {}
        self._runner: web.AppRunner | None = None
        self.app = web.Application(middlewares=[self._headers_read])
        self.app.router.add_get("/healthz", self._healthz)
        self.app.router.add_get("/readyz", self._readyz)
        self._exposition = exposition
        self.app.router.add_get("/metrics", self._metrics)

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=self._exposition(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    # -- registration -----------------------------------------------------------------

    def add_liveness_check(self, name: str, check: Check) -> None:
        """Register a liveness check; it must not depend on the API server."""
        self._liveness[name] = check

    def watch_task(self, name: str, task: asyncio.Task[object]) -> None:
        """Fail liveness once ``task`` (a core loop that should run forever) has ended,
        whether it crashed, returned or was cancelled."""

        def alive() -> bool:
            if not task.done():
                return True
            if task.cancelled():
                raise RuntimeError("task was cancelled")
            exc = task.exception()
            raise RuntimeError(f"task ended: {exc!r}" if exc is not None else "task returned")

        self.add_liveness_check(name, alive)

    def add_readiness_check(self, name: str, check: Check) -> None:
        """Register a readiness check (e.g. an informer's ``has_synced``)."""
        self._readiness[name] = check

    def set_shutting_down(self) -> None:
        """Report not-ready from now on (the first step of a graceful shutdown)."""
        self._shutting_down = True

    @web.middleware
    async def _headers_read(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """Every route is a GET: once its headers are in, the request's deadline ends."""
        if self.listener is not None:
            self.listener.read(request.protocol)
        return await handler(request)

    # -- evaluation -------------------------------------------------------------------

    async def _run(self, name: str, check: Check) -> CheckResult:
        try:
            async with asyncio.timeout(self._check_timeout):
                outcome = check()
                if inspect.isawaitable(outcome):
                    outcome = await outcome
        except TimeoutError:
            return CheckResult(name, False, f"timed out after {self._check_timeout:g}s")
        except Exception as exc:
            return CheckResult(name, False, str(exc) or type(exc).__name__)
        return CheckResult(name, bool(outcome), "" if outcome else "check returned false")

    async def liveness(self) -> list[CheckResult]:
        """Run every liveness check."""
        return list(await asyncio.gather(*(self._run(n, c) for n, c in self._liveness.items())))

    async def readiness(self) -> list[CheckResult]:
        """Run every readiness check, plus ``shutdown`` once shutting down."""
        results = list(await asyncio.gather(*(self._run(n, c) for n, c in self._readiness.items())))
        results.append(CheckResult("shutdown", not self._shutting_down, "shutting down" if self._shutting_down else ""))
        return results

    def _respond(self, what: str, results: list[CheckResult], request: web.Request) -> web.Response:
        failing = {r.name: r.reason for r in results if not r.ok}
        if failing != self._failing.get(what, {}):
            # Logged when the answer changes, not on every probe (a kubelet probes every few seconds).
            self._failing[what] = failing
            if failing:
                _log.warning("probe failing", probe=what, failed=failing)
            else:
                _log.info("probe passing", probe=what)
        healthy = all(result.ok for result in results)
        if healthy and "verbose" not in request.query:
            return web.Response(text="ok")
        lines = [f"[+]{r.name} ok" if r.ok else f"[-]{r.name} failed: {r.reason}" for r in results]
        lines.append(f"{what} check {'passed' if healthy else 'failed'}")
        return web.Response(status=200 if healthy else 503, text="\n".join(lines) + "\n")

    async def _healthz(self, request: web.Request) -> web.Response:
        return self._respond("healthz", await self.liveness(), request)

    async def _readyz(self, request: web.Request) -> web.Response:
        return self._respond("readyz", await self.readiness(), request)

    # -- serving ----------------------------------------------------------------------

    async def start(self, host: str = "0.0.0.0", port: int = 8081) -> int:
        """Serve on ``host:port`` and return the bound port (``port=0`` picks a free one)."""
        if self._runner is not None:
            raise RuntimeError("health server already started")
        runner = web.AppRunner(self.app, handle_signals=False, access_log=None, shutdown_timeout=1.0,
                               keepalive_timeout=self.limits.idle_timeout)  # fmt: skip
        await runner.setup()
        server = runner.server
        assert server is not None
        listener = Listener(server, name="http", limits=self.limits, closed=self._closed)
        try:
            bound = await listener.start(host, port)
        except BaseException:
            await runner.cleanup()
            raise
        self._runner, self.listener = runner, listener
        _log.info("health server listening", host=host, port=bound)
        return int(bound)

    async def stop(self) -> None:
        """Stop serving (idempotent)."""
        runner, self._runner = self._runner, None
        listener, self.listener = self.listener, None
        if listener is not None:
            await listener.stop()
        if runner is not None:
            await runner.cleanup()


__all__ = ["DEFAULT_CHECK_TIMEOUT", "Check", "CheckResult", "HealthServer"]
