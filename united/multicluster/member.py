"""Member clusters as the controller holds them: a client made from the Secret, a probe loop,
and the health it keeps (``health.py`` decides what a probe means).

* **Probe**: ``GET /version`` every ``probe.periodSeconds`` with ``probe.timeoutSeconds``; the
  period is fixed, never faster on failure (no tight loop against a dead member), but
  :meth:`Member.suspect` (a failed member request, a changed Secret) probes at once, at most
  every :data:`SUSPECT_EVERY` seconds.
* **Credentials**: the bytes of the Secret's key make a client
  (:meth:`~united.kube.client.KubeClient.from_kubeconfig_data`, self-contained only); new bytes
  make a new client, swapped into the member's informers (:meth:`Informer.restart`), the old one
  closed after :data:`CLOSE_GRACE` seconds for requests in flight. A 401 re-reads the Secret.
  Nothing restarts.
* **Only the leader writes, in members too**: a member client's fence is the host client's fence,
  read at each request (the host's elector sets it once elected), so a member write is refused
  exactly when a host write would be.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import structlog

from united.api import decode
from united.kube import ApiError, KubeClient, Resource
from united.kube.client import PODS
from united.kube.errors import ConfigError
from united.multicluster.credentials import SecretWatch, Spawn
from united.multicluster.health import Failure, Health, advance, classify
from united.multicluster.identity import RemoteKeys
from united.multicluster.model import ClusterSpec
from united.runtime.controller import Stores
from united.runtime.failures import FailureLog
from united.runtime.informer import Informer

log = structlog.get_logger(__name__)
SUSPECT_EVERY = 2.0
"""Seconds between two probes that :meth:`Member.suspect` asks for, at least."""
CLOSE_GRACE = 1.0
"""Seconds an old client lives on after a credential swap, for requests in flight."""
TEARDOWN_TIMEOUT = 10.0
"""Seconds a removed member's tasks get to stop before it is given up."""
Observer = Callable[[str, str, int, float], None]
INFORMER_BACKOFF_MAX = 30.0
"""Seconds between a member informer's attempts at most, while the member is down."""
MAX_VERSION_ANSWER = 64 * 2**10
"""Bytes of a ``/version`` answer read at most (a real one is ~300)."""
MAX_VERSION = 64
"""Characters of a gitVersion kept (it goes into the ``Cluster``'s status)."""


@dataclass(frozen=True)
class Watching:
    """What the UnitedDeployment controller wants watched in every member: this host's children
    and pods (``remote.selector()``), in ``namespaces`` (``(None,)``: all), and who to tell
    (``on_child(cluster, obj)``, ``on_pod(cluster, obj)``)."""

    remote: RemoteKeys
    namespaces: tuple[str | None, ...]
    on_child: Callable[[str, dict[str, Any]], None]
    on_pod: Callable[[str, dict[str, Any]], None]
    resource_of: Callable[[str], Resource]
    """The API resource of a child kind, by template variant (the owning kind knows its children)."""


class _Failures(FailureLog):
    """A member's list/watch failures: logged with ``cluster=``, and a failure makes the member
    probe at once (a stopped API server drops every watch: ``Ready=False`` follows within the
    probe timeout, not a whole period)."""

    def __init__(self, member: Member) -> None:
        super().__init__(logger=log.bind(cluster=member.name))
        self._member = member

    def failed(self, *, resource: str, error: BaseException, attempt: int, **fields: Any) -> None:
        super().failed(resource=resource, error=error, attempt=attempt, **fields)
        self._member.suspect()

    def recovered(self, resource: str) -> None:
        super().recovered(resource)
        self._member.caches_changed()


