"""The handlers behind the webhook server's routes: pod admission and CRD conversion.

``/mutate-pods`` (pod CREATE): the pod's spread is found from the informer caches
(:func:`~united.workloadspread.matching.match`); a pod in a namespace without spreads,
or whose workload no spread targets, is allowed unchanged without an API call; a pod without a
controller, or of a controller already found to be a bystander, is answered on the webhook
server's own thread (:meth:`PodWebhook.early`). A targeted
pod books a slot (:func:`~united.workloadspread.booking.book_create`) through the
:class:`~united.workloadspread.ledger.Ledger`, which writes the bookings queued for a spread
in one status write with its resourceVersion and books again on 409, so concurrent
admissions — in one process or in several replicas — never both take the last slot. The
answer injects the subset (:func:`~united.workloadspread.injection.inject`) as a JSON patch.
When no booking can be written the pod is allowed unplaced (the controller reports it, and
it gets the lowest deletion cost), as when the webhook is down: admission never blocks pod
creation on our account.

``/validate-pods`` (pod DELETE, ``pods/eviction`` CREATE): OpenKruise's bookkeeping
(:func:`~united.workloadspread.booking.book_delete` notes the pod in ``deletingPods``).
Always allowed: OpenKruise denies only when its status write fails, which would turn a
transient conflict into a failed ``kubectl delete`` or a stuck drain; a missed note costs
nothing here, since our booking frees slots only on the controller's recount. Dry runs
write nothing.

``/convert``: the compat CRD's conversion (:func:`~united.workloadspread.conversion.review`).

A review is a claim anyone who reaches the port can make, so nothing is written on its word
alone (docs/security.md): its namespace must agree with its object's; a pod must have the
shape the API server sends (:func:`~united.workloadspread.pods.malformed`) before it is
booked; every owner up to the target must be proven by its uid; a deletion is noted only for
a pod cached under the review's namespace, name and (for a DELETE) uid, and the cached copy
is what is noted.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable
from typing import Any

import structlog

from united.api.document import Json
from united.api.field import ManifestError
from united.kube import ApiError, KubeClient
from united.placement.patch import PatchError
from united.runtime.metrics import PlacementResult
from united.runtime.webserver import Computed, Route, Shortcut, allow, patched, request_of, uid_of
from united.workloadspread import conversion, matching
from united.workloadspread.booking import Booking, book_create, book_delete
from united.workloadspread.injection import inject
from united.workloadspread.ledger import Ledger
from united.workloadspread.model import WorkloadSpread, group_of
from united.workloadspread.pods import malformed, replicas_of
from united.workloadspread.reconciler import WORKLOADS, Caches, Reconciler
from united.workloadspread.statuses import Statuses
from united.workloadspread.webhookconfig import CONVERT_PATH, MUTATE_PATH, VALIDATE_PATH

log = structlog.get_logger(__name__)


class PodWebhook:
    """Answers admission reviews from the WorkloadSpread controller's caches.

    ``controller`` gives the current caches and reconciler, or None while the WorkloadSpread
    kind is not served (every pod is then allowed unchanged). Every replica serves, so
    ``client`` must be one without the leader-election fence."""

    def __init__(
        self,
        client: KubeClient,
        controller: Callable[[], tuple[Caches, Reconciler] | None],
        *,
        clock: Callable[[], datetime.datetime] | None = None,
        placements: Callable[[PlacementResult], None] | None = None,
        statuses: Statuses | None = None,
    ) -> None:
        self.client = client
        self.controller = controller
        self.clock = clock or (lambda: datetime.datetime.now(datetime.UTC))
        self.placements = placements or (lambda result: None)
        """Told each targeted pod's outcome: unplaced pods are what an operator must see, since
        the webhook admits them anyway."""
        self._ledger = Ledger(client, self._caches_admit, statuses=statuses)

    def routes(self) -> dict[str, Route]:
        return {
            MUTATE_PATH: Shortcut(self.mutate, self.early),
            VALIDATE_PATH: self.validate,
            CONVERT_PATH: Computed(conversion.review),
        }

    def early(self, review: Json) -> Json | None:
        """A pod CREATE answered on the webhook server's thread, without :meth:`mutate`: one
        without a controller (no spread targets it) or whose controller is a known bystander
        (:mod:`~united.workloadspread.bystanders`) is allowed unchanged; None for the others.
        Reads only: the caches' attributes and one dict lookup."""
        found = self.controller()
        request = request_of(review)
        if found is None or request.get("operation") != "CREATE":
            return None
        obj = request.get("object")
        namespace = _namespace(request, obj)
        if namespace is None or not isinstance(obj, dict):
            return None
        ref = matching.controller_ref(obj)
        if ref is None or found[0].bystanders.holds(namespace, ref):
            return allow(uid_of(request))
        return None

    async def mutate(self, review: Json) -> Json:
        request = request_of(review)
        uid = uid_of(request)
        found = self.controller()
        if found is None or request.get("operation") != "CREATE":
            return allow(uid)
        caches, reconciler = found
        obj = request.get("object")
        pod: Json = obj if isinstance(obj, dict) else {}
        namespace = _namespace(request, pod)
        spreads = caches.spreads_in(namespace) if namespace is not None else []
        if namespace is None or not spreads:
            return allow(uid)
        problem = malformed(pod)
        if problem is not None:
            log.info("pod review not placed: malformed pod", uid=uid, namespace=namespace, error=problem)
            return allow(uid)
        pod = {**pod, "metadata": {**pod["metadata"], "namespace": namespace}}
        ws = await self._spread_for(caches, pod, spreads)
        if ws is None:
            return allow(uid)
        booking = await self._book(
            reconciler,
            ws,
            lambda w: book_create(
                w,
                pod,
                replicas=self._replicas(caches, w),
                now=self.clock(),
                new_uid=lambda: str(uuid.uuid4()),
            ),
            dry_run=bool(request.get("dryRun")),
        )
        if booking is None or booking.subset is None:
            self.placements("unplaced")
            return allow(uid)
        try:
            answer = patched(uid, pod, inject(pod, ws, booking.subset, uid=booking.uid))
        except PatchError as e:
            log.warning("subset patch cannot be applied; pod admitted unplaced", workloadspread=ws.name, error=str(e))
            self.placements("unplaced")
            return allow(uid)
        self.placements("placed")
        return answer

    async def validate(self, review: Json) -> Json:
        request = request_of(review)
        uid = uid_of(request)
        found = self.controller()
        if found is None or request.get("dryRun"):
            return allow(uid)
        caches, reconciler = found
        pod = _deleted(caches, request)
        if pod is None:
            return allow(uid)
        namespace = pod["metadata"]["namespace"]
        spreads = caches.spreads_in(namespace)
        if not spreads:
            return allow(uid)
        ws = await self._spread_for(caches, pod, spreads)
        if ws is not None:
            await self._book(reconciler, ws, lambda w: book_delete(w, pod, now=self.clock()), dry_run=False)
        return allow(uid)

    async def _spread_for(self, caches: Caches, pod: Json, spreads: list[WorkloadSpread]) -> WorkloadSpread | None:
        """The pod's spread from the caches; an owner the cache lacks (a ReplicaSet created a
        moment ago) is read once from the API server — only in a namespace with spreads, and
        only for a reference carrying a uid, which the object read must have."""
        missing: list[Json] = []
        fetched: dict[str, Json | None] = {}

        def owner(namespace: str, ref: Json) -> Json | None:
            cached = caches.owner(namespace, ref)
            if cached is not None:
                return cached
            ref_uid = ref.get("uid")
            if not ref_uid or not isinstance(ref_uid, str) or not isinstance(ref.get("name"), str):
                return None
            if ref_uid in fetched:
                return fetched[ref_uid]
            missing.append(ref)
            return None

        namespace = pod["metadata"]["namespace"]
        for _ in range(matching.MAX_DEPTH):
            found = matching.match(pod, spreads, owner)
            ws = found.spread
            if found.bystander is not None and not fetched:
                # From the caches alone, in the step that read ``spreads``: no event came between.
                caches.bystanders.note(namespace, found.bystander)
            if ws is not None or not missing or not matching.is_active(pod):
                return ws  # an inactive pod is placed nowhere: its owners are not worth a GET
            for ref in missing:
                fetched[ref["uid"]] = await self._get_owner(namespace, ref)
            missing.clear()
        return None

    async def _get_owner(self, namespace: str, ref: Json) -> Json | None:
        """The owner ``ref`` names, read from the API server; None unless it has ``ref``'s uid."""
        store_kind = (group_of(str(ref.get("apiVersion") or "")), str(ref.get("kind") or ""))
        resource = WORKLOADS.get(store_kind)
        if resource is None:
            return None
        try:
            obj = await self.client.get(resource, str(ref["name"]), namespace=namespace)
        except ApiError:
            return None
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        return obj if isinstance(meta, dict) and meta.get("uid") == ref.get("uid") else None

    @staticmethod
    def _replicas(caches: Caches, ws: WorkloadSpread) -> int:
        workload, _ = caches.target(ws)
        try:
            return replicas_of(ws, workload)
        except ManifestError:
            return 0

    async def _book(
        self,
        reconciler: Reconciler,
        ws: WorkloadSpread,
        book: Callable[[WorkloadSpread], Booking],
        *,
        dry_run: bool,
    ) -> Booking | None:
        """``book`` written through the ledger (None: no booking could be written)."""
        return await self._ledger.book(reconciler.resource, ws, book, dry_run=dry_run)

    def _caches_admit(self, obj: Json) -> WorkloadSpread | None:
        found = self.controller()
        if found is None:
            return None
        outcome = found[0].admitted(obj)
        return outcome if isinstance(outcome, WorkloadSpread) else None


