"""Reading kube-apiserver's CPU profile: ``go tool pprof -top -cum`` text to CPU per handler and
per request (with the request counts of the same window), and the report's row."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench.report import render
from bench.serverprofile import ServerProfile, client_requests, cumulative, requests, seconds, summarise

TOP = """File: kube-apiserver
Type: cpu
Duration: 8.08s, Total samples = 4440ms (54.94%)
Showing nodes accounting for 4.44s, 100% of 4.44s total
      flat  flat%   sum%        cum   cum%
         0     0%     0%      1.76s 39.64%  {V}apiserver/pkg/endpoints/handlers.finishRequest.func1
     0.01s  0.23%  0.23%      0.74s 16.67%  runtime.gcBgMarkWorker
         0     0%  0.23%      0.69s 15.54%  {V}apiextensions-apiserver/pkg/registry/customresource.(*ScaleREST).Update
         0     0%  0.23%      0.67s 15.09%  {V}apiextensions-apiserver/pkg/registry/customresource.(*StatusREST).Update
     0.02s  0.45%  0.68%      0.41s  9.23%  {V}apiserver/pkg/storage/etcd3.(*watchChan).processEvent
         0     0%  0.68%      0.14s  3.15%  {V}apiserver/pkg/endpoints/handlers.createHandler.func1
         0     0%  0.68%       40ms   0.9%  k8s.io/kubernetes/pkg/registry/apps/deployment/storage.(*ScaleREST).Update
""".replace("{V}", "k8s.io/kubernetes/vendor/k8s.io/")  # fmt: skip


ONE = {"events": 1, "p50_ms": 10.0, "p99_ms": 16.0, "floor_p50_ms": 3.0, "floor_p99_ms": 4.0, "ratio_p50": 3.3,
       "ratio_p99": 4.0, "writes_per_event": 2.0, "goal_writes_per_event": 2.0,
       "event_writes_per_event": 1.0}  # fmt: skip
SCALE = {"one_at_a_time": ONE, "bursts": {"size": 25, **ONE}}


def test_pprof_durations_are_read_in_seconds() -> None:
    assert (seconds("0"), seconds("340ms"), seconds("1.44s"), seconds("2min")) == (0.0, 0.34, 1.44, 120.0)
    with pytest.raises(ValueError, match="not a pprof duration"):
        seconds("12 parsecs")


def test_the_top_text_gives_duration_samples_and_cumulative_cpu_by_function() -> None:
    duration, total, by_function = cumulative(TOP)
    assert (duration, total) == (8.08, 4.44)
    assert by_function["runtime.gcBgMarkWorker"] == 0.74
    assert len(by_function) == 7 and "flat" not in by_function


def test_requests_are_counted_between_two_scrapes_by_verb_resource_and_subresource() -> None:
    def sample(verb: str, resource: str, sub: str, code: str) -> tuple[str, frozenset[tuple[str, str]]]:
        labels = {"verb": verb, "resource": resource, "subresource": sub, "code": code}
        return ("apiserver_request_total", frozenset(labels.items()))

    before = {sample("PATCH", "uniteddeployments", "scale", "200"): 10.0}
    after = {
        sample("PATCH", "uniteddeployments", "scale", "200"): 510.0,
        sample("PATCH", "uniteddeployments", "scale", "409"): 4.0,  # every answer counts: CPU was spent
        sample("GET", "pods", "", "200"): 0.0,
        ("apiserver_request_duration_seconds_count", frozenset()): 9.0,
    }
    assert requests(before, after) == {("PATCH", "uniteddeployments", "scale"): 504}


def test_each_handler_s_cpu_per_request_and_the_others_share() -> None:
    counts = {("PATCH", "uniteddeployments", "scale"): 500, ("PATCH", "uniteddeployments", "status"): 250,
              ("PATCH", "deployments", "scale"): 250, ("POST", "events", ""): 250}  # fmt: skip
    got = summarise(TOP, counts)
    h = got["handlers"]
    assert h["custom resource /scale update"]["ms_per_request"] == pytest.approx(1.38)
    assert h["custom resource status update"]["ms_per_request"] == pytest.approx(2.68)
    assert h["Deployment /scale update"]["ms_per_request"] == pytest.approx(0.16)
    assert h["create (Events)"]["ms_per_request"] == pytest.approx(0.56)
    assert h["Go garbage collector"]["share"] == pytest.approx(0.74 / 4.44)
    assert h["serving watches"] == {"cpu_seconds": 0.0, "share": 0.0}  # absent from the profile
    assert summarise(TOP, {})["handlers"]["custom resource /scale update"]["ms_per_request"] is None

    scale = {**SCALE, "apiserver_profile": {"profile": "/o/apiserver-bursts.pprof", "requested_seconds": 8, **got}}
    table = render({"scale": scale, "machine": {"cpus": 2}})
    assert "custom resource status update 2.68 ms per request (250)" in table
    assert "Go garbage collector 17 %" in table and "4.44 s of CPU sampled in 8.1 s" in table
    unread = {"profile": "/o/p", "requested_seconds": 8, "unread": "no `go` on PATH"}
    assert "not read: no `go` on PATH" in render({"scale": {**SCALE, "apiserver_profile": unread}})


def test_the_controllers_requests_are_counted_by_its_own_labels() -> None:
    before = {("rest_client_requests_total", (("verb", "PATCH"), ("resource", "deployments"))): 3.0}
    after = {
        ("rest_client_requests_total", (("verb", "PATCH"), ("resource", "deployments"))): 5.0,
        ("rest_client_requests_total", (("verb", "POST"), ("resource", "events"))): 1.0,
        ("rest_client_requests_total", (("verb", "GET"), ("resource", "pods"))): 0.0,
        ("workqueue_depth", ()): 4.0,
    }
    assert client_requests(before, after) == {"verb=PATCH,resource=deployments": 2.0, "verb=POST,resource=events": 1.0}


class _Server:
    """The API server as ``ServerProfile`` sees it: a profile that takes its seconds and a
    ``/metrics`` whose PATCH count the test moves."""

    def __init__(self) -> None:
        self.patches = 0
        self.profiled = asyncio.Event()

    async def get_path(self, path: str) -> str:
        assert path == "/metrics"
        return (
            "# TYPE apiserver_request_total counter\n"
            f'apiserver_request_total{{verb="PATCH",resource="uniteddeployments",subresource="scale"}} {self.patches}\n'
        )

    async def get_bytes(self, path: str, **_: object) -> bytes:
        self.profiled.set()
        return b"profile"


async def test_requests_made_after_the_profile_ended_are_still_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a loaded machine a short profile can end before the bursts it was started for begin:
    their requests are counted up to :meth:`finish`, not to the profile's end."""
    monkeypatch.setattr("bench.serverprofile.shutil.which", lambda _: None)
    server = _Server()
    profile = ServerProfile(server, Path("/kube-apiserver"), tmp_path / "p.pprof", seconds=1)  # type: ignore[arg-type]
    await profile.start()
    await server.profiled.wait()
    for _ in range(3):
        await asyncio.sleep(0)
    server.patches = 2
    summary = await profile.finish()
    assert summary["requests"] == {"PATCH uniteddeployments scale": 2}
