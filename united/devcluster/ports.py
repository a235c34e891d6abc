"""Free TCP ports for the processes a local cluster, the demo and the tests start.

A port found by binding port 0 comes from the kernel's ephemeral range, the same range
every outgoing connection draws its local port from: between the moment we learn it and
the moment etcd or the API server binds it, any client on the machine may take it (seen
as ``bind: address already in use`` with several test workers connecting all the time).
So ports are drawn at random from below that range, where the kernel never hands out a
port on its own, and checked by binding them.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

HOST = "127.0.0.1"
_LOWEST = 10_000
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_given: set[int] = set()


def ephemeral_range(path: Path = _RANGE_FILE) -> range:
    """The kernel's ephemeral port range (Linux's default when it cannot be read)."""
    try:
        low, high = (int(part) for part in path.read_text().split())
    except (OSError, ValueError):
        return range(32768, 61000)
    return range(low, high + 1)


def candidates(ephemeral: range) -> range:
    """Where to look: below the ephemeral range, or above it when too little lies below."""
    below = range(_LOWEST, ephemeral.start)
    above = range(ephemeral.stop, 65536)
    return below if len(below) >= len(above) else above


def free_ports(count: int, *, host: str = HOST) -> list[int]:
    """``count`` distinct ports nobody listens on, outside the ephemeral range.

    All sockets are held until every port is known, so the answers differ, and a port is
    not handed out twice by this process; another process can still pick the same one by
    chance (one in thousands), and falls back to port 0 when none is found.
    """
    pool = candidates(ephemeral_range())
    sockets: list[socket.socket] = []
    try:
        for port in random.sample(pool, min(len(pool), 50 * count)):
            if len(sockets) == count:
                break
            if port in _given:
                continue
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind((host, port))
            except OSError:
                sock.close()
                continue
            sockets.append(sock)
        while len(sockets) < count:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
        ports = [int(s.getsockname()[1]) for s in sockets]
    finally:
        for sock in sockets:
            sock.close()
    if len(_given) > 5_000:
        _given.clear()
    _given.update(ports)
    return ports


def free_port(*, host: str = HOST) -> int:
    """One port, as :func:`free_ports`."""
    return free_ports(1, host=host)[0]
