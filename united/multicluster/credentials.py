"""The kubeconfig Secrets that ``Cluster`` objects name, watched one by one.

Why one informer per Secret, each a LIST+WATCH in the Secret's namespace with a
``metadata.name`` field selector: the controller must not hold (or need) read access to every
Secret of the host. A field-selected request is what a Role's ``resourceNames`` can grant, as for
the kubelet's per-Secret watches, and the shipped grant is a Role in ``united-clusters`` only
(``manifests/base/cluster-credentials.yaml``). A rotated Secret is seen at its next watch event;
:meth:`SecretWatch.reread` covers a watch that lags behind a rotation (a member answers 401).

What a Secret holds is returned as bytes, or as a :class:`~united.multicluster.health.Failure`
saying what is wrong with it in words that never include a value.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import time
from collections.abc import Callable, Coroutine
from typing import Any

from united.api.document import Json
from united.kube import ApiError, KubeClient
from united.kube.client import SECRETS
from united.multicluster.health import Failure
from united.multicluster.model import SecretRef
from united.runtime.failures import FailureLog
from united.runtime.informer import Informer

Spawn = Callable[[Coroutine[Any, Any, Any]], "asyncio.Task[Any]"]
REREAD_EVERY = 10.0
"""Seconds between two GETs of the same Secret by :meth:`SecretWatch.reread`."""
GRANT = "manifests/base/cluster-credentials.yaml"


class SecretWatch:
    """Watches the Secrets it is asked about (:meth:`watch`), and tells the :meth:`on_change`
    callbacks ``(namespace, name)`` when one is added, changed or deleted."""

    def __init__(self, client: KubeClient, *, spawn: Spawn, failures: FailureLog | None = None) -> None:
        self.client = client
        self._spawn = spawn
        self._failures = failures or FailureLog()
        self._informers: dict[tuple[str, str], tuple[Informer, asyncio.Task[Any]]] = {}
        self._fresh: dict[tuple[str, str], Json] = {}
        self._reread_at: dict[tuple[str, str], float] = {}
        self._callbacks: list[Callable[[str, str], None]] = []

    def on_change(self, callback: Callable[[str, str], None]) -> None:
        self._callbacks.append(callback)

    def watch(self, ref: SecretRef) -> None:
        """Start watching ``ref``'s Secret, unless already watched."""
        slot = (ref.namespace, ref.name)
        if slot in self._informers:
            return
        informer = Informer(
            self.client,
            SECRETS,
            namespace=ref.namespace,
            field_selector=f"metadata.name={ref.name}",
            failures=self._failures,
            handlers=[lambda kind, obj, old: self._changed(slot)],
        )
        self._informers[slot] = (informer, self._spawn(informer.run()))

    def forget(self, keep: set[tuple[str, str]]) -> None:
        """Stop watching the Secrets not in ``keep`` (no ``Cluster`` names them any more)."""
        for slot in set(self._informers) - keep:
            _, task = self._informers.pop(slot)
            task.cancel()
            self._fresh.pop(slot, None)

    def stop(self) -> None:
        self.forget(set())

    def _changed(self, slot: tuple[str, str]) -> None:
        self._fresh.pop(slot, None)
        for callback in self._callbacks:
            callback(*slot)

    def kubeconfig(self, ref: SecretRef) -> bytes | Failure | None:
        """``data[key]`` of ``ref``'s Secret; a :class:`Failure` when it cannot be had; None while
        the first LIST is under way."""
        slot = (ref.namespace, ref.name)
        entry = self._informers.get(slot)
        if entry is None:
            return None
        informer = entry[0]
        if not informer.has_synced.is_set():
            if not informer.last_error:
                return None
            return _failure(informer, ref)
        secret = self._fresh.get(slot) or informer.store.get(f"{ref.namespace}/{ref.name}")
        return _data(secret, ref)

    async def reread(self, ref: SecretRef) -> None:
        """GET the Secret now (at most once per :data:`REREAD_EVERY` seconds): a member refused
        the credentials, and the watch may not have delivered a rotation yet."""
        slot = (ref.namespace, ref.name)
        now = time.monotonic()
        if now - self._reread_at.get(slot, -REREAD_EVERY) < REREAD_EVERY:
            return
        self._reread_at[slot] = now
        try:
            secret = await self.client.get(SECRETS, ref.name, namespace=ref.namespace)
        except ApiError:
            return  # the watch reports what is wrong
        entry = self._informers.get(slot)
        stored = entry[0].store.get(f"{ref.namespace}/{ref.name}") if entry else None
        if stored is None or (stored.get("data") or {}) != (secret.get("data") or {}):
            self._fresh[slot] = secret
            for callback in self._callbacks:
                callback(*slot)


def _data(secret: Json | None, ref: SecretRef) -> bytes | Failure:
    if secret is None:
        return Failure(message=f"secret {ref} not found", credentials=True)
    value = (secret.get("data") or {}).get(ref.key)
    if not isinstance(value, str) or not value:
        return Failure(message=f"secret {ref} has no key {ref.key}", credentials=True)
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return Failure(message=f"secret {ref} key {ref.key}: not base64", credentials=True)


def _failure(informer: Informer, ref: SecretRef) -> Failure:
    """What a failed LIST/WATCH of the Secret means for a person: a 403 is a missing grant."""
    if informer.last_status == 403:
        return Failure(
            status=403,
            message=f"cannot watch secret {ref}: 403 Forbidden: grant get, list, watch on secrets in "
            f"{ref.namespace} (see {GRANT})",
            credentials=True,
        )
    return Failure(status=informer.last_status, message=informer.last_error, credentials=True)


__all__ = ["GRANT", "REREAD_EVERY", "SecretWatch"]
