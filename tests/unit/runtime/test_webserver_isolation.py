"""The webhook server keeps a review's cost off the controller's loop, and decodes only what it
must: a review held in decoding (a threading.Event stands in for unbounded CPU) leaves a second
admission, ``/healthz`` and the Lease renewals running; reviews from namespaces that need
nothing, and pods over the size the webhook places, are allowed unchanged without being decoded
or handled; the real pod webhook places a maximal pod with a small patch (the stall of the
controller's loop is printed, not asserted)."""

from __future__ import annotations

import asyncio
import base64
import http.client
import io
import json
import ssl
import threading
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest

from tests.unit.runtime.test_connections import until
from tests.unit.runtime.test_leader import FakeLeases
from united.api.document import Json
from united.runtime import webserver
from united.runtime.certificates import issue
from united.runtime.health import HealthServer
from united.runtime.leader import LeaderElector
from united.runtime.metrics import Metrics
from united.runtime.webserver import (
    DEFAULT_CONCURRENCY,
    INLINE_BYTES,
    MAX_BODY_BYTES,
    MAX_PLACED_BYTES,
    TLS,
    Computed,
    Head,
    Route,
    Shortcut,
    WebhookServer,
    allow,
    head,
)

NOW = datetime.now(UTC)
WITHIN = 20.0
"""Seconds any expected answer may take (a loaded machine); never asserted."""


def review(uid: str, namespace: str, obj: Json | None = None, *, pad: int = 0) -> Json:
    pod = obj or {"metadata": {"name": uid}}
    if pad:
        pod = {**pod, "metadata": {**pod["metadata"], "annotations": {"pad": "x" * pad}}}
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
            "request": {"uid": uid, "kind": {"group": "", "version": "v1", "kind": "Pod"}, "namespace": namespace,
                        "operation": "CREATE", "userInfo": {"username": "system:serviceaccount:kube-system:rs"},
                        "object": pod, "oldObject": None, "dryRun": False}}  # fmt: skip


class Served:
    def __init__(self, server: WebhookServer, context: ssl.SSLContext, metrics: Metrics) -> None:
        self.server = server
        self.context = context
        self.metrics = metrics

    async def post(self, body: Json | bytes, path: str = "/mutate-pods") -> tuple[int, Any]:
        data = io.BytesIO(body if isinstance(body, bytes) else json.dumps(body).encode())
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                f"https://127.0.0.1:{self.server.port}{path}",
                data=data,
                ssl=self.context,
                headers={"Content-Type": "application/json"},
            ) as resp,  # fmt: skip
        ):
            text = await resp.text()
            return resp.status, json.loads(text) if resp.content_type == "application/json" else text

    def skipped(self, reason: str) -> float:
        value = self.metrics.registry.get_sample_value(
            "united_webhook_reviews_skipped_total", {"webhook": "/mutate-pods", "reason": reason}
        )
        return value or 0.0


async def serve(routes: dict[str, Route], screen: Callable[[str], bool]) -> Served:
    bundle = issue(["127.0.0.1"], now=NOW)
    tls = TLS()
    tls.load(bundle.cert_pem, bundle.key_pem)
    metrics = Metrics(process_metrics=False)
    screened = [path for path, route in routes.items() if not isinstance(route, Computed)]
    server = WebhookServer(host="127.0.0.1", port=0, tls=tls, routes=routes, metrics=metrics,
                           screens=dict.fromkeys(screened, screen))  # fmt: skip
    await server.start()
    return Served(server, ssl.create_default_context(cadata=bundle.ca_bundle.decode()), metrics)


# -- the head of a review ---------------------------------------------------------------------


def test_the_head_is_read_up_to_the_pod_in_the_api_servers_field_order() -> None:
    body = json.dumps(review("u-1", "shop", pad=MAX_BODY_BYTES)).encode()
    assert head(body) == Head("AdmissionReview", "admission.k8s.io/v1", "u-1", "shop")


