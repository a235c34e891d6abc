"""An informer: LIST then WATCH one resource into a local store, and tell handlers.

This is client-go's Reflector + Indexer + shared-informer handler fan-out, cut down
to what a level-triggered controller needs. The design choices, and where they come
from (ideas only, no code):

* **Watch from the LIST's resourceVersion**, never from the newest item seen: items
  come in no particular order, so an item's RV can replay history (kopf's
  ``continuous_watch`` and client-go's reflector do the same).
* **Bookmarks** are requested and their RV recorded like any event's, so a quiet
  watch still moves its resume point forward and a reconnect rarely hits 410.
* **Server-side ``timeoutSeconds`` with jitter** (client-go: ``minWatchTimeout`` x
  [1, 2)), so many informers do not reconnect in lockstep; a normal end resumes the
  watch from the last RV without re-listing.
* **Inactivity timeout** (kopf's 70 s: bookmarks come about every minute): a
  half-open TCP connection that delivers nothing is dropped and the watch resumed.
* **410 Gone**, as an HTTP status on connect or an ``ERROR`` event in the stream
  (the client raises :class:`~united.kube.errors.Gone` for both), means the resume
  point fell out of the server's window: re-LIST, replace the store and synthesise
  ``DELETED`` for what vanished meanwhile (client-go's ``Replace``/
  ``DeletedFinalStateUnknown``).
* **A failed watch resumes from the last resourceVersion** after a backoff: an API error
  on connect (5xx, 429, 403 while a restarted API server's RBAC warms up) or a broken
  stream leaves the store exactly as the last event applied made it, and the watch
  replays everything after that point, so re-listing every object (the costliest request
  an informer makes, for the API server too) would buy nothing. After
  :data:`RESUME_ATTEMPTS` failures in a row the resume point is given up for a re-list
  (an API server restored from a backup may answer a resourceVersion from its future with
  a timeout, not a 410).
* **Any other failure** (a bug: the store may be half-updated) backs off exponentially
  (with jitter) and re-lists; a handler's exception is logged and never stops the informer
  (kopf's and client-go's rule).

The store keeps **raw dicts** (no models) keyed ``namespace/name`` (``name`` for
cluster-scoped kinds, like client-go's ``MetaNamespaceKeyFunc``). ``managedFields``
and kubectl's last-applied annotation are dropped on the way in: together they are
often most of an object's bytes and the controller reads neither. Three secondary
indexes keep reads proportional to what is asked for, not to the cache: a controller
owner's UID and a namespace to its children (how a child's event finds its parent and how a reconcile
lists a parent's children without an API call), a namespace to its objects, and a
namespace to its **orphans** (no controller owner: the candidates for adoption).

**Memory** (``compact``): every stored object is rebuilt once on the way in with its
low-cardinality strings shared, so the thousands of copies of ``"apiVersion"``,
``"IfNotPresent"``, a namespace, an image or a label value that JSON decoding makes (one
per watch event) become one each. Shared are keys, and values of at most 128 characters (label
values, names, images with a digest) except those of fields unique to one object or one
write (``uid``, ``resourceVersion``, timestamps, ``message``...): those would only fill the
pool. The pool is a plain dict cleared when it passes 65,536 strings, not ``sys.intern``:
CPython 3.12 never frees interned strings, so interning every resourceVersion and timestamp
leaked about 0.9 KB per watch event there (92 MB after 100,000 events); now what is left
after the same churn is the allocator's, as on 3.11 and 3.13. Maps and lists made only of
such strings, numbers and other such maps and lists are shared the same way (a second pool,
keyed by content, cleared past 32,768): a child's pod template, container specs, resources,
a pod's tolerations and affinity are one object for every child or pod that has them — in
Python a small map costs about 200 bytes before its contents, so this, not the strings, is
most of what a cached Deployment weighs (5.3 KB to 1.8 KB with one template for all, 2.6 KB with one per three, measured
in-process by ``python -m bench.cache``). Pods are projected first to what the
controllers read (:mod:`~united.runtime.projection`). The price is about 10 µs more per
compacted Deployment (about 30 µs in all), paid once per watch event.

**One copy per object** (:meth:`Informer.follow`): an informer with a label selector can be
served from an unselected informer of the same resource and namespace, holding the same
objects (its store costs only its index entries), when some other controller needs every
object anyway; the manager does this (``united.controller.manager``), and leaves a selected
informer alone otherwise, so a UnitedDeployment-only install still caches only its labelled
children and pods.

**Undecodable objects** (nested deeper than ``united.api.decode.MAX_DEPTH``: pod
templates are schemaless) are not cached: the client leaves them out of a LIST and marks
them in a watch event, and the informer logs each one with its key, uid and why, keeps it in
:attr:`Informer.undecodable` (until it is deleted or becomes readable) and tells the
``on_undecodable`` callbacks. A cached object that becomes undecodable is removed, with a
``DELETED`` change: the cache holds what the controller can read, the same after a watch as
after a re-list. One such object costs one object: the informer still syncs and serves the
rest.

Objects in the store and those passed to handlers are shared, not copied, and so are
equal parts of different objects (above): treat them as read-only (client-go's cache has
the same contract) — a write into one object's template would change every child's.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import inspect
import random
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, NamedTuple

import structlog

from united.api.decode import Undecodable
from united.api.selector import Selector, parse_text
from united.kube.client import JSON, KubeClient, Resource, WatchEvent
from united.kube.errors import ApiError, Gone
from united.runtime.failures import FailureLog
from united.runtime.projection import projection

__all__ = [
    "ADDED",
    "DELETED",
    "LAST_APPLIED_ANNOTATION",
    "MODIFIED",
    "RESUME_ATTEMPTS",
    "Change",
    "EventHandler",
    "Informer",
    "Store",
    "UndecodableHandler",
    "compact",
    "controller_uid",
    "forget_shared",
    "keeper",
    "object_key",
    "strip",
]

log = structlog.get_logger(__name__)

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"

RESUME_ATTEMPTS = 5
"""Failed watches in a row that resume from the last resourceVersion before a re-list."""
_MIN_WATCH_SECONDS = 1.0
"""A watch asks the server for at least a second; one ending sooner is suspicious."""

EventHandler = Callable[[str, JSON, JSON | None], object]
"""``handler(type, obj, old)``: ``type`` is ``ADDED``, ``MODIFIED`` or ``DELETED``;
``old`` is the stored object it replaces (``None`` for ``ADDED``). For ``DELETED``,
``obj`` is the last state the server sent (or, when synthesised after a re-list, the
last state stored) and ``old`` the stored object. A handler may be a coroutine
function; it is awaited before the next event."""

UndecodableHandler = Callable[[Undecodable], object]
"""``on_undecodable(problem)``: an object was skipped; ``problem.object`` is its stub
(``apiVersion``, ``kind``, ``metadata``, ``status`` where readable). Called synchronously."""


def object_key(obj: JSON) -> str:
    """``namespace/name``, or ``name`` for a cluster-scoped object."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name = str(meta.get("name") or "")
    return f"{namespace}/{name}" if namespace else name


