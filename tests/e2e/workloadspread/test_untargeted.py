"""Pods in a namespace without a WorkloadSpread, through the API server: on 1.22+ they never reach
the pod webhook (its selector names only the namespaces that hold spreads), so its stall costs
them nothing; on older servers every namespace is sent, as before. Prints what an untargeted
pod's creation costs with the webhook answering and stalled, with the selector narrowed
(``--webhook-namespaces targeted``) and wide (``all``, the behaviour before)."""

from __future__ import annotations

import signal
import statistics
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from tests.e2e.conftest import KUBE_VERSION, fresh_namespace
from tests.e2e.workloadspread.conftest import Spreading
from tests.e2e.workloadspread.test_spread import WS, observed, spread, webhook_ready
from united.controller.webhooks import MUTATING, VALIDATING
from united.kube.client import PODS, KubeClient
from united.kube.wait import eventually
from united.workloadspread.webhookconfig import MUTATE_PATH, NAME, SPREADS_WEBHOOK, targets_of

pytestmark = pytest.mark.e2e

JSON = dict[str, Any]
NARROWS = KUBE_VERSION.at_least(22)
"""Whether this server labels every namespace with its name (the selector can name them)."""


def calls(spreading: Spreading) -> float:
    """Admission requests the controller's pod-creation webhook has answered."""
    return spreading.counter("controller_runtime_webhook_requests_total", webhook=MUTATE_PATH)


async def selected(kube: KubeClient) -> list[list[str] | None]:
    """What each pod webhook's ``In`` expression names (None: every namespace but the excluded);
    the spreads webhook is never narrowed."""
    return [targets_of(w.get("namespaceSelector")) for r in (MUTATING, VALIDATING)
            for w in (await kube.get(r, NAME))["webhooks"] if w["name"] != SPREADS_WEBHOOK]  # fmt: skip


async def create_pods(kube: KubeClient, namespace: str, prefix: str, count: int) -> list[float]:
    """Seconds each of ``count`` pod creations took through the API server (admission included)."""
    took = []
    for n in range(count):
        spec = {"containers": [{"name": "main", "image": "app"}], "terminationGracePeriodSeconds": 0}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{prefix}-{n}"}, "spec": spec}
        started = time.perf_counter()
        await kube.create(PODS, pod, namespace=namespace)
        took.append(time.perf_counter() - started)
    return took


def figures(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    return f"median {statistics.median(ms):.1f} ms, max {ms[-1]:.1f} ms ({len(ms)} pods)"


@asynccontextmanager
async def stalled(spreading: Spreading) -> AsyncIterator[None]:
    """The controller stopped (SIGSTOP): its webhook accepts connections and never answers."""
    assert spreading.proc is not None
    spreading.proc.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        spreading.proc.send_signal(signal.SIGCONT)


@asynccontextmanager
async def scope(spreading: Spreading, value: str) -> AsyncIterator[None]:
    """The session's controller restarted with ``--webhook-namespaces value``, then as before."""
    flags = spreading.extra
    spreading.stop()
    spreading.extra = (*flags, "--webhook-namespaces", value)
    spreading.start()
    try:
        yield
    finally:
        spreading.stop()
        spreading.extra = flags
        spreading.start()


async def test_an_untargeted_namespace_never_reaches_the_pod_webhook(
    kube: KubeClient, namespace: str, spreading: Spreading
) -> None:
    await webhook_ready(kube, spreading)
    await kube.create(WS, spread("here", "here", [1, None]), namespace=namespace)
    await observed(kube, namespace, "here")
    async with fresh_namespace(kube, f"{namespace}-none") as untargeted:

        async def narrowed() -> None:
            for targets in await selected(kube):
                assert targets is not None and namespace in targets and untargeted not in targets, targets

        if NARROWS:
            await eventually(narrowed, within=30, what="the selector naming the targeted namespace only")
        else:
            assert await selected(kube) == [None, None], "1.20: every namespace is sent, as before"
        before = calls(spreading)
        answered = await create_pods(kube, untargeted, "answered", 20)
        reached = calls(spreading) - before
        await kube.create(PODS, {"metadata": {"name": "probe"}, "spec": {"containers": [{"name": "m", "image": "a"}]}},
                          namespace=namespace)  # fmt: skip
        assert calls(spreading) - before == reached + 1, "a pod in the targeted namespace still reaches it"
        async with stalled(spreading):
            stall = await create_pods(kube, untargeted, "stalled", 3 if NARROWS else 2)
        print(f"\nKubernetes {KUBE_VERSION}, untargeted pod creation, selector "
              f"{'narrowed' if NARROWS else 'wide (server too old to narrow)'}: webhook answering "
              f"{figures(answered)}; webhook stalled {figures(stall)}; webhook calls {reached:.0f}")  # fmt: skip
        if NARROWS:
            assert reached == 0, f"{reached:.0f} untargeted pods reached the webhook"
        else:
            assert reached == 20, f"{reached:.0f} of 20 untargeted pods reached the webhook"


async def test_untargeted_admission_before_and_after_narrowing(
    kube: KubeClient, namespace: str, spreading: Spreading
) -> None:
    """The same untargeted creations with ``--webhook-namespaces all`` (the behaviour before):
    every one is a webhook call, and a stalled webhook holds each for its timeout. (On a server
    that cannot narrow, both phases send every namespace.)"""
    await webhook_ready(kube, spreading)
    await kube.create(WS, spread("here", "here", [1, None]), namespace=namespace)
    await observed(kube, namespace, "here")
    async with fresh_namespace(kube, f"{namespace}-none") as untargeted:
        before = calls(spreading)
        after = await create_pods(kube, untargeted, "after", 30)
        assert calls(spreading) - before == (0 if NARROWS else 30)
        async with scope(spreading, "all"):
            await webhook_ready(kube, spreading)
            await eventually(lambda: _wide(kube), within=30, what="the selector widened again")
            before = calls(spreading)
            wide = await create_pods(kube, untargeted, "before", 30)
            reached = calls(spreading) - before
            async with stalled(spreading):
                wide_stalled = await create_pods(kube, untargeted, "before-stalled", 2)
        await eventually(lambda: _narrow(kube), within=30, what="the selector as it was")
    print(f"\nKubernetes {KUBE_VERSION}, untargeted pod creation through the API server: "
          f"before (every namespace sent) {figures(wide)}, stalled webhook {figures(wide_stalled)}; "
          f"after (only namespaces with spreads) {figures(after)}")  # fmt: skip
    assert reached == 30, f"{reached:.0f} of 30 untargeted pods reached the webhook with 'all'"


async def _wide(kube: KubeClient) -> None:
    assert await selected(kube) == [None, None]


async def _narrow(kube: KubeClient) -> None:
    assert all((t is not None) == NARROWS for t in await selected(kube))
