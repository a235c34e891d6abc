"""The webhook certificate loop: the names to certify, "already holds", and the trust two
replicas write while one of them rolls the CA over."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn

import jsonpatch
import pytest

from tests.unit.placement.test_patch import rfc7386
from united import data, kustomization
from united.api.document import Json
from united.api.groups import KRUISE_GROUP
from united.cli import parser
from united.controller import webhooks as webhooks_module
from united.controller.settings import Settings
from united.controller.webhooks import (
    COMPAT_CRD,
    MUTATING,
    VALIDATING,
    Deadlines,
    Options,
    Scope,
    Webhooks,
    WebhookService,
    _covers,
)
from united.kube.client import CRDS, NAMESPACES, PatchType, Resource
from united.kube.discovery import release
from united.kube.errors import AlreadyExists, Conflict, NotFound, TransientError
from united.runtime import certificates
from united.runtime.certificates import Bundle, issue
from united.runtime.metrics import Metrics
from united.runtime.webserver import TLS, Shortcut, WebhookServer, allow
from united.workloadspread.webhookconfig import (
    EXCLUDE_LABEL,
    EXCLUDED,
    MAX_TARGETED_NAMESPACES,
    NAME,
    NAME_LABEL,
    NO_NAMESPACE,
    SPREADS_WEBHOOK,
    targets_of,
)


def test_hosts_are_the_service_names_and_the_url_host() -> None:
    assert Options(namespace="ops").hosts == ["united-webhook.ops.svc", "united-webhook.ops.svc.cluster.local"]
    assert Options(namespace="ops", url="https://127.0.0.1:9443").hosts[2:] == ["127.0.0.1"]
    assert Options(namespace="ops", url="https://[::1]:9443/base").hosts[2:] == ["::1"]
    assert Options(namespace="ops", url="https://dev.example:9443").hosts[2:] == ["dev.example"]


def test_covers_ignores_fields_the_api_server_adds_but_nothing_else() -> None:
    wanted = [{"name": "w", "clientConfig": {"url": "https://h/x", "caBundle": "Q0E="}, "rules": [{"a": 1}]}]
    defaulted = [{**wanted[0], "extra": True, "rules": [{"a": 1, "scope": "*"}]}]
    assert _covers(defaulted, wanted)
    assert not _covers([{**wanted[0], "clientConfig": {"url": "https://h/x", "caBundle": "b2xk"}}], wanted)
    assert not _covers([*defaulted, *defaulted], wanted)
    assert not _covers([{"name": "w"}], wanted)
    assert not _covers(None, wanted)


async def test_a_start_cancelled_while_waiting_for_the_certificate_stops_the_loop() -> None:
    class Unreachable:
        async def get(self, *args: object, **kwargs: object) -> NoReturn:
            raise TransientError("cannot reach the API server")

    webhooks = Webhooks(Unreachable(), Options(namespace="ops"), TLS())  # type: ignore[arg-type]
    service = WebhookService(webhooks, WebhookServer(host="127.0.0.1", port=0, tls=webhooks.tls, routes={}))
    start = asyncio.create_task(service.start())
    await asyncio.sleep(0.05)
    task = service.task
    assert task is not None and not task.done()
    start.cancel()
    with pytest.raises(asyncio.CancelledError):
        await start
    assert task.cancelled()
    assert service.task is None


# -- the trust written by two replicas -------------------------------------------------------


class FakeApi:
    """The objects the certificate loop reads and writes, with resourceVersions: a write that
    carries a stale one is a Conflict, as on the API server. ``after_get`` runs once, right
    after the next read of its resource (another replica acting in between)."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], Json] = {}
        self.version = 0
        self.after_get: tuple[str, Callable[[], Awaitable[object]]] | None = None
        self.conflicts = 0

    def put(self, resource: Resource, obj: Json) -> None:
        self.version += 1
        obj = copy.deepcopy(obj)
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.version)
        self.objects[(resource.plural, obj["metadata"]["name"])] = obj

    def read(self, resource: Resource, name: str) -> Json:
        return copy.deepcopy(self.objects[(resource.plural, name)])

    async def get(self, resource: Resource, name: str, **_: object) -> Json:
        if (resource.plural, name) not in self.objects:
            raise NotFound(f"{resource.plural}/{name}", status=404)
        found = self.read(resource, name)
        if self.after_get is not None and self.after_get[0] == resource.plural:
            _, action = self.after_get
            self.after_get = None
            await action()
        return found

    async def create(self, resource: Resource, body: Json, **_: object) -> Json:
        if (resource.plural, body["metadata"]["name"]) in self.objects:
            raise AlreadyExists("exists", status=409)
        self.put(resource, body)
        return self.read(resource, body["metadata"]["name"])

    def _check(self, resource: Resource, name: str, version: object) -> None:
        if version and version != self.objects[(resource.plural, name)]["metadata"]["resourceVersion"]:
            self.conflicts += 1
            raise Conflict(f"{resource.plural}/{name} changed", status=409)

    async def replace(self, resource: Resource, body: Json, **_: object) -> Json:
        name = body["metadata"]["name"]
        self._check(resource, name, body["metadata"].get("resourceVersion"))
        self.put(resource, body)
        return self.read(resource, name)

    async def patch(self, resource: Resource, name: str, body: Any, *, patch_type: PatchType, **_: object) -> Json:
        if (resource.plural, name) not in self.objects:
            raise NotFound(f"{resource.plural}/{name}", status=404)
        current = self.read(resource, name)
        patched = jsonpatch.apply_patch(current, body) if patch_type == PatchType.JSON else rfc7386(current, body)
        self._check(resource, name, patched["metadata"].get("resourceVersion"))
        self.put(resource, patched)
        return self.read(resource, name)


