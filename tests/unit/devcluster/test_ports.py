"""Ports for local processes come from outside the kernel's ephemeral range and are free."""

from __future__ import annotations

import socket
from pathlib import Path

from united.devcluster import ports
from united.devcluster.ports import candidates, ephemeral_range, free_port, free_ports


def test_the_ephemeral_range_is_read_from_the_kernel_file(tmp_path: Path) -> None:
    path = tmp_path / "range"
    path.write_text("40000\t50000\n")
    assert ephemeral_range(path) == range(40000, 50001)
    assert ephemeral_range(tmp_path / "missing") == range(32768, 61000)
    path.write_text("garbage")
    assert ephemeral_range(path) == range(32768, 61000)


def test_candidates_lie_below_the_ephemeral_range_or_above_when_little_is_below() -> None:
    assert candidates(range(32768, 61000)) == range(10_000, 32768)
    assert candidates(range(11000, 40000)) == range(40000, 65536)


def test_ports_are_distinct_free_and_never_ephemeral() -> None:
    ephemeral = ephemeral_range()
    got = free_ports(20)
    assert len(set(got)) == 20
    for port in got:
        assert port not in ephemeral
        with socket.socket() as s:
            s.bind((ports.HOST, port))


def test_a_port_listened_on_is_not_given_and_none_is_given_twice() -> None:
    with socket.socket() as taken:
        taken.bind((ports.HOST, free_port()))
        taken.listen()
        busy = taken.getsockname()[1]
        seen: set[int] = set()
        for _ in range(200):
            port = free_port()
            assert port != busy
            assert port not in seen
            seen.add(port)