class Member:
    """One member cluster: :attr:`health`, :attr:`client` (None until the Secret gave a usable
    kubeconfig), and the probe loop (:meth:`run`)."""

    def __init__(
        self,
        spec: ClusterSpec,
        *,
        host: KubeClient,
        secrets: SecretWatch,
        health: Health | None,
        changed: Callable[[Member, bool], None],
        observer: Observer | None = None,
        spawn: Spawn,
    ) -> None:
        self.name = spec.name
        self.spec = spec
        self.health = health or advance(None, *classify(None, None), time.time())
        self.client: KubeClient | None = None
        self.informers: list[Informer] = []
        """The member's informers; a credential swap restarts them on the new client."""
        self.watching: Watching | None = None
        """Set by :meth:`Members.watch`: what :meth:`ensure` starts informers for."""
        self.children: dict[str, list[Informer]] = {}
        """This host's remote children by template variant, started on demand (:meth:`ensure`)."""
        self.pods: list[Informer] = []
        self._informer_tasks: list[asyncio.Task[Any]] = []
        self._failures = _Failures(self)
        self._host = host
        self._secrets = secrets
        self._changed = changed
        self._observer = observer
        self._spawn = spawn
        self._kubeconfig: bytes | None = None
        self._unusable: Failure | None = None
        """Why :attr:`_kubeconfig` could not make a client (until the Secret changes)."""
        self._wake = asyncio.Event()
        self._probed = -SUSPECT_EVERY
        self.probes = 0

    def ensure(self, variant: str) -> None:
        """Start the informers of ``variant``'s kind (and of pods) in this member, if absent:
        only kinds some UnitedDeployment places here are watched. Needs a client."""
        watching = self.watching
        if watching is None or self.client is None or variant in self.children:
            return
        if not self.pods:
            self.pods = self._start(PODS, watching, watching.on_pod, index_label=watching.remote.keys.subset_name)
        self.children[variant] = self._start(watching.resource_of(variant), watching, watching.on_child)

    def _start(
        self, resource: Any, watching: Watching, handler: Callable[[str, dict[str, Any]], None], **options: Any
    ) -> list[Informer]:
        assert self.client is not None
        name = self.name
        made = []
        for namespace in watching.namespaces:
            informer = Informer(
                self.client,
                resource,
                namespace=namespace,
                label_selector=watching.remote.selector(),
                owner=watching.remote.owner_of,
                backoff_max=INFORMER_BACKOFF_MAX,
                failures=self._failures,
                handlers=[lambda kind, obj, old: handler(name, obj)],
                **options,
            )
            self.informers.append(informer)
            self._informer_tasks += [self._spawn(informer.run()), self._spawn(self._when_synced(informer))]
            made.append(informer)
        return made

    async def _when_synced(self, informer: Informer) -> None:
        await informer.has_synced.wait()
        self.caches_changed()

    def caches_changed(self) -> None:
        """An informer synced or recovered: the member may have become usable."""
        self._changed(self, True)

    def synced(self, variant: str) -> bool:
        """``variant``'s children and the pods have been listed at least once in this process:
        the stores are then the last-known state, even while the member is down."""
        informers = [*self.children.get(variant, ()), *self.pods]
        return variant in self.children and all(i.has_synced.is_set() for i in informers)

    def usable(self, variant: str) -> bool:
        """The reconciler may read and write ``variant``'s children here: the last probe answered,
        and the kind's and the pods' informers have synced and are not failing (their watches are
        up again after an outage)."""
        informers = [*self.children.get(variant, ()), *self.pods]
        return (
            self.health.ready
            and self.client is not None
            and self.synced(variant)
            and not any(i.last_error for i in informers)
        )

    def stores(self, variant: str) -> tuple[Stores, Stores]:
        """The children of ``variant`` and the pods, as this member's informers hold them."""
        return Stores(self.children.get(variant, ())), Stores(self.pods)

    def suspect(self) -> None:
        """Something failed against this member (or its Secret changed): probe now, not at the
        end of the period (at most every :data:`SUSPECT_EVERY` seconds)."""
        self._wake.set()

    def update(self, spec: ClusterSpec) -> None:
        """The ``Cluster`` changed: its probe settings or Secret apply from the next probe on
        (a change of ``allowProxy`` makes a new client from the same Secret)."""
        if spec.allow_proxy != self.spec.allow_proxy:
            self._kubeconfig = None
        self.spec = spec
        self._wake.set()

    async def run(self) -> None:
        """Probe until cancelled."""
        loop = asyncio.get_running_loop()
        while True:
            self._wake.clear()
            self._probed = loop.time()
            await self._supervised()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.spec.probe.period_seconds):
                    await self._wake.wait()
            await asyncio.sleep(max(0.0, self._probed + SUSPECT_EVERY - loop.time()))

    async def _supervised(self) -> None:
        """One probe that cannot end the loop: whatever a member answers, an unexpected error is
        logged (by type: its words may quote the answer) and recorded as the member's health,
        and the next probe comes at the usual time — a member whose probe raised must not keep
        its last health for ever."""
        try:
            await self.probe()
        except Exception as exc:
            log.warning("member probe failed unexpectedly", cluster=self.name, error_type=type(exc).__name__)
            self._record(Failure(message=f"the probe failed ({type(exc).__name__})", request="get /version"), None)

    async def probe(self) -> None:
        """One probe: make or swap the client from the Secret, ``GET /version``, update
        :attr:`health`, tell the registry (``flipped``: the Ready status or reason changed)."""
        self.probes += 1
        ref = self.spec.secret_ref
        kubeconfig = self._secrets.kubeconfig(ref)
        failure: Failure | None = None
        version: str | None = None
        if kubeconfig is None:
            return  # the Secret's first LIST is under way: nothing to say yet
        if isinstance(kubeconfig, Failure):
            failure = kubeconfig
            await self._drop_client()
        else:
            if kubeconfig != self._kubeconfig:
                self._unusable = await self.connect(kubeconfig)
            failure = self._unusable
        if failure is None and self.client is not None:
            failure, version = await self._version(self.client)
            failure = failure or self._refused()
            if failure is not None and failure.status == 401:
                await self._secrets.reread(ref)
        self._record(failure, version)

    def _refused(self) -> Failure | None:
        """A member informer's LIST/WATCH refused (401, or 403: the member's role lacks a rule
        the controller needs) makes the member ``Unauthorized``/``Forbidden`` though ``/version``
        answers (every authenticated user may read it): the member cannot be used as it is."""
        for informer in self.informers:
            if informer.last_status in (401, 403):
                return Failure(status=informer.last_status, message=informer.last_error)
        return None

    async def connect(self, kubeconfig: bytes) -> Failure | None:
        """A new client from ``kubeconfig``, swapped in for the old one (closed after a grace)."""
        ref = self.spec.secret_ref
        try:
            client = await KubeClient.from_kubeconfig_data(
                kubeconfig, where=f"secret {ref} key {ref.key}", allow_proxy=self.spec.allow_proxy
            )
        except ConfigError as exc:
            await self._drop_client()
            self._kubeconfig = kubeconfig
            return Failure(message=str(exc), credentials=True)
        client.fence = self._fence
        client.observer = self._observer
        old, self.client, self._kubeconfig = self.client, client, kubeconfig
        for informer in self.informers:
            informer.restart(client)
        self.caches_changed()  # a client at last (or a new one): informers may start (warm standby)
        if old is not None:
            log.info("member credentials changed; client swapped", cluster=self.name)
            self._spawn(_close_later(old))
        return None

    def _fence(self, method: str, path: str) -> None:
        fence = self._host.fence
        if fence is not None:
            fence(method, path)

    async def _version(self, client: KubeClient) -> tuple[Failure | None, str | None]:
        timeout = self.spec.probe.timeout_seconds
        try:
            async with asyncio.timeout(timeout):
                text = await client.get_path("/version", limit=MAX_VERSION_ANSWER)
        except TimeoutError:
            return Failure(message=f"cannot reach {client.host}: no answer in {timeout}s", request="get /version"), None
        except ApiError as exc:
            return Failure(status=exc.status, message=exc.message, request="get /version"), None
        except Exception as exc:  # anything else must not end the probe loop; its words may quote data
            log.warning("member probe failed unexpectedly", cluster=self.name, error_type=type(exc).__name__)
            return Failure(message=f"the probe failed ({type(exc).__name__})", request="get /version"), None
        try:
            answer = decode.document(text)  # depth-checked: a deeply nested answer is a stub
        except ValueError:
            answer = None
        version = answer.get("gitVersion") if isinstance(answer, dict) else None
        if not isinstance(version, str) or not version or len(version) > MAX_VERSION:
            return Failure(status=200, message="not a Kubernetes /version answer", request="get /version"), None
        return None, version

    def _record(self, failure: Failure | None, version: str | None) -> None:
        reason, message = classify(failure, version)
        old = self.health
        self.health = advance(old, reason, message, time.time(), version=version)
        flipped = (old.status, old.reason) != (self.health.status, self.health.reason)
        if flipped:
            log.info("member cluster health", cluster=self.name, reason=reason, message=message)
            if self.health.ready and self.client is not None:
                for informer in self.informers:
                    if informer.last_error:
                        informer.restart(self.client)  # back: no waiting out a 30 s backoff
        self._changed(self, flipped)

    async def _drop_client(self) -> None:
        client, self.client, self._kubeconfig = self.client, None, None
        if client is not None:
            await client.close()

    async def close(self) -> None:
        for task in self._informer_tasks:
            task.cancel()
        await asyncio.gather(*self._informer_tasks, return_exceptions=True)
        self._informer_tasks.clear()
        await self._drop_client()