@pytest.fixture
def api() -> FakeApi:
    api = FakeApi()
    for doc in kustomization.build(data.MANIFESTS, "base"):
        if doc["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            api.put(MUTATING if doc["kind"].startswith("Mutating") else VALIDATING, doc)
    for doc in data.documents(data.crd(KRUISE_GROUP, "workloadspreads")):
        api.put(CRDS, doc)
    for namespace in ("kube-system", "ops"):
        api.put(NAMESPACES, {"metadata": {"name": namespace}})
    return api


def replica(api: FakeApi) -> Webhooks:
    return Webhooks(api, Options(namespace="ops"), TLS())  # type: ignore[arg-type]


def trusted(api: FakeApi) -> list[str]:
    """The caBundle of every webhook and of the compat CRD's conversion."""
    bundles = [
        w["clientConfig"].get("caBundle", "") for r in (MUTATING, VALIDATING) for w in api.read(r, NAME)["webhooks"]
    ]
    crd = api.read(CRDS, COMPAT_CRD)
    return [*bundles, crd["spec"]["conversion"]["webhook"]["clientConfig"].get("caBundle", "")]


def b64(bundle: Bundle) -> str:
    return base64.b64encode(bundle.ca_bundle).decode()


YEARS_LATER = timedelta(days=7 * 365)
"""Past the CA's renewal (two thirds of ten years): the next pass rolls the CA over."""


async def test_a_replica_with_a_stale_bundle_leaves_a_newer_ca_in_place(
    api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = replica(api), replica(api)
    await a.sync()
    stale = await a.certificates()
    assert trusted(api) == [b64(stale)] * 4
    later = certificates.utcnow() + YEARS_LATER
    monkeypatch.setattr(certificates, "utcnow", lambda: later)
    await b.sync()
    assert b.bundle is not None and len(b.bundle.cas) == 2, "b rolled the CA over"
    rolled = b64(b.bundle)
    assert trusted(api) == [rolled] * 4
    before = api.version
    assert await a.publish(stale) == 0
    assert a.superseded
    assert api.version == before, "nothing written"
    assert trusted(api) == [rolled] * 4
    wait = await a.sync()
    assert not a.superseded and wait > 1
    assert a.bundle is not None and b64(a.bundle) == rolled
    assert api.version == before, "a re-read the Secret and found everything as it should be"


async def test_a_write_based_on_a_stale_read_is_refused(api: FakeApi, monkeypatch: pytest.MonkeyPatch) -> None:
    """Replica a reads the configuration, b rolls the CA over and writes it, then a writes:
    the resourceVersion a read makes that a Conflict, and a's second reading finds the newer
    CA and leaves it (a's next pass uses it)."""
    a = Webhooks(api, Options(namespace="ops", failure_policy="Fail"), TLS())  # type: ignore[arg-type]
    b = Webhooks(api, Options(namespace="ops", failure_policy="Fail"), TLS())  # type: ignore[arg-type]
    stale = await a.certificates()
    later = certificates.utcnow() + YEARS_LATER
    monkeypatch.setattr(certificates, "utcnow", lambda: later)
    api.after_get = (MUTATING.plural, b.sync)
    await a.publish(stale)
    assert api.conflicts == 1 and a.superseded
    assert b.bundle is not None
    assert trusted(api) == [b64(b.bundle)] * 4
    await a.sync()
    assert trusted(api) == [b64(b.bundle)] * 4


async def test_a_newer_ca_the_secret_does_not_hold_is_replaced(api: FakeApi) -> None:
    """The Secret is the source of truth: a CA nobody of ours issued goes, however new."""
    a = replica(api)
    await a.sync()
    assert a.bundle is not None
    foreign = certificates.issue(["elsewhere"], now=certificates.utcnow() + timedelta(days=1))
    configuration = api.read(MUTATING, NAME)
    configuration["webhooks"][0]["clientConfig"]["caBundle"] = b64(foreign)
    api.put(MUTATING, configuration)
    wait = await a.sync()
    assert not a.superseded and wait > 1
    assert trusted(api) == [b64(a.bundle)] * 4


async def test_wait_lasts_while_the_server_serves_and_ends_with_its_thread() -> None:
    """The manager's liveness follows :meth:`WebhookService.wait`: it must not end while the
    server runs, and must end when the server's thread does."""

    class Issued(Webhooks):
        async def run(self) -> None:
            bundle = issue(["127.0.0.1"], now=datetime.now(UTC))
            self.tls.load(bundle.cert_pem, bundle.key_pem)
            self.ready.set()
            await asyncio.Event().wait()

    webhooks = Issued(None, Options(namespace="ops"), TLS())  # type: ignore[arg-type]
    service = WebhookService(webhooks, WebhookServer(host="127.0.0.1", port=0, tls=webhooks.tls, routes={}))
    await service.start()
    try:
        waiting = asyncio.create_task(service.wait())
        await asyncio.sleep(0.2)
        assert not waiting.done()
        await service.server.stop()  # as if the server's thread had died
        await asyncio.wait_for(waiting, 20)
    finally:
        await service.stop()


async def test_the_served_certificates_expiry_is_exported() -> None:
    """The certificate-expiry alert reads this gauge: a rotation that keeps failing shows as an
    expiry that comes nearer instead of moving on."""
    options = Options(namespace="ops")
    now = certificates.utcnow()
    bundle = certificates.issue(options.hosts, now=now)

    class SecretOnly:
        async def get(self, resource: Resource, name: str, **kwargs: object) -> dict[str, object]:
            if resource.plural == "secrets":
                return {"metadata": {"name": name, "resourceVersion": "1"}, "data": bundle.secret_data()}
            raise NotFound("not installed", status=404)

    metrics = Metrics(process_metrics=False)
    webhooks = Webhooks(SecretOnly(), options, TLS(), metrics=metrics)  # type: ignore[arg-type]
    await webhooks.sync()
    exported = metrics.registry.get_sample_value("united_webhook_certificate_expiry_timestamp_seconds")
    assert exported == bundle.cert.not_valid_after_utc.timestamp()
    assert exported > now.timestamp()


async def test_no_conversion_crd_leaves_that_crd_alone(api: FakeApi) -> None:
    """``conversion_crd=None`` (the demo on someone's cluster, where OpenKruise's CRD is
    theirs): the configurations are trusted, the CRD is never written."""
    crd = api.read(CRDS, COMPAT_CRD)
    webhooks = Webhooks(api, Options(namespace="ops", conversion_crd=None), TLS())  # type: ignore[arg-type]
    await webhooks.sync()
    assert webhooks.bundle is not None
    assert trusted(api)[:3] == [b64(webhooks.bundle)] * 3
    assert api.read(CRDS, COMPAT_CRD) == crd
    await replica(api).sync()
    assert api.read(CRDS, COMPAT_CRD) != crd, "by default that CRD's conversion trusts the webhook"


# -- the namespaces sent to the pod webhooks ---------------------------------------------------


class VersionedApi(FakeApi):
    """FakeApi whose ``/version`` says ``git_version`` (and counts the reads)."""

    def __init__(self, git_version: str) -> None:
        super().__init__()
        self.git_version = git_version
        self.version_reads = 0

    async def get_path(self, path: str, **_: object) -> str:
        assert path == "/version"
        self.version_reads += 1
        return json.dumps({"major": "1", "minor": self.git_version.split(".")[1] + "+", "gitVersion": self.git_version})


def versioned(git_version: str, *, named: bool = True) -> VersionedApi:
    """The shipped configurations and namespaces on a server of ``git_version``; ``named``: the
    server labels namespaces with their name (1.21+)."""
    api = VersionedApi(git_version)
    for doc in kustomization.build(data.MANIFESTS, "base"):
        if doc["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            api.put(MUTATING if doc["kind"].startswith("Mutating") else VALIDATING, doc)
    for namespace in ("kube-system", "ops"):
        labels = {NAME_LABEL: namespace} if named else {}
        api.put(NAMESPACES, {"metadata": {"name": namespace, "labels": labels}})
    return api


def selectors(api: FakeApi) -> list[Json]:
    """The pod webhooks' selectors (the spreads webhook's is never narrowed)."""
    webhooks = [w for r in (MUTATING, VALIDATING) for w in api.read(r, NAME)["webhooks"]]
    return [w["namespaceSelector"] for w in webhooks if w["name"] != SPREADS_WEBHOOK]


def sent(api: FakeApi) -> list[list[str] | None]:
    """What each webhook's ``In`` expression names (None: no such expression)."""
    return [targets_of(s) for s in selectors(api)]


def exclusions(api: FakeApi) -> list[list[Json]]:
    """The selector's other expressions: kube-system, the controller's namespace, the opt-out label."""
    return [[e for e in s["matchExpressions"] if e["operator"] != "In"] for s in selectors(api)]


@pytest.mark.parametrize("url", [None, "https://127.0.0.1:9443"], ids=["shipped", "managed"])
async def test_only_namespaces_holding_spreads_are_sent_and_kept_current(url: str | None) -> None:
    api = versioned("v1.37.2")
    before = exclusions(api)
    holding: set[str] | None = None
    webhooks = Webhooks(api, Options(namespace="ops", url=url), TLS(), targeted=lambda: holding)  # type: ignore[arg-type]
    await webhooks.sync()
    assert sent(api) == [None, None], "the caches have not synced: the selector stays as it is"
    holding = {"team-b", "team-a"}
    await webhooks.sync()
    assert sent(api) == [["team-a", "team-b"]] * 2
    if url is None:
        assert exclusions(api) == before, "the exclusions are kept"
    written = api.version
    await webhooks.sync()
    assert api.version == written, "nothing changed: nothing written"
    holding = set()
    await webhooks.sync()
    assert sent(api) == [[], []]
    assert {tuple(s["matchExpressions"][-1]["values"]) for s in selectors(api)} == {(NO_NAMESPACE,)}
    holding = None
    await webhooks.sync()
    assert sent(api) == [[], []], "a restarting replica keeps what is in place"
    holding = {f"ns-{n}" for n in range(MAX_TARGETED_NAMESPACES + 1)}
    await webhooks.sync()
    assert sent(api) == [None, None], "beyond the bound every namespace is sent, as before"
    holding = {f"ns-{n}" for n in range(MAX_TARGETED_NAMESPACES)}
    await webhooks.sync()
    assert [len(t or ()) for t in sent(api)] == [MAX_TARGETED_NAMESPACES] * 2
    assert api.version_reads == 1, "the server's version is asked once"


@pytest.mark.parametrize(("git_version", "scope"), [("v1.20.2", "targeted"), ("v1.21.14", "targeted"),
                                                    ("v1.37.2", "all")])  # fmt: skip
async def test_every_namespace_is_sent_on_older_servers_or_when_asked(git_version: str, scope: Scope) -> None:
    api = versioned(git_version, named=False)
    shipped_selectors = selectors(api)
    webhooks = Webhooks(api, Options(namespace="ops", scope=scope), TLS(), targeted=lambda: {"team-a"})  # type: ignore[arg-type]
    await webhooks.sync()
    assert selectors(api) == shipped_selectors
    assert webhooks.targets() is None


async def test_a_narrowed_selector_is_widened_again_when_asked() -> None:
    api = versioned("v1.30.0")
    await Webhooks(api, Options(namespace="ops"), TLS(), targeted=lambda: {"a"}).sync()  # type: ignore[arg-type]
    assert sent(api) == [["a"], ["a"]]
    await Webhooks(api, Options(namespace="ops", scope="all"), TLS(), targeted=lambda: {"a"}).sync()  # type: ignore[arg-type]
    assert sent(api) == [None, None]


async def test_the_loop_runs_a_pass_as_soon_as_the_namespaces_change(monkeypatch: pytest.MonkeyPatch) -> None:
    """Within a poll of the set changing, not at the next certificate check (minutes away)."""
    monkeypatch.setattr(webhooks_module, "TARGETS_POLL", 0.01)
    api = versioned("v1.37.2")
    holding = {"a"}
    webhooks = Webhooks(api, Options(namespace="ops"), TLS(), targeted=lambda: holding)  # type: ignore[arg-type]
    loop = asyncio.create_task(webhooks.run())
    try:
        await asyncio.wait_for(webhooks.published.wait(), 30)
        assert sent(api) == [["a"], ["a"]]
        written = api.version
        await asyncio.sleep(0.1)
        assert api.version == written, "polling writes nothing while nothing changes"
        holding = {"a", "b"}
        for _ in range(500):
            if sent(api) == [["a", "b"], ["a", "b"]]:
                break
            await asyncio.sleep(0.01)
        assert sent(api) == [["a", "b"], ["a", "b"]]
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)


@pytest.mark.parametrize("named", [True, False], ids=["1.21+", "1.20"])
async def test_system_namespaces_are_labelled_out_only_where_the_server_does_not_name_them(named: bool) -> None:
    api = versioned("v1.37.2" if named else "v1.20.2", named=named)
    await Webhooks(api, Options(namespace="ops"), TLS()).sync()  # type: ignore[arg-type]
    labels = [api.read(NAMESPACES, n)["metadata"]["labels"].get(EXCLUDE_LABEL) for n in ("kube-system", "ops")]
    assert labels == ([None, None] if named else [EXCLUDED, EXCLUDED])


def test_release_reads_the_git_version() -> None:
    assert release({"gitVersion": "v1.37.2", "minor": "37"}) == (1, 37)
    assert release({"gitVersion": "v1.30.4-eks-a737599", "minor": "30+"}) == (1, 30)
    assert release({"gitVersion": "v0.0.0-master+$Format:%H$"}) == (0, 0)
    assert release({}) is None


async def test_an_unanswered_version_keeps_the_selectors_as_they_are() -> None:
    """A transient failure must not widen a narrowed selector (nor narrow one): the next pass asks again."""
    api = versioned("v1.37.2")
    await Webhooks(api, Options(namespace="ops"), TLS(), targeted=lambda: {"a"}).sync()  # type: ignore[arg-type]
    assert sent(api) == [["a"], ["a"]]

    class Unanswered(VersionedApi):
        async def get_path(self, path: str, **_: object) -> str:
            raise TransientError("the API server is restarting")

    flaky = Unanswered("v1.37.2")
    flaky.objects, flaky.version = api.objects, api.version
    webhooks = Webhooks(flaky, Options(namespace="ops"), TLS(), targeted=lambda: {"b"})  # type: ignore[arg-type]
    assert await webhooks.sync() == webhooks_module.VERSION_RETRY, "asked again soon"
    assert sent(flaky) == [["a"], ["a"]]
    assert webhooks.narrowing is None


# -- a spread's CREATE puts its namespace in before it is answered -----------------------------


def spread_review(ns: str, *, uid: str = "u-1", group: str = "apps.united.io", **request: Any) -> Json:
    """The review of a spread's CREATE in ``ns``; ``request`` overrides its fields."""
    obj = {"apiVersion": f"{group}/v1alpha1", "kind": "WorkloadSpread", "metadata": {"name": "ws", "namespace": ns}}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "operation": "CREATE", "namespace": ns, "object": obj,
                        "resource": {"group": group, "version": "v1alpha1", "resource": "workloadspreads"},
                        **request}}  # fmt: skip


