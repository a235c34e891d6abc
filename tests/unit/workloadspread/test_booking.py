"""Booking a subset on pod creation, noting deletions; and the never-over-fill property."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from united.workloadspread.booking import Booking, book_create, book_delete, resolve
from united.workloadspread.model import MATCHED_ANNOTATION, Status, SubsetStatus, WorkloadSpread, parse

NOW = datetime(2026, 11, 24, 12, 0, 0, 500000, tzinfo=UTC)
STAMP = "2026-11-24T12:00:00Z"
VERSION = "abc"


def spread(*subsets: dict[str, Any], kind: str = "Deployment", status: dict[str, Any] | None = None) -> WorkloadSpread:
    doc: dict[str, Any] = {
        "apiVersion": "apps.united.io/v1alpha1",
        "kind": "WorkloadSpread",
        "metadata": {"name": "ws", "namespace": "ns"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": kind, "name": "web"}, "subsets": list(subsets)},
    }
    if status is not None:
        doc["status"] = status
    return parse(doc)


def pod(name: str = "", *, subset: str | None = None, version: str = VERSION) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "namespace": "ns",
        "labels": {"pod-template-hash": version},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc", "controller": True}],
    }
    if name:
        meta["name"] = name
    else:
        meta["generateName"] = "web-abc-"
    if subset is not None:
        meta["annotations"] = {MATCHED_ANNOTATION: json.dumps({"name": "ws", "subset": subset})}
    return {"metadata": meta, "spec": {}}


def uids() -> Iterator[str]:
    return (f"u{i}" for i in itertools.count(1))


def create(ws: WorkloadSpread, p: dict[str, Any], *, replicas: int = 0, ids: Iterator[str] | None = None) -> Booking:
    source = ids or uids()
    return book_create(ws, p, replicas=replicas, now=NOW, new_uid=lambda: next(source))


def fill(ws: WorkloadSpread, n: int, *, replicas: int = 0) -> tuple[list[str | None], WorkloadSpread]:
    """Create ``n`` nameless pods one after another, writing each booking back."""
    ids = uids()
    chosen = []
    for _ in range(n):
        b = create(ws, pod(), replicas=replicas, ids=ids)
        chosen.append(b.subset)
        if b.status is not None:
            ws = dataclasses.replace(ws, status=b.status)
    return chosen, ws


def entry(ws: WorkloadSpread, name: str, version: str = VERSION) -> SubsetStatus:
    return next(s for s in ws.status.versioned[version] if s.name == name)


def status(*entries: dict[str, Any], version: str = VERSION, aggregate: list[dict[str, Any]] | None = None) -> Any:
    return {"subsetStatuses": aggregate or [], "versionedSubsetStatuses": {version: list(entries)}}


def test_first_fit_in_subset_order_up_to_each_maximum() -> None:
    ws = spread({"name": "a", "maxReplicas": 2}, {"name": "b", "maxReplicas": 3}, {"name": "c"})
    chosen, ws = fill(ws, 7)
    assert chosen == ["a", "a", "b", "b", "b", "c", "c"]
    assert entry(ws, "a") == SubsetStatus("a", 0, 0, {"u1": STAMP, "u2": STAMP})
    assert entry(ws, "b").missing_replicas == 0 and len(entry(ws, "b").creating_pods) == 3
    assert entry(ws, "c") == SubsetStatus("c", 0, -1)  # no maximum, no minimum: never booked


def test_a_booking_is_written_under_the_pod_version_only() -> None:
    ws = spread({"name": "a", "maxReplicas": 1}, {"name": "b"})
    b = create(ws, pod(version="new"))
    assert b == Booking("a", b.status, "u1")
    assert b.status is not None and set(b.status.versioned) == {"new"}
    old = status(
        {"name": "a", "replicas": 1, "missingReplicas": 0}, {"name": "b", "missingReplicas": -1}, version="old"
    )
    ws = spread({"name": "a", "maxReplicas": 1}, {"name": "b"}, status=old)
    b = create(ws, pod(version="new"))
    assert b.subset == "a", "a new version starts with every subset's maximum free (rolling updates keep the split)"
    assert b.status is not None and b.status.versioned["old"] == ws.status.versioned["old"]


def test_percentages_are_rounded_up_per_subset() -> None:
    ws = spread(
        {"name": "a", "maxReplicas": "34%"}, {"name": "b", "maxReplicas": "33%"}, {"name": "c", "maxReplicas": "33%"}
    )
    chosen, ws = fill(ws, 10, replicas=10)
    assert chosen == ["a"] * 4 + ["b"] * 4 + ["c"] * 2
    assert entry(ws, "c").missing_replicas == 2


def test_named_pod_is_booked_by_name_and_readmitted_without_a_second_booking() -> None:
    ws = spread({"name": "a", "maxReplicas": 2}, {"name": "b"})
    b = create(ws, pod("web-1"))
    assert b.subset == "a" and b.uid is None and b.status is not None
    assert entry(dataclasses.replace(ws, status=b.status), "a").creating_pods == {"web-1": STAMP}
    again = create(dataclasses.replace(ws, status=b.status), pod("web-1"))
    assert again == Booking("a")


def test_unschedulable_and_full_subsets_are_skipped() -> None:
    cond = [{"type": "Schedulable", "status": "False", "reason": "PodUnschedulable"}]
    st_ = status(
        {"name": "a", "missingReplicas": 5, "conditions": cond},
        {"name": "b", "replicas": 2, "missingReplicas": 0},
        {"name": "c", "missingReplicas": 1},
    )
    ws = spread(
        {"name": "a", "maxReplicas": 5}, {"name": "b", "maxReplicas": 2}, {"name": "c", "maxReplicas": 1}, status=st_
    )
    chosen, _ = fill(ws, 2)
    assert chosen == ["c", None]


def test_no_subset_left_means_no_placement_and_no_write() -> None:
    ws = spread({"name": "a", "maxReplicas": 0}, {"name": "b", "maxReplicas": 0})
    assert create(ws, pod()) == Booking(None)


def test_unlimited_subset_takes_pods_without_a_write() -> None:
    ws = spread({"name": "a", "maxReplicas": 0}, {"name": "b"})
    assert create(ws, pod()) == Booking("b")


def test_single_unlimited_subset_shortcut() -> None:
    assert create(spread({"name": "only"}), pod()) == Booking("only")
    assert book_delete(spread({"name": "only"}), pod("p", subset="only"), now=NOW) == Booking("only")


def test_stale_missing_replicas_cannot_over_fill() -> None:
    """The count (replicas + creatingPods) bounds a ``missingReplicas`` that claims more room,
    e.g. one a controller raised for a pod whose deletion was then refused."""
    st_ = status({"name": "a", "replicas": 2, "missingReplicas": 1}, {"name": "b", "missingReplicas": -1})
    ws = spread({"name": "a", "maxReplicas": 2}, {"name": "b"}, status=st_)
    assert create(ws, pod()).subset == "b"
    lowered = spread({"name": "a", "maxReplicas": 3}, {"name": "b"}, status=st_)
    b = create(lowered, pod())
    assert b.subset == "a" and b.status is not None
    assert entry(dataclasses.replace(lowered, status=b.status), "a").missing_replicas == 0


def test_a_maximum_added_to_the_spec_applies_before_the_controller_recounts() -> None:
    st_ = status({"name": "a", "replicas": 3, "missingReplicas": -1}, {"name": "b", "missingReplicas": -1})
    ws = spread({"name": "a", "maxReplicas": 3}, {"name": "b"}, status=st_)
    assert create(ws, pod()).subset == "b"


def test_a_subset_added_to_the_spec_is_bookable_at_once() -> None:
    st_ = status({"name": "a", "replicas": 1, "missingReplicas": 0})
    ws = spread({"name": "a", "maxReplicas": 1}, {"name": "new", "maxReplicas": 1}, status=st_)
    b = create(ws, pod())
    assert b.subset == "new" and b.status is not None
    assert [s.name for s in b.status.versioned[VERSION]] == ["a", "new"]


def test_min_replicas_are_filled_first_in_subset_order() -> None:
    ws = spread(
        {"name": "a", "maxReplicas": 10},
        {"name": "b", "maxReplicas": 3, "minReplicas": 2},
        {"name": "c", "minReplicas": 1},
    )
    chosen, ws = fill(ws, 6)
    assert chosen == ["b", "b", "c", "a", "a", "a"]
    assert len(entry(ws, "c").creating_pods) == 1, "a subset with a minimum is booked even without a maximum"
    assert entry(ws, "c").missing_replicas == -1


def test_min_replicas_count_seen_pods_and_pending_bookings() -> None:
    st_ = status(
        {"name": "a", "missingReplicas": 5},
        {"name": "b", "replicas": 1, "missingReplicas": 3, "creatingPods": {"x": STAMP}},
    )
    ws = spread({"name": "a", "maxReplicas": 5}, {"name": "b", "maxReplicas": 5, "minReplicas": 2}, status=st_)
    assert create(ws, pod()).subset == "a"
    st_["versionedSubsetStatuses"][VERSION][1]["creatingPods"] = {}
    ws = spread({"name": "a", "maxReplicas": 5}, {"name": "b", "maxReplicas": 5, "minReplicas": 2}, status=st_)
    assert create(ws, pod()).subset == "b"


def test_min_replicas_never_exceed_a_full_or_unschedulable_subset() -> None:
    ws = spread({"name": "a", "maxReplicas": 5}, {"name": "b", "maxReplicas": 1, "minReplicas": 3})
    chosen, _ = fill(ws, 3)
    assert chosen == ["b", "a", "a"]


def test_percent_minimum_is_rounded_up() -> None:
    assert resolve("10%", replicas=11) == 2
    assert resolve("bad", replicas=10) == 0
    assert resolve(None, replicas=10) is None


def test_statefulset_pods_go_by_ordinal() -> None:
    subsets = ({"name": "a", "maxReplicas": 5}, {"name": "b", "maxReplicas": 5}, {"name": "c"})
    ws = spread(*subsets, kind="StatefulSet")
    got = {i: create(ws, pod(f"db-{i}")) for i in (0, 4, 5, 9, 10, 99)}
    assert {i: b.subset for i, b in got.items()} == {0: "a", 4: "a", 5: "b", 9: "b", 10: "c", 99: "c"}
    assert all(b.status is None for b in got.values())
    assert create(ws, pod("no-ordinal")).subset == "a"
    cond = [{"type": "Schedulable", "status": "False"}]
    aggregate = [{"name": "a", "replicas": 0, "missingReplicas": 5, "conditions": cond}]
    ws = spread(*subsets, kind="StatefulSet", status={"subsetStatuses": aggregate})
    assert [create(ws, pod(f"db-{i}")).subset for i in (0, 4, 5)] == ["b", "b", "c"]
    bounded = spread({"name": "a", "maxReplicas": 1}, {"name": "b", "maxReplicas": 1}, kind="StatefulSet")
    assert create(bounded, pod("db-2")) == Booking(None)


def test_delete_notes_the_pod_but_frees_no_slot() -> None:
    """The deletion may still be refused (a PDB on eviction), so the slot stays taken
    until the controller sees the pod terminating."""
    st_ = status({"name": "a", "replicas": 1, "missingReplicas": 0}, {"name": "b", "missingReplicas": -1})
    ws = spread({"name": "a", "maxReplicas": 1}, {"name": "b"}, status=st_)
    b = book_delete(ws, pod("web-1", subset="a"), now=NOW)
    assert b.subset == "a" and b.status is not None
    after = dataclasses.replace(ws, status=b.status)
    assert entry(after, "a") == SubsetStatus("a", 1, 0, {}, {"web-1": STAMP})
    assert create(after, pod()).subset == "b", "the refused eviction's slot is not handed out"
    assert book_delete(after, pod("web-1", subset="a"), now=NOW) == Booking("a"), "noted once"


def test_delete_without_anything_to_note() -> None:
    st_ = status({"name": "a", "replicas": 1, "missingReplicas": 0, "creatingPods": {"new": STAMP}}, {"name": "b"})
    ws = spread({"name": "a", "maxReplicas": 2}, {"name": "b"}, status=st_)
    assert book_delete(ws, pod("p"), now=NOW) == Booking(None)
    other = pod("p")
    other["metadata"]["annotations"] = {MATCHED_ANNOTATION: '{"name":"other","subset":"a"}'}
    assert book_delete(ws, other, now=NOW) == Booking(None)
    assert book_delete(ws, pod("p", subset="gone"), now=NOW) == Booking(None)
    assert book_delete(ws, pod("new", subset="a"), now=NOW) == Booking("a")  # still being created
    assert book_delete(ws, pod("p", subset="b"), now=NOW) == Booking("b")  # no maximum
    assert book_delete(ws, pod("p", subset="a", version="other"), now=NOW) == Booking("a")  # nothing booked there
    terminating = pod("p", subset="a")
    terminating["metadata"]["deletionTimestamp"] = STAMP
    assert book_delete(ws, terminating, now=NOW) == Booking("a")
    orphan = pod("p", subset="a")
    orphan["metadata"]["ownerReferences"] = []
    assert book_delete(ws, orphan, now=NOW) == Booking("a")
    assert book_delete(ws, pod("p", subset="a"), now=NOW).status is not None


def test_a_pod_recreated_under_a_deleting_name_is_booked_again() -> None:
    """OpenKruise lets it in without a booking; here it takes a slot, in its old
    subset when that has room, and its deleting record goes."""
    st_ = status(
        {"name": "a", "replicas": 0, "missingReplicas": 2},
        {"name": "b", "replicas": 1, "missingReplicas": 1, "deletingPods": {"web-0": STAMP}},
    )
    ws = spread({"name": "a", "maxReplicas": 2}, {"name": "b", "maxReplicas": 2}, status=st_)
    b = create(ws, pod("web-0"))
    assert b.subset == "b" and b.status is not None
    assert entry(dataclasses.replace(ws, status=b.status), "b") == SubsetStatus("b", 1, 0, {"web-0": STAMP}, {})
    full = status(
        {"name": "a", "replicas": 0, "missingReplicas": 2},
        {"name": "b", "replicas": 2, "missingReplicas": 0, "deletingPods": {"web-0": STAMP}},
    )
    ws = spread({"name": "a", "maxReplicas": 2}, {"name": "b", "maxReplicas": 2}, status=full)
    assert create(ws, pod("web-0")).subset == "a"


def test_booking_is_pure() -> None:
    ws = spread({"name": "a", "maxReplicas": 2}, {"name": "b"})
    before = ws.status
    first, second = create(ws, pod()), create(ws, pod())
    assert first == second and ws.status == before == Status()


# The property: a world of pods, the webhook booking against the status, and a controller
# recounting it as OpenKruise does (including its deletingPods slot release, the worst
# case). Whatever the interleaving, no subset ever holds more than its maximum.

FIXED = {"a": 2, "b": 1, "c": None}
PERCENT = {"a": "50%", "b": "25%", "c": None}
NAMES = ("n0", "n1", "n2")
VERSIONS = ("v1", "v2")


@dataclasses.dataclass
class Pod:
    name: str
    key: str
    subset: str
    version: str
    active: bool = True


def recount(ws: WorkloadSpread, pods: list[Pod], now: datetime, replicas: int) -> WorkloadSpread:
    """OpenKruise's per-subset status computation over the simulated pods."""
    versioned = {}
    for version in VERSIONS:
        old = {s.name: s for s in ws.status.versioned.get(version, ())}
        out = []
        for subset in ws.spec.subsets:
            limit = resolve(subset.max_replicas, replicas=replicas)
            o = old.get(subset.name) or SubsetStatus(subset.name)
            creating = dict(o.creating_pods)
            missing = -1 if limit is None else limit
            active, deleting = 0, {}
            for p in (p for p in pods if p.subset == subset.name and p.version == version):
                creating.pop(p.key, None)
                if not p.active:
                    continue
                active += 1
                missing -= 1 if missing > 0 else 0
                if p.name in o.deleting_pods and _at(o.deleting_pods[p.name]) + timedelta(seconds=15) >= now:
                    deleting[p.name] = o.deleting_pods[p.name]
                    missing += 1 if limit is not None and missing < limit else 0
            kept = {k: t for k, t in creating.items() if _at(t) + timedelta(seconds=30) >= now}
            missing -= min(len(kept), missing) if missing > 0 else 0
            out.append(SubsetStatus(subset.name, active, missing, kept, deleting))
        versioned[version] = tuple(out)
    return dataclasses.replace(ws, status=Status(versioned=versioned))


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