async def _teardown(member: Member, task: asyncio.Task[Any]) -> None:
    """Wait (bounded) for a removed member's probe loop and informers to end, then close its
    client; a task that ignores its cancellation is logged and left behind."""
    try:
        async with asyncio.timeout(TEARDOWN_TIMEOUT):
            await asyncio.gather(task, return_exceptions=True)
            await member.close()
    except TimeoutError:
        log.warning("removed member did not stop in time", cluster=member.name, seconds=TEARDOWN_TIMEOUT)


async def _close_later(client: KubeClient) -> None:
    await asyncio.sleep(CLOSE_GRACE)
    await client.close()


class Members:
    """The member clusters by ``Cluster`` name. :meth:`subscribe` callbacks get the name when a
    member's Ready status or reason flips; ``on_probe`` gets it after every probe (the
    ``ClusterController`` decides whether the status needs a write)."""

    def __init__(
        self,
        host: KubeClient,
        *,
        secrets: SecretWatch,
        spawn: Spawn,
        observer: Callable[[str], Observer] | None = None,
    ) -> None:
        self._host = host
        self.secrets = secrets
        self._spawn = spawn
        self._observer = observer
        self._members: dict[str, tuple[Member, asyncio.Task[Any]]] = {}
        self._subscribers: list[Callable[[str], None]] = []
        self._watching: Watching | None = None
        self._closing: set[asyncio.Task[Any]] = set()
        self.on_probe: Callable[[str], None] = lambda name: None
        secrets.on_change(self._secret_changed)

    def get(self, name: str) -> Member | None:
        entry = self._members.get(name)
        return entry[0] if entry else None

    def names(self) -> list[str]:
        return sorted(self._members)

    def watches(self) -> Iterator[tuple[str, str]]:
        """``(cluster, resource)`` of each informer kept in a member: one per namespace served
        (all: one) for pods and for each child kind some UnitedDeployment places there."""
        for member, _ in list(self._members.values()):
            for informer in list(member.informers):
                yield member.name, informer.resource.plural

    def subscribe(self, callback: Callable[[str], None]) -> None:
        self._subscribers.append(callback)

    def watch(self, watching: Watching) -> None:
        """What every member, present and future, watches for the UnitedDeployment controller."""
        self._watching = watching
        for member, _ in self._members.values():
            member.watching = watching

    @property
    def remote(self) -> RemoteKeys | None:
        return self._watching.remote if self._watching is not None else None

    def apply(self, spec: ClusterSpec, *, status: dict[str, Any] | None) -> Member:
        """Start the member ``spec`` names (its health seeded from the stored ``status``, so
        "since" outlives restarts), or update the running one."""
        self.secrets.watch(spec.secret_ref)
        entry = self._members.get(spec.name)
        if entry is not None:
            member = entry[0]
            if member.spec != spec:
                member.update(spec)
                self._forget_secrets()
            return member
        member = Member(
            spec,
            host=self._host,
            secrets=self.secrets,
            health=Health.seed(status),
            changed=self._changed,
            observer=self._observer(spec.name) if self._observer is not None else None,
            spawn=self._spawn,
        )
        member.watching = self._watching
        self._members[spec.name] = (member, self._spawn(member.run()))
        return member

    def remove(self, name: str) -> None:
        """The ``Cluster`` is gone: stop probing and watching now, close its client in the
        background. Called from the ``Cluster`` informer's handler, it must not wait for the
        teardown: a member stuck in a request would hold up every later ``Cluster`` event,
        including the re-creation of this one."""
        entry = self._members.pop(name, None)
        if entry is None:
            return
        member, task = entry
        task.cancel()
        teardown = self._spawn(_teardown(member, task))
        self._closing.add(teardown)
        teardown.add_done_callback(self._closing.discard)
        self._forget_secrets()
        for callback in self._subscribers:
            callback(name)

    async def close(self) -> None:
        for name in list(self._members):
            self.remove(name)
        if self._closing:
            await asyncio.wait(self._closing, timeout=TEARDOWN_TIMEOUT * 2)
        self.secrets.stop()

    def _forget_secrets(self) -> None:
        self.secrets.forget({(m.spec.secret_ref.namespace, m.spec.secret_ref.name) for m, _ in self._members.values()})

    def _secret_changed(self, namespace: str, name: str) -> None:
        for member, _ in self._members.values():
            ref = member.spec.secret_ref
            if (ref.namespace, ref.name) == (namespace, name):
                member.suspect()

    def _changed(self, member: Member, flipped: bool) -> None:
        self.on_probe(member.name)
        if flipped:
            for callback in self._subscribers:
                callback(member.name)


__all__ = ["CLOSE_GRACE", "SUSPECT_EVERY", "Member", "Members", "Watching"]