@pytest.mark.parametrize(
    "body",
    [
        b'{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"u","object":{},'
        b'"namespace":"shop"}}',
        b'{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"u","namespace":"sh',
        b'{"kind":"AdmissionReview","request":{"uid":"u","namespace":"shop","object":{}}}',
        b'{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"u","userInfo":'
        + b"[" * 100_000,
        b'{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"u","namespace":"shop",'
        + b'"userInfo":{"extra":"'
        + b"x" * 70_000
        + b'"},"object":{}}}',
        b"[]",
        b"",
    ],
    ids=["object first", "cut short", "no apiVersion", "deep", "head too long", "a list", "empty"],
)
def test_a_head_not_laid_out_as_the_api_server_lays_it_out_is_none(body: bytes) -> None:
    assert head(body) is None


# -- what is decoded ---------------------------------------------------------------------------


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the bodies the server decodes whole."""
    sizes: list[int] = []
    parse = webserver._parse

    def counting(body: bytes) -> Json:
        sizes.append(len(body))
        return parse(body)

    monkeypatch.setattr(webserver, "_parse", counting)
    return sizes


async def test_reviews_from_namespaces_that_need_nothing_and_oversized_pods_are_allowed_undecoded(
    decoded: list[int],
) -> None:
    handled: list[str] = []

    async def place(body: Json) -> Json:
        handled.append(body["request"]["uid"])
        return allow(body["request"]["uid"])

    served = await serve({"/mutate-pods": place}, lambda namespace: namespace == "shop")
    try:
        status, answer = await served.post(review("elsewhere", "quiet", pad=2 * 1024 * 1024))
        assert (status, answer["response"]) == (200, {"uid": "elsewhere", "allowed": True})
        status, answer = await served.post(review("huge", "shop", pad=MAX_PLACED_BYTES))
        assert (status, answer["response"]) == (200, {"uid": "huge", "allowed": True})
        assert answer["apiVersion"] == "admission.k8s.io/v1"
        assert decoded == [] and handled == []
        assert (served.skipped("namespace"), served.skipped("too_large")) == (1, 1)
        status, _ = await served.post(review("placed", "shop"))
        assert status == 200 and handled == ["placed"] and len(decoded) == 1
        request = {"object": {"pad": "x" * MAX_PLACED_BYTES}, "uid": "odd", "namespace": "shop"}
        shuffled = {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request}
        status, text = await served.post(shuffled)
        assert status == 400 and "not laid out as an API server's review" in text
        assert len(decoded) == 1
    finally:
        await served.server.stop()


# -- the controller's loop is not the webhook's -----------------------------------------------


async def test_a_review_held_in_decoding_stalls_neither_other_admissions_nor_health_nor_the_lease(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entered, release = threading.Event(), threading.Event()
    parse = webserver._parse

    def held(body: bytes) -> Json:
        if b'"uid": "maximal"' in body[:200]:
            entered.set()
            release.wait(WITHIN)
        return parse(body)

    monkeypatch.setattr(webserver, "_parse", held)
    served = await serve({"/mutate-pods": _uid_allowed}, lambda namespace: True)
    metrics = Metrics(process_metrics=False)
    health = HealthServer(exposition=metrics.exposition)
    health_port = await health.start("127.0.0.1", 0)
    leases = FakeLeases()
    elector = LeaderElector(leases, name="united", namespace="ops", identity="me", lease_duration=1.0,
                            renew_deadline=0.8, retry_period=0.05)  # fmt: skip
    election = asyncio.create_task(elector.run())
    try:
        await asyncio.wait_for(elector.elected.wait(), WITHIN)
        maximal = asyncio.create_task(served.post(review("maximal", "shop", pad=MAX_PLACED_BYTES - 4096)))
        await asyncio.wait_for(asyncio.to_thread(entered.wait, WITHIN), WITHIN)
        renewals = _renewals(leases)
        status, answer = await asyncio.wait_for(served.post(review("second", "elsewhere")), WITHIN)
        assert (status, answer["response"]["uid"]) == (200, "second")
        async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{health_port}/healthz") as r:
            assert r.status == 200
        await until(lambda: _renewals(leases) >= renewals + 2)
        assert not maximal.done(), "all of this happened while the maximal review was in flight"
        assert elector.elected.is_set()
        release.set()
        status, answer = await asyncio.wait_for(maximal, WITHIN)
        assert (status, answer["response"]["uid"]) == (200, "maximal")
    finally:
        release.set()
        election.cancel()
        await asyncio.gather(election, return_exceptions=True)
        await health.stop()
        await served.server.stop()


async def test_pod_reviews_waiting_for_a_conversion_leave_the_conversion_a_place() -> None:
    """Every place of ``/mutate-pods`` held by reviews waiting for a booking's status write, which
    the API server finishes only after calling ``/convert`` (a spread stored in another version
    than the one written): the conversion is still answered, and so are the pod reviews. With
    places shared by the routes, each side waited for the other until the handlers timed out."""
    converted, waiting = asyncio.Event(), []

    async def place(body: Json) -> Json:
        waiting.append(body["request"]["uid"])
        await converted.wait()
        return allow(body["request"]["uid"])

    async def convert(body: Json) -> Json:
        converted.set()
        return allow(body["request"]["uid"])

    served = await serve({"/mutate-pods": place, "/convert": convert}, lambda namespace: True)
    try:
        pods = [asyncio.create_task(served.post(review(f"pod-{n}", "shop"))) for n in range(DEFAULT_CONCURRENCY)]
        await until(lambda: len(waiting) == DEFAULT_CONCURRENCY)
        status, answer = await asyncio.wait_for(served.post(review("conversion", "shop"), "/convert"), WITHIN)
        assert (status, answer["response"]["uid"]) == (200, "conversion")
        answers = await asyncio.wait_for(asyncio.gather(*pods), WITHIN)
        assert [s for s, _ in answers] == [200] * len(pods), answers
        assert [a["response"]["uid"] for _, a in answers] == [f"pod-{n}" for n in range(len(pods))]
    finally:
        converted.set()
        await served.server.stop()


def conversion_review(uid: str, *, pad: int = 0) -> Json:
    objects = [{"apiVersion": "example.io/v1", "kind": "Thing", "metadata": {"name": uid}, "pad": "x" * pad}]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": "example.io/v2", "objects": objects}}  # fmt: skip


def converted(review: Json) -> Json:
    """A conversion that names the thread it ran on."""
    request = review["request"]
    objects = [{**o, "apiVersion": request["desiredAPIVersion"]} for o in request["objects"]]
    return {"apiVersion": review["apiVersion"], "kind": "ConversionReview",
            "response": {"uid": request["uid"], "result": {"status": "Success"}, "convertedObjects": objects,
                         "thread": threading.current_thread().name}}  # fmt: skip


def post_blocking(served: Served, body: Json, path: str) -> tuple[int, Json]:
    """``served.post`` from a thread of its own, without an event loop."""
    conn = http.client.HTTPSConnection("127.0.0.1", served.server.port, context=served.context, timeout=WITHIN)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


async def test_a_conversion_is_answered_while_the_controllers_loop_is_held() -> None:
    """A :class:`Computed` route never waits for a turn of the loop that started the server: the
    API server calls ``/convert`` several times within one status write of a booking, while that
    loop may be busy with the write's own consequences."""
    served = await serve({"/mutate-pods": _uid_allowed, "/convert": Computed(converted)}, lambda namespace: True)
    answers: list[tuple[int, Json]] = []
    answered = threading.Event()

    def convert() -> None:
        answers.append(post_blocking(served, conversion_review("held"), "/convert"))
        answered.set()

    try:
        threading.Thread(target=convert, daemon=True).start()
        held = answered.wait(WITHIN)  # holds this test's loop, the server's owner, meanwhile
        assert held, "the conversion waited for the controller's loop"
        status, answer = answers[0]
        assert (status, answer["response"]["uid"], answer["response"]["thread"]) == (200, "held", "webhook-server")
        assert answer["response"]["convertedObjects"][0]["apiVersion"] == "example.io/v2"
    finally:
        await served.server.stop()


