"""``python -m bench.cache``: what one cached pod and child cost in-process, against the goal of
4 KB each (RSS adds the allocator's share: the memory scenario measures that).

tracemalloc counts every thread's allocations, so the figures come from a process of their
own: a test worker may still run threads an earlier test left behind.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_a_cached_pod_and_child_stay_under_4_kb_and_a_second_store_costs_only_its_index() -> None:
    run = [sys.executable, "-m", "bench.cache", "--objects", "500", "--json"]
    done = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    figures = json.loads(done.stdout)
    assert figures["bytes_per_pod"] < 0.5 * figures["json_bytes_per_pod"], "projected and shared"
    assert figures["bytes_per_child"] < 4096 and figures["bytes_per_child_varied"] < 4096
    for kind in ("pod", "child"):
        assert figures[f"bytes_per_{kind}_two_stores"] - figures[f"bytes_per_{kind}"] < 600, "no second copy"
