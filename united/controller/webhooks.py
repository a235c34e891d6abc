"""Keep the webhook served with a certificate the API server trusts, and the configurations
that point at it — without cert-manager.

What one pass (:meth:`Webhooks.sync`) does, from any replica:

1. **The Secret** ``united-webhook-certs`` in the controller's namespace holds the CA and the
   serving pair (``runtime/certificates.py``). Missing: create it; a concurrent creator wins
   the race with ``AlreadyExists`` and everyone uses the winner's. Present: renew it when the
   rules say so, with the read ``resourceVersion`` (a ``Conflict`` means another replica
   renewed first: its bundle is used). So restarts and all replicas share one CA.
2. **The served certificate** is replaced in place (:class:`~united.runtime.webserver.TLS`).
3. **The trust** goes only into the named objects (least privilege, ``resourceNames`` in
   RBAC): the Mutating- and ValidatingWebhookConfiguration ``united-workloadspread`` and the
   conversion webhook of the compat CRD ``workloadspreads.apps.kruise.io`` when it is
   installed. With ``--webhook-url`` the two configurations are created or updated whole,
   pointing at the URL (local development, the e2e suite); without it only their
   ``caBundle`` and ``failurePolicy`` (``--webhook-failure-policy`` is the source of truth)
   are patched (the shipped configurations, through the Service). Nothing is written when
   it already holds. **No stale trust**: a replica that read the Secret just before another
   one rolled the CA over would write the old ``caBundle`` back, and the API server would stop
   trusting the new CA the other replica's certificate is about to move to. So each write
   carries the ``resourceVersion`` read (a ``Conflict`` retries the pass), and an object that
   already trusts a CA newer than all of ours (:func:`~united.runtime.certificates.newer_ca_than`)
   is left alone while the Secret is read again: if it now holds that CA, its bundle is
   published; if not, that CA is nobody's of ours (the Secret is the source of truth) and is
   replaced.
4. **Exclusions on 1.20**: the controller's namespace and kube-system get the opt-out label
   (``webhookconfig.EXCLUDE_LABEL``) only when the API server has not labelled them with their
   name (it does on 1.21+, and the selector's name expression already excludes them there).
5. **Only namespaces with a WorkloadSpread** (``--webhook-namespaces targeted``, the default,
   on servers whose ``/version`` is 1.22 or newer): every pod webhook's selector gets the ``In``
   expression of ``webhookconfig.with_targets`` naming the namespaces where spreads live (the
   ``targeted`` callable, from the controller's caches). The loop looks at that set every
   :data:`TARGETS_POLL` seconds (in memory) and runs a pass when it changed; while the caches
   have not synced the expression in place is kept (a restarting replica does not widen it).
   More than ``MAX_TARGETED_NAMESPACES`` namespaces, ``--webhook-namespaces all`` or an older
   server: no such expression, every namespace but the excluded ones is sent.
6. **A namespace's first spread** would otherwise be selected only at the next poll, after
   its workload's first pods: the spreads webhook (``webhookconfig.SPREADS_WEBHOOK``, never
   narrowed, always ``Ignore``) calls :meth:`Webhooks.admit_spread` on every WorkloadSpread
   CREATE, which adds the namespace (:attr:`Webhooks.pending`, kept :data:`PENDING_GRACE`
   unless the caches show a spread there), wakes the loop and waits (at most
   :data:`TARGET_WAIT`) for the pass that writes it. Requests that arrive while a pass is
   written share the next one; removal stays with the poll. A pod of that namespace that
   arrives before the caches show the spread is held for them (:meth:`Webhooks.guard_pods`).

Every replica serves the webhook, so every replica runs the loop (writes are idempotent and
guarded by ``resourceVersion``): give it a client **without** the leader-election fence.
The next pass is due when a certificate decision may change (``certificates.next_check``),
or after ``resync`` seconds to pick up another replica's renewal; failures retry with
backoff and never stop the server that is already serving.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import ssl
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

import structlog
from cryptography import x509

from united.api.field import Path
from united.api.names import dns_label_errors
from united.kube import ApiError, KubeClient, Resource
from united.kube.client import CRDS, NAMESPACES, SECRETS, PatchType
from united.kube.discovery import server_release
from united.kube.errors import AlreadyExists, Conflict, NotFound
from united.runtime import certificates
from united.runtime.certificates import Bundle, Policy
from united.runtime.metrics import Metrics
from united.runtime.webserver import (
    DEFAULT_REQUEST_TIMEOUT,
    TLS,
    Computed,
    Handler,
    Route,
    Screen,
    Shortcut,
    WebhookServer,
    allow,
    request_of,
    uid_of,
)
from united.workloadspread import webhookconfig
from united.workloadspread.webhookconfig import (
    CONVERT_PATH,
    MUTATE_PATH,
    NAME,
    SPREADS_PATH,
    SPREADS_WEBHOOK,
    FailurePolicy,
)

JSON = dict[str, Any]

MUTATING = Resource(
    "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", False, "MutatingWebhookConfiguration"
)
VALIDATING = Resource(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", False, "ValidatingWebhookConfiguration"
)
COMPAT_CRD = "workloadspreads.apps.kruise.io"
TARGETS_POLL = 1.0
"""Seconds between two looks at the namespaces that hold spreads (also the most a new one waits)."""
VERSION_RETRY = 10.0
"""Seconds until the next pass while ``/version`` goes unanswered."""
TARGET_WAIT = 2.0
"""Seconds a WorkloadSpread CREATE waits at most for its namespace to be written into the pod
webhooks' selectors (the spreads webhook's ``timeoutSeconds`` is 3); then it is allowed anyway."""
PENDING_GRACE = 30.0
"""Seconds a namespace added on a spread's CREATE stays targeted while the caches show no spread
there (the CREATE may have been refused after us, or the review forged); then the loop drops it."""
EXPECT_SPREAD = 1.0
"""Seconds after a namespace's first spread's CREATE is answered during which a pod there that
arrives before the caches show the spread waits for them (:meth:`Webhooks.guard_pods`)."""
SPREAD_POLL = 0.01
MAX_WAITERS = 8
"""Spread reviews waiting for a write at once; more are answered at once: each holds one of its
route's places, which other spread reviews need too."""
NARROWING_SINCE = (1, 22)
"""The first release whose API server labels every namespace with its name (GA, always on)."""
Scope = Literal["targeted", "all"]
SECRET_TYPE = "kubernetes.io/tls"
RETRY_MIN, RETRY_MAX = 1.0, 60.0

