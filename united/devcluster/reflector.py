"""A minimal list-then-watch loop with a local cache, for the simulators.

The simulators play kubelets and workload controllers; like them they react to
changes, and like them they must survive expired resourceVersions (410) and dropped
streams. This is deliberately small — the controller has its own informer — but it
does the two things that matter: re-list on ``Gone``/errors (rebuilding the cache,
so deletions missed during a gap are noticed) and never die on a handler error.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from united.kube.client import JSON, KubeClient, Resource
from united.kube.errors import ApiError, Gone

log = logging.getLogger(__name__)

Key = tuple[str, str]
Handler = Callable[[str, JSON], Awaitable[None]]


def object_key(obj: JSON) -> Key:
    """(namespace, name); namespace is "" for cluster-scoped objects."""
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class Reflector:
    """Keeps ``cache`` in sync with one resource and calls ``handler(type, obj)``
    for every change: ``ADDED``/``MODIFIED``/``DELETED``, and ``SYNC`` for each
    object (and ``DELETED`` for each vanished one) after a (re-)list."""

    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        handler: Handler,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        watch_timeout: int = 120,
        retry_delay: float = 0.25,
        max_retry_delay: float = 2.0,
    ) -> None:
        self.client = client
        self.resource = resource
        self.handler = handler
        self.namespace = namespace
        self.label_selector = label_selector
        self.watch_timeout = watch_timeout
        self.retry_delay = retry_delay
        self.max_retry_delay = max_retry_delay
        self.cache: dict[Key, JSON] = {}
        self.synced = asyncio.Event()

    async def run(self) -> None:
        """Run until cancelled. Failures are retried with a delay growing to
        ``max_retry_delay`` (a CRD may be missing for a while); only the first of a
        series of identical failures is logged as a warning."""
        resource_version = ""
        delay = self.retry_delay
        last_error = ""
        while True:
            try:
                if not resource_version:
                    resource_version = await self._relist()
                    self.synced.set()
                    delay, last_error = self.retry_delay, ""
                resource_version = await self._watch(resource_version)
            except Gone:
                resource_version = ""
            except (ApiError, ValueError) as exc:
                level = logging.DEBUG if str(exc) == last_error else logging.WARNING
                log.log(level, "%s reflector: %s; re-listing", self.resource.plural, exc)
                last_error = str(exc)
                resource_version = ""
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.max_retry_delay)

    async def _relist(self) -> str:
        listed = await self.client.list(self.resource, namespace=self.namespace, label_selector=self.label_selector)
        fresh = {object_key(obj): obj for obj in listed.items}
        vanished = [obj for key, obj in self.cache.items() if key not in fresh]
        self.cache = fresh
        for obj in vanished:
            await self._call("DELETED", obj)
        for obj in listed.items:
            await self._call("SYNC", obj)
        return listed.resource_version

    async def _watch(self, resource_version: str) -> str:
        async with self.client.watch(
            self.resource,
            namespace=self.namespace,
            resource_version=resource_version,
            label_selector=self.label_selector,
            timeout_seconds=self.watch_timeout,
        ) as events:
            async for event in events:
                if event.type == "BOOKMARK":
                    continue
                key = object_key(event.object)
                if event.type == "DELETED":
                    self.cache.pop(key, None)
                else:
                    self.cache[key] = event.object
                await self._call(event.type, event.object)
            return events.resource_version

    async def _call(self, kind: str, obj: JSON) -> None:
        try:
            await self.handler(kind, obj)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s handler failed on %s %s", self.resource.plural, kind, object_key(obj))
