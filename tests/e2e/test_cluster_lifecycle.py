"""Starting and stopping control planes leaves nothing behind, and a failed start
says what failed and keeps the logs."""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
from pathlib import Path

import pytest

from united.devcluster.cluster import ClusterError, LocalCluster

pytestmark = pytest.mark.e2e


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_stop_ends_exactly_the_started_processes(cluster: LocalCluster) -> None:
    second = LocalCluster(cluster.binaries)
    with second:
        pids = second.pids
        assert sorted(pids) == ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"]
        assert all(not _gone(pid) for pid in pids.values())
        workdir = second.workdir
    assert all(_gone(pid) for pid in pids.values())
    assert not _listening(second.ports.apiserver) and not _listening(second.ports.etcd_client)
    assert not workdir.exists()
    cluster.check_alive()


def test_a_component_that_cannot_start_fails_with_its_log(cluster: LocalCluster) -> None:
    broken = dataclasses.replace(cluster.binaries, kube_apiserver=Path("/bin/false"))
    local = LocalCluster(broken)
    with pytest.raises(ClusterError) as info:
        local.start()
    try:
        message = str(info.value)
        assert "kube-apiserver exited with code 1" in message
        assert f"logs kept in {local.log_dir}" in message
        assert (local.log_dir / "kube-apiserver.log").is_file()
        assert (local.log_dir / "etcd.log").is_file()
        assert not (local.workdir / "pki").exists(), "private keys must not be kept"
        assert not _listening(local.ports.etcd_client), "etcd was left running"
    finally:
        shutil.rmtree(local.workdir, ignore_errors=True)
