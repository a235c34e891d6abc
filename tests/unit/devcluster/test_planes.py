"""Several planes started together, one component kept down, what a plane costs."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from united.devcluster.build import Binaries
from united.devcluster.cluster import DEFAULT_CONTROLLERS, ClusterError, LocalCluster, _Process, start_together
from united.devcluster.planes import MEMBER_CONTROLLERS, footprint


@pytest.fixture(autouse=True)
def sigterm_handler() -> Iterator[None]:
    """LocalCluster makes SIGTERM interrupt the main thread; give the handler back."""
    previous = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, previous)


def _binaries(tmp_path: Path, *, etcd: str) -> Binaries:
    script = tmp_path / f"etcd-{etcd}"
    script.write_text(f"#!/bin/sh\n{etcd}\n")
    script.chmod(0o755)
    missing = tmp_path / "never-started"
    return Binaries(
        etcd=script, kube_apiserver=missing, kube_controller_manager=missing, kube_scheduler=missing, kubectl=missing
    )


def test_a_plane_that_fails_to_start_stops_every_plane_and_is_named(tmp_path: Path) -> None:
    broken = LocalCluster(_binaries(tmp_path, etcd="exit 3"), name="member-1", log_root=tmp_path)
    waiting = LocalCluster(_binaries(tmp_path, etcd="exec sleep 60"), name="member-2", log_root=tmp_path)
    with pytest.raises(ClusterError, match="local control plane member-1 failed to start: etcd exited with code 3"):
        start_together([broken, waiting])
    assert broken.pids == waiting.pids == {}
    assert (broken.log_dir / "etcd.log").is_file(), "the failed plane's logs are kept"
    assert not waiting.workdir.exists(), "the other plane is removed"
    assert "united-kube-member-1-" in broken.workdir.name


def test_a_component_stopped_on_purpose_is_not_dead_and_stays_down(tmp_path: Path) -> None:
    cluster = LocalCluster(_binaries(tmp_path, etcd="exit 0"), name="unit", log_root=tmp_path, startup_timeout=1)
    try:
        cluster._processes.append(_Process("kube-scheduler", ["sleep", "60"], cluster.log_dir))
        with pytest.raises(ValueError, match="is running"):
            cluster.start_component("kube-scheduler")
        with pytest.raises(KeyError, match="no component 'etcd'"):
            cluster.stop_component("etcd")
        cluster.stop_component("kube-scheduler")
        assert cluster.pids == {}
        cluster.check_alive()
        with pytest.raises(ClusterError, match="kube-scheduler did not come back"):
            cluster.start_component("kube-scheduler")
        assert "kube-scheduler" in cluster.pids, "started again, only not healthy"
    finally:
        cluster.stop()


def test_members_run_a_subset_of_the_hosts_controllers() -> None:
    assert set(MEMBER_CONTROLLERS) < set(DEFAULT_CONTROLLERS)
    assert {"deployment", "replicaset", "serviceaccount-token"} <= set(MEMBER_CONTROLLERS)


def test_footprint_sums_processes_memory_and_threads_cpu() -> None:
    me = Path(f"/proc/{os.getpid()}")
    thread = Path(f"/proc/self/task/{threading.get_native_id()}")
    process = footprint([me])
    assert process.rss_bytes > 10 * 2**20 and process.cpu_seconds > 0
    alone = footprint([thread])
    assert alone.rss_bytes == 0, "a thread's memory is its process's"
    assert alone.cpu_seconds > 0