CREATE = st.tuples(st.just("create"), st.sampled_from(("", *NAMES)), st.booleans(), st.sampled_from(VERSIONS))
DELETE = st.tuples(st.just("delete"), st.integers(0, 20), st.booleans(), st.just(""))
RECOUNT = st.tuples(st.just("recount"), st.just(0), st.booleans(), st.just(""))
# Creations, deletions and recounts weigh double: over-filling takes several of them in a row.
OPS = st.one_of(
    CREATE,
    CREATE,
    DELETE,
    DELETE,
    RECOUNT,
    RECOUNT,
    st.tuples(st.just("finish"), st.integers(0, 20), st.booleans(), st.just("")),
    st.tuples(st.just("tick"), st.integers(1, 20), st.booleans(), st.just("")),
    st.tuples(st.just("scale"), st.integers(0, 8), st.booleans(), st.just("")),
)


REFUSED_EVICTION = [
    ("create", "", False, "v1"),
    ("create", "", False, "v1"),
    ("delete", 0, True, ""),
    ("recount", 0, False, ""),
    ("create", "", False, "v1"),
]


@settings(max_examples=500, deadline=None)
@example(REFUSED_EVICTION, False, FIXED)
@given(st.lists(OPS, max_size=60), st.booleans(), st.sampled_from((FIXED, PERCENT)))
def test_no_interleaving_over_fills_a_subset(
    ops: list[tuple[str, Any, bool, str]], with_minimum: bool, limits: dict[str, Any]
) -> None:
    """Creates of two template versions (some refused after admission, some re-using names),
    deletions and evictions (some refused), terminations, recounts, time passing and the target
    scaling (percentages follow it): in each version, a subset's active pods plus the bookings
    still pending for pods never created stay within its maximum. With percentages a scale-in
    may leave a subset above its new maximum; then no pod may be added to it."""
    subsets = [{"name": n, **({} if m is None else {"maxReplicas": m})} for n, m in limits.items()]
    if with_minimum:
        subsets[2]["minReplicas"] = 2
    ws = spread(*subsets)
    pods: list[Pod] = []
    now, replicas = NOW, 4
    ids = uids()
    before = 0
    for op, arg, refused, version in ops:
        if op == "create":
            b = book_create(ws, pod(arg, version=version), replicas=replicas, now=now, new_uid=lambda: next(ids))
            if b.subset is not None:
                before = _held(ws, pods, b.subset, version)
            if b.status is not None:
                ws = dataclasses.replace(ws, status=b.status)
            if b.subset is not None and not refused and not any(p.name == arg for p in pods):
                key = b.uid or arg
                pods.append(Pod(arg or f"gen-{key}", key, b.subset, version))
            if b.subset is not None:
                limit = resolve(ws.spec.subset(b.subset).max_replicas, replicas=replicas)  # type: ignore[union-attr]
                after = _held(ws, pods, b.subset, version)
                assert limit is None or after <= limit or after <= before, (b.subset, after, limit)
        elif op in ("delete", "finish"):
            live = [p for p in pods if p.active == (op == "delete")]
            if not live:
                continue
            target = live[arg % len(live)]
            if op == "finish":
                pods.remove(target)
                continue
            b = book_delete(ws, pod(target.name, subset=target.subset, version=target.version), now=now)
            if b.status is not None:
                ws = dataclasses.replace(ws, status=b.status)
            target.active = refused  # a refused deletion (PDB, another webhook) leaves the pod running
        elif op == "recount":
            ws = recount(ws, pods, now, replicas)
        elif op == "tick":
            now += timedelta(seconds=arg)
        else:
            replicas = arg
        if limits is FIXED:
            for name, limit in FIXED.items():
                for v in VERSIONS:
                    held = _held(ws, pods, name, v)
                    assert limit is None or held <= limit, (name, v, held, ws.status)


def _held(ws: WorkloadSpread, pods: list[Pod], subset: str, version: str) -> int:
    """Active pods of the version in the subset, plus its bookings for pods that do not exist."""
    active = sum(1 for p in pods if p.active and p.subset == subset and p.version == version)
    existing = {p.key for p in pods}
    statuses = ws.status.versioned.get(version, ())
    pending = sum(1 for s in statuses if s.name == subset for k in s.creating_pods if k not in existing)
    return active + pending
