"""The benchmark at tiny sizes, so it never rots: ``python -m bench`` end to end on its own
local control plane (5 UnitedDeployments, 200 cached children), asserting that every
scenario produces its figures and the goals that do not depend on size — a no-op resync
writes nothing, a scale event writes its changed children and one status, the pod webhook
places every pod of a spread within its maxima. Timing goals (ratios, KB per child) are for
the full manual run (``docs/performance.md``)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from bench.run import main
from bench.webhook import webhook_configurations
from united.api import yamlload
from united.api.groups import KRUISE_GROUP
from united.data import MANIFESTS, crds
from united.devcluster.ports import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

TINY = [
    "--uds", "5", "--subsets", "3", "--floor-sweep", "1,4", "--sweep-uds", "5", "--repeats", "1",
    "--scale-singles", "3", "--scale-bursts", "1", "--burst-size", "3", "--children", "200", "--pods", "200",
    "--growth", "5,10",
    "--admission-pods", "4", "--admission-burst", "2", "--scaleout-replicas", "6", "--scaleout-qps", "1000",
    "--server-profile", "1", "--crdcost-rounds", "3",
]  # fmt: skip


def test_every_scenario_runs_at_tiny_sizes(tmp_path: Path) -> None:
    assert main([*TINY, "--out", str(tmp_path), "--name", "smoke"]) == 0
    results = json.loads((tmp_path / "smoke.json").read_text())
    table = (tmp_path / "smoke.md").read_text()
    assert table.startswith("| Scenario | Figure |") and "Machine:" in table

    sweep = results["floor_sweep"]
    assert set(sweep["seconds"]) == {"1", "4"} and sweep["best"] in (1, 4)
    cold = results["cold_start"]
    assert cold["uds"] == 5 and cold["subsets"] == 3
    assert cold["workers_default"] and cold["floor_concurrency"] == sweep["best"]
    assert cold["controller_cpu_ms_per_write"] > 0 and cold["floor_cpu_ms_per_write"] > 0
    assert cold["controller_seconds"] > 0 and cold["floor_seconds"] > 0 and math.isfinite(cold["ratio"])
    # The controller makes at least the floor's writes (duplicates it later deletes would add some).
    assert cold["controller_reconcile_writes"] >= cold["expected_writes"] == 5 * (3 + 2)
    assert {r["who"] for r in cold["runs"]} == {"controller", "floor"}

    for key in ("one_at_a_time", "bursts"):
        scale = results["scale"][key]
        assert scale["events"] == 3
        assert scale["p50_ms"] > 0 and scale["floor_p50_ms"] > 0
        assert 0 < scale["ud_write_p50_ms"] < scale["p50_ms"], scale  # the UD leg comes first
        assert scale["writes_per_event"] == pytest.approx(scale["goal_writes_per_event"]), scale[
            "writes_by_resource_per_event"
        ]

    profiled = results["scale"]["apiserver_profile"]  # kube-apiserver's pprof, read with `go tool pprof`
    assert Path(profiled["profile"]).read_bytes()[:2] == b"\x1f\x8b", profiled  # gzipped protobuf
    # the server times the asked second itself: 999.57ms has been seen
    assert profiled["cpu_seconds"] > 0 and profiled["duration_seconds"] >= 0.9, profiled
    assert profiled["handlers"]["custom resource /scale update"]["requests"] >= 3, profiled
    assert "Scale bursts: API server profile" in table
    objects = profiled["objects"]  # what each write of the objects makes the API server process
    for kind in ("ud", "child"):
        assert objects[kind]["bytes"] > objects[kind]["managed_fields_bytes"] > 0, objects
        assert list(tmp_path.glob(f"object-{kind}-*.json")), kind
    assert objects["ud"]["status_bytes"] > 2, objects
    own = profiled["controller_requests"]  # the controller's own requests in the bursts: writes only
    assert any("verb=PATCH" in k and "resource=deployments" in k for k in own), own
    # (discovery's timer, looking for kinds served late, may fire in the bursts: not an event's)
    assert not any("verb=GET" in k and "resource=discovery" not in k for k in own), own

    for key in ("resync_restart", "resync_touch"):
        resync = results[key]
        assert resync["reconciles"] >= 5
        assert resync["writes"] == 0, resync["writes_by_resource"]
        cpu = resync["cpu"]  # the bench polled /metrics: its cost is measured and taken out
        assert cpu["scrapes"] > 0 and cpu["cpu_seconds_per_scrape"] >= 0
        assert 0 <= cpu["cpu_seconds"] <= cpu["gross_cpu_seconds"]

    memory = results["memory"]
    assert memory["children"] == 200
    assert memory["rss_full_kb"] > memory["rss_empty_kb"] > 0

    admission = results["admission"]  # every case measured; the webhook's bookings never over-fill
    for mode, pods in (("one_at_a_time", 4), ("bursts", 4)):
        cases = admission[mode]
        assert set(cases) == {"floor", "unconfigured", "no_spread", "untargeted", "targeted"}
        assert all(c["pods"] == pods and c["p50_ms"] > 0 and math.isfinite(c["ratio_p99"]) for c in cases.values())
    placed = admission["placement"]
    assert placed["pods"] == 5 + 8 and sum(placed["counts"].values()) == 13, placed  # warm-up + one at a time + bursts
    assert (placed["unplaced"], placed["over_filled"], placed["wrong_zone"]) == (0, {}, 0), placed
    assert admission["untargeted_placed"] == 0
    # A booking is written before its pod is answered; bookings that queue while a write is in
    # flight go out in one write (workloadspread/ledger.py), so a burst of 2 may take one write:
    # 5 warm-up + 4 single pods + 2 bursts.
    assert admission["controller_writes"].get("PATCH workloadspreads/status", 0) >= 5 + 4 + 2

    level = results["scaleout"]["levels"][0]  # pods made by the ReplicaSet controller, through the webhook
    assert level["qps"] == 1000 and {r["variant"] for r in level["runs"]} == {"floor", "untargeted", "targeted"}
    assert all(r["pods"] == 6 and r["pods_per_second"] > 0 for r in level["runs"])
    assert (level["over_filled"], level["unplaced"], level["wrong_zone"], level["untargeted_placed"]) == (0, 0, 0, 0)

    cost = results["crdcost"]["copies"]  # each CRD copy written and its writes watched
    assert set(cost) == {"as installed", "v1beta1 served", "no CEL rules"}
    assert all(set(c) == {"scale", "status"} for c in cost.values()), cost
    assert all(w["writes"] == 3 and w["p50_ms"] > 0 for c in cost.values() for w in c.values()), cost
    assert "| CRD declarations (3 rounds, 5 UDs a copy) |" in table

    allocation = results["allocation"]
    assert {v["allocator"] for v in allocation.values()} == {"specified", "elastic"}
    assert all(v["ms"] > 0 for v in allocation.values())

    limits = results["limits"]  # in-process, at the limits whatever the sizes asked
    assert set(limits) == {"most subsets", "largest template"}
    assert all(0 < f["first_longest_ms"] <= f["cpu_ms"] for f in limits.values())


def test_a_peer_runs_side_by_side_one_side_at_a_time(tmp_path: Path) -> None:
    """``--peer-command`` end to end with a stand-in peer (this project's own controller, run as
    any other program would be, with the compat CRDs and its webhook configurations as its
    manifests): both sides converge, each admits the pods of a ``apps.kruise.io/v1alpha1``
    spread through its own pod webhook and places them within the maxima, the table shows each
    figure for both, and neither side's objects outlive its turn."""
    manifests = tmp_path / "peer-manifests"
    manifests.mkdir()
    for crd in crds(KRUISE_GROUP):
        (manifests / crd.name).write_text(crd.read_text())
    configurations = webhook_configurations(yamlload.load_all((MANIFESTS / "base" / "webhook.yaml").read_text()))
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "united-system"}}
    for i, doc in enumerate([namespace, *configurations]):
        (manifests / f"zz-{i}.yaml").write_text(json.dumps(doc))
    port = free_port()
    command = (f"{sys.executable} -m united run --api-group {KRUISE_GROUP} --kubeconfig {{kubeconfig}} "
               f"--http-port {{port}} --webhook-port {port} --webhook-host 127.0.0.1 "
               f"--webhook-url https://127.0.0.1:{port}")  # fmt: skip
    argv = ["--uds", "3", "--subsets", "3", "--repeats", "2", "--scale-singles", "2", "--scale-bursts", "1",
            "--burst-size", "2", "--floor-concurrency", "4", "--admission-pods", "2", "--admission-burst", "2",
            "--scaleout-replicas", "4", "--scaleout-qps", "1000", "--server-profile", "1", "--peer-command", command,
            "--peer-manifests", str(manifests), "--out", str(tmp_path), "--name", "peer"]  # fmt: skip
    assert main(argv) == 0
    results = json.loads((tmp_path / "peer.json").read_text())
    peer = results["peer"]
    assert [run["cold"]["namespace"] for run in peer["runs"]["peer"]] == ["peer-0", "peer-1"]
    assert [run["cold"]["namespace"] for run in peer["runs"]["ours"]] == ["ours-0", "ours-1"]
    rows = {row["key"]: row for row in peer["rows"]}
    for side in ("peer", "ours"):
        figures = peer[side]
        # Counted by the API server for both sides: 3 UDs x (1 revision + 3 children + 1 status).
        assert figures["cold_writes"] == 3 * 5, peer["runs"][side]
        assert figures["resync_writes"] == 0 and figures["writes_per_event"] > 0
        assert figures["rss_kb"] > 0 and figures["cold_seconds"] > 0 and figures["burst_p99_ms"] > 0
        # The spread's pods went through the side's own webhook: each booked, none misplaced.
        assert figures["ws_misplaced"] == 0 and figures["ws_bookings_per_pod"] > 0, peer["runs"][side]
        assert figures["ws_targeted_p50_ms"] > 0 and figures["ws_no_spread_p50_ms"] > 0
        assert figures["ws_scaleout_targeted_pps"] > 0 and figures["ws_scaleout_no_spread_pps"] > 0
        for run in peer["runs"][side]:
            # Measured once the garbage collector maps the kind just installed (until then it
            # reads the owned objects and their owners again and again, for neither side); the
            # API server's requests of the profiled bursts are kept per side.
            assert run["collector_wait_seconds"] > 0
            served = run["apiserver_profile"]["requests"]
            assert served.get("PATCH uniteddeployments scale", 0) >= 1, served
            placed = run["spread"]["admission"]["placement"]
            assert placed["pods"] == 5 + 2 + 2 and sum(placed["counts"].values()) == 9, placed
            assert [level["targeted_pods_per_second"] > 0 for level in run["spread"]["scaleout"]["levels"]] == [True]
    assert rows["cold_writes"]["ratio"] == 1.0 and rows["resync_writes"]["met"]
    assert rows["ws_misplaced"]["ratio"] == 1.0 and "ws_scaleout_targeted_pps" in rows
    assert peer["floor"]["cold_seconds"] > 0 and peer["floor"]["burst_p50_ms"] > 0
    table = (tmp_path / "peer.md").read_text()
    assert table.startswith("| Figure | Peer | This project |") and "floor (the API server's limit)" in table
    logs = {p.name for p in (tmp_path / "logs").iterdir()}  # each side's process ran as its own
    assert {"peer-cold-peer-0.log", "peer-resync-peer-1.log", "cold-ours-0.log", "resync-ours-1.log"} <= logs
    assert {"peer-admission.log", "peer-scaleout.log", "admission.log", "scaleout.log"} <= logs