def controller_uid(obj: JSON) -> str | None:
    """The UID of the ownerReference marked ``controller: true``, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("uid"):
            return str(ref["uid"])
    return None


def strip(obj: JSON) -> JSON:
    """Drop ``metadata.managedFields`` and the last-applied annotation, in place
    (an ``annotations`` map left empty is dropped too); return ``obj``."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and LAST_APPLIED_ANNOTATION in annotations:
            del annotations[LAST_APPLIED_ANNOTATION]
            if not annotations:
                del meta["annotations"]
    return obj


_SHARED_LENGTH = 128
"""Longer strings (messages, JSON in annotations, certificates) are rarely equal: not shared."""
_POOL_LIMIT = 1 << 16
"""Strings the pool holds at most (give or take one object's): a few MB, whatever the churn."""
_UNIQUE_FIELDS = frozenset(
    {
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "deletionTimestamp",
        "lastTransitionTime",
        "lastUpdateTime",
        "lastHeartbeatTime",
        "lastProbeTime",
        "lastScaleTime",
        "startTime",
        "startedAt",
        "finishedAt",
        "time",
        "message",
        "podIP",
        "hostIP",
        "containerID",
    }
)
"""Fields whose values are unique to one object or one write: sharing them saves nothing."""
_pool: dict[str, str] = {}


