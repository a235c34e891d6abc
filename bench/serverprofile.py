"""The API server's own CPU profile over the scale bursts (``--server-profile SECONDS``): where
kube-apiserver's CPU went, by handler, and per request of each kind. It is what shows that a
burst's cost is the custom resource's writes in the API server, not the controller: one
UnitedDeployment ``/scale`` or status update against one Deployment ``/scale``.

The profile comes from ``/debug/pprof/profile`` (the local control plane serves it only when
started with ``profiling=True``); request counts over the same window from the API server's
``apiserver_request_total``. ``go tool pprof`` reads the profile (Go is installed with the
control plane's build); without it only the raw profile is kept, and the summary says so.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.controller import parse_metrics
from united.api.document import Json
from united.kube.client import KubeClient

HANDLERS: dict[str, tuple[str, tuple[str, str, str] | None]] = {
    "custom resource /scale update": ("customresource.(*ScaleREST).Update", ("PATCH", "uniteddeployments", "scale")),
    "custom resource status update": ("customresource.(*StatusREST).Update", ("PATCH", "uniteddeployments", "status")),
    "Deployment /scale update": ("deployment/storage.(*ScaleREST).Update", ("PATCH", "deployments", "scale")),
    "create (Events)": ("handlers.createHandler.func1", ("POST", "events", "")),
    "serving watches": ("handlers.(*WatchServer).ServeHTTP", None),
    "decoding etcd's watch events": ("etcd3.(*watchChan).processEvent", None),
    "Go garbage collector": ("runtime.gcBgMarkWorker", None),
}
"""What the summary reports: a function whose cumulative CPU is the handler's, and the
``(verb, resource, subresource)`` of its requests (None: not per request)."""

_LINE = re.compile(r"^\s*(\S+)\s+\S+%\s+\S+%\s+(\S+)\s+\S+%\s+(.+?)\s*$")
_TOTAL = re.compile(r"Total samples = (\S+)")
_DURATION = re.compile(r"Duration: (\S+),")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}


def seconds(value: str) -> float:
    """A pprof duration (``340ms``, ``1.44s``, ``0``) in seconds."""
    if value == "0":
        return 0.0
    match = re.fullmatch(r"([0-9.]+)([a-zµ]+)", value)
    if not match or match.group(2) not in _UNITS:
        raise ValueError(f"not a pprof duration: {value!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def cumulative(top: str) -> tuple[float, float, dict[str, float]]:
    """``go tool pprof -top -cum`` text: (profile duration, CPU seconds sampled, cumulative CPU
    seconds by function name)."""
    duration = _DURATION.search(top)
    total = _TOTAL.search(top)
    by_function: dict[str, float] = {}
    for line in top.splitlines():
        match = _LINE.match(line)
        if match is None or match.group(1) == "flat":
            continue
        try:
            by_function[match.group(3)] = seconds(match.group(2))
        except ValueError:
            continue
    return (
        seconds(duration.group(1)) if duration else 0.0,
        seconds(total.group(1)) if total else 0.0,
        by_function,
    )


def requests(before: Mapping[Any, float], after: Mapping[Any, float]) -> dict[tuple[str, str, str], int]:
    """Requests served between two scrapes of the API server's ``/metrics``, by (verb,
    resource, subresource)."""
    out: dict[tuple[str, str, str], int] = {}
    for key, value in after.items():
        name, labels = key
        if name != "apiserver_request_total":
            continue
        d = dict(labels)
        what = (d.get("verb", ""), d.get("resource", ""), d.get("subresource", ""))
        n = int(value - before.get(key, 0.0))
        if n > 0:
            out[what] = out.get(what, 0) + n
    return out


def client_requests(before: Mapping[Any, float], after: Mapping[Any, float]) -> dict[str, float]:
    """The controller's own requests between two scrapes of its ``rest_client_requests_total``,
    by its labels (this project labels verb and resource; client-go, method and code)."""
    out: dict[str, float] = {}
    for key, value in after.items():
        name, labels = key
        n = value - before.get(key, 0.0)
        if name == "rest_client_requests_total" and n > 0:
            out[",".join(f"{k}={v}" for k, v in labels)] = n
    return out


def summarise(top: str, counts: Mapping[tuple[str, str, str], int]) -> Json:
    """Each handler of :data:`HANDLERS`: its CPU seconds, its share of the sampled CPU and, for
    a request kind, its requests and milliseconds of CPU per request."""
    duration, total, by_function = cumulative(top)
    handlers: dict[str, Json] = {}
    for label, (function, request) in HANDLERS.items():
        spent = max((v for name, v in by_function.items() if name.endswith(function)), default=0.0)
        row: Json = {"cpu_seconds": spent, "share": spent / total if total else 0.0}
        if request is not None:
            n = counts.get(request, 0)
            row["requests"] = n
            row["ms_per_request"] = 1000 * spent / n if n else None
        handlers[label] = row
    return {"duration_seconds": duration, "cpu_seconds": total, "handlers": handlers}


class ServerProfile:
    """One profile of ``seconds`` started now; :meth:`finish` waits for it and summarises."""

    def __init__(self, client: KubeClient, binary: Path, out: Path, *, seconds: float) -> None:
        self.client = client
        self.binary = binary
        self.out = out
        self.seconds = max(1, round(seconds))
        self._task: asyncio.Task[bytes] | None = None
        self._before: Mapping[Any, float] = {}

    async def start(self) -> None:
        self._before = parse_metrics(await self.client.get_path("/metrics"))
        self._task = asyncio.create_task(self._profile())

    async def _profile(self) -> bytes:
        return await self.client.get_bytes(
            "/debug/pprof/profile", query=[("seconds", str(self.seconds))], request_timeout=self.seconds + 60
        )

    async def finish(self) -> Json:
        """The profile and the requests counted from :meth:`start` to the later of its end and
        this call: a scenario that outlasts the profile (or, on a loaded machine, only begins
        after its first second) has every request it made counted."""
        assert self._task is not None, "start() first"
        data = await self._task
        metrics = await self.client.get_path("/metrics")
        self.out.write_bytes(data)
        counts = requests(self._before, parse_metrics(metrics))
        summary: Json = {
            "profile": str(self.out),
            "requested_seconds": self.seconds,
            "requests": {" ".join(p for p in what if p): n for what, n in sorted(counts.items())},
        }
        go = shutil.which("go")
        if go is None:
            return {**summary, "unread": "no `go` on PATH to read the profile with `go tool pprof`"}
        proc = await asyncio.create_subprocess_exec(
            go, "tool", "pprof", "-top", "-cum", "-nodecount=100000", str(self.binary), str(self.out),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        stdout, stderr = await proc.communicate()
        if proc.returncode != 0:
            return {**summary, "unread": stderr.decode(errors="replace").strip()[-500:]}
        return {**summary, **summarise(stdout.decode(errors="replace"), counts)}


__all__ = ["HANDLERS", "ServerProfile", "client_requests", "cumulative", "requests", "seconds", "summarise"]
