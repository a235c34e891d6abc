"""What a killed cluster process left behind is removed by the next cluster: exactly the
directories whose owner process is gone, with their etcd data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from united.devcluster.cluster import OWNER_FILE, _started, sweep_abandoned


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _cluster(root: Path, name: str, owner: dict[str, object] | None) -> tuple[Path, Path]:
    workdir, etcd = root / f"united-kube-{name}", root / f"united-etcd-{name}"
    (workdir / "pki").mkdir(parents=True)
    (workdir / "tokens.csv").write_text("secret")
    (etcd / "data").mkdir(parents=True)
    if owner is not None:
        (workdir / OWNER_FILE).write_text(json.dumps({**owner, "etcd": str(etcd)}))
    return workdir, etcd


def test_only_clusters_whose_process_is_gone_are_removed(tmp_path: Path) -> None:
    me = {"pid": os.getpid(), "started": _started(os.getpid())}
    dead = _cluster(tmp_path, "dead", {"pid": _dead_pid(), "started": "1"})
    recycled = _cluster(tmp_path, "recycled", {**me, "started": "0"})  # our pid, another start: not us
    alive = _cluster(tmp_path, "alive", me)
    kept_logs = _cluster(tmp_path, "failed", None)
    garbled = _cluster(tmp_path, "garbled", None)
    (garbled[0] / OWNER_FILE).write_text("{not json")

    assert sweep_abandoned(tmp_path) == [dead[0], recycled[0]]
    assert not any(p.exists() for p in (*dead, *recycled))
    assert all(p.exists() for p in (*alive, *kept_logs, *garbled))
    assert sweep_abandoned(tmp_path) == []


def test_an_owner_file_cannot_point_the_sweep_elsewhere(tmp_path: Path) -> None:
    victim = tmp_path / "precious"
    victim.mkdir()
    workdir, _ = _cluster(tmp_path, "planted", {"pid": _dead_pid(), "started": "1"})
    (workdir / OWNER_FILE).write_text(json.dumps({"pid": _dead_pid(), "started": "1", "etcd": str(victim)}))
    assert sweep_abandoned(tmp_path) == [workdir]
    assert victim.is_dir()


def test_a_cluster_another_sweep_is_removing_is_no_error(tmp_path: Path) -> None:
    half_gone, etcd = _cluster(tmp_path, "half-gone", {"pid": _dead_pid(), "started": "1"})
    (etcd / "data").rmdir()
    etcd.rmdir()
    assert sweep_abandoned(tmp_path) == [half_gone]
    assert not half_gone.exists()