async def test_small_reviews_are_decoded_and_computed_on_the_servers_thread_and_large_ones_in_the_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads: list[str] = []
    parse = webserver._parse

    def naming(body: bytes) -> Json:
        threads.append(threading.current_thread().name)
        return parse(body)

    monkeypatch.setattr(webserver, "_parse", naming)
    served = await serve({"/mutate-pods": _uid_allowed, "/convert": Computed(converted)}, lambda namespace: True)
    try:
        status, _ = await served.post(review("small", "shop"))
        assert status == 200
        status, _ = await served.post(review("large", "shop", pad=INLINE_BYTES))
        assert status == 200
        status, small = await served.post(conversion_review("small"), "/convert")
        assert status == 200
        status, large = await served.post(conversion_review("large", pad=INLINE_BYTES), "/convert")
        assert status == 200
        assert threads[0] == threads[2] == "webhook-server"
        assert threads[1].startswith("webhook-decode") and threads[3].startswith("webhook-decode")
        assert small["response"]["thread"] == "webhook-server"
        assert large["response"]["thread"].startswith("webhook-decode")
    finally:
        await served.server.stop()


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The coroutines each review sent to the controller's loop."""
    sent: list[str] = []
    owned = WebhookServer._owned

    async def counted(self: WebhookServer, coro: Any) -> Any:
        sent.append(coro.__name__)
        return await owned(self, coro)

    monkeypatch.setattr(WebhookServer, "_owned", counted)
    return sent