class CountingApi(VersionedApi):
    """VersionedApi counting the writes to the webhook configurations; ``hold`` makes them wait
    until it is set (a half-open API server), ``fail`` makes them fail."""

    def __init__(self, git_version: str) -> None:
        super().__init__(git_version)
        self.writes = 0
        self.hold: asyncio.Event | None = None
        self.fail = False

    async def patch(self, resource: Resource, name: str, body: Any, *, patch_type: PatchType, **_: object) -> Json:
        if resource in (MUTATING, VALIDATING):
            if self.hold is not None:
                await self.hold.wait()
            if self.fail:
                raise TransientError("the API server is overloaded")
            self.writes += 1
        return await super().patch(resource, name, body, patch_type=patch_type)


def counting(git_version: str = "v1.37.2") -> CountingApi:
    api = CountingApi(git_version)
    api.objects, api.version = versioned(git_version).objects, 100
    return api


async def running(webhooks: Webhooks) -> asyncio.Task[None]:
    """The loop, once its first pass is published."""
    task = asyncio.create_task(webhooks.run())
    await asyncio.wait_for(webhooks.published.wait(), 30)
    return task


async def stopped(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def spreads_selector(api: FakeApi) -> Json:
    [webhook] = [w for w in api.read(VALIDATING, NAME)["webhooks"] if w["name"] == SPREADS_WEBHOOK]
    return dict(webhook["namespaceSelector"])


@pytest.mark.parametrize("url", [None, "https://127.0.0.1:9443"], ids=["shipped", "managed"])
async def test_a_spreads_create_is_answered_once_its_namespace_is_written(
    url: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caches show the spread only after it is stored, and the poll only after that: the
    review itself must get the namespace written before it is answered."""
    monkeypatch.setattr(webhooks_module, "TARGETS_POLL", 3600.0)
    api = counting()
    webhooks = Webhooks(api, Options(namespace="ops", url=url), TLS(), targeted=lambda: {"a"})  # type: ignore[arg-type]
    task = await running(webhooks)
    try:
        assert sent(api) == [["a"], ["a"]]
        assert webhooks.untargeted("team-b") and not webhooks.untargeted("a")
        before = spreads_selector(api)
        answer = await webhooks.admit_spread(spread_review("team-b", uid="u-7"))
        assert answer["response"] == {"uid": "u-7", "allowed": True}
        assert sent(api) == [["a", "team-b"], ["a", "team-b"]], "written before the answer"
        assert spreads_selector(api) == before and targets_of(before) is None, "the spreads webhook is not narrowed"
        assert not webhooks.untargeted("team-b")
        writes = api.writes
        await webhooks.admit_spread(spread_review("team-b", uid="u-8"))
        assert api.writes == writes, "a namespace already sent costs no write"
    finally:
        await stopped(task)


async def test_concurrent_creates_in_many_namespaces_share_one_write(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webhooks_module, "TARGETS_POLL", 3600.0)
    api = counting()
    webhooks = Webhooks(api, Options(namespace="ops"), TLS(), targeted=lambda: {"a"})  # type: ignore[arg-type]
    task = await running(webhooks)
    try:
        writes = api.writes
        names = [f"team-{n}" for n in range(webhooks_module.MAX_WAITERS)]
        assert await asyncio.gather(*(webhooks.target(n) for n in names)) == [True] * len(names)
        assert sent(api) == [sorted(["a", *names])] * 2
        assert api.writes - writes == 2, "one write of each configuration for all of them"
    finally:
        await stopped(task)


async def test_more_namespaces_than_the_bound_send_every_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    """Adding to the bound widens (no expression), never drops one; what is kept stays bounded
    however many namespaces reviews name."""
    monkeypatch.setattr(webhooks_module, "TARGETS_POLL", 3600.0)
    api = counting()
    holding = {f"ns-{n}" for n in range(MAX_TARGETED_NAMESPACES)}
    webhooks = Webhooks(api, Options(namespace="ops"), TLS(), targeted=lambda: holding)  # type: ignore[arg-type]
    task = await running(webhooks)
    try:
        assert [len(t or ()) for t in sent(api)] == [MAX_TARGETED_NAMESPACES] * 2
        assert await webhooks.target("one-more")
        assert sent(api) == [None, None]
        for n in range(3 * MAX_TARGETED_NAMESPACES):
            webhooks.published_targets = ()  # as if narrowed again: every call adds
            await webhooks.target(f"forged-{n}")
        assert len(webhooks.pending) <= MAX_TARGETED_NAMESPACES + 1
    finally:
        await stopped(task)


@pytest.mark.parametrize(("git_version", "scope"), [("v1.20.2", "targeted"), ("v1.37.2", "all")])
async def test_no_namespace_is_added_where_nothing_is_narrowed(git_version: str, scope: Scope) -> None:
    api = counting(git_version)
    webhooks = Webhooks(api, Options(namespace="ops", scope=scope), TLS(), targeted=lambda: {"a"})  # type: ignore[arg-type]
    task = await running(webhooks)
    try:
        writes, shipped = api.writes, selectors(api)
        assert not webhooks.untargeted("team-b")
        answer = await webhooks.admit_spread(spread_review("team-b"))
        assert answer["response"]["allowed"] is True
        assert (api.writes, selectors(api)) == (writes, shipped)
        assert webhooks.pending == {}
    finally:
        await stopped(task)


@pytest.mark.parametrize("trouble", ["fails", "hangs"])
async def test_a_spread_is_allowed_when_the_write_fails_or_hangs(trouble: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webhooks_module, "TARGETS_POLL", 3600.0)
    monkeypatch.setattr(webhooks_module, "TARGET_WAIT", 0.2)
    api = counting()
    webhooks = Webhooks(api, Options(namespace="ops"), TLS(), targeted=lambda: {"a"})  # type: ignore[arg-type]
    task = await running(webhooks)
    try:
        if trouble == "fails":
            api.fail = True
        else:
            api.hold = asyncio.Event()
        answer = await asyncio.wait_for(webhooks.admit_spread(spread_review("team-b")), 30)
        assert answer["response"]["allowed"] is True
        assert not await asyncio.wait_for(webhooks.target("team-b"), 30)
        assert sent(api) == [["a"], ["a"]]
        if trouble == "fails":
            assert webhooks.failing, "backing off: nobody waits for the next pass"
        api.fail, hold = False, api.hold
        if hold is not None:
            hold.set()
        for _ in range(3000):
            if sent(api) == [["a", "team-b"]] * 2:
                break
            await asyncio.sleep(0.01)
        assert sent(api) == [["a", "team-b"]] * 2, "written once the server answers"
    finally:
        await stopped(task)


async def test_an_added_namespace_without_a_spread_goes_after_the_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CREATE refused after us, or a forged review, targets a namespace only for a while; one
    whose spread the caches show is kept by the caches (and dropped with its last spread)."""
    monkeypatch.setattr(webhooks_module, "TARGETS_POLL", 3600.0)
    api = counting()
    holding = {"a"}
    now = [1000.0]
    webhooks = Webhooks(api, Options(namespace="ops"), TLS(), targeted=lambda: holding)  # type: ignore[arg-type]
    webhooks.clock = lambda: now[0]
    task = await running(webhooks)
    try:
        assert await webhooks.target("refused") and await webhooks.target("stored")
        holding = {"a", "stored"}
        now[0] += webhooks_module.PENDING_GRACE + 1
        assert webhooks.targets() == ("a", "stored")
        await webhooks.sync()
        assert sent(api) == [["a", "stored"]] * 2
        holding = {"a"}
        await webhooks.sync()
        assert sent(api) == [["a"]] * 2
    finally:
        await stopped(task)


@pytest.mark.parametrize(
    "review",
    [
        spread_review("team-b", dryRun=True),
        spread_review("team-b", operation="UPDATE"),
        spread_review("team-b", resource={"group": "", "version": "v1", "resource": "pods"}),
        spread_review("team-b", resource={"group": "example.com", "version": "v1", "resource": "workloadspreads"}),
        spread_review("team-b", namespace="team-c"),
        spread_review("Not/A_Namespace"),
    ],
    ids=["dry-run", "update", "pods", "other-group", "namespaces-differ", "bad-name"],
)
async def test_other_reviews_add_nothing(review: Json) -> None:
    api = counting()
    webhooks = Webhooks(api, Options(namespace="ops"), TLS(), targeted=lambda: {"a"})  # type: ignore[arg-type]
    await webhooks.sync()
    assert (await webhooks.admit_spread(review))["response"]["allowed"] is True
    assert webhooks.pending == {}


async def test_the_spreads_webhook_stays_ignore_and_unnarrowed_when_pods_fail_closed() -> None:
    api = counting()
    before = spreads_selector(api)
    await Webhooks(api, Options(namespace="ops", failure_policy="Fail"), TLS(), targeted=lambda: {"a"}).sync()  # type: ignore[arg-type]
    policies = {w["name"]: w["failurePolicy"] for w in api.read(VALIDATING, NAME)["webhooks"]}
    assert policies == {"validate-pods.workloadspread.united.io": "Fail", SPREADS_WEBHOOK: "Ignore"}
    assert spreads_selector(api) == before
    assert sent(api) == [["a"], ["a"]]


def test_targeted_is_the_default() -> None:
    assert Settings().webhook_namespaces == "targeted"
    assert parser().parse_args(["run"]).webhook_namespaces == "targeted"
    assert parser().parse_args(["run", "--webhook-namespaces", "all"]).webhook_namespaces == "all"


async def test_a_pod_arriving_before_the_caches_show_its_namespaces_first_spread_waits_for_them() -> None:
    """Between a spread's CREATE and the watch bringing it, a pod of its workload is held (not
    skipped as from a namespace without spreads); at most until the expectation lapses."""
    api = counting("v1.20.2")
    holding = {"a"}
    now = [1000.0]
    webhooks = Webhooks(api, Options(namespace="ops"), TLS(), targeted=lambda: holding)  # type: ignore[arg-type]
    webhooks.clock = lambda: now[0]
    seen: list[set[str]] = []

    async def mutate(review: Json) -> Json:
        seen.append(set(holding))
        return allow(review["request"]["uid"])

    handler, screen = webhooks.guard_pods(mutate, lambda ns: ns in holding)
    pod = {"request": {"uid": "p", "namespace": "b", "operation": "CREATE"}}
    assert not screen("b"), "no spread there: skipped"
    await webhooks.admit_spread(spread_review("b"))
    assert screen("b"), "its spread is on its way: the handler must see the pod"
    held = asyncio.create_task(handler(pod))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not held.done() and seen == [], "held while the caches do not show it"
    holding.add("b")
    await asyncio.wait_for(held, 30)
    assert seen == [{"a", "b"}], "handled once the caches show the spread"
    assert webhooks.expected == {}

    await webhooks.admit_spread(spread_review("c"))
    held = asyncio.create_task(handler({"request": {"uid": "q", "namespace": "c"}}))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not held.done()
    now[0] += webhooks_module.EXPECT_SPREAD
    await asyncio.wait_for(held, 30)
    assert seen[-1] == {"a", "b"} and not screen("c"), "the expectation lapsed: handled (and skipped) as before"
    await webhooks.admit_spread(spread_review("d"))
    now[0] += webhooks_module.EXPECT_SPREAD
    noted = dict(webhooks.expected)
    assert not screen("d") and webhooks.expected == noted, "the screen (on the server's thread) only reads"
    await asyncio.wait_for(handler({"request": {"uid": "r", "namespace": "d"}}), 30)
    assert "d" not in webhooks.expected, "the handler, on the controller's loop, drops the lapsed expectation"
    await webhooks.admit_spread(spread_review("a"))
    assert webhooks.expected == {}, "a namespace that holds a spread already expects none"
    for n in range(3 * MAX_TARGETED_NAMESPACES):
        await webhooks.admit_spread(spread_review(f"forged-{n}"))
    assert len(webhooks.expected) <= MAX_TARGETED_NAMESPACES + 1


def test_deadlines_note_at_most_their_cap_dropping_the_expired_first() -> None:
    names = Deadlines(2)
    names.note("a", 10.0, now=0.0)
    names.note("b", 5.0, now=0.0)
    names.note("c", 10.0, now=1.0)
    assert names == {"a": 10.0, "b": 5.0}, "beyond the cap a new name is not noted"
    names.note("a", 20.0, now=1.0)
    assert names == {"a": 20.0, "b": 5.0}, "a noted name's deadline moves"
    names.note("c", 15.0, now=5.0)
    assert names == {"a": 20.0, "c": 15.0}, "an expired name makes room"
    names.drop(lambda name, until: name == "a")
    assert names == {"c": 15.0}


async def test_a_shortcut_route_keeps_its_early_answer_and_has_its_handler_guarded() -> None:
    holding: set[str] = set()
    webhooks = Webhooks(counting("v1.20.2"), Options(namespace="ops"), TLS(), targeted=lambda: holding)  # type: ignore[arg-type]
    handled: list[str] = []

    async def mutate(review: Json) -> Json:
        handled.append(review["request"]["uid"])
        return allow(review["request"]["uid"])

    def early(review: Json) -> Json | None:
        return None

    route, screen = webhooks.guard_route(Shortcut(mutate, early), lambda ns: ns in holding)
    assert isinstance(route, Shortcut) and route.early is early
    await webhooks.admit_spread(spread_review("b"))
    assert screen("b")
    held = asyncio.create_task(route.handler({"request": {"uid": "p", "namespace": "b", "operation": "CREATE"}}))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not held.done() and handled == [], "the handler behind the shortcut is held like any"
    holding.add("b")
    await asyncio.wait_for(held, 30)
    assert handled == ["p"]
    plain, _ = webhooks.guard_route(mutate, lambda ns: ns in holding)
    assert not isinstance(plain, Shortcut)


async def test_the_loop_stops_when_cancelled_as_a_pass_is_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """A spread's CREATE wakes the idle loop in the same turn that stops it: the stop wins."""
    monkeypatch.setattr(webhooks_module, "TARGETS_POLL", 3600.0)
    webhooks = Webhooks(counting(), Options(namespace="ops"), TLS(), targeted=lambda: {"a"})  # type: ignore[arg-type]
    task = await running(webhooks)
    await asyncio.sleep(0.05)
    asking = asyncio.ensure_future(webhooks.target("team-b"))
    await asyncio.sleep(0)  # it asked, and now waits for the pass
    task.cancel()
    done, _ = await asyncio.wait([task], timeout=5)
    asking.cancel()
    assert done, "the loop went on after its cancel"