def _namespace(request: Json, obj: Any) -> str | None:
    """The review's namespace, when the object agrees with it (an object without one takes it);
    None when either is missing or they differ: such a review is answered, never booked."""
    namespace = request.get("namespace")
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    own = meta.get("namespace") if isinstance(meta, dict) else None
    if not namespace or not isinstance(namespace, str) or own not in (None, "", namespace):
        return None
    return namespace


def _deleted(caches: Caches, request: Json) -> Json | None:
    """The cached pod a DELETE or an eviction review concerns, when the review agrees with it:
    same namespace and name, and for a DELETE the uid of ``oldObject``. The cached pod, not the
    review's copy, is what gets noted, so a forged review can name only a pod that exists, and
    cannot change what is noted of it."""
    name = request.get("name")
    if request.get("operation") == "DELETE" and not request.get("subResource"):
        claimed = request.get("oldObject")
    elif request.get("operation") == "CREATE" and request.get("subResource") == "eviction":
        claimed = request.get("object")
    else:
        return None
    namespace = _namespace(request, claimed)
    if namespace is None or not name or not isinstance(name, str) or not isinstance(claimed, dict):
        return None
    meta = claimed.get("metadata")
    if not isinstance(meta, dict) or meta.get("name") not in (None, "", name):
        return None
    pod = caches.pods.get(f"{namespace}/{name}")
    if pod is None or malformed(pod) is not None or pod["metadata"].get("namespace") != namespace:
        return None
    cached_uid = pod["metadata"].get("uid")
    deleting = request.get("operation") == "DELETE"
    claimed_uid = meta.get("uid") if deleting else (_precondition(claimed) or cached_uid)
    if not cached_uid or claimed_uid != cached_uid:
        return None
    return pod


def _precondition(eviction: Json) -> Any:
    """The pod uid an eviction is conditional on, if any."""
    options = eviction.get("deleteOptions")
    preconditions = options.get("preconditions") if isinstance(options, dict) else None
    return preconditions.get("uid") if isinstance(preconditions, dict) else None


__all__ = ["PodWebhook"]