async def test_a_review_crosses_to_the_controllers_loop_once_and_one_screened_out_never(hops: list[str]) -> None:
    """Each crossing is a wake-up of the other thread and a wait for its turn: a review whose
    handler runs crosses once, small or large; one from a namespace that needs nothing is
    screened on the server's thread and never crosses."""
    screened_on: list[str] = []

    def screen(namespace: str) -> bool:
        screened_on.append(threading.current_thread().name)
        return namespace == "shop"

    served = await serve({"/mutate-pods": _uid_allowed}, screen)
    try:
        for uid, namespace, pad, expected in [
            ("small", "shop", 0, ["_handled"]),
            ("quiet", "elsewhere", 0, []),
            ("large", "shop", INLINE_BYTES, ["_handled"]),
            ("large and quiet", "elsewhere", INLINE_BYTES, []),
        ]:
            hops.clear()
            status, answer = await served.post(review(uid, namespace, pad=pad))
            assert (status, answer["response"]) == (200, {"uid": uid, "allowed": True})
            assert hops == expected, uid
        assert served.skipped("namespace") == 2
        assert screened_on == ["webhook-server"] * 4
    finally:
        await served.server.stop()


async def test_a_shortcut_answers_on_the_servers_thread_and_hands_the_rest_to_its_handler(hops: list[str]) -> None:
    """A :class:`Shortcut`'s early answer never crosses to the controller's loop; a review it
    returns None for crosses once, to the handler behind it."""
    asked_on: list[str] = []

    def early(body: Json) -> Json | None:
        asked_on.append(threading.current_thread().name)
        uid = body["request"]["uid"]
        return allow(uid, warnings=("early",)) if uid == "known" else None

    served = await serve({"/mutate-pods": Shortcut(_uid_allowed, early)}, lambda namespace: True)
    try:
        for uid, expected_hops, warnings in [("known", [], ["early"]), ("other", ["_handled"], None)]:
            hops.clear()
            status, answer = await served.post(review(uid, "shop"))
            assert (status, answer["response"]["uid"], answer["response"].get("warnings")) == (200, uid, warnings)
            assert hops == expected_hops, uid
        assert asked_on == ["webhook-server"] * 2
        assert served.skipped("early") == 1
    finally:
        await served.server.stop()


async def _uid_allowed(body: Json) -> Json:
    return allow(body["request"]["uid"])


