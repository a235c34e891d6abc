"""Accept HTTP(S) connections for an aiohttp application under limits that a client cannot stretch.

Any pod on the network can open connections to the controller's ports, so every connection is
given deadlines and a place in a bounded set, whatever the client does or fails to do:

* **Caps, checked before anything is read or allocated.** At most ``max_connections`` open at
  once, and at most ``max_per_peer`` from one address; a connection over either cap is closed
  at accept (the client sees a reset; the API server then applies the webhook's
  ``failurePolicy``). The API server opens one connection per concurrent call (HTTP/1.1), so
  ``max_per_peer`` bounds how many admissions one API server may have in flight at once.
* **TLS starts with the client's first byte.** asyncio's TLS protocol allocates a 256 KiB read
  buffer per connection; a socket that sends nothing costs only the socket until then.
* **Handshake deadline** (TLS): from accept to a finished handshake, ``handshake_timeout``.
* **Request deadline**: a request's headers and body must be in within ``request_timeout`` of
  the connection's start (the first request) or of its first byte (the next ones on a
  keep-alive connection); the handler says when it has read the body (:meth:`Listener.read`).
  Dribbling headers a byte at a time does not extend it.
* **Idle deadline**: a keep-alive connection idle for ``idle_timeout`` is closed (aiohttp's
  keep-alive timer, which also closes one whose headers never complete).

Each deadline closes with ``abort()`` (no TLS goodbye to a client that would not read it) and
is counted in :meth:`~united.runtime.metrics.Metrics.connection_closed`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

_log = structlog.get_logger(__name__)

Closed = Callable[[str], None]
"""Told the reason each time the listener refuses or cuts a connection."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What one client may hold; see the module docstring."""

    max_connections: int = 256
    max_per_peer: int = 128
    handshake_timeout: float = 5.0
    request_timeout: float = 10.0
    idle_timeout: float = 60.0


