"""Fuzzing the webhook's three entry points — pod mutation, pod deletion/eviction, CRD
conversion — with reviews the server would pass on (a review envelope, anything inside).

Properties, for every review: the handler answers (a raise is the server's 500, so: never a
5xx) with the request's uid and allows the pod; it writes only WorkloadSpread statuses of the
review's own namespace, and nothing at all when the review and its object disagree on the
namespace; a booking names a cached owner by its uid, a noted deletion a cached pod (by its
uid for a DELETE); its API calls and its memory are bounded whatever the review holds. Each run also
checks the search reached bookings, so the properties are not vacuous. Deterministic and small
(``derandomize``, a few hundred examples) so that it runs with every unit test run."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import tracemalloc
from collections import Counter
from collections.abc import Callable, Coroutine
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.workloadspread.pod_reviews import (
    OTHER_NS,
    REAL,
    Cluster,
    cluster,
    create_review,
    delete_review,
    eviction_review,
    pod,
)
from tests.unit.workloadspread.test_reconciler import NS
from united.api.document import Json
from united.runtime.webserver import ADMISSION_VERSIONS, CONVERSION_VERSIONS, Computed
from united.workloadspread import ledger, matching
from united.workloadspread.model import KRUISE_ALPHA, KRUISE_BETA, MATCHED_ANNOTATION
from united.workloadspread.webhookconfig import CONVERT_PATH

FUZZ = settings(
    max_examples=150,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
MAX_CALLS = matching.MAX_DEPTH + 2 * ledger.ATTEMPTS
"""Owner reads up one chain, then a status write and a re-read per attempt."""

scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=8)
junk = st.recursive(
    scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3), max_leaves=8
)


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly ``strategy``, sometimes anything at all."""
    return st.one_of(strategy, strategy, strategy, junk)


names = st.sampled_from(["web-1-real", "web-1-new", "ghost", "web-1", ""])
namespaces = st.sampled_from([NS, OTHER_NS, "", "kube-system"])
uids = st.sampled_from(["uid-web-1", "uid-web", "uid-web-1-real", "guessed", ""])
annotation_values = st.sampled_from(
    ['{"name":"spread","subset":"a"}', '{"Name":"spread","Subset":"b","uid":"u"}', "[" * 5000, "{" * 1500, ""]
) | st.text(max_size=30)
owner_refs = st.fixed_dictionaries(
    {
        "apiVersion": maybe(st.sampled_from(["apps/v1", "batch/v1", "apps.kruise.io/v1alpha1"])),
        "kind": maybe(st.sampled_from(["ReplicaSet", "Deployment", "Job", "CloneSet"])),
        "name": maybe(st.sampled_from(["web-1", "web", "x"])),
        "controller": maybe(st.just(True)),
    },
    optional={"uid": maybe(uids)},
)
metadata = st.fixed_dictionaries(
    {},
    optional={
        "name": maybe(names),
        "namespace": maybe(namespaces),
        "uid": maybe(uids),
        "labels": maybe(
            st.dictionaries(st.sampled_from(["app", "pod-template-hash"]), st.text(max_size=4), max_size=2)
        ),
        "annotations": maybe(st.dictionaries(st.just(MATCHED_ANNOTATION) | st.text(max_size=4), annotation_values)),
        "ownerReferences": maybe(st.lists(maybe(owner_refs), max_size=2)),
        "deletionTimestamp": maybe(st.just("2026-01-01T00:00:00Z")),
    },
)
specs = st.fixed_dictionaries(
    {"containers": st.just([{"name": "c", "image": "i"}])},
    optional={
        "tolerations": maybe(st.lists(maybe(st.fixed_dictionaries({"key": st.text(max_size=3)})), max_size=2)),
        "affinity": maybe(st.fixed_dictionaries({}, optional={"nodeAffinity": junk})),
        "priorityClassName": maybe(st.text(max_size=4)),
    },
)
pods = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "metadata": maybe(metadata),
            "spec": maybe(specs),
            "status": maybe(st.fixed_dictionaries({}, optional={"phase": maybe(st.just("Running"))})),
        },
    ),
    st.builds(lambda n, ns: pod(n, namespace=ns), names, namespaces),
    st.just(REAL),
    junk,
)
evictions = st.fixed_dictionaries(
    {"metadata": maybe(metadata)},
    optional={
        "deleteOptions": maybe(st.fixed_dictionaries({"preconditions": maybe(st.fixed_dictionaries({"uid": uids}))}))
    },
)
requests = st.fixed_dictionaries(
    {"uid": st.text(max_size=8)},
    optional={
        "operation": maybe(st.sampled_from(["CREATE", "DELETE", "UPDATE", "CONNECT"])),
        "subResource": maybe(st.sampled_from(["eviction", "status"])),
        "namespace": maybe(namespaces),
        "name": maybe(names),
        "dryRun": maybe(st.booleans()),
        "object": st.one_of(pods, evictions),
        "oldObject": pods,
    },
)
EDITED = (
    ("namespace",),
    ("name",),
    ("operation",),
    ("subResource",),
    ("dryRun",),
    ("object", "metadata"),
    ("object", "metadata", "namespace"),
    ("object", "metadata", "labels"),
    ("object", "metadata", "annotations"),
    ("object", "metadata", "ownerReferences"),
    ("object", "metadata", "ownerReferences", 0, "uid"),
    ("object", "metadata", "ownerReferences", 0, "name"),
    ("object", "spec"),
    ("object", "spec", "tolerations"),
    ("object", "deleteOptions"),
    ("oldObject", "metadata", "uid"),
    ("oldObject", "metadata", "name"),
    ("oldObject", "metadata", "namespace"),
    ("oldObject", "metadata", "annotations"),
    ("oldObject", "status"),
)
"""Fields of a genuine request a forger would change."""


