"""Leader election on a ``coordination.k8s.io/v1`` Lease, after client-go's ``leaderelection``.

Why our own elector rather than kubernetes-asyncio's: that one reads the wall clock
for scheduling (untestable on a virtual loop), writes naive local times with a "Z",
never counts ``leaseTransitions`` and cannot release the lease on shutdown. The
algorithm here is client-go's (ideas, not code):

* **Acquire**: GET the Lease; create it if missing; take it over if its holder is
  empty or its record has not changed for ``leaseDurationSeconds`` *as observed
  locally*. Expiry is judged by when this process last saw the record change, on
  its own monotonic loop clock, never by comparing the ``renewTime`` written by
  another node's wall clock — so clock skew between nodes cannot cause two leaders.
  A take-over increments ``leaseTransitions`` and resets ``acquireTime``.
* **Renew** every ``retry_period`` with a PUT carrying the last ``resourceVersion``
  (optimistic concurrency): a ``Conflict`` means someone else wrote the Lease and
  the attempt failed. The leader first tries its cached copy (client-go's fast
  path, one request), then falls back to GET + PUT. If no renewal succeeds within
  ``renew_deadline`` of the start of the last successful one — or the Lease shows
  another live holder — leadership is **lost**: :attr:`LeaderElector.lost` is set, ``on_stopped_leading`` is called
  and :meth:`LeaderElector.run` returns. The caller must then stop acting as leader
  and should **exit the process** (client-go practice): in-flight work may already
  race a new leader, and a fresh process re-joins cleanly as a standby.
* **Fence**: every write but the elector's own Lease writes passes :meth:`LeaderElector.fence`
  (the client's ``fence`` hook), which refuses it unless the Lease is held *by this
  process's monotonic clock*: until the start of the last successful acquire/renew plus
  ``renew_deadline``. A standby takes over no earlier than ``lease_duration`` after it saw
  that write, so the margin between the two tolerates clocks running up to
  ``lease_duration / renew_deadline`` (1.5) times apart — client-go's reasoning about clock
  skew rate. The check is synchronous, right before the request is sent: a process frozen
  (SIGSTOP, a long GC or VM pause) and resumed with stale state refuses its next write
  even before the election task has run and noticed. Renewal gives up at the same instant.
* **Release** on graceful shutdown writes an empty holder and
  ``leaseDurationSeconds: 1`` (client-go's ``ReleaseOnCancel``), so a standby takes
  over at its next retry instead of waiting out a whole lease.

``renew_deadline < lease_duration`` is what makes this safe: the leader gives up
before any standby may consider the lease expired. Retries are jittered by up to
20 % (client-go uses up to 120 % for acquisition; the smaller factor keeps a
release-to-takeover under ``1.2 * retry_period`` and is enough to spread a handful
of replicas).

Scheduling uses the loop's clock (``loop.time()``, ``asyncio.sleep``); the wall
clock is read only for the Lease's timestamps, through an injectable ``clock``.
Timestamps are RFC 3339 MicroTime in UTC: ``2006-01-02T15:04:05.000000Z``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog

from united.kube.client import JSON, LEASES, Resource
from united.kube.errors import AlreadyExists, ApiError, Conflict, Fenced, NotFound

__all__ = [
    "MICROTIME_FORMAT",
    "LeaderElector",
    "LeaseClient",
    "format_microtime",
    "parse_microtime",
    "timing_problems",
    "utcnow",
]

log = structlog.get_logger(__name__)

MICROTIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
_JITTER = 0.2


def utcnow() -> datetime:
    """The default wall clock: timezone-aware UTC now."""
    return datetime.now(UTC)


def format_microtime(moment: datetime) -> str:
    """``moment`` as a Kubernetes MicroTime: UTC, six fractional digits, ``Z``.

    A naive datetime is rejected: guessing its zone is the bug this avoids.
    """
    if moment.tzinfo is None:
        raise ValueError("a naive datetime has no time zone; pass an aware one")
    return moment.astimezone(UTC).strftime(MICROTIME_FORMAT)


def parse_microtime(text: str) -> datetime:
    """Parse an RFC 3339 time as the API server writes it (with or without a
    fraction, ``Z`` or an offset) into an aware UTC datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def timing_problems(*, lease_duration: float, renew_deadline: float, retry_period: float) -> dict[str, str]:
    """What makes these timings unsafe, by parameter name (empty when they are consistent):
    ``lease_duration >= 1`` and ``lease_duration > renew_deadline > 1.2 * retry_period > 0``."""
    problems: dict[str, str] = {}
    if lease_duration < 1:
        problems["lease_duration"] = f"Invalid value: {lease_duration:g}: must be at least 1"
    elif not renew_deadline < lease_duration:
        problems["renew_deadline"] = (
            f"Invalid value: {renew_deadline:g}: must be less than the lease duration ({lease_duration:g})"
        )
    if not retry_period > 0:
        problems["retry_period"] = f"Invalid value: {retry_period:g}: must be greater than 0"
    elif not (1 + _JITTER) * retry_period < renew_deadline:
        problems["retry_period"] = (
            f"Invalid value: {retry_period:g}: must be less than the renew deadline / {1 + _JITTER:g}"
            f" ({renew_deadline / (1 + _JITTER):g})"
        )
    return problems


