"""The webhook HTTPS server on a real socket with a real certificate, and its answer helpers."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import ssl
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime
from typing import Any

import aiohttp
import jsonpatch
import pytest
from cryptography import x509
from hypothesis import given, settings
from hypothesis import strategies as st

from united.api.document import Json
from united.runtime.certificates import Bundle, issue, renew
from united.runtime.metrics import Metrics
from united.runtime.webserver import MAX_BODY_BYTES, TLS, Handler, WebhookServer, allow, deny, json_patch, patched

NOW = datetime.now(UTC)


def review(uid: str = "u-1", *, version: str = "admission.k8s.io/v1", obj: Any = None) -> Json:
    return {
        "apiVersion": version,
        "kind": "AdmissionReview",
        "request": {"uid": uid, "operation": "CREATE", "object": obj or {"metadata": {"name": "p"}}},
    }


async def annotate(body: Json) -> Json:
    request = body["request"]
    old = request["object"]
    new = json.loads(json.dumps(old))
    new["metadata"].setdefault("annotations", {})["seen"] = "yes"
    return patched(request["uid"], old, new)


class Served:
    def __init__(self, server: WebhookServer, bundle: Bundle, metrics: Metrics) -> None:
        self.server = server
        self.bundle = bundle
        self.metrics = metrics
        self.client_ssl = ssl.create_default_context(cadata=bundle.ca_bundle.decode())

    @property
    def base(self) -> str:
        return f"https://127.0.0.1:{self.server.port}"

    async def post(self, path: str, body: bytes | Json) -> tuple[int, Any]:
        data = io.BytesIO(body if isinstance(body, bytes) else json.dumps(body).encode())
        headers = {"Content-Type": "application/json"}
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.base + path, data=data, ssl=self.client_ssl, headers=headers) as resp,
        ):
            text = await resp.text()
            return resp.status, json.loads(text) if resp.content_type == "application/json" else text

    async def peer_certificate(self) -> x509.Certificate:
        _, writer = await asyncio.open_connection("127.0.0.1", self.server.port, ssl=self.client_ssl)
        try:
            der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        finally:
            writer.close()
            await writer.wait_closed()
        return x509.load_der_x509_certificate(der)


def sample(served: Served, name: str, **labels: str) -> float | None:
    return served.metrics.registry.get_sample_value(name, labels)


async def slow(body: Json) -> Json:
    await asyncio.sleep(10)
    return allow(body["request"]["uid"])


async def broken(body: Json) -> Json:
    raise RuntimeError("boom")


async def stranger(body: Json) -> Json:
    return allow("someone-else")


async def convert(body: Json) -> Json:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "response": {"uid": body["request"]["uid"], "convertedObjects": [], "result": {"status": "Success"}},
    }


ROUTES: Mapping[str, Handler] = {
    "/mutate-pods": annotate,
    "/slow": slow,
    "/broken": broken,
    "/stranger": stranger,
    "/convert": convert,
}


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    bundle = issue(["127.0.0.1", "localhost"], now=NOW)
    tls = TLS()
    tls.load(bundle.cert_pem, bundle.key_pem)
    metrics = Metrics(process_metrics=False)
    server = WebhookServer(host="127.0.0.1", port=0, tls=tls, routes=ROUTES, request_timeout=0.5, metrics=metrics)
    await server.start()
    try:
        yield Served(server, bundle, metrics)
    finally:
        await server.stop()


# -- answers -----------------------------------------------------------------------------


values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text("ab/~", max_size=2),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("ab/~", max_size=2), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(old=st.dictionaries(st.text("ab/~", max_size=2), values, max_size=4), new=values)
def test_json_patch_applied_to_old_gives_new(old: Json, new: Any) -> None:
    ops = json_patch(old, new)
    assert jsonpatch.apply_patch(old, ops) == new
    assert json.dumps(jsonpatch.apply_patch(old, ops), sort_keys=True) == json.dumps(new, sort_keys=True)


def test_json_patch_touches_only_what_changed() -> None:
    old = {"metadata": {"name": "p", "labels": {"a": "1", "x/y": "2"}}, "spec": {"containers": [{"name": "c"}]}}
    new = {"metadata": {"name": "p", "labels": {"a": "1"}, "annotations": {"k": "v"}},
           "spec": {"containers": [{"name": "c"}], "tolerations": [{"key": "t"}]}}  # fmt: skip
    assert json_patch(old, new) == [
        {"op": "remove", "path": "/metadata/labels/x~1y"},
        {"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}},
        {"op": "add", "path": "/spec/tolerations", "value": [{"key": "t"}]},
    ]
    assert json_patch({"a": 1}, {"a": True}) == [{"op": "replace", "path": "/a", "value": True}]


def test_patched_carries_a_base64_json_patch() -> None:
    answer = patched("u", {"metadata": {}}, {"metadata": {"annotations": {"k": "v"}}})
    response = answer["response"]
    assert response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(response["patch"])) == [
        {"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}}
    ]
    assert patched("u", {"a": 1}, {"a": 1}) == allow("u")


def test_deny_says_why() -> None:
    assert deny("u", "subset full", code=429, reason="TooManyRequests")["response"] == {
        "uid": "u", "allowed": False, "status": {"code": 429, "reason": "TooManyRequests", "message": "subset full"},
    }  # fmt: skip


# -- the server ----------------------------------------------------------------------------


async def test_admission_review_is_answered_with_a_patch(served: Served) -> None:
    status, body = await served.post("/mutate-pods", review("abc"))
    assert status == 200
    assert body["apiVersion"] == "admission.k8s.io/v1"
    assert body["response"]["uid"] == "abc"
    patch = json.loads(base64.b64decode(body["response"]["patch"]))
    assert patch == [{"op": "add", "path": "/metadata/annotations", "value": {"seen": "yes"}}]


async def test_v1beta1_is_answered_in_v1beta1(served: Served) -> None:
    status, body = await served.post("/mutate-pods", review(version="admission.k8s.io/v1beta1"))
    assert status == 200
    assert body["apiVersion"] == "admission.k8s.io/v1beta1"
    assert body["kind"] == "AdmissionReview"


async def test_conversion_review_is_routed(served: Served) -> None:
    request = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
               "request": {"uid": "c1", "desiredAPIVersion": "apps.kruise.io/v1beta1", "objects": []}}  # fmt: skip
    status, body = await served.post("/convert", request)
    assert status == 200
    assert body["response"]["uid"] == "c1"


@pytest.mark.parametrize(
    ("path", "reason"),
    [("/broken", "handler failed: RuntimeError: boom"), ("/slow", "handler timed out after 0.5s"),
     ("/stranger", "response.uid differs")],
)  # fmt: skip
async def test_handler_failures_are_http_500_so_the_failure_policy_applies(
    served: Served, path: str, reason: str
) -> None:
    status, text = await served.post(path, review())
    assert status == 500
    assert reason in text
    assert sample(served, "controller_runtime_webhook_requests_total", webhook=path, code="500") == 1


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{not json", "not JSON"),
        (b"[1]", "not a JSON object"),
        (json.dumps({"apiVersion": "v1", "kind": "Pod"}).encode(), "not an AdmissionReview"),
        (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(), "request.uid"),
        (json.dumps(review(obj={"metadata": {}, "x": [[[[]]]] * 1})).replace("[[[[]]]]", "[" * 200 + "]" * 200)
         .encode(), "nested deeper than 103 levels"),
        (b"[" * 100_000 + b"]" * 100_000, "nested deeper"),
    ],
    ids=["not json", "not an object", "wrong kind", "no uid", "too deep", "far too deep"],
)  # fmt: skip
async def test_bad_bodies_are_http_400(served: Served, body: bytes, reason: str) -> None:
    status, text = await served.post("/mutate-pods", body)
    assert status == 400
    assert reason in text


async def test_a_body_over_3_mib_is_refused_unread(served: Served) -> None:
    big = review(obj={"metadata": {"annotations": {"x": "y" * MAX_BODY_BYTES}}})
    status, _ = await served.post("/mutate-pods", big)
    assert status == 413


async def test_healthz(served: Served) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.get(served.base + "/healthz", ssl=served.client_ssl) as resp,
    ):
        assert resp.status == 200
        assert await resp.text() == "ok"


async def test_latency_is_recorded_per_route(served: Served) -> None:
    await served.post("/mutate-pods", review())
    await served.post("/mutate-pods", review())
    assert sample(served, "controller_runtime_webhook_requests_total", webhook="/mutate-pods", code="200") == 2
    assert sample(served, "controller_runtime_webhook_latency_seconds_count", webhook="/mutate-pods") == 2


async def test_a_new_certificate_is_served_without_a_restart(served: Served) -> None:
    first = await served.peer_certificate()
    assert first == served.bundle.cert
    # A new pair from the same CA (the client trusts only that CA).
    renewed = renew(served.bundle, ["127.0.0.1", "10.1.2.3"], now=NOW)
    assert renewed is not None
    assert served.server.tls.load(renewed.cert_pem, renewed.key_pem) is True
    assert served.server.tls.load(renewed.cert_pem, renewed.key_pem) is False
    assert await served.peer_certificate() == renewed.cert
    status, _ = await served.post("/mutate-pods", review())
    assert status == 200


async def test_start_needs_a_certificate() -> None:
    server = WebhookServer(host="127.0.0.1", port=0, tls=TLS(), routes=ROUTES)
    with pytest.raises(RuntimeError, match="no certificate"):
        await server.start()