def _renewals(leases: FakeLeases) -> int:
    return sum(1 for verb, outcome in leases.requests if (verb, outcome) == ("replace", "ok"))


# -- the real pod webhook with a maximal pod ------------------------------------------------------


@pytest.fixture
async def ticking() -> AsyncIterator[list[float]]:
    """The gaps between the turns of the controller's loop while the test runs."""
    gaps: list[float] = []

    async def tick() -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(tick())
    yield gaps
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_a_maximal_pod_is_placed_with_a_small_patch_and_the_stall_is_printed(ticking: list[float]) -> None:
    from tests.unit.workloadspread.test_reconciler import NS, ws
    from tests.unit.workloadspread.test_webhook import DEPLOY, RS, pod_of, webhook
    from united.workloadspread.webhookconfig import MUTATE_PATH

    spread = ws("spread", "Deployment", "web")
    spread["spec"]["subsets"] = [{"name": "only", "tolerations": [{"key": "spot", "operator": "Exists"}],
                                  "patch": {"metadata": {"labels": {"pool": "spot"}}}}]  # fmt: skip
    hook = webhook(spread, DEPLOY, RS)
    found = hook.controller()
    assert found is not None
    served = await serve(hook.routes(), lambda namespace: bool(found[0].spreads.list(namespace)))
    try:
        pod = pod_of(RS)
        one = len(json.dumps({}))
        pod["spec"]["tolerations"] = [{} for _ in range((MAX_PLACED_BYTES - 8192) // (one + 2))]
        body = json.dumps(review("maximal", NS, pod)).encode()
        assert len(body) <= MAX_PLACED_BYTES
        huge = json.dumps(review("huge", NS, pod, pad=MAX_BODY_BYTES - len(body) - 4096)).encode()
        await asyncio.sleep(0.05)  # the ticker's turn after building the bodies
        ticking.clear()
        started = time.perf_counter()
        # The client runs on a thread of its own: this loop is the controller's, measured alone.
        status, answer = await asyncio.wait_for(asyncio.to_thread(asyncio.run, served.post(body, MUTATE_PATH)), WITHIN)
        took = time.perf_counter() - started
        stall = max(ticking, default=0.0)
        assert status == 200 and answer["response"]["allowed"]
        ops = json.loads(base64.b64decode(answer["response"]["patch"]))
        assert {"op": "add", "path": "/spec/tolerations/-", "value": {"key": "spot", "operator": "Exists"}} in ops
        assert len(json.dumps(ops)) < 2048, "the patch carries what placement changed, not the pod"
        ticking.clear()
        status, answer = await asyncio.wait_for(asyncio.to_thread(asyncio.run, served.post(huge, MUTATE_PATH)), WITHIN)
        assert (status, answer["response"]) == (200, {"uid": "huge", "allowed": True})
        print(f"\nmaximal placed review ({len(body)} B): answered in {took * 1000:.1f} ms, "
              f"controller loop's longest stall {stall * 1000:.1f} ms; "
              f"{len(huge)} B review: longest stall {max(ticking, default=0.0) * 1000:.1f} ms")  # fmt: skip
    finally:
        await served.server.stop()


# -- the patch carries what changed -----------------------------------------------------------


def test_a_list_that_grew_at_its_end_gets_appends_and_nested_json_types_count() -> None:
    from united.runtime.webserver import json_patch

    mine = [{"key": str(i)} for i in range(10_000)]
    ops = json_patch({"spec": {"tolerations": mine}}, {"spec": {"tolerations": [*mine, {"key": "spot"}]}})
    assert ops == [{"op": "add", "path": "/spec/tolerations/-", "value": {"key": "spot"}}]
    assert json_patch({"a": [1]}, {"a": [True]}) == [{"op": "replace", "path": "/a", "value": [True]}]
    assert json_patch({"a": [1, 2]}, {"a": [2, 1, 3]}) == [{"op": "replace", "path": "/a", "value": [2, 1, 3]}]
    shared = {"big": mine}
    assert json_patch(shared, shared) == []