class LeaseClient(Protocol):
    """The three calls the elector makes; :class:`~united.kube.client.KubeClient` has them."""

    async def get(self, resource: Resource, name: str, *, namespace: str | None = None) -> JSON: ...

    async def create(self, resource: Resource, body: JSON, *, namespace: str | None = None) -> JSON: ...

    async def replace(self, resource: Resource, body: JSON, *, namespace: str | None = None) -> JSON: ...


class LeaderElector:
    """Competes for the Lease ``namespace/name`` as ``identity``; see the module docstring.

    Typical use::

        elector = LeaderElector(client, name="united", namespace=ns, identity=pod_name)
        client.fence = elector.fence    # no write unless the Lease is surely ours
        election = asyncio.create_task(elector.run())
        await elector.elected.wait()
        ...  # start the leader-only work
        await election           # returns only when leadership is lost
        sys.exit(1)

    Cancelling :meth:`run` while leading releases the Lease (unless
    ``release_on_cancel=False``). ``on_started_leading``/``on_stopped_leading`` are
    plain callables (e.g. to set a ``leader_election_master_status`` gauge); an
    exception in one is logged and ignored.
    """

    def __init__(
        self,
        client: LeaseClient,
        *,
        name: str,
        namespace: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        release_on_cancel: bool = True,
        on_started_leading: Callable[[], object] | None = None,
        on_stopped_leading: Callable[[], object] | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        if not identity:
            raise ValueError("identity must not be empty")
        problems = timing_problems(
            lease_duration=lease_duration, renew_deadline=renew_deadline, retry_period=retry_period
        )
        if problems:
            raise ValueError("; ".join(f"{name}: {message}" for name, message in problems.items()))
        self.client = client
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_cancel = release_on_cancel
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.clock = clock
        self.elected = asyncio.Event()
        """Set while this elector leads."""
        self.lost = asyncio.Event()
        """Set when leadership was lost (renewal failed); never cleared."""
        self._leading = False
        self._stopped = False
        self._lease: JSON | None = None  # our last successful write, for the renew fast path
        self._observed_spec: dict[str, Any] | None = None
        self._observed_at = 0.0  # loop time when _observed_spec last changed
        self._valid_until = 0.0  # loop time: start of the last successful write + renew_deadline
        self._lease_paths = {LEASES.path(namespace=namespace), LEASES.path(namespace=namespace, name=name)}
        self._lock = asyncio.Lock()
        self._log = log.bind(lease=f"{namespace}/{name}", identity=identity)

    # -- state ----------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        """Whether this elector holds the Lease (as of its last successful write)."""
        return self._leading

    def holds_lease(self) -> bool:
        """Whether this process surely holds the Lease now, by its own monotonic clock
        (see *Fence* in the module docstring); stricter than :attr:`is_leader`, which
        lags until the election task runs."""
        return self._leading and asyncio.get_running_loop().time() < self._valid_until

    def fence(self, method: str, path: str) -> None:
        """A :attr:`~united.kube.client.KubeClient.fence`: raises :class:`Fenced` for a
        write (other than to our own Lease) unless :meth:`holds_lease`."""
        if path not in self._lease_paths and not self.holds_lease():
            raise Fenced(f"{method} {path} refused: this process does not hold the Lease {self.namespace}/{self.name}")

    @property
    def observed_holder(self) -> str | None:
        """The holder in the last Lease record seen (``None`` if empty or unseen)."""
        if self._observed_spec is None:
            return None
        return self._observed_spec.get("holderIdentity") or None

    # -- the loop -------------------------------------------------------------------

    async def run(self) -> None:
        """Acquire the Lease (retrying forever), then renew it until leadership is
        lost or :meth:`release` is called; then return. See the class docstring for
        cancellation."""
        try:
            if not await self._acquire():
                return
            await self._renew()
        except asyncio.CancelledError:
            if self._leading and self.release_on_cancel:
                try:
                    async with asyncio.timeout(self.renew_deadline):
                        await self.release()
                except (TimeoutError, ApiError) as exc:
                    self._log.warning("releasing the lease on shutdown failed", error=repr(exc))
            raise

    async def _acquire(self) -> bool:
        while not self._stopped:
            if await self._attempt_within(self.renew_deadline):
                self._become_leader()
                return True
            await self._sleep_jittered()
        return False

    async def _renew(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._sleep_jittered()
            if self._stopped or not self._leading:
                return
            while True:
                if await self._attempt_within(self._valid_until - loop.time()):
                    break
                if self._stopped or not self._leading:
                    return
                if self._other_holder_alive(loop.time()) or loop.time() + self.retry_period >= self._valid_until:
                    self._lose()
                    return
                await asyncio.sleep(self.retry_period)

    async def _sleep_jittered(self) -> None:
        await asyncio.sleep(self.retry_period * (1.0 + random.uniform(0.0, _JITTER)))

    async def _attempt_within(self, seconds: float) -> bool:
        if seconds <= 0:
            return False
        try:
            async with asyncio.timeout(seconds):
                return await self.try_acquire_or_renew()
        except TimeoutError:
            self._log.warning("lease request timed out", seconds=seconds)
            return False

    # -- one attempt ----------------------------------------------------------------

    async def try_acquire_or_renew(self) -> bool:
        """One attempt to create, take over or renew the Lease; ``True`` on success.

        API failures are logged and count as a failed attempt. Does not change
        :attr:`is_leader` on its own; :meth:`run` does.
        """
        async with self._lock:
            if self._stopped:
                return False
            started = asyncio.get_running_loop().time()
            try:
                won = await self._try()
            except ApiError as exc:
                self._log.warning("lease attempt failed", error=str(exc))
                return False
            if won:
                self._valid_until = started + self.renew_deadline
            return won

    async def _give_up(self, lease: JSON, spec: dict[str, Any]) -> JSON:
        """Write the released ``spec``; on a conflict, once more over the Lease as it is now if
        it is still ours: a renewal cancelled in flight (the shutdown that releases cancels it)
        may have landed after all, and the copy kept here is one version behind."""
        try:
            return await self._replace(lease, spec)
        except Conflict:
            current = await self.client.get(LEASES, self.name, namespace=self.namespace)
            if (current.get("spec") or {}).get("holderIdentity") != self.identity:
                raise
            released = ("holderIdentity", "leaseDurationSeconds", "acquireTime", "renewTime")
            return await self._replace(current, {**(current.get("spec") or {}), **{k: spec[k] for k in released}})

    async def _try(self) -> bool:
        loop = asyncio.get_running_loop()
        now = format_microtime(self.clock())
        if self._leading and self._lease is not None:
            spec = dict(self._lease.get("spec") or {})
            spec["renewTime"] = now
            try:
                self._store(await self._replace(self._lease, spec), loop.time())
                return True
            except Conflict:
                self._log.info("lease changed since our last renewal; re-reading it")
        try:
            lease = await self.client.get(LEASES, self.name, namespace=self.namespace)
        except NotFound:
            return await self._create(now, loop.time())
        self._observe(lease.get("spec") or {}, loop.time())
        spec = dict(lease.get("spec") or {})
        holder = spec.get("holderIdentity") or ""
        if holder and holder != self.identity and self._other_holder_alive(loop.time()):
            return False
        if holder != self.identity:
            spec["acquireTime"] = now
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        else:
            spec.setdefault("acquireTime", now)
        spec["holderIdentity"] = self.identity
        spec["leaseDurationSeconds"] = round(self.lease_duration)
        spec["renewTime"] = now
        try:
            self._store(await self._replace(lease, spec), loop.time())
        except Conflict:
            self._log.debug("lost the race for the lease")
            return False
        return True

    async def _create(self, now: str, loop_now: float) -> bool:
        body: JSON = {
            "apiVersion": LEASES.api_version,
            "kind": LEASES.kind,
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": round(self.lease_duration),
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            },
        }
        try:
            created = await self.client.create(LEASES, body, namespace=self.namespace)
        except AlreadyExists:
            return False
        self._store(created, loop_now)
        return True

    async def _replace(self, lease: JSON, spec: dict[str, Any]) -> JSON:
        body = {**lease, "spec": spec}
        return await self.client.replace(LEASES, body, namespace=self.namespace)

    def _store(self, lease: JSON, loop_now: float) -> None:
        self._lease = lease
        self._observe(lease.get("spec") or {}, loop_now)

    def _observe(self, spec: dict[str, Any], loop_now: float) -> None:
        if spec != self._observed_spec:
            self._observed_spec = dict(spec)
            self._observed_at = loop_now

    def _other_holder_alive(self, loop_now: float) -> bool:
        """Whether the last record seen names another holder whose lease has not run
        out since we saw it change."""
        spec = self._observed_spec or {}
        holder = spec.get("holderIdentity") or ""
        if not holder or holder == self.identity:
            return False
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        return loop_now < self._observed_at + duration

    # -- transitions ------------------------------------------------------------------

    def _become_leader(self) -> None:
        self._leading = True
        self.elected.set()
        self._log.info("became leader", transitions=(self._observed_spec or {}).get("leaseTransitions"))
        self._call(self.on_started_leading)

    def _lose(self) -> None:
        self._leading = False
        self.elected.clear()
        self.lost.set()
        self._log.error(
            "lost leadership: renewal failed within the renew deadline",
            renew_deadline=self.renew_deadline,
            holder=self.observed_holder,
        )
        self._call(self.on_stopped_leading)

    def _call(self, callback: Callable[[], object] | None) -> None:
        if callback is None:
            return
        try:
            callback()
        except Exception:
            self._log.exception("leader election callback failed")

    async def release(self) -> bool:
        """Give the Lease up (empty holder, 1 s duration) and stop :meth:`run`.

        Returns whether a held Lease was released; ``False`` if not leading or the
        write failed (then the Lease simply expires). Call it on graceful shutdown.
        """
        async with self._lock:
            self._stopped = True
            if not self._leading or self._lease is None:
                return False
            spec = dict(self._lease.get("spec") or {})
            now = format_microtime(self.clock())
            spec.update(holderIdentity=None, leaseDurationSeconds=1, acquireTime=now, renewTime=now)
            self._leading = False
            self.elected.clear()
            try:
                released = await self._give_up(self._lease, spec)
            except ApiError as exc:
                self._log.warning("releasing the lease failed; it will expire instead", error=str(exc))
                self._call(self.on_stopped_leading)
                return False
            self._store(released, asyncio.get_running_loop().time())
            self._log.info("released the lease")
            self._call(self.on_stopped_leading)
            return True
