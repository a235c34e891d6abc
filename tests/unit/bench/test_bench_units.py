"""Unit tests for the benchmark harness's pure parts and for the performance changes it
led to in the runtime (store indexes, compact cached objects) and the API client (no
per-request environment lookups)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from bench.controller import CpuLedger, diff_counts, parse_metrics, total, writes_by
from bench.observe import _status_ok
from bench.profile import summarise
from bench.report import render
from bench.scenarios import allocation_bench, allocation_spec, percentile, slope
from bench.workload import allocation, floor_plan, plain_deployment, united_deployment
from united.runtime.informer import LAST_APPLIED_ANNOTATION, Store, compact, object_key
from united.uniteddeployment.allocation import choose


def obj(name: str, namespace: str = "ns", owner: str | None = None) -> dict[str, object]:
    meta: dict[str, object] = {"name": name, "namespace": namespace, "resourceVersion": "1", "uid": f"u-{name}"}
    if owner is not None:
        meta["ownerReferences"] = [{"uid": owner, "controller": True, "kind": "UnitedDeployment", "name": owner}]
    return {"metadata": meta}


# -- runtime: store indexes ------------------------------------------------------------------


def test_store_lists_one_namespace_and_its_orphans_and_keeps_indexes_on_updates() -> None:
    store = Store()
    for item in (obj("a", "x", owner="p"), obj("b", "x"), obj("c", "y"), obj("d", "x", owner="p")):
        store.upsert(item)
    assert sorted(object_key(o) for o in store.list("x")) == ["x/a", "x/b", "x/d"]
    assert [object_key(o) for o in store.list("y")] == ["y/c"]
    assert store.list("none") == []
    assert len(store.list()) == 4
    assert [object_key(o) for o in store.orphans("x")] == ["x/b"]
    store.upsert(obj("b", "x", owner="p"))  # adopted
    assert store.orphans("x") == []
    assert [object_key(o) for o in store.by_owner("p")] == ["x/a", "x/b", "x/d"]
    store.upsert(obj("a", "x"))  # released
    assert [object_key(o) for o in store.orphans("x")] == ["x/a"]
    store.remove("x/a")
    assert store.orphans("x") == []
    assert sorted(object_key(o) for o in store.list("x")) == ["x/b", "x/d"]
    store.replace([obj("c", "y")])
    assert store.list("x") == [] and store.by_owner("p") == []
    assert [object_key(o) for o in store.orphans("y")] == ["y/c"]
    cluster_scoped = {"metadata": {"name": "n1", "resourceVersion": "1"}}
    store.upsert(cluster_scoped)
    assert store.list("") == [cluster_scoped]


# -- runtime: compact cached objects -----------------------------------------------------------


def fresh(text: str) -> str:
    """An equal string that is a new object (as each JSON decode makes)."""
    return "".join(list(text))


def test_compact_strips_copies_and_shares_keys_and_low_cardinality_values() -> None:
    raw = {
        "metadata": {
            "name": "a",
            "managedFields": [{"manager": "x"}],
            "annotations": {LAST_APPLIED_ANNOTATION: "{}", "keep": "me"},
        },
        "spec": {"containers": [{fresh("imagePullPolicy"): fresh("IfNotPresent"), "ports": [1, 2.5, None, True]}]},
    }
    out = compact(raw)
    assert out == {
        "metadata": {"name": "a", "annotations": {"keep": "me"}},
        "spec": {"containers": [{"imagePullPolicy": "IfNotPresent", "ports": [1, 2.5, None, True]}]},
    }
    other = compact({"spec": {"containers": [{fresh("imagePullPolicy"): fresh("IfNotPresent")}]}})
    [(key, value)] = other["spec"]["containers"][0].items()
    [(first_key, first_value), _] = out["spec"]["containers"][0].items()
    assert key is first_key and value is first_value


def test_compact_does_not_keep_strings_unique_to_one_object_or_write() -> None:
    """Interning these leaked on CPython 3.12, which never frees an interned string: a new
    resourceVersion and timestamps with every watch event (92 MB after 100,000 events)."""

    def decoded() -> dict[str, Any]:
        return {
            "metadata": {"uid": fresh("0b7c1f7e-8c1e"), "resourceVersion": fresh("123456")},
            "status": {
                "conditions": [{"lastTransitionTime": fresh("2024-01-01T00:00:00Z"), "message": fresh("done")}],
                "long": fresh("x" * 200),
            },
        }

    a, b = compact(decoded()), compact(decoded())
    assert a == b
    assert a["metadata"]["uid"] is not b["metadata"]["uid"]
    assert a["metadata"]["resourceVersion"] is not b["metadata"]["resourceVersion"]
    [ca], [cb] = a["status"]["conditions"], b["status"]["conditions"]
    assert ca["lastTransitionTime"] is not cb["lastTransitionTime"]
    assert ca["message"] is not cb["message"]
    assert a["status"]["long"] is not b["status"]["long"]


def test_the_pool_of_shared_strings_is_bounded() -> None:
    from united.runtime import informer

    for i in range(informer._POOL_LIMIT + 1000):
        compact({"metadata": {"labels": {"hash": f"h-{i}"}}})
    assert len(informer._pool) <= informer._POOL_LIMIT + 1


# -- bench helpers --------------------------------------------------------------------------------

METRICS = """# HELP rest_client_requests_total x
rest_client_requests_total{code="201",resource="deployments",verb="POST"} 3.0
rest_client_requests_total{code="409",resource="deployments",verb="POST"} 1.0
rest_client_requests_total{code="200",resource="uniteddeployments/status",verb="PATCH"} 2.0
rest_client_requests_total{code="200",resource="deployments",verb="GET"} 7.0
workqueue_depth{name="uniteddeployment"} 0.0
"""


def test_metrics_parsing_and_write_counts() -> None:
    samples = parse_metrics(METRICS)
    assert total(samples, "rest_client_requests_total", verb="POST") == 4
    assert total(samples, "workqueue_depth") == 0
    writes = writes_by(samples)
    assert writes == {"POST deployments": 4, "PATCH uniteddeployments/status": 2}
    assert diff_counts({"a": 3, "b": 1}, {"a": 1, "b": 1}) == {"a": 2}


def test_percentile_interpolates() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([5.0], 99) == 5.0
    assert percentile([1.0, 2.0], 100) == 2.0


def test_floor_plan_is_what_the_controller_writes_for_a_new_ud() -> None:
    doc = united_deployment("web", "ns", subsets=3, replicas=6)
    plan = floor_plan(doc)
    assert plan["revision"]["kind"] == "ControllerRevision"
    assert [c["spec"]["replicas"] for c in plan["children"]] == [2, 2, 2]
    status = plan["status"]
    assert status["subsetReplicas"] == {"s0": 2, "s1": 2, "s2": 2}
    assert _status_ok({"metadata": {"generation": 1}, "status": status}, allocation(doc))
    assert not _status_ok({"metadata": {"generation": 2}, "status": status}, allocation(doc))
    assert allocation(doc, 7, {"s0": 2, "s1": 2, "s2": 2}) == {"s0": 2, "s1": 2, "s2": 3}


def test_plain_deployments_with_and_without_the_subset_label() -> None:
    labelled = plain_deployment("c", "ns", replicas=2, subset_label=True)
    assert labelled["metadata"]["name"] == "c" and "ownerReferences" not in labelled["metadata"]
    assert "apps.united.io/subset-name" in labelled["metadata"]["labels"]
    bare = plain_deployment("f", "ns", replicas=1, subset_label=False)
    assert "apps.united.io/subset-name" not in bare["metadata"]["labels"]
    assert "apps.united.io/subset-name" not in bare["spec"]["selector"]["matchLabels"]


def test_allocation_specs_choose_their_allocator_and_the_bench_times_them() -> None:
    assert choose(allocation_spec(8, "specified")) == "specified"
    assert choose(allocation_spec(8, "elastic")) == "elastic"
    out = allocation_bench((10,), budget=0.01)
    assert set(out) == {"specified/10", "elastic/10"}
    assert all(v["ms"] > 0 for v in out.values())


def test_profile_summary_skips_idle_threads(tmp_path: Path) -> None:
    raw = tmp_path / "p.raw"
    raw.write_text(
        "main (a.py:1);work (b.py:2) 30\n"
        "main (a.py:1);work (b.py:3);inner (c.py:9) 10\n"
        "_bootstrap (threading.py:1);_worker (concurrent/futures/thread.py:81) 500\n"
    )
    summary = summarise(raw)
    assert summary["samples"] == 40 and summary["idle_samples"] == 500
    assert summary["self"][0][:2] == ("work (b.py)", 30)


def test_report_renders_every_scenario() -> None:
    results = {
        "cold_start": {
            "uds": 5, "subsets": 3, "workers": 3, "controller_seconds": 2.0, "floor_seconds": 1.0, "ratio": 2.0,
            "controller_reconcile_writes": 25, "expected_writes": 25, "controller_event_writes": 15,
            "duplicate_children_created": 0, "controller_cpu_seconds": 1.0,
            "workers_default": True, "floor_concurrency": 16, "controller_cpu_ms_per_write": 0.9,
            "floor_cpu_ms_per_write": 0.5, "cpu_per_write_ratio": 1.8,
        },
        "floor_sweep": {"uds": 200, "subsets": 3, "seconds": {"1": 9.0, "16": 2.5, "64": 2.75}, "best": 16},
        "scale": {
            key: {
                "size": 3, "events": 3, "p50_ms": 20, "p99_ms": 30, "floor_p50_ms": 10, "floor_p99_ms": 12,
                "ratio_p50": 2.0, "ratio_p99": 2.5, "writes_per_event": 2.0, "goal_writes_per_event": 2.0,
                "event_writes_per_event": 1.0, "ud_write_p50_ms": 7, "controller_leg_p50_ms": 13,
            }
            for key in ("one_at_a_time", "bursts")
        },
        "resync_restart": {"uds": 5, "writes": 0, "cpu_seconds_total": 1.5},
        "resync_touch": {"uds": 5, "writes": 0, "cpu_seconds": 0.1, "cpu_ms_per_ud": 20.0},
        "memory": {"children": 200, "rss_full_kb": 90000, "rss_empty_kb": 80000, "kb_per_child": 50.0,
                   "json_bytes_per_child_as_created": 2800, "pods": 100, "rss_pods_kb": 80300,
                   "kb_per_pod": 3.0, "json_bytes_per_pod": 3500},
        "allocation": {"specified/1000": {"allocator": "specified", "subsets": 1000, "ms": 2.0}},
        "growth": {"sizes": [{"uds": 500, "controller_seconds": 6.0, "floor_seconds": 5.0, "ratio": 1.2,
                              "cpu_per_write_ratio": 1.4}],
                   "controller_ms_per_ud": 12.0, "floor_ms_per_ud": 10.0},
        "machine": {"cpus": 2},
    }  # fmt: skip
    table = render(results)
    assert "| Growth: cold start, 500 UDs |" in table
    assert "| 6.00 s | 5.00 s | 1.20x; CPU 1.40x | ≤ 1.25x | yes |" in table
    assert "| Growth: slope (least squares) | ms of cold start per UnitedDeployment |" in table
    assert "| 12.00 ms | 10.00 ms | 1.20x |" in table
    assert "| Cold start, 5 UDs x 3 subsets, 3 workers (default); floor at 16 at once |" in table
    assert table.splitlines()[2].startswith("| Floor sweep, 200 UDs x 3 subsets |")
    assert "| 1: 9.00 s, 16: 2.50 s, 64: 2.75 s |  |  | best 16 |" in table
    assert "| CPU of the process per reconcile write | 0.90 ms | 0.50 ms | 1.80x | ≤ 1.5x | **no** |" in table
    assert "| 2.00x / 2.50x | p50 ≤ 3.0x, p99 ≤ 4.0x | yes |" in table
    assert table.count("| yes |") >= 5 and "| **no** |" in table  # the memory row misses
    assert "| 7; 13 ms |  | 0.70x; 1.30x |" in table
    assert "| Memory, 100 cached pods | RSS with them vs empty cache; per pod | 78 MiB vs 78 MiB; 3.00 KB |" in table


# -- client: LIST items transformed page by page ------------------------------------------------


async def test_list_transforms_each_item_as_its_page_arrives() -> None:
    from aiohttp import web

    from united.devcluster.ports import free_ports
    from united.kube.client import PODS, KubeClient

    pages = {
        "": {"metadata": {"resourceVersion": "7", "continue": "p2"}, "items": [{"metadata": {"name": "a"}}]},
        "p2": {"metadata": {}, "items": [{"metadata": {"name": "b"}}]},
    }
    seen: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        return web.json_response({"kind": "PodList", "apiVersion": "v1", **pages[request.query.get("continue", "")]})

    app = web.Application()
    app.router.add_get("/api/v1/pods", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_ports(1)[0]
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        async with KubeClient.for_server(f"http://127.0.0.1:{port}") as client:

            def transform(item: dict[str, object]) -> dict[str, object]:
                seen.append(f"{item['kind']}/{item['metadata']['name']}")  # type: ignore[index]
                return {"copy": item}

            listed = await client.list(PODS, transform=transform)
    finally:
        await runner.cleanup()
    assert seen == ["Pod/a", "Pod/b"]
    assert [i["copy"]["metadata"]["name"] for i in listed.items] == ["a", "b"]
    assert listed.resource_version == "7"


def test_the_growth_slope_is_the_least_squares_fit() -> None:
    assert slope([(500, 6.0), (2000, 24.0), (5000, 60.0)]) == pytest.approx(0.012)
    assert slope([(500, 1.0), (1000, 3.0), (1500, 2.0)]) == pytest.approx(0.001)
    assert math.isnan(slope([(500, 6.0)]))


def test_the_cpu_ledger_charges_each_window_to_its_case_per_event() -> None:
    readings = iter([
        {"kube-apiserver": 10.0, "controller": 5.0},  # start of a burst of 2
        {"kube-apiserver": 10.03, "controller": 5.01, "etcd": 1.0},  # a process not in the start reading is skipped
        {"kube-apiserver": 11.0, "controller": 6.0},  # start of a second burst
        {"kube-apiserver": 11.01, "controller": 6.01},
    ])  # fmt: skip
    ledger = CpuLedger(lambda: next(readings))
    for _ in range(2):
        since = ledger.start()
        ledger.charge("controller 2", since, events=2)
    got = ledger.per_event_ms("controller 2")
    assert got == pytest.approx({"controller": 5.0, "kube-apiserver": 10.0, "total": 15.0})
    assert ledger.per_event_ms("floor 2") == {}