_log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Options:
    """Where the certificates live and where the API server calls; see the module docstring."""

    namespace: str
    """The controller's namespace: the Secret's, the Service's, excluded from the webhooks."""
    url: str | None = None
    """``https://host:port``: manage the configurations, pointing at it. None: patch the shipped ones."""
    failure_policy: FailurePolicy = "Ignore"
    secret: str = "united-webhook-certs"
    service: str = webhookconfig.SERVICE
    service_port: int = 443
    conversion_crd: str | None = COMPAT_CRD
    """The CRD whose conversion webhook is served at ``/convert`` (when it is installed); None:
    none is touched (a cluster where that CRD is someone else's)."""
    match_labels: Mapping[str, str] | None = None
    """Narrows the namespaces the managed configurations select (tests; opt-in clusters)."""
    scope: Scope = "targeted"
    """``targeted``: only namespaces that hold a WorkloadSpread reach the webhooks (where the server
    allows it); ``all``: every namespace but the excluded ones, as on older servers."""
    policy: Policy = field(default_factory=Policy)
    resync: float = 600.0

    @property
    def hosts(self) -> list[str]:
        """The names the serving certificate must carry: the Service's DNS names, the URL's host."""
        hosts = [f"{self.service}.{self.namespace}.svc", f"{self.service}.{self.namespace}.svc.cluster.local"]
        if self.url is not None:
            host = urlsplit(self.url).hostname
            if host:
                hosts.append(host)
        return hosts


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _version(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _webhook_bundles(configuration: JSON) -> list[Any]:
    return [(webhook.get("clientConfig") or {}).get("caBundle") for webhook in configuration.get("webhooks") or []]


@dataclass(frozen=True)
class _Trust:
    """What one :meth:`Webhooks.publish` writes: the ``caBundle`` (base64 PEM) and its CAs."""

    ca_bundle: str
    cas: tuple[x509.Certificate, ...]
    force: bool = False

    def outdated_by(self, current: Any) -> bool:
        """Whether ``current``, an object's caBundle, trusts a CA newer than all of ours."""
        if not isinstance(current, str) or not current or current == self.ca_bundle:
            return False
        try:
            pem = base64.b64decode(current, validate=True)
        except ValueError:
            return False
        return certificates.newer_ca_than(self.cas, pem)


async def _reread_on_conflict(write: Callable[[], Awaitable[int]], attempts: int = 3) -> int:
    """``write()`` (which reads the object, then writes with the resourceVersion read) again
    while another replica wrote in between; the last Conflict propagates (the pass retries)."""
    for _ in range(attempts - 1):
        try:
            return await write()
        except Conflict:
            continue
    return await write()


class _Keep:
    """The targets are not known yet: keep the ``In`` expression in place."""


KEEP = _Keep()
Targets = tuple[str, ...] | None | _Keep


def _covers(actual: Any, wanted: Any) -> bool:
    """``actual`` holds everything ``wanted`` says (the API server may add defaulted fields)."""
    if isinstance(wanted, dict):
        return isinstance(actual, dict) and all(k in actual and _covers(actual[k], v) for k, v in wanted.items())
    if isinstance(wanted, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(wanted)
            and all(_covers(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return bool(actual == wanted)


def _namespace_name(value: str) -> bool:
    return not dns_label_errors(value, Path("metadata").child("namespace"))


class Deadlines(dict[str, float]):
    """Names kept until a deadline each, at most ``cap`` of them: anyone can send the review
    that notes a name, so a name beyond the cap is not noted (the expired go first)."""

    def __init__(self, cap: int) -> None:
        super().__init__()
        self.cap = cap

    def note(self, name: str, until: float, *, now: float) -> None:
        self.drop(lambda _, deadline: deadline <= now)
        if name in self or len(self) < self.cap:
            self[name] = until

    def drop(self, gone: Callable[[str, float], bool]) -> None:
        for name in [n for n, deadline in self.items() if gone(n, deadline)]:
            del self[name]


class Webhooks:
    """One pass or a loop of the work in the module docstring, for one controller process."""

    def __init__(
        self,
        client: KubeClient,
        options: Options,
        tls: TLS,
        *,
        metrics: Metrics | None = None,
        targeted: Callable[[], Collection[str] | None] | None = None,
    ) -> None:
        self.client = client
        self.options = options
        self.tls = tls
        self.targeted = targeted
        """The namespaces that hold a WorkloadSpread, None until known (see the module docstring)."""
        self.narrowing: bool | None = None
        """Whether the API server labels namespaces with their name (None: not asked yet)."""
        self.published_targets: Targets = KEEP
        self.metrics = metrics
        """Exports the served certificate's expiry: a rotation that keeps failing shows there."""
        self.bundle: Bundle | None = None
        self.ready = asyncio.Event()
        """Set once a certificate is loaded (the server may start)."""
        self.published = asyncio.Event()
        """Set once a pass has written the trust everywhere (the API server may call)."""
        self._warned: set[str] = set()
        self.superseded = False
        """Whether the last :meth:`publish` left an object that trusts a newer CA than its bundle."""
        self.clock: Callable[[], float] = time.monotonic
        self.pending = Deadlines(webhookconfig.MAX_TARGETED_NAMESPACES + 1)
        """Namespaces added by a spread's CREATE, until when (:data:`PENDING_GRACE`); beyond
        ``MAX_TARGETED_NAMESPACES`` every namespace is sent anyway."""
        self.expected = Deadlines(webhookconfig.MAX_TARGETED_NAMESPACES + 1)
        """Namespaces whose first spread's CREATE this replica answered, until when their pods
        wait for the caches to show it (:data:`EXPECT_SPREAD`)."""
        self.failing = False
        """Whether the last pass failed (the loop backs off: nobody waits for it)."""
        self._asked = 0
        self._passed = 0
        self._pass_done = asyncio.Event()
        self._wake = asyncio.Event()
        self._waiting = 0

    # -- the Secret ------------------------------------------------------------------------

    def _secret(self, bundle: Bundle, resource_version: str | None = None) -> JSON:
        metadata: JSON = {"name": self.options.secret, "labels": {"app.kubernetes.io/name": "united"}}
        if resource_version:
            metadata["resourceVersion"] = resource_version
        return {"apiVersion": "v1", "kind": "Secret", "type": SECRET_TYPE, "metadata": metadata,
                "data": bundle.secret_data()}  # fmt: skip

    async def certificates(self) -> Bundle:
        """The bundle every replica shares, created or renewed as needed (see the module docstring)."""
        opts = self.options
        for _ in range(5):
            now = certificates.utcnow()
            try:
                secret = await self.client.get(SECRETS, opts.secret, namespace=opts.namespace)
            except NotFound:
                bundle = certificates.issue(opts.hosts, now=now, policy=opts.policy)
                try:
                    await self.client.create(SECRETS, self._secret(bundle), namespace=opts.namespace)
                except AlreadyExists:
                    continue
                _log.info("webhook certificates created", secret=opts.secret, namespace=opts.namespace)
                return bundle
            try:
                current: Bundle | None = Bundle.from_secret_data(secret.get("data") or {})
            except ValueError as exc:
                _log.warning("webhook certificates unreadable; replacing them", secret=opts.secret, error=str(exc))
                current = None
            if current is None:
                bundle = certificates.issue(opts.hosts, now=now, policy=opts.policy)
            else:
                renewed = certificates.renew(current, opts.hosts, now=now, policy=opts.policy)
                if renewed is None:
                    return current
                bundle = renewed
            try:
                version = str(secret["metadata"].get("resourceVersion", ""))
                await self.client.replace(SECRETS, self._secret(bundle, version), namespace=opts.namespace)
            except Conflict:
                continue
            _log.info("webhook certificates renewed", secret=opts.secret, cas=len(bundle.cas),
                      expires=bundle.cert.not_valid_after_utc.isoformat())  # fmt: skip
            return bundle
        raise RuntimeError(f"secret {opts.namespace}/{opts.secret} kept changing while being renewed")

    # -- the trust -------------------------------------------------------------------------

    def configurations(self, ca_bundle: str, targets: Collection[str] | None = None) -> tuple[JSON, JSON]:
        """The mutating and validating configurations this process would write with ``--webhook-url``."""
        opts = self.options
        return webhookconfig.configurations(
            namespace=opts.namespace, url=opts.url, service=opts.service, port=opts.service_port,
            ca_bundle=ca_bundle, failure_policy=opts.failure_policy, match_labels=opts.match_labels,
            targets=targets,
        )  # fmt: skip

    # -- the namespaces sent -----------------------------------------------------------------

    async def _narrowing(self) -> bool | None:
        """Whether the selectors may name namespaces (asked once); None while ``/version`` goes
        unanswered (asked again at the next pass; meanwhile the selectors stay as they are)."""
        if self.options.scope == "all" or self.targeted is None:
            return False
        if self.narrowing is None:
            try:
                found = await server_release(self.client)
            except ApiError as exc:
                self._warn_once("/version", f"cannot read the server's version; the webhook selectors stay: {exc}")
                return None
            self.narrowing = found is not None and found >= NARROWING_SINCE
            _log.info("webhook namespaces", targeted=self.narrowing, server=found)
        return self.narrowing

    def targets(self) -> Targets:
        """What the selectors' ``In`` expression should name now: the namespaces that hold a
        spread, None (no expression: every namespace), or :data:`KEEP` (not known yet)."""
        if not self.narrowing or self.targeted is None:
            return None
        cached = self.targeted()
        if cached is None:
            return KEEP
        now = self.clock()
        self.pending.drop(lambda ns, until: until <= now or ns in cached)
        found = {*cached, *self.pending}
        if len(found) > webhookconfig.MAX_TARGETED_NAMESPACES:
            self._warn_once("targets", f"more than {webhookconfig.MAX_TARGETED_NAMESPACES} namespaces hold "
                            "WorkloadSpreads; every namespace is sent to the pod webhooks")  # fmt: skip
            return None
        return tuple(sorted(found))

    def covered(self, namespace: str) -> bool:
        """Whether the pod webhooks' selectors, as last written, let ``namespace`` through (or
        are not this replica's to narrow: older servers, ``all``, caches syncing)."""
        targets = self.published_targets
        return not self.narrowing or targets is None or isinstance(targets, _Keep) or namespace in targets

    def untargeted(self, namespace: str) -> bool:
        """The spreads route's screen: whether a review from ``namespace`` needs its handler."""
        return not self.covered(namespace)

    async def target(self, namespace: str) -> bool:
        """Have ``namespace`` written into the pod webhooks' selectors by the loop's next pass,
        and wait for that pass (at most :data:`TARGET_WAIT`; not at all while the loop backs
        off or :data:`MAX_WAITERS` already wait). Concurrent calls share one pass. Returns
        whether the selectors now let ``namespace`` through."""
        if self.covered(namespace):
            return True
        if not _namespace_name(namespace):
            return False
        now = self.clock()
        self.pending.note(namespace, now + PENDING_GRACE, now=now)
        self._asked += 1
        ticket = self._asked
        self._wake.set()
        if self.failing or self._waiting >= MAX_WAITERS:
            return False
        self._waiting += 1
        try:
            async with asyncio.timeout(TARGET_WAIT):
                while self._passed < ticket:
                    await self._pass_done.wait()
        except TimeoutError:
            return False
        finally:
            self._waiting -= 1
        return self.covered(namespace)

    async def admit_spread(self, review: JSON) -> JSON:
        """``/validate-workloadspreads``: always allowed; a spread's CREATE first targets its
        namespace (:meth:`target`). A review is anyone's claim, so it can add only the namespace
        it names, for :data:`PENDING_GRACE` unless a spread shows up there, and no dry run writes."""
        request = request_of(review)
        resource = request.get("resource")
        resource = resource if isinstance(resource, dict) else {}
        obj = request.get("object")
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        own = meta.get("namespace") if isinstance(meta, dict) else None
        namespace = request.get("namespace")
        if (
            request.get("operation") == "CREATE"
            and not request.get("dryRun")
            and resource.get("resource") == "workloadspreads"
            and resource.get("group") in webhookconfig.SPREAD_GROUPS
            and isinstance(namespace, str)
            and own in (None, "", namespace)
            and _namespace_name(namespace)
        ):
            if not await self.target(namespace):
                _log.info("namespace not yet in the pod webhooks' selectors", namespace=namespace, failing=self.failing)
            self._expect(namespace)
        return allow(uid_of(request))

    def _expect(self, namespace: str) -> None:
        """Note that ``namespace``'s first spread is about to exist (the caches show none there yet)."""
        cached = self.targeted() if self.targeted is not None else None
        if cached is None or namespace in cached:
            return
        now = self.clock()
        self.expected.note(namespace, now + EXPECT_SPREAD, now=now)

    def _awaited(self, namespace: str) -> bool:
        """Whether ``namespace``'s first spread is on its way (its expectation has not lapsed);
        reads only, so the webhook server's thread may ask."""
        until = self.expected.get(namespace)
        return until is not None and until > self.clock()

    def _expecting(self, namespace: str, cached: Screen) -> bool:
        """:meth:`_awaited` and not yet in the caches; an expectation that lapsed or came true
        is dropped here, on the controller's loop."""
        if self._awaited(namespace) and not cached(namespace):
            return True
        self.expected.pop(namespace, None)
        return False

    def guard_pods(self, handler: Handler, screen: Screen) -> tuple[Handler, Screen]:
        """The pod CREATE route's ``handler`` and ``screen`` (whether the caches hold a spread in a
        namespace), made to hold a pod that arrives between its namespace's first spread's CREATE
        and the caches showing that spread (at most :data:`EXPECT_SPREAD` after the CREATE):
        the spread's workload is scaled out right after it, and its first pods would otherwise be
        admitted unplaced."""

        def guarded_screen(namespace: str) -> bool:
            return screen(namespace) or self._awaited(namespace)

        async def guarded(review: JSON) -> JSON:
            namespace = request_of(review).get("namespace")
            while isinstance(namespace, str) and self._expecting(namespace, screen):  # noqa: ASYNC110
                await asyncio.sleep(SPREAD_POLL)  # the caches signal nothing; bounded by EXPECT_SPREAD
            return await handler(review)

        return guarded, guarded_screen

    def guard_route(self, route: Handler | Shortcut, screen: Screen) -> tuple[Handler | Shortcut, Screen]:
        """:meth:`guard_pods` for a route: a :class:`Shortcut` keeps its early answer (it allows
        only pods no spread may target, which the guard would hold for nothing) and has its
        handler guarded."""
        if not isinstance(route, Shortcut):
            return self.guard_pods(route, screen)
        guarded, guarded_screen = self.guard_pods(route.handler, screen)
        return dataclasses.replace(route, handler=guarded), guarded_screen

    def _passed_through(self, started: int) -> None:
        """A pass that began after the ``started``-th request ended: wake who waited for it."""
        self._passed = max(self._passed, started)
        done, self._pass_done = self._pass_done, asyncio.Event()
        done.set()

    async def _managed(self, resource: Resource, trust: _Trust, targets: Targets) -> int:
        mutating = resource is MUTATING
        current = None
        for _ in range(3):
            try:
                current = await self.client.get(resource, NAME)
                break
            except NotFound:
                wanted = self._wanted(mutating, trust, None if isinstance(targets, _Keep) else targets)
                try:
                    await self.client.create(resource, wanted)
                except AlreadyExists:
                    continue  # another replica created it first: compare with theirs
                return 1
        if current is None:
            raise RuntimeError(f"{resource.plural}/{NAME} keeps appearing and disappearing")
        if isinstance(targets, _Keep):
            webhooks = current.get("webhooks") or [{}]
            kept = webhookconfig.targets_of(webhooks[0].get("namespaceSelector"))
            wanted = self._wanted(mutating, trust, kept)
        else:
            wanted = self._wanted(mutating, trust, targets)
        if _covers(current.get("webhooks"), wanted["webhooks"]):
            return 0
        if self._outdated(trust, *_webhook_bundles(current)):
            return 0
        metadata = {"labels": wanted["metadata"]["labels"], "resourceVersion": _version(current)}
        await self.client.patch(resource, NAME, {"metadata": metadata, "webhooks": wanted["webhooks"]},
                                patch_type=PatchType.MERGE)  # fmt: skip
        return 1

    def _wanted(self, mutating: bool, trust: _Trust, targets: Collection[str] | None) -> JSON:
        return self.configurations(trust.ca_bundle, targets)[0 if mutating else 1]

    async def _shipped(self, resource: Resource, trust: _Trust, targets: Targets) -> int:
        try:
            current = await self.client.get(resource, NAME)
        except NotFound:
            self._warn_once(f"{resource.plural}/{NAME}", "webhook configuration not installed; nothing to trust us")
            return 0
        if self._outdated(trust, *_webhook_bundles(current)):
            return 0
        ca_bundle = trust.ca_bundle
        ops: list[JSON] = []
        policy = self.options.failure_policy
        for index, webhook in enumerate(current.get("webhooks") or []):
            changes: list[JSON] = []
            spreads = webhook.get("name") == SPREADS_WEBHOOK  # how a namespace gets in: never narrowed, never Fail
            if (webhook.get("clientConfig") or {}).get("caBundle") != ca_bundle:
                changes.append({"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": ca_bundle})
            if not spreads and webhook.get("failurePolicy") != policy:
                changes.append({"op": "add", "path": f"/webhooks/{index}/failurePolicy", "value": policy})
            if not spreads and not isinstance(targets, _Keep):
                selector = webhook.get("namespaceSelector") or {}
                wanted = webhookconfig.with_targets(selector, targets)
                if wanted != selector:
                    changes.append({"op": "add", "path": f"/webhooks/{index}/namespaceSelector", "value": wanted})
            if changes:
                ops += [{"op": "test", "path": f"/webhooks/{index}/name", "value": webhook.get("name")}, *changes]
        if not ops:
            return 0
        precondition = {"op": "replace", "path": "/metadata/resourceVersion", "value": _version(current)}
        await self.client.patch(resource, NAME, [precondition, *ops], patch_type=PatchType.JSON)
        return 1

    async def _conversion(self, trust: _Trust) -> int:
        if self.options.conversion_crd is None:
            return 0
        try:
            crd = await self.client.get(CRDS, self.options.conversion_crd)
        except NotFound:
            return 0
        conversion = crd.get("spec", {}).get("conversion") or {}
        config = (conversion.get("webhook") or {}).get("clientConfig") or {}
        ca_bundle = trust.ca_bundle
        if conversion.get("strategy") == "Webhook" and self._outdated(trust, config.get("caBundle")):
            return 0
        if self.options.url is None:
            if conversion.get("strategy") != "Webhook" or config.get("caBundle") == ca_bundle:
                return 0
            wanted: JSON = {"caBundle": ca_bundle}
        else:
            url = self.options.url.rstrip("/") + CONVERT_PATH
            if conversion.get("strategy") == "Webhook" and config == {"url": url, "caBundle": ca_bundle}:
                return 0
            wanted = {"url": url, "caBundle": ca_bundle, "service": None}
        versions = (conversion.get("webhook") or {}).get("conversionReviewVersions") or ["v1", "v1beta1"]
        patch = {"metadata": {"resourceVersion": _version(crd)}, "spec": {"conversion": {"strategy": "Webhook",
                 "webhook": {"clientConfig": wanted, "conversionReviewVersions": versions}}}}  # fmt: skip
        await self.client.patch(CRDS, crd["metadata"]["name"], patch, patch_type=PatchType.MERGE)
        return 1

    async def _exclude(self, namespace: str) -> int:
        """Label ``namespace`` out of the webhooks unless the selector's name expression already
        excludes it (the server labels it with its name) or it is labelled out already."""
        label = webhookconfig.EXCLUDE_LABEL
        try:
            current = await self.client.get(NAMESPACES, namespace)
        except NotFound:
            return 0
        labels = current.get("metadata", {}).get("labels") or {}
        if labels.get(label) == webhookconfig.EXCLUDED or labels.get(webhookconfig.NAME_LABEL) == namespace:
            return 0
        patch = {"metadata": {"labels": {label: webhookconfig.EXCLUDED}}}
        await self.client.patch(NAMESPACES, namespace, patch, patch_type=PatchType.MERGE)
        return 1

    def _outdated(self, trust: _Trust, *current: Any) -> bool:
        """Whether one of the ``current`` caBundles trusts a CA newer than ``trust``'s (noted in
        :attr:`superseded`): then the object is not written."""
        if trust.force or not any(trust.outdated_by(value) for value in current):
            return False
        self.superseded = True
        return True

    async def publish(self, bundle: Bundle, *, force: bool = False) -> int:
        """Write the trust of ``bundle`` where it belongs; returns the number of writes made.
        An object that trusts a newer CA is skipped (and :attr:`superseded` set) unless ``force``."""
        trust = _Trust(_b64(bundle.ca_bundle), bundle.cas, force)
        self.superseded = False
        writes = 0
        for namespace in (webhookconfig.SYSTEM_NAMESPACE, self.options.namespace):
            try:
                writes += await self._exclude(namespace)
            except ApiError as exc:
                self._warn_once(f"namespaces/{namespace}", f"cannot label it out of the webhooks: {exc}")
        narrowing = await self._narrowing()
        targets = KEEP if narrowing is None else self.targets() if narrowing else None
        write = self._managed if self.options.url is not None else self._shipped
        writes += await _reread_on_conflict(lambda: write(MUTATING, trust, targets))
        writes += await _reread_on_conflict(lambda: write(VALIDATING, trust, targets))
        writes += await _reread_on_conflict(lambda: self._conversion(trust))
        self.published_targets = targets
        return writes

    def _warn_once(self, what: str, message: str) -> None:
        if what not in self._warned:
            self._warned.add(what)
            _log.warning(message, object=what)

    # -- the loop ----------------------------------------------------------------------------

    async def sync(self) -> float:
        """One pass; returns the seconds until the next one is due."""
        bundle = self._serve(await self.certificates())
        await self.publish(bundle)
        if self.superseded:
            fresh = await self.certificates()
            if fresh.ca_bundle == bundle.ca_bundle:
                _log.warning("a webhook configuration trusts a CA the certificate Secret does not hold; replacing it")
                await self.publish(bundle, force=True)
            else:
                bundle = self._serve(fresh)
                await self.publish(bundle)
        if self.superseded:
            return RETRY_MIN
        self.published.set()
        if self.narrowing is None and self.targeted is not None and self.options.scope == "targeted":
            return VERSION_RETRY  # /version went unanswered: ask again soon, not at the next rotation check
        now = certificates.utcnow()
        due = certificates.next_check(bundle, now=now, policy=self.options.policy) - now
        return min(max(due, timedelta(seconds=RETRY_MIN)).total_seconds(), self.options.resync)

    def _serve(self, bundle: Bundle) -> Bundle:
        if self.tls.load(bundle.cert_pem, bundle.key_pem):
            _log.info("webhook serving certificate loaded", serial=f"{bundle.cert.serial_number:x}",
                      expires=bundle.cert.not_valid_after_utc.isoformat())  # fmt: skip
        self.bundle = bundle
        if self.metrics is not None:
            self.metrics.set_certificate_expiry(bundle.cert.not_valid_after_utc)
        self.ready.set()
        return bundle

    async def run(self) -> None:
        """Pass after pass until cancelled; failures are logged and retried with backoff."""
        delay = RETRY_MIN
        while True:
            started = self._asked
            self._wake.clear()  # the requests so far are this pass's
            try:
                wait = await self.sync()
                delay = RETRY_MIN
            except ApiError as exc:
                _log.warning("webhook certificates not synced; retrying", error=str(exc), retry_in=delay)
                wait, delay = delay, min(delay * 2, RETRY_MAX)
            except Exception:
                # Never let rotation die silently while the server keeps serving an ageing certificate.
                _log.exception("webhook certificates not synced; retrying", retry_in=delay)
                wait, delay = delay, min(delay * 2, RETRY_MAX)
            self.failing = delay > RETRY_MIN
            self._passed_through(started)
            if delay > RETRY_MIN:
                await asyncio.sleep(wait)  # failing: back off, whatever changed
            else:
                await self._idle(wait)

    async def _idle(self, seconds: float) -> None:
        """Sleep ``seconds``, or less once a spread's CREATE asks for a pass (:meth:`target`) or
        the namespaces that hold spreads differ from those published."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while (left := deadline - loop.time()) > 0:
            with contextlib.suppress(TimeoutError):
                # Not wait_for: on 3.11 it drops a cancel that lands as the wake comes, and the
                # loop would outlive its stop.
                async with asyncio.timeout(min(left, TARGETS_POLL)):
                    await self._wake.wait()
            if self._wake.is_set():
                return
            if self.narrowing and not isinstance(now := self.targets(), _Keep) and now != self.published_targets:
                return


class WebhookService:
    """The webhook server and its certificate loop, started and stopped together."""

    def __init__(self, webhooks: Webhooks, server: WebhookServer) -> None:
        self.webhooks = webhooks
        self.server = server
        self._task: asyncio.Task[None] | None = None

    @property
    def task(self) -> asyncio.Task[None] | None:
        """The certificate loop (for a liveness check: it should run until :meth:`stop`)."""
        return self._task

    async def start(self) -> int:
        """Start the loop, wait for the first certificate, then serve; returns the bound port."""
        self._task = asyncio.create_task(self.webhooks.run(), name="webhook-certificates")
        try:
            await self.webhooks.ready.wait()
            return await self.server.start()
        except BaseException:
            await self.stop()  # cancelled while waiting (shutdown at start-up), or the port is taken
            raise

    async def wait(self) -> None:
        """Until the certificate loop or the server's thread ends: neither should before
        :meth:`stop`, so the caller's liveness may follow this."""
        running: set[asyncio.Future[Any]] = {f for f in (self._task, self.server.ended) if f is not None}
        if running:
            await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)

    async def stop(self) -> None:
        """Stop serving and the loop (idempotent)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await self.server.stop()


class WebhookSettings(Protocol):
    """The fields of ``united run``'s Settings this module reads."""

    @property
    def controller_namespace(self) -> str: ...
    @property
    def webhook_host(self) -> str: ...
    @property
    def webhook_port(self) -> int | None: ...
    @property
    def webhook_url(self) -> str | None: ...
    @property
    def webhook_failure_policy(self) -> FailurePolicy: ...
    @property
    def webhook_client_ca(self) -> str | None: ...
    @property
    def webhook_namespaces(self) -> Scope: ...


def client_ca(path: str) -> bytes:
    """The CA PEM in ``path``, checked to hold a certificate; ValueError says what is wrong."""
    try:
        with open(path, "rb") as file:
            pem = file.read(1024 * 1024 + 1)
    except OSError as exc:
        raise ValueError(f"cannot read it: {exc.strerror or exc}") from None
    if len(pem) > 1024 * 1024:
        raise ValueError("larger than 1 MiB")
    try:
        TLS().require_client_certificates(pem)
    except (ssl.SSLError, ValueError) as exc:
        raise ValueError(f"not a PEM CA certificate ({exc})") from None
    return pem


async def serve_webhooks(
    client: KubeClient,
    settings: WebhookSettings,
    routes: Mapping[str, Route],
    *,
    metrics: Metrics | None = None,
    options: Options | None = None,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    screens: Mapping[str, Screen] | None = None,
    targeted: Callable[[], Collection[str] | None] | None = None,
) -> WebhookService:
    """Serve ``routes`` on ``settings.webhook_host:webhook_port`` with certificates kept as the module
    docstring says, once the first certificate is loaded; ``options`` overrides what ``settings`` would
    give (tests shorten the validities); ``screens`` as :class:`WebhookServer` takes them;
    ``targeted`` as :class:`Webhooks` takes it. With
    ``settings.webhook_client_ca`` the admission routes serve only clients with a certificate
    from that CA (the API server presents none to conversion webhooks: ``/convert`` stays open).
    Returns the started service; ``stop()`` it."""
    if settings.webhook_port is None:
        raise ValueError("the webhook server needs a port")
    policy = settings.webhook_failure_policy
    opts = options or Options(namespace=settings.controller_namespace, url=settings.webhook_url, failure_policy=policy,
                              scope=settings.webhook_namespaces)  # fmt: skip
    tls = TLS()
    if settings.webhook_client_ca is not None:
        tls.require_client_certificates(client_ca(settings.webhook_client_ca))
    webhooks = Webhooks(client, opts, tls, metrics=metrics, targeted=targeted)
    routes = {**routes, SPREADS_PATH: webhooks.admit_spread}
    screens = {**(screens or {}), SPREADS_PATH: webhooks.untargeted}
    mutate = routes.get(MUTATE_PATH)
    if mutate is not None and not isinstance(mutate, Computed) and MUTATE_PATH in screens:
        routes[MUTATE_PATH], screens[MUTATE_PATH] = webhooks.guard_route(mutate, screens[MUTATE_PATH])
    server = WebhookServer(host=settings.webhook_host, port=settings.webhook_port, tls=tls,
                           routes=routes, metrics=metrics, screens=screens,
                           request_timeout=request_timeout, unauthenticated=[CONVERT_PATH])  # fmt: skip
    service = WebhookService(webhooks, server)
    await service.start()
    return service


__all__ = [
    "COMPAT_CRD",
    "KEEP",
    "MUTATING",
    "VALIDATING",
    "Options",
    "Scope",
    "WebhookService",
    "WebhookSettings",
    "Webhooks",
    "client_ca",
    "serve_webhooks",
]