_TREE_LIMIT = 1 << 15
"""Shared maps and lists the pool holds at most: about 13 MB when no two are alike (the labels
of StatefulSet pods, each naming its pod), which it keeps alive until it is cleared."""
_TREE = object()
"""In a signature: the next item is the ``id`` of a shared map or list."""
_trees: dict[tuple[Any, ...], Any] = {}


def _compact_list(items: list[Any]) -> tuple[list[Any], bool]:
    out: list[Any] = []
    append = out.append
    share = _pool.setdefault
    signature: list[Any] = [list]
    sign = signature.append
    shareable = True
    for value in items:
        kind = type(value)
        if kind is str:
            if len(value) <= _SHARED_LENGTH:
                value = share(value, value)
            else:
                shareable = False
        elif kind is dict or kind is list:
            value, shared = _compact_dict(value) if kind is dict else _compact_list(value)
            shareable = shareable and shared
            sign(_TREE)
            sign(id(value))
            append(value)
            continue
        else:
            sign(kind)
        sign(value)
        append(value)
    if not shareable:
        return out, False
    return _trees.setdefault(tuple(signature), out), True


def _compact_dict(mapping: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    out: dict[str, Any] = {}
    share = _pool.setdefault
    signature: list[Any] = [dict]
    sign = signature.append
    shareable = True
    for key, value in mapping.items():
        key = share(key, key)
        sign(key)
        kind = type(value)
        if kind is str:
            if len(value) <= _SHARED_LENGTH and key not in _UNIQUE_FIELDS:
                value = share(value, value)
            else:
                shareable = False
        elif kind is dict or kind is list:
            value, shared = _compact_dict(value) if kind is dict else _compact_list(value)
            shareable = shareable and shared
            sign(_TREE)
            out[key] = value
            sign(id(value))
            continue
        else:
            sign(kind)
        sign(value)
        out[key] = value
    if not shareable:
        return out, False
    return _trees.setdefault(tuple(signature), out), True


def compact(obj: JSON) -> JSON:
    """:func:`strip` ``obj``, then return an equal copy whose low-cardinality strings, and
    maps and lists made only of such strings, numbers and other such maps and lists, are
    shared with every other cached object's (see the module docstring for which)."""
    if len(_pool) > _POOL_LIMIT:
        _pool.clear()
    if len(_trees) > _TREE_LIMIT:
        _trees.clear()
    out, shared = _compact_dict(strip(obj))
    return dict(out) if shared else out


def forget_shared() -> None:
    """Empty the pools :func:`compact` shares from, as in a new process: what one object costs
    is then measured the same whatever was compacted before (``python -m bench.cache``)."""
    _pool.clear()
    _trees.clear()


def keeper(resource: Resource) -> Callable[[JSON], JSON]:
    """What an informer of ``resource`` stores of each object it receives: the object
    projected (:mod:`~united.runtime.projection`), then :func:`compact`."""
    project = projection(resource)
    if project is None:
        return compact
    return lambda obj: compact(project(obj))


def _namespace(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "")


def _uid(obj: JSON) -> str | None:
    uid = (obj.get("metadata") or {}).get("uid")
    return str(uid) if uid else None


def _resource_version(obj: JSON) -> str | None:
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    return str(rv) if rv else None


class Change(NamedTuple):
    """One change a store update produced, in the shape handlers receive."""

    type: str
    object: JSON
    old: JSON | None


class Store:
    """Objects by key, with indexes from controller-owner UID to children, from namespace
    to objects and from namespace to orphans (objects without a controller owner), and,
    given a ``label`` key, from namespace and that label's value to objects.

    ``owner`` says who owns an object (default: its controller ownerReference's UID); a store
    of objects in another cluster, where no ownerReference can name our objects, passes one
    that reads labels.

    Reads are for anyone; writes are for the informer that owns the store.
    """

    def __init__(self, *, label: str | None = None, owner: Callable[[JSON], str | None] = controller_uid) -> None:
        self._owner = owner
        self._objects: dict[str, JSON] = {}
        self._owner_of: dict[str, str] = {}  # key -> controller owner UID
        self._children: dict[str, dict[str, set[str]]] = {}  # owner UID -> namespace -> keys
        self._namespace_of: dict[str, str] = {}  # key -> namespace ("" if cluster-scoped)
        self._in_namespace: dict[str, dict[str, JSON]] = {}  # namespace -> key -> object
        self._orphans: dict[str, set[str]] = {}  # namespace -> keys without a controller owner
        self._label = label
        self._labelled: dict[str, dict[str, JSON]] = {}  # "<namespace>/<label value>" -> key -> object
        self._label_of: dict[str, str] = {}  # key -> "<namespace>/<label value>"

    # -- reads ----------------------------------------------------------------------

    def get(self, key: str) -> JSON | None:
        """The object stored under ``key`` (see :func:`object_key`), if any."""
        return self._objects.get(key)

    def list(self, namespace: str | None = None) -> builtins.list[JSON]:
        """Every stored object, or those of one namespace (``""``: cluster-scoped ones);
        the latter costs what the namespace holds, not what the store holds."""
        if namespace is None:
            return list(self._objects.values())
        return list(self._in_namespace.get(namespace, {}).values())

    def namespaces(self) -> builtins.set[str]:
        """The namespaces holding at least one object (``""``: cluster-scoped ones); costs what
        they are, not what the store holds."""
        return set(self._in_namespace)

    def holds(self, namespace: str) -> bool:
        """Whether ``namespace`` holds an object: two lookups, no copy, safe to ask from another
        thread (nothing is iterated)."""
        return bool(self._in_namespace.get(namespace))

    def orphans(self, namespace: str) -> builtins.list[JSON]:
        """The objects of ``namespace`` that no controller owns (candidates for adoption)."""
        return [self._objects[key] for key in sorted(self._orphans.get(namespace, ()))]

    def labelled(self, namespace: str, value: str) -> builtins.list[JSON]:
        """The objects of ``namespace`` whose ``label`` (see the constructor) is ``value``;
        costs what they are, not what the namespace holds."""
        return list(self._labelled.get(f"{namespace}/{value}", {}).values())

    def keys(self) -> builtins.list[str]:
        """Every stored key."""
        return list(self._objects)

    def by_owner(self, uid: str, namespace: str | None = None) -> builtins.list[JSON]:
        """The objects whose controller ownerReference points at ``uid``; with ``namespace``,
        only those in it. An ownerReference is namespace-local, but anyone can write any uid
        into one: a controller must read its children with its own namespace, or an object
        elsewhere claiming its uid would pass for a child."""
        by_namespace = self._children.get(uid, {})
        if namespace is not None:
            keys: Iterable[str] = by_namespace.get(namespace, ())
        else:
            keys = (key for entries in by_namespace.values() for key in entries)
        return [self._objects[key] for key in sorted(keys)]

    def __len__(self) -> int:
        return len(self._objects)

    def __contains__(self, key: object) -> bool:
        return key in self._objects

    # -- writes ---------------------------------------------------------------------

    def upsert(self, obj: JSON) -> JSON | None:
        """Store ``obj``; return the object it replaced, if any."""
        key = object_key(obj)
        old = self._objects.get(key)
        self._objects[key] = obj
        self._unindex(key)
        namespace = _namespace(obj)
        self._namespace_of[key] = namespace
        self._in_namespace.setdefault(namespace, {})[key] = obj
        value = ((obj.get("metadata") or {}).get("labels") or {}).get(self._label) if self._label else None
        if isinstance(value, str):
            self._label_of[key] = slot = f"{namespace}/{value}"
            self._labelled.setdefault(slot, {})[key] = obj
        owner = self._owner(obj)
        if owner is not None:
            self._owner_of[key] = owner
            self._children.setdefault(owner, {}).setdefault(namespace, set()).add(key)
        else:
            self._orphans.setdefault(namespace, set()).add(key)
        return old

    def remove(self, key: str) -> JSON | None:
        """Forget ``key``; return what was stored, if anything."""
        self._unindex(key)
        return self._objects.pop(key, None)

    def replace(self, objects: Iterable[JSON]) -> builtins.list[Change]:
        """Make the store hold exactly ``objects`` (a fresh LIST) and return the
        changes that implies: ``DELETED`` for what vanished, ``ADDED`` for what is
        new, ``MODIFIED`` for what changed (by resourceVersion). An object whose
        name now belongs to a different UID was deleted and re-created while nobody
        watched: that is a ``DELETED`` of the old one and an ``ADDED`` of the new."""
        fresh = {object_key(obj): obj for obj in objects}
        changes = [Change(DELETED, old, old) for key, old in self._objects.items() if key not in fresh]
        for change in changes:
            self.remove(object_key(change.object))
        for obj in fresh.values():
            old = self.upsert(obj)
            if old is None:
                changes.append(Change(ADDED, obj, None))
            elif _uid(old) != _uid(obj):
                changes.extend((Change(DELETED, old, old), Change(ADDED, obj, None)))
            elif _changed(old, obj):
                changes.append(Change(MODIFIED, obj, old))
        return changes

    def _unindex(self, key: str) -> None:
        slot = self._label_of.pop(key, None)
        if slot is not None:
            _discard(self._labelled, slot, key)
        namespace = self._namespace_of.pop(key, None)
        if namespace is not None:
            _discard(self._in_namespace, namespace, key)
        owner = self._owner_of.pop(key, None)
        if owner is not None:
            by_namespace = self._children.get(owner, {})
            _discard(by_namespace, namespace or "", key)
            if not by_namespace:
                self._children.pop(owner, None)
        elif namespace is not None:
            _discard(self._orphans, namespace, key)


def _discard(index: dict[str, Any], value: str, key: str) -> None:
    """Remove ``key`` from ``index[value]`` (a set or dict), dropping it when empty."""
    entries = index.get(value)
    if entries is None:
        return
    if isinstance(entries, dict):
        entries.pop(key, None)
    else:
        entries.discard(key)
    if not entries:
        del index[value]


def _changed(old: JSON, new: JSON) -> bool:
    old_rv, new_rv = _resource_version(old), _resource_version(new)
    if old_rv is not None and new_rv is not None:
        return old_rv != new_rv
    return old != new


class Informer:
    """Keeps :attr:`store` in sync with one resource and calls the handlers.

    ``await informer.run()`` (in a task) until cancelled; ``has_synced`` is set
    once the first LIST is stored and its events delivered. ``run`` resumes from
    :attr:`resource_version` when it has one (a previous run's), so a restarted
    informer watches on from where it stopped — or re-lists if that is too old.

    Options: ``namespace`` (``None`` = all), ``label_selector``/``field_selector``
    (server-side filters), ``watch_timeout`` (minimum server-side watch length in
    seconds; each watch asks for a random length in [1, 2) times it),
    ``inactivity_timeout`` (reconnect after this long without any event or bookmark),
    ``backoff_initial``/``backoff_max`` (seconds between attempts after failures),
    ``page_size`` for the LIST, ``failures``, the :class:`FailureLog` its failures are
    reported to (default: its own), ``on_undecodable`` callbacks (see the module docstring),
    and ``index_label`` and ``owner`` (how the store indexes, see :class:`Store`).

    :meth:`restart` swaps the client (new credentials) under a running informer.
    """

    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        watch_timeout: float = 300.0,
        inactivity_timeout: float = 70.0,
        backoff_initial: float = 0.5,
        backoff_max: float = 30.0,
        page_size: int = 500,
        index_label: str | None = None,
        handlers: Iterable[EventHandler] = (),
        failures: FailureLog | None = None,
        on_undecodable: Iterable[UndecodableHandler] = (),
        owner: Callable[[JSON], str | None] = controller_uid,
    ) -> None:
        if watch_timeout < 1 or inactivity_timeout <= 0:
            raise ValueError("need watch_timeout >= 1 and inactivity_timeout > 0")
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.watch_timeout = watch_timeout
        self.inactivity_timeout = inactivity_timeout
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.page_size = page_size
        self.store = Store(label=index_label, owner=owner)
        self._keep = keeper(resource)
        self.source: Informer | None = None
        """The unselected informer this one is served from once it syncs (:meth:`follow`)."""
        self._selector: Selector | None = None
        self._followers: list[Informer] = []
        self.has_synced = asyncio.Event()
        self.resource_version = ""
        """Where the next watch starts: the last LIST's RV, then every event's
        (bookmarks included). Empty means "LIST first"."""
        self._handlers: list[EventHandler] = list(handlers)
        self._on_undecodable: list[UndecodableHandler] = list(on_undecodable)
        self.undecodable: dict[str, Undecodable] = {}
        """The objects skipped as undecodable, by key; updated in place (a live view)."""
        self._failures = 0
        self._attempt: asyncio.Task[None] | None = None
        self.name = f"{resource.plural}.{resource.group}" if resource.group else resource.plural
        if namespace:
            self.name += f" in {namespace}"
        self.failures = failures or FailureLog()
        """Where list/watch failures are logged; several informers share one so that the
        same failure seen by all of them is one line per step (:mod:`~united.runtime.failures`)."""
        self.last_error = ""
        """Why the last LIST or watch failed (``cannot list deployments.apps: …``); empty
        once one succeeds again. Readiness reports it for informers that have not synced."""
        self.last_status = 0
        """The HTTP status of that failure (0: no answer, or not an API error)."""
        self._log = log.bind(resource=resource.plural, namespace=namespace, selector=label_selector)
        # Counters, for tests and debugging.
        self.lists = 0
        self.relists = 0
        self.watches = 0
        self.gone = 0
        self.errors = 0
        self.inactivity_timeouts = 0
        self.handler_errors = 0
        self.skipped = 0

    def add_handler(self, handler: EventHandler) -> None:
        """Also call ``handler`` for every later change (see :data:`EventHandler`).

        Add handlers before :meth:`run`, or a late one misses the initial ``ADDED``s."""
        self._handlers.append(handler)

    def follow(self, source: Informer) -> bool:
        """Serve this informer from ``source`` (the same resource and namespace, unselected) once
        ``source`` has synced: its own LIST and WATCH stop, its store holds the very objects
        ``source`` holds that its label selector matches (evaluated locally), and its handlers
        see what a server-side selected watch would have sent them — an object that starts
        matching as ``ADDED``, one that stops as ``DELETED``. The switch is a re-list against
        ``source``'s store: what differs from this store is dispatched.

        Until ``source`` syncs, this informer keeps its own watch if it has synced already; if
        not, it waits for ``source`` rather than list the same objects a second time, unless
        ``source`` fails (it may never sync: RBAC), and then lists on its own. False
        (and nothing changes) when it follows already, its selector cannot be evaluated locally
        (``<``, ``>``), or either has a field selector or ``source`` a label selector."""
        if self.source is not None or self.field_selector or source.label_selector or source.field_selector:
            return False
        try:
            selector = parse_text(self.label_selector or "")
        except ValueError:
            return False
        self.source, self._selector = source, selector
        source._followers.append(self)
        if self._attempt is not None and (source.has_synced.is_set() or not self.has_synced.is_set()):
            self._attempt.cancel()
        return True

    @property
    def following(self) -> bool:
        """Whether this informer is served from another's store (see :meth:`follow`)."""
        return self.source is not None and self.source.has_synced.is_set()

    async def run(self) -> None:
        """LIST and WATCH until cancelled; never returns otherwise."""
        task = asyncio.current_task()
        while True:
            await self._await_source()
            if self.following:
                self._attempt = None
                await self._follow()
            self._attempt = asyncio.create_task(self._run(), name=f"informer-{self.name}")
            try:
                await self._attempt
            except asyncio.CancelledError:
                if task is None or task.cancelling():
                    raise  # cancelled from outside, not by restart()

    async def _await_source(self) -> None:
        """Before a first LIST of its own, wait for the source while it lists without failing."""
        source = self.source
        while source is not None and not self.has_synced.is_set() and not source.has_synced.is_set():
            if source.last_error:
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.5):  # not wait_for: on 3.11 it can drop a cancel
                    await source.has_synced.wait()

    def restart(self, client: KubeClient) -> None:
        """Go on with ``client`` (new credentials): the current LIST or watch is cancelled and
        the watch resumes from :attr:`resource_version` with the new client, at once (no
        backoff left from failures with the old one); nothing is re-listed unless the resume
        point is gone (410) or the first LIST had not finished."""
        self.client = client
        self._failures = 0
        if self.following:
            return
        if not self.has_synced.is_set():
            self.resource_version = ""
        if self._attempt is not None:
            self._attempt.cancel()

    async def _run(self) -> None:
        while True:
            try:
                if not self.resource_version:
                    await self._list()
                started = asyncio.get_running_loop().time()
                await self._watch()
                if asyncio.get_running_loop().time() - started < _MIN_WATCH_SECONDS:
                    # A server (or proxy) that ends watches at once would make this a
                    # busy loop: pace the reconnects, but keep the resume point.
                    self._failures += 1
                    self._log.warning("watch ended at once; backing off", failures=self._failures)
                    await self._backoff()
            except Gone as exc:
                self.gone += 1
                self._log.info(
                    "resourceVersion expired; re-listing", resource_version=self.resource_version, error=str(exc)
                )
                self.resource_version = ""
                if self._failures:
                    await self._backoff()
                self._failures += 1
            except Exception as exc:
                # An API error leaves the store as it was, so the watch resumes from the last
                # resourceVersion (a few times in a row); anything else (a bug applying an
                # event) leaves it untrusted across the gap, so the next round re-lists.
                self.errors += 1
                self._failures += 1
                resume = isinstance(exc, ApiError) and bool(self.resource_version) and self._failures < RESUME_ATTEMPTS
                self.last_status = exc.status if isinstance(exc, ApiError) else 0
                self.last_error = f"cannot {'watch' if self.has_synced.is_set() else 'list'} {self.name}: {exc}"
                self.failures.failed(resource=self.name, error=exc, attempt=self._failures)
                if not resume:
                    self.resource_version = ""
                await self._backoff()

    async def _backoff(self) -> None:
        delay = min(self.backoff_max, self.backoff_initial * 2.0 ** min(self._failures - 1, 30))
        await asyncio.sleep(delay * random.uniform(0.5, 1.0))

    async def _list(self) -> None:
        listed = await self.client.list(
            self.resource,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            page_size=self.page_size,
            transform=self._keep,
        )
        if self.lists:
            self.relists += 1
        self.lists += 1
        # Kept page by page by the client; strip() again (in place, cheap) for test doubles
        # that ignore ``transform``.
        changes = self.store.replace(strip(obj) for obj in listed.items)
        self.resource_version = listed.resource_version
        self._log.debug("listed", objects=len(self.store), resource_version=self.resource_version, changes=len(changes))
        self._recovered()
        self.undecodable.clear()
        for problem in listed.skipped:
            self._skip(problem)
        for change in changes:
            await self._dispatch(change)
        self.has_synced.set()
        for follower in self._followers:
            if follower._attempt is not None:
                follower._attempt.cancel()

    async def _follow(self) -> None:
        """Serve from the source's store until cancelled (see :meth:`follow`)."""
        source = self.source
        assert source is not None
        self.resource_version = ""
        self.undecodable.clear()
        self._recovered()
        changes = self.store.replace(obj for obj in source.store.list() if self._matches(obj))
        source.add_handler(self._relay)
        try:
            for change in changes:
                await self._dispatch(change)
            self.has_synced.set()
            await asyncio.Event().wait()
        finally:
            source._handlers.remove(self._relay)

    def _matches(self, obj: JSON) -> bool:
        assert self._selector is not None
        return self._selector.matches((obj.get("metadata") or {}).get("labels") or {})

    def _relay(self, kind: str, obj: JSON, old: JSON | None) -> Awaitable[None] | None:
        """A change of the source's, as a selected watch would have delivered it here."""
        if kind != DELETED and self._matches(obj):
            before = self.store.upsert(obj)
            return self._dispatch(Change(ADDED if before is None else MODIFIED, obj, before))
        before = self.store.remove(object_key(obj))
        return None if before is None else self._dispatch(Change(DELETED, obj, before))

    def _recovered(self) -> None:
        if self.last_error:
            self.last_error = ""
            self.last_status = 0
            self.failures.recovered(self.name)

    def _skip(self, problem: Undecodable) -> None:
        key = object_key(problem.object)
        self.skipped += 1
        self.undecodable[key] = problem
        self._log.warning(
            "undecodable object skipped",
            key=key,
            uid=(problem.object.get("metadata") or {}).get("uid"),
            reason=problem.reason,
        )
        for callback in self._on_undecodable:
            try:
                callback(problem)
            except Exception:
                self.handler_errors += 1
                self._log.exception("undecodable-object callback failed", key=key)

    async def _watch(self) -> None:
        """One watch connection, until the server ends it or it goes quiet too long."""
        loop = asyncio.get_running_loop()
        timeout_seconds = max(1, int(self.watch_timeout * random.uniform(1.0, 2.0)))
        try:
            async with asyncio.timeout_at(loop.time() + self.inactivity_timeout) as deadline:
                async with self.client.watch(
                    self.resource,
                    namespace=self.namespace,
                    resource_version=self.resource_version,
                    label_selector=self.label_selector,
                    field_selector=self.field_selector,
                    allow_bookmarks=True,
                    timeout_seconds=timeout_seconds,
                ) as events:
                    self.watches += 1
                    self._recovered()
                    async for event in events:
                        deadline.reschedule(None)  # time spent in handlers is not inactivity
                        self._failures = 0
                        if events.resource_version:
                            self.resource_version = events.resource_version
                        await self._apply(event)
                        deadline.reschedule(loop.time() + self.inactivity_timeout)
        except TimeoutError:
            if not deadline.expired():
                raise
            self.inactivity_timeouts += 1
            self._log.info(
                "watch inactive; reconnecting", seconds=self.inactivity_timeout, resource_version=self.resource_version
            )
            return
        self._failures = 0

    async def _apply(self, event: WatchEvent) -> None:
        if event.type == "BOOKMARK":
            return
        if event.undecodable is not None:
            key = object_key(event.object)
            old = self.store.remove(key)
            if event.type == DELETED:
                self.undecodable.pop(key, None)
            else:
                self._skip(event.undecodable)
            if old is not None:
                await self._dispatch(Change(DELETED, old, old))
            return
        obj = self._keep(event.object)
        self.undecodable.pop(object_key(obj), None)
        if event.type in (ADDED, MODIFIED):
            old = self.store.upsert(obj)
            await self._dispatch(Change(ADDED if old is None else MODIFIED, obj, old))
        elif event.type == DELETED:
            old = self.store.remove(object_key(obj))
            await self._dispatch(Change(DELETED, obj, old))
        else:
            self._log.warning("unknown watch event type; ignored", type=event.type)

    async def _dispatch(self, change: Change) -> None:
        for handler in tuple(self._handlers):
            try:
                result = handler(change.type, change.object, change.old)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                self.handler_errors += 1
                self._log.exception("event handler failed", type=change.type, key=object_key(change.object))
