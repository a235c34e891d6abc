"""Forged admission reviews: sent to the handlers and to the webhook server as the controller
runs it (HTTPS, no client certificate), they book nothing, write nothing and lead to no Event.
Each forged review has a genuine twin that does book, so the checks can fail."""

from __future__ import annotations

import asyncio
import copy
import datetime
import io
import json
import ssl
from collections.abc import AsyncIterator

import aiohttp
import pytest

from tests.unit.workloadspread.pod_reviews import (
    NOW,
    REAL,
    Cluster,
    Events,
    cluster,
    create_review,
    delete_review,
    eviction_review,
    forged_reviews,
    pod,
)
from tests.unit.workloadspread.test_reconciler import NS
from united.api.document import Json
from united.runtime.certificates import issue
from united.runtime.webserver import TLS, WebhookServer
from united.workloadspread.model import VERSION_IGNORED

LATER = NOW + datetime.timedelta(seconds=60)
"""Past every pending record's timeout: a pass then reports what the webhook noted."""


def subset_status(world: Cluster, subset: str) -> Json:
    entries = world.spread_status()["versionedSubsetStatuses"][VERSION_IGNORED]
    return next(e for e in entries if e["name"] == subset)


@pytest.mark.parametrize("name", sorted(forged_reviews()))
async def test_a_forged_review_books_nothing_and_writes_nothing(name: str) -> None:
    world = cluster()
    before = copy.deepcopy(world.spread_status())
    review = forged_reviews()[name]
    answer = await (world.webhook.mutate if name.startswith("create") else world.webhook.validate)(review)
    assert answer["response"] == {"uid": "req-1", "allowed": True}
    assert world.api.writes == []
    assert world.spread_status() == before
    events = Events()
    await world.pass_at(LATER, events)
    assert not [e for e in events.seen if e[1] in ("DeletePodFailed", "CreatePodFailed")]


async def test_the_genuine_reviews_the_forgeries_copy_do_book() -> None:
    """The positive controls: a pod of the ReplicaSet (with its uid) is booked in ``b``; the
    real pod's DELETE and eviction are noted in ``deletingPods``."""
    world = cluster()
    answer = await world.webhook.mutate(create_review(pod("web-1-new")))
    assert answer["response"]["patchType"] == "JSONPatch"
    assert "web-1-new" in subset_status(world, "b")["creatingPods"]
    await world.webhook.validate(delete_review(REAL))
    assert REAL["metadata"]["name"] in subset_status(world, "a")["deletingPods"]

    evicted = cluster()
    await evicted.webhook.validate(eviction_review(REAL["metadata"]["name"], pod_uid=REAL["metadata"]["uid"]))
    assert REAL["metadata"]["name"] in subset_status(evicted, "a")["deletingPods"]


async def test_a_fetched_owner_must_carry_the_references_uid() -> None:
    """An owner the cache lacks is read from the API server once, and proves nothing unless it
    has the reference's uid; a reference without a uid is never looked up at all."""
    world = cluster()
    world.controller.caches.workloads[("apps", "ReplicaSet")].stores[0].remove(f"{NS}/web-1")
    guessed = pod("forged")
    guessed["metadata"]["ownerReferences"][0]["uid"] = "guessed"
    assert (await world.webhook.mutate(create_review(guessed)))["response"].get("patch") is None
    assert [(c.verb, c.plural, c.name) for c in world.api.calls] == [("get", "replicasets", "web-1")]
    world.api.calls.clear()
    answer = await world.webhook.mutate(create_review(pod("web-1-new")))
    assert answer["response"]["patchType"] == "JSONPatch"  # the same read, the right uid: booked
    assert [c.verb for c in world.api.calls] == ["get", "patch"]


async def test_a_malformed_pod_costs_only_its_own_review_in_a_batch() -> None:
    """Reviews of one spread queued together are booked in one write; a pod whose labels are
    a list is refused placement before booking, and the others of its batch are booked."""
    world = cluster()
    bad = pod("web-1-bad")
    bad["metadata"]["labels"] = ["app"]
    reviews = [
        create_review(pod("web-1-a"), uid="1"),
        create_review(bad, uid="2"),
        create_review(pod("web-1-c"), uid="3"),
    ]
    answers = await asyncio.gather(*(world.webhook.mutate(r) for r in reviews))
    assert [a["response"].get("patchType") for a in answers] == ["JSONPatch", None, "JSONPatch"]
    assert set(subset_status(world, "b")["creatingPods"]) == {"web-1-a", "web-1-c"}
    assert len(world.api.writes) == 1


# -- over HTTPS ------------------------------------------------------------------------------


@pytest.fixture
async def served() -> AsyncIterator[tuple[Cluster, WebhookServer, ssl.SSLContext]]:
    world = cluster()
    bundle = issue(["127.0.0.1"], now=datetime.datetime.now(datetime.UTC))
    tls = TLS()
    tls.load(bundle.cert_pem, bundle.key_pem)
    server = WebhookServer(host="127.0.0.1", port=0, tls=tls, routes=world.webhook.routes())
    await server.start()
    try:
        yield world, server, ssl.create_default_context(cadata=bundle.ca_bundle.decode())
    finally:
        await server.stop()


async def test_forged_reviews_sent_to_the_https_server_book_nothing_write_nothing_and_lead_to_no_event(
    served: tuple[Cluster, WebhookServer, ssl.SSLContext],
) -> None:
    world, server, trust = served
    before = copy.deepcopy(world.spread_status())
    answers: dict[str, tuple[int, Json]] = {}
    async with aiohttp.ClientSession() as session:  # no client certificate

        async def post(path: str, review: Json) -> tuple[int, Json]:
            data = io.BytesIO(json.dumps(review).encode())
            url = f"https://127.0.0.1:{server.port}{path}"
            headers = {"Content-Type": "application/json"}
            async with session.post(url, data=data, ssl=trust, headers=headers) as resp:
                return resp.status, await resp.json()

        for name, review in forged_reviews().items():
            path = "/mutate-pods" if name.startswith("create") else "/validate-pods"
            answers[name] = await post(path, review)
        for name, (status, body) in answers.items():
            assert status == 200, name
            assert body["response"] == {"uid": "req-1", "allowed": True}, name
        assert world.api.writes == []
        assert world.spread_status() == before
        events = Events()
        await world.pass_at(LATER, events)
        assert not [e for e in events.seen if e[1] in ("DeletePodFailed", "CreatePodFailed")]

        status, body = await post("/mutate-pods", create_review(pod("web-1-new"), namespace=NS))
        assert status == 200 and body["response"]["patchType"] == "JSONPatch"  # the server does book
    assert "web-1-new" in subset_status(world, "b")["creatingPods"]