class _Guard(asyncio.Protocol):
    """One accepted connection: the caps, the lazy TLS start, the deadlines; then a relay of the
    connection's events to the aiohttp protocol."""

    def __init__(self, listener: Listener) -> None:
        self.listener = listener
        self.loop = asyncio.get_running_loop()
        self.raw: asyncio.Transport | None = None
        self.app: asyncio.Protocol | None = None
        self.peer = ""
        self.counted = False
        self.pending: list[bytes] = []
        self.timer: asyncio.TimerHandle | None = None
        self.fd = -1
        self.tls_task: asyncio.Task[None] | None = None

    # -- the raw connection ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.raw = transport
        peer = transport.get_extra_info("peername")
        self.peer = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        refused = self.listener.admit(self)
        if refused:
            self.listener.closed(refused)
            transport.abort()
            return
        self.counted = True
        if self.listener.tls is None:
            self.arm(self.listener.limits.request_timeout, "request_deadline")
            self.attach(transport)
            return
        self.arm(self.listener.limits.handshake_timeout, "handshake_deadline")
        transport.pause_reading()
        sock = transport.get_extra_info("socket")
        if sock is None:
            self.start_tls()
            return
        # A duplicate descriptor: the loop lets one reader watch a transport's own.
        self.fd = os.dup(sock.fileno())
        self.loop.add_reader(self.fd, self.start_tls)

    def start_tls(self) -> None:
        self.stop_watching()
        if self.raw is not None and self.tls_task is None and not self.raw.is_closing():
            self.tls_task = self.loop.create_task(self._handshake())

    def stop_watching(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            self.loop.remove_reader(fd)
            os.close(fd)

    async def _handshake(self) -> None:
        assert self.raw is not None and self.listener.tls is not None
        relay = _Relay(self)
        try:
            secure = await self.loop.start_tls(self.raw, relay, self.listener.tls(), server_side=True)
        except (OSError, ssl.SSLError, ConnectionError, TimeoutError) as exc:
            _log.debug("TLS handshake failed", peer=self.peer, error=str(exc) or type(exc).__name__)
            self.cut(None)
            return
        if secure is None or secure.is_closing():
            self.cut(None)
            return
        self.arm(self.listener.limits.request_timeout, "request_deadline")
        self.attach(secure)

    def attach(self, transport: asyncio.Transport) -> None:
        """Hand the (secured) connection to aiohttp, with what arrived meanwhile."""
        app = self.app = self.listener.factory()
        self.listener.by_app[app] = self
        app.connection_made(transport)
        for data in self.pending:
            app.data_received(data)
        self.pending.clear()

    def data_received(self, data: bytes) -> None:
        self.received(data)

    def eof_received(self) -> bool | None:
        return self.app.eof_received() if self.app is not None else None

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost(exc)

    def pause_writing(self) -> None:
        if self.app is not None:
            self.app.pause_writing()

    def resume_writing(self) -> None:
        if self.app is not None:
            self.app.resume_writing()

    # -- what the relay and aiohttp call -------------------------------------------------------

    def received(self, data: bytes) -> None:
        if self.timer is None:
            self.arm(self.listener.limits.request_timeout, "request_deadline")
        if self.app is None:
            self.pending.append(data)
        else:
            self.app.data_received(data)

    def lost(self, exc: Exception | None) -> None:
        self.stop_watching()
        self.disarm()
        if self.tls_task is not None and not self.tls_task.done():
            self.tls_task.cancel()
        if self.counted:
            self.counted = False
            self.listener.release(self)
        app, self.app = self.app, None
        if app is not None:
            self.listener.by_app.pop(app, None)
            app.connection_lost(exc)

    def arm(self, seconds: float, reason: str) -> None:
        self.disarm()
        self.timer = self.loop.call_later(seconds, self.cut, reason)

    def disarm(self) -> None:
        timer, self.timer = self.timer, None
        if timer is not None:
            timer.cancel()

    def cut(self, reason: str | None) -> None:
        """Close now (a deadline passed, or TLS failed)."""
        self.timer = None
        if reason is not None:
            self.listener.closed(reason)
            _log.info("connection closed", reason=reason, peer=self.peer, server=self.listener.name)
        self.stop_watching()
        if self.raw is not None:
            self.raw.abort()


class _Relay(asyncio.Protocol):
    """What the TLS layer talks to: forwards the decrypted stream to the guard and aiohttp."""

    def __init__(self, guard: _Guard) -> None:
        self.guard = guard

    def data_received(self, data: bytes) -> None:
        self.guard.received(data)

    def eof_received(self) -> bool | None:
        return self.guard.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.lost(exc)

    def pause_writing(self) -> None:
        self.guard.pause_writing()

    def resume_writing(self) -> None:
        self.guard.resume_writing()


class Listener:
    """Listens on ``host:port`` and serves each admitted connection with ``factory()`` (an aiohttp
    ``web.Server``), under :class:`Limits`; ``tls`` gives the context for each new connection
    (None: plain HTTP)."""

    def __init__(
        self,
        factory: Callable[[], Any],
        *,
        name: str,
        limits: Limits,
        tls: Callable[[], ssl.SSLContext] | None = None,
        closed: Closed | None = None,
    ) -> None:
        self.factory = factory
        self.name = name
        self.limits = limits
        self.tls = tls
        self._closed = closed
        self.open = 0
        self.peers: Counter[str] = Counter()
        self.by_app: dict[Any, _Guard] = {}
        self.guards: set[_Guard] = set()
        self._server: asyncio.Server | None = None

    def admit(self, guard: _Guard) -> str | None:
        """Take a place for ``guard``; the reason it is refused otherwise."""
        if self.open >= self.limits.max_connections:
            return "too_many_connections"
        if self.peers[guard.peer] >= self.limits.max_per_peer:
            return "too_many_from_peer"
        self.open += 1
        self.peers[guard.peer] += 1
        self.guards.add(guard)
        return None

    def release(self, guard: _Guard) -> None:
        self.guards.discard(guard)
        self.open -= 1
        self.peers[guard.peer] -= 1
        if self.peers[guard.peer] <= 0:
            del self.peers[guard.peer]

    def closed(self, reason: str) -> None:
        if self._closed is not None:
            self._closed(reason)

    def read(self, app: Any) -> None:
        """The request on ``app``'s connection (``request.protocol``) is read: its deadline ends."""
        guard = self.by_app.get(app)
        if guard is not None:
            guard.disarm()

    async def start(self, host: str, port: int) -> int:
        """Listen; returns the bound port (``port=0``: a free one)."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _Guard(self), host, port, reuse_address=True)
        sock = self._server.sockets[0]
        return int(sock.getsockname()[1])

    async def stop(self) -> None:
        """Stop accepting and cut every open connection (idempotent)."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for guard in list(self.guards):
            guard.cut(None)
        with contextlib.suppress(Exception):
            await server.wait_closed()


__all__ = ["Closed", "Limits", "Listener"]