def edited(request: Json, edits: list[tuple[tuple[str | int, ...], Any]]) -> Json:
    """``request`` with each edit's field set (an edit through a missing or foreign container
    is skipped)."""
    out = copy.deepcopy(request)
    for path, value in edits:
        parent: Any = out
        for step in path[:-1]:
            parent = _child(parent, step)
        if _child(parent, path[-1]) is not _MISSING or isinstance(parent, dict):
            parent[path[-1]] = value
    return out


_MISSING = object()


def _child(parent: Any, step: str | int) -> Any:
    if isinstance(parent, dict) and isinstance(step, str):
        return parent.get(step, _MISSING)
    if isinstance(parent, list) and isinstance(step, int) and step < len(parent):
        return parent[step]
    return _MISSING


genuine = st.sampled_from(
    [
        create_review(pod("web-1-new"))["request"],
        delete_review(REAL)["request"],
        delete_review(pod("ghost", subset="a"))["request"],
        eviction_review(REAL["metadata"]["name"])["request"],
    ]
)
forged = st.builds(
    edited,
    genuine,
    st.lists(st.tuples(st.sampled_from(EDITED), st.one_of(namespaces, uids, annotation_values, junk)), max_size=2),
)
admission_reviews = st.builds(
    lambda version, request: {"apiVersion": version, "kind": "AdmissionReview", "request": request},
    st.sampled_from(ADMISSION_VERSIONS),
    st.one_of(requests, forged, forged),
)
spreads_to_convert = st.fixed_dictionaries(
    {"apiVersion": maybe(st.sampled_from([KRUISE_ALPHA, KRUISE_BETA])), "kind": maybe(st.just("WorkloadSpread"))},
    optional={"metadata": maybe(metadata), "spec": junk, "status": junk},
)
conversion_reviews = st.builds(
    lambda version, uid, desired, objects: {
        "apiVersion": version,
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
    },
    st.sampled_from(CONVERSION_VERSIONS),
    st.text(max_size=8),
    maybe(st.sampled_from([KRUISE_ALPHA, KRUISE_BETA])),
    maybe(st.lists(maybe(spreads_to_convert), max_size=3)),
)


def measured(world: Cluster, call: Callable[[], Coroutine[Any, Any, Json]]) -> tuple[Json, int]:
    """The handler's answer and the peak memory it allocated, on a loop of its own."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        answer = asyncio.run(call())
        return answer, tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def disagrees(request: Json) -> bool:
    """The review's namespace and its object's differ (or the review names none)."""
    namespace = request.get("namespace")
    if not namespace or not isinstance(namespace, str):
        return True
    for key in ("object", "oldObject"):
        obj = request.get(key)
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        own = meta.get("namespace") if isinstance(meta, dict) else None
        if own not in (None, "", namespace):
            return True
    return False


PROVEN = {("web-1", "uid-web-1"), ("web", "uid-web")}
"""The owners a booking may name: the cached ReplicaSet and Deployment, with their uids."""


def _noted(body: Any) -> set[str]:
    """The pods a status write notes in ``deletingPods``."""
    versioned = ((body or {}).get("status") or {}).get("versionedSubsetStatuses") or {}
    return {k for entries in versioned.values() for e in entries or () for k in (e or {}).get("deletingPods") or {}}


def check_admission(world: Cluster, review: Json, answer: Json, peak: int, seen: Counter[str]) -> None:
    request = review["request"]
    assert answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["uid"] == request["uid"] and response["allowed"] is True
    if "patch" in response:
        seen["patched"] += 1
        ops = json.loads(base64.b64decode(response["patch"]))
        assert all(op["path"].startswith(("/metadata", "/spec")) for op in ops), ops
    writes = world.api.writes
    seen["writes"] += len(writes)
    assert all(w.plural == "workloadspreads" and w.namespace == request["namespace"] for w in writes), writes
    if disagrees(request):
        assert writes == []
    if writes and request.get("operation") == "CREATE" and not request.get("subResource"):
        ref = matching.controller_ref(request["object"]) or {}
        assert (ref.get("name"), ref.get("uid")) in PROVEN, ref
    noted = {k for w in writes for k in _noted(w.body)}
    assert noted <= {REAL["metadata"]["name"]}, noted
    if noted and request.get("operation") == "DELETE":
        assert request["oldObject"]["metadata"]["uid"] == REAL["metadata"]["uid"]
    assert len(world.api.calls) <= MAX_CALLS
    assert peak < 64 * len(json.dumps(review)) + 2 * 1024 * 1024, peak


def fuzz_admission(route: str, seen: Counter[str]) -> Callable[[], None]:
    @FUZZ
    @given(review=admission_reviews)
    def run(review: Json) -> None:
        world = cluster()
        handler = world.webhook.mutate if route == "mutate" else world.webhook.validate
        sent = copy.deepcopy(review)
        answer, peak = measured(world, lambda: handler(sent))
        check_admission(world, review, answer, peak, seen)

    return run


def test_fuzz_pod_mutation() -> None:
    seen: Counter[str] = Counter()
    fuzz_admission("mutate", seen)()
    print(dict(seen))
    assert seen["writes"] > 0 and seen["patched"] > 0, "the search never reached a booking"


def test_fuzz_pod_deletion_and_eviction() -> None:
    seen: Counter[str] = Counter()
    fuzz_admission("validate", seen)()
    print(dict(seen))
    assert seen["writes"] > 0, "the search never reached a noted deletion"


def test_fuzz_crd_conversion() -> None:
    seen: Counter[str] = Counter()

    @FUZZ
    @given(review=conversion_reviews)
    def run(review: Json) -> None:
        world = cluster()
        route = world.webhook.routes()[CONVERT_PATH]
        assert isinstance(route, Computed)

        async def convert() -> Json:
            return route.answer(copy.deepcopy(review))

        answer, peak = measured(world, convert)
        request, response = review["request"], answer["response"]
        assert answer["kind"] == "ConversionReview" and response["uid"] == request["uid"]
        assert response["result"]["status"] in ("Success", "Failure")
        if response["result"]["status"] == "Success":
            seen["converted"] += 1
            assert [o["apiVersion"] for o in response["convertedObjects"]] == [request["desiredAPIVersion"]] * len(
                request["objects"]
            )
        assert world.api.calls == []
        assert len(json.dumps(answer)) <= 2 * len(json.dumps(review)) + 1024
        assert peak < 64 * len(json.dumps(review)) + 1024 * 1024, peak

    run()
    print(dict(seen))
    assert seen["converted"] > 0, "the search never reached a conversion"
