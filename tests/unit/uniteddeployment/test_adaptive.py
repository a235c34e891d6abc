"""Adaptive scheduling decisions on an injected clock: every timeout to the second."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from united.api.timestamp import format_time, parse_time
from united.kube.client import ObjectList
from united.uniteddeployment.adaptive import (
    Condition,
    Decision,
    Event,
    LabelChange,
    Settings,
    cluster_down,
    decide,
    max_unavailable,
    override_max_unavailable,
    regrow,
    schedulable_condition,
    set_condition,
)
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import (
    Adaptive,
    ScheduleStrategy,
    Spec,
)

T0 = 1_800_000_000.0
"""A whole second: creation timestamps and condition times are whole seconds."""
KEYS = Keys()
RESERVED = KEYS.reserved_pod
REV = "web-r2"
DEFAULT = Settings(critical=10, window=20)
RESERVE = Settings(critical=10, window=20, reserve=True)


def pod(
    name: str,
    *,
    created: float = T0,
    phase: str = "Pending",
    scheduled: str | None = "Unschedulable",
    node: str | None = None,
    ready_at: float | None = None,
    reserved: str | None = None,
    revision: str = REV,
    deleting: bool = False,
) -> dict[str, Any]:
    """A pod as the informer holds it. ``scheduled``: the PodScheduled=False reason, ``"True"``
    for a scheduled pod, None for no PodScheduled condition yet."""
    labels = {KEYS.revision: revision, KEYS.subset_name: "a"}
    if reserved is not None:
        labels[RESERVED] = reserved
    meta: dict[str, Any] = {"name": name, "creationTimestamp": format_time(created), "labels": labels}
    if deleting:
        meta["deletionTimestamp"] = format_time(created + 1)
    conditions = []
    if scheduled == "True":
        conditions.append({"type": "PodScheduled", "status": "True"})
    elif scheduled is not None:
        conditions.append({"type": "PodScheduled", "status": "False", "reason": scheduled})
    if ready_at is not None:
        conditions.append({"type": "Ready", "status": "True", "lastTransitionTime": format_time(ready_at)})
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "x"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": meta, "spec": spec, "status": {"phase": phase, "conditions": conditions}}


def running(name: str, *, ready_at: float = T0, **kw: Any) -> dict[str, Any]:
    return pod(name, phase="Running", scheduled="True", node="n1", ready_at=ready_at, **kw)


def run(settings: Settings, pods: list[dict[str, Any]], now: float, **kw: Any) -> Decision:
    kw.setdefault("previous", None)
    kw.setdefault("updated_revision", REV)
    return decide(settings, pods, subset="a", now=now, keys=KEYS, **kw)


def marked(since: float = T0) -> Condition:
    return Condition(False, "reschedule", "marked", since)


class TestSettings:
    def test_only_adaptive_specs_have_settings(self) -> None:
        assert Settings.of(Spec()) is None
        fixed = Spec(schedule=ScheduleStrategy(type="Fixed", adaptive=Adaptive(reserve_unschedulable_pods=True)))
        assert Settings.of(fixed) is None

    def test_defaults_and_reservation(self) -> None:
        assert Settings.of(Spec(schedule=ScheduleStrategy(type="Adaptive"))) == Settings(30, 300, False)
        spec = Spec(
            schedule=ScheduleStrategy(
                type="Adaptive",
                adaptive=Adaptive(
                    reschedule_critical_seconds=5, unschedulable_duration=7, reserve_unschedulable_pods=True
                ),
            )
        )
        assert Settings.of(spec) == Settings(5, 7, True)


class TestTimeAndConditions:
    def test_rfc3339_round_trip_in_whole_seconds(self) -> None:
        assert format_time(T0 + 0.9) == format_time(T0)
        assert parse_time(format_time(T0)) == T0
        assert parse_time("2027-01-15T08:00:00.250000Z") == parse_time("2027-01-15T08:00:00Z") + 0.25  # type: ignore[operator]
        assert parse_time("") is None and parse_time(None) is None and parse_time("yesterday") is None

    def test_condition_dict_round_trip(self) -> None:
        c = Condition(False, "reschedule", "why", T0)
        raw = c.to_dict()
        assert raw == {
            "type": "Schedulable",
            "status": "False",
            "lastTransitionTime": format_time(T0),
            "reason": "reschedule",
            "message": "why",
        }
        assert schedulable_condition({"name": "a", "conditions": [{"type": "Other"}, raw]}) == c
        assert schedulable_condition({"name": "a"}) is None
        assert schedulable_condition({"conditions": [{"type": "Schedulable", "status": "Unknown"}]}) is None

    def test_setter_keeps_time_and_message_unless_status_or_reason_change(self) -> None:
        old = Condition(False, "reschedule", "first", T0)
        assert set_condition(old, Condition(False, "reschedule", "second", T0 + 5)) is old
        flipped = Condition(True, "reschedule", "ok", T0 + 5)
        assert set_condition(old, flipped) is flipped
        other_reason = Condition(False, "recover", "x", T0 + 5)
        assert set_condition(old, other_reason) is other_reason
        assert set_condition(None, old) is old


class TestDefaultMode:
    def test_pending_timeout_is_strict(self) -> None:
        stuck = [pod("p1", created=T0)]
        at = run(DEFAULT, stuck, T0 + 10)
        assert not at.unschedulable and at.condition is None and at.event is None
        assert at.deadline == T0 + 10
        after = run(DEFAULT, stuck, T0 + 10.5)
        assert after.unschedulable and after.timed_out == ("p1",)
        assert after.condition == Condition(False, "reschedule", after.condition.message, T0 + 10)  # type: ignore[union-attr]
        assert "more than 10s" in after.condition.message  # type: ignore[union-attr]
        assert after.deadline == T0 + 10 + 20
        assert after.event is not None and after.event.type == "Warning"
        assert after.event.reason == "SubsetUnschedulable"
        assert after.event.message.startswith("subset a: 1 pod unschedulable for more than 10s; marked unschedulable")

    @pytest.mark.parametrize(
        "other",
        [
            pod("no-condition", scheduled=None),
            pod("other-reason", scheduled="SchedulerError"),
            pod("bound", node="n1"),
            pod("deleted", deleting=True),
            running("running"),
            pod("scheduled", scheduled="True", phase="Pending", node="n1"),
        ],
        ids=lambda p: p["metadata"]["name"],
    )
    def test_only_unschedulable_unbound_live_pending_pods_count(self, other: dict[str, Any]) -> None:
        d = run(DEFAULT, [other], T0 + 3600)
        assert d == Decision(unschedulable=False)

    def test_earliest_pending_deadline_and_timed_out_in_name_order(self) -> None:
        pods = [pod("p3", created=T0 + 4), pod("p2", created=T0 + 2), pod("p1", created=T0), pod("p0", created=T0)]
        d = run(DEFAULT, pods, T0 + 11)
        assert d.timed_out == ("p0", "p1")
        assert d.event is not None and "2 pods unschedulable" in d.event.message
        # p2 times out (T0 + 12) before the window that starts now ends (T0 + 31)
        assert d.deadline == T0 + 12
        fresh = run(DEFAULT, pods[:2], T0 + 3)
        assert fresh.deadline == T0 + 12 and not fresh.unschedulable

    def test_inside_the_window_the_subset_stays_marked_without_pods(self) -> None:
        d = run(DEFAULT, [], T0 + 19.9, previous=marked())
        assert d.unschedulable and d.condition == marked() and d.event is None
        assert d.deadline == T0 + 20

    def test_window_end_recovers(self) -> None:
        d = run(DEFAULT, [], T0 + 20, previous=marked())
        assert not d.unschedulable and d.deadline is None
        assert d.condition == Condition(True, "recover", "unschedulable subset recovered after 20 seconds", T0 + 20)
        assert d.event is not None and (d.event.type, d.event.reason) == ("Normal", "SubsetSchedulable")
        assert d.event.message == "subset a: schedulable again after 20s; it may receive replicas again"
        again = run(DEFAULT, [], T0 + 100, previous=d.condition)
        assert again.condition == d.condition and again.event is None and not again.unschedulable

    def test_stuck_pods_inside_the_window_do_not_extend_it(self) -> None:
        d = run(DEFAULT, [pod("p1", created=T0)], T0 + 15, previous=marked())
        assert d.unschedulable and d.condition == marked() and d.event is None
        assert d.deadline == T0 + 20

    def test_still_stuck_after_the_window_marks_again(self) -> None:
        d = run(DEFAULT, [pod("p1", created=T0 - 30)], T0 + 21.5, previous=marked())
        assert d.unschedulable
        assert d.condition is not None and not d.condition.status and d.condition.since == T0 + 21
        assert d.deadline == T0 + 21 + 20
        assert d.event is not None and "marked unschedulable again" in d.event.message

    def test_a_zero_window_sets_no_timer_in_the_past(self) -> None:
        d = run(Settings(critical=10, window=0), [pod("p1", created=T0)], T0 + 10.5)
        assert d.unschedulable and d.deadline is None

    def test_default_mode_never_labels_or_reserves(self) -> None:
        d = run(DEFAULT, [pod("p1", created=T0), running("r1")], T0 + 60)
        assert d.labels == () and d.reserved == 0 and d.held == 0


class TestReservation:
    def test_pending_past_critical_is_reserved_and_labelled(self) -> None:
        d = run(RESERVE, [pod("p1"), running("r1")], T0 + 10.5)
        assert d.unschedulable and (d.reserved, d.held) == (1, 1)
        assert d.labels == (LabelChange("p1", "true"), LabelChange("r1", "false"))
        assert d.timed_out == ("p1",)
        assert d.condition is not None and not d.condition.status and d.condition.reason == "reschedule"
        assert d.event is not None and d.event.type == "Warning"
        assert d.event.message.startswith("subset a: 1 pod reserved")

    def test_pending_before_critical_is_not_reserved_yet(self) -> None:
        d = run(RESERVE, [pod("p1")], T0 + 10)
        assert not d.unschedulable and d.reserved == 0
        assert d.labels == (LabelChange("p1", "false"),)
        assert d.deadline == T0 + 10
        assert d.condition == Condition(True, "reschedule", "no reserved pods", T0 + 10)
        assert d.event is None

    def test_labels_change_only_when_they_differ(self) -> None:
        pods = [pod("p1", reserved="true"), running("r1", reserved="false")]
        d = run(RESERVE, pods, T0 + 60, previous=marked())
        assert d.labels == () and d.reserved == 1 and d.timed_out == ()
        assert d.condition == marked() and d.event is None

    def test_marked_subset_reserves_unlabelled_pods_at_once(self) -> None:
        d = run(RESERVE, [running("new", ready_at=T0 + 100)], T0 + 101, previous=marked())
        assert d.reserved == 1 and d.labels == (LabelChange("new", "true"),) and d.deadline is None

    def test_reserved_pod_ready_past_the_window_is_released(self) -> None:
        pods = [running("r1", ready_at=T0, reserved="true")]
        waiting = run(RESERVE, pods, T0 + 20, previous=marked())
        assert waiting.reserved == 1 and waiting.deadline == T0 + 20 and waiting.labels == ()
        released = run(RESERVE, pods, T0 + 20.5, previous=marked())
        assert released.reserved == 0 and not released.unschedulable
        assert released.labels == (LabelChange("r1", "false"),)
        assert released.condition is not None and released.condition.status
        assert released.event is not None and released.event.type == "Normal"
        assert released.event.message == "subset a: no reserved pods left; substitutes scale in"

    def test_reserved_pod_at_an_old_revision_or_not_ready_stays_reserved_without_a_timer(self) -> None:
        pods = [
            running("old", reserved="true", revision="web-r1"),
            pod("pending", reserved="true"),
            pod("unready", phase="Running", scheduled="True", node="n1", reserved="true"),
        ]
        d = run(RESERVE, pods, T0 + 3600, previous=marked())
        assert d.reserved == 3 and d.deadline is None and d.labels == ()

    def test_old_revision_pods_time_out_after_the_update_started(self) -> None:
        pods = [running("old", revision="web-r1", reserved="false")]
        early = run(RESERVE, pods, T0 + 10, updated_since=T0)
        assert early.reserved == 0 and early.deadline == T0 + 10 and early.update_timeout_pods == 0
        late = run(RESERVE, pods, T0 + 10.5, updated_since=T0)
        assert late.reserved == 1 and late.update_timeout_pods == 1
        assert late.labels == (LabelChange("old", "true"),)
        no_update_time = run(RESERVE, pods, T0 + 3600)
        assert no_update_time.reserved == 0 and no_update_time.deadline is None

    def test_partition_holds_old_pods_on_purpose(self) -> None:
        pods = [
            running("o1", revision="web-r1"),
            pod("o2", revision="web-r1", scheduled="True", node="n1", phase="Running"),
            running("n1"),
        ]
        d = run(RESERVE, pods, T0 + 60, updated_since=T0, partition=1)
        assert d.update_timeout_pods == 1
        assert {c.pod: c.value for c in d.labels} == {"o1": "false", "o2": "true", "n1": "false"}

    def test_missing_pods_of_a_marked_subset_count_for_the_allocator_only(self) -> None:
        d = run(RESERVE, [pod("p1", reserved="true")], T0 + 60, previous=marked(), replicas=3)
        assert (d.reserved, d.missing, d.held) == (1, 2, 3) and d.unschedulable
        unmarked = run(RESERVE, [running("r1")], T0 + 60, replicas=3)
        assert (unmarked.missing, unmarked.unschedulable) == (0, False)

    def test_deleted_and_finished_pods_are_ignored(self) -> None:
        pods = [pod("gone", reserved="true", deleting=True), pod("done", phase="Succeeded", reserved="true")]
        d = run(RESERVE, pods, T0 + 60)
        assert d.reserved == 0 and d.labels == ()

    def test_next_deadline_is_the_earliest_of_all(self) -> None:
        pods = [
            running("ready", ready_at=T0 + 5, reserved="true"),  # trusted at T0 + 25
            pod("fresh", created=T0 + 8),  # times out at T0 + 18
            running("old", revision="web-r1"),  # update timeout at T0 + 12 + 10
        ]
        d = run(RESERVE, pods, T0 + 12, updated_since=T0 + 12)
        assert d.deadline == T0 + 18
        later = run(RESERVE, pods[:1] + pods[2:], T0 + 12, updated_since=T0 + 12)
        assert later.deadline == T0 + 22


class TestRegrow:
    def released(self) -> Decision:
        return run(RESERVE, [running("r1", reserved="false"), running("r2", reserved="false")], T0 + 60)

    def test_recovered_subset_that_grows_keeps_its_new_pods_reserved(self) -> None:
        d = regrow(RESERVE, self.released(), subset="a", previous=marked(), replicas=2, allocated=4, now=T0 + 60.5)
        assert d is not None and d.unschedulable and d.held == 2 and d.reserved == 0
        assert d.condition is not None and not d.condition.status and d.condition.since == T0 + 60
        assert d.condition.message.startswith("subset just recovered scaled up")
        assert d.event is not None and d.event.type == "Normal"
        assert "grows to 4 replicas" in d.event.message and "the 2 pods it gains" in d.event.message

    @pytest.mark.parametrize(
        ("settings", "previous", "allocated"),
        [(RESERVE, marked(), 2), (RESERVE, Condition(True, "reschedule", "", T0), 4), (RESERVE, None, 4)],
    )
    def test_only_for_a_marked_subset_that_grows(
        self, settings: Settings, previous: Condition | None, allocated: int
    ) -> None:
        assert (
            regrow(settings, self.released(), subset="a", previous=previous, replicas=2, allocated=allocated, now=T0)
            is None
        )

    def test_not_in_default_mode_nor_while_still_reserved(self) -> None:
        assert regrow(DEFAULT, self.released(), subset="a", previous=marked(), replicas=2, allocated=4, now=T0) is None
        still = run(RESERVE, [pod("p1", reserved="true")], T0 + 60, previous=marked())
        assert regrow(RESERVE, still, subset="a", previous=marked(), replicas=1, allocated=4, now=T0) is None


class TestMaxUnavailable:
    @given(st.integers(0, 1000), st.integers(0, 1000), st.integers(0, 1000))
    def test_never_negative(self, replicas: int, ready: int, timeouts: int) -> None:
        value = max_unavailable(replicas, ready, timeouts)
        assert value >= 0
        assert value == max(0, replicas - ready + timeouts)

    def test_shrinking_below_ready_is_zero_not_negative(self) -> None:
        assert max_unavailable(2, 5, 0) == 0
        assert max_unavailable(4, 0, 1) == 5

    def test_deployment_keeps_max_surge(self) -> None:
        spec: dict[str, Any] = {"strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}}
        assert override_max_unavailable("deploymentTemplate", spec, 3)
        assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 3}}
        bare: dict[str, Any] = {}
        assert override_max_unavailable("deploymentTemplate", bare, 2)
        assert bare == {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}}

    def test_recreate_deployment_gets_no_rolling_update(self) -> None:
        spec: dict[str, Any] = {"strategy": {"type": "Recreate"}}
        assert not override_max_unavailable("deploymentTemplate", spec, 3)
        assert spec == {"strategy": {"type": "Recreate"}}

    def test_zero_is_written_only_when_exact(self) -> None:
        spec: dict[str, Any] = {"strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}}
        assert not override_max_unavailable("deploymentTemplate", spec, 0)
        assert spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 1
        surging: dict[str, Any] = {"strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}}}
        assert override_max_unavailable("deploymentTemplate", surging, 0, exact=True)
        assert surging["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}

    def test_cloneset_and_statefulsets(self) -> None:
        spec: dict[str, Any] = {"updateStrategy": {"partition": 1}}
        assert override_max_unavailable("cloneSetTemplate", spec, 2)
        assert spec == {"updateStrategy": {"partition": 1, "maxUnavailable": 2}}
        sts: dict[str, Any] = {}
        assert not override_max_unavailable("statefulSetTemplate", sts, 2) and sts == {}


# --- the reconciler's wiring, with fake caches and client --------------------------------------


def store_of(objs: list[dict[str, Any]] | None = None, *, label: str | None = None) -> Any:
    """The informer's real store, holding ``objs`` (indexed by ``label``, as the pod cache is)."""
    from united.runtime.informer import Store

    store = Store(label=label)
    for o in objs or []:
        store.upsert(o)
    return store


class FakeClient:
    """Records writes; answers like the API server would, minimally."""

    def __init__(self, listed: list[dict[str, Any]] | None = None) -> None:
        self.calls: list[tuple[str, str, str, Any]] = []
        self.listed = listed or []
        """What a LIST answers (reads are not recorded in :attr:`calls`)."""
        self.selectors: list[str | None] = []

    async def list(self, resource: Any, *, namespace: str, label_selector: str | None = None) -> ObjectList:
        self.selectors.append(label_selector)
        return ObjectList(self.listed, "1", ())

    async def create(self, resource: Any, body: Any, *, namespace: str) -> Any:
        self.calls.append(("create", resource.plural, "", body))
        return json.loads(body) if isinstance(body, bytes) else body  # revisions are sent as bytes

    async def patch(self, resource: Any, name: str, body: Any, **kw: Any) -> dict[str, Any]:
        what = f"{resource.plural}/{kw['subresource']}" if kw.get("subresource") else resource.plural
        self.calls.append(("patch", what, name, body))
        return {"metadata": {"resourceVersion": "99"}}

    async def delete(self, resource: Any, name: str, **kw: Any) -> None:
        self.calls.append(("delete", resource.plural, name, None))

    def writes(self, verb: str, what: str) -> list[tuple[str, Any]]:
        return [(n, b) for v, w, n, b in self.calls if (v, w) == (verb, what)]


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, obj: Any, event_type: str, reason: str, message: str) -> None:
        self.events.append((event_type, reason, message))


class Cluster:
    """A UnitedDeployment with Deployment children a (zone-a) and b, rendered by our own
    renderer so that only adaptive decisions cause child writes."""

    def __init__(self, strategy: dict[str, Any], *, replicas: int, a: tuple[int, int], b: tuple[int, int]) -> None:
        from united.uniteddeployment.admission import admit
        from united.uniteddeployment.render import render
        from united.uniteddeployment.revision import name as revision_name

        pod_template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "m", "image": "x"}]}}
        self.obj: dict[str, Any] = {
            "apiVersion": "apps.united.io/v1alpha1",
            "kind": "UnitedDeployment",
            "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "generation": 1, "resourceVersion": "1"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "deploymentTemplate": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": pod_template},
                    }
                },
                "topology": {"subsets": [{"name": "a"}, {"name": "b"}], "scheduleStrategy": strategy},
            },
        }
        ud = admit(self.obj)
        assert ud.spec.template is not None
        self.revision = revision_name("web", ud.spec.template)
        self.children = []
        for subset, (n, ready) in zip(ud.spec.subsets, (a, b), strict=True):
            child = render(ud, subset=subset, replicas=n, partition=0, revision=self.revision, keys=KEYS).object
            child["metadata"]["name"] = f"web-{subset.name}"
            child["status"] = {"replicas": n, "readyReplicas": ready}
            self.children.append(child)
        self.pods: list[dict[str, Any]] = []
        self.client = FakeClient()
        self.recorder = FakeRecorder()
        self.owner_api_version: str | None = None

    def add_pod(self, subset: str, p: dict[str, Any]) -> None:
        p["metadata"]["namespace"] = "ns"
        p["metadata"]["labels"].update({"app": "web", KEYS.subset_name: subset, KEYS.revision: self.revision})
        self.pods.append(p)

    async def reconcile(self, now: float) -> Any:
        return await self.reconciler(now).reconcile("ns/web")

    def reconciler(self, now: float) -> Any:
        from united.kube import Resource
        from united.uniteddeployment.reconciler import Caches, Reconciler

        caches = Caches(
            uniteddeployments=store_of([self.obj]),
            revisions=store_of(),
            pods=store_of(self.pods, label=KEYS.subset_name),
            children={"deploymentTemplate": store_of(self.children)},
            owner_api_version=self.owner_api_version,
        )
        return Reconciler(
            client=self.client,  # type: ignore[arg-type]
            caches=caches,
            recorder=self.recorder,
            ud_resource=Resource("apps.united.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment"),
            clock=lambda: format_time(now),
            seconds=lambda: now,
        )

    def status_patch(self) -> dict[str, Any]:
        patches = self.client.writes("patch", "uniteddeployments/status")
        assert len(patches) == 1, patches
        status: dict[str, Any] = patches[0][1]["status"]
        return status


DEFAULT_STRATEGY = {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 10, "unschedulableDuration": 20}}


class TestReconcilerWiring:
    async def test_requeue_at_the_pending_pod_timeout_then_cap_and_remember(self) -> None:
        c = Cluster(DEFAULT_STRATEGY, replicas=2, a=(2, 1), b=(0, 0))
        c.add_pod("a", running("a-ready"))
        c.add_pod("a", pod("a-stuck", created=T0))
        before = await c.reconcile(T0 + 4)
        assert before.requeue_after == pytest.approx(6 + 0.05)
        assert c.client.writes("patch", "deployments") == []

        after = await c.reconcile(T0 + 10.5)
        # The window ends 20 s after the mark (whole seconds: T0 + 10).
        assert after.requeue_after == pytest.approx(19.5 + 0.05)
        scaled = {n: b["spec"]["replicas"] for n, b in c.client.writes("patch", "deployments")}
        assert scaled == {"web-a": 1, "web-b": 1}
        # Written in the same pass as the child writes: the mark must survive until the next one.
        status = c.status_patch()
        a = status["subsetStatuses"][0]
        assert a["reason"] == "adaptive-ready-capped"
        assert a["conditions"] == [
            {
                "type": "Schedulable",
                "status": "False",
                "lastTransitionTime": format_time(T0 + 10),
                "reason": "reschedule",
                "message": "pods pending unschedulable for more than 10s: capped at its ready pods for 20s",
            }
        ]
        assert "conditions" not in status["subsetStatuses"][1]
        assert [e[:2] for e in c.recorder.events] == [("Warning", "SubsetUnschedulable"), ("Normal", "ScaledSubset")]
        assert c.recorder.events[1][2] == (
            "Deployment web-a of subset a: scaled from 2 to 1; Deployment web-b of subset b: scaled from 0 to 1"
        )

    async def test_reservation_labels_pods_filters_hpa_and_overrides_max_unavailable(self) -> None:
        strategy = {**DEFAULT_STRATEGY, "adaptive": {**DEFAULT_STRATEGY["adaptive"], "reserveUnschedulablePods": True}}
        c = Cluster(strategy, replicas=2, a=(2, 0), b=(0, 0))
        c.add_pod("a", pod("a-1", created=T0))
        c.add_pod("a", pod("a-2", created=T0 + 3))
        result = await c.reconcile(T0 + 11)
        labels = {n: b["metadata"]["labels"][RESERVED] for n, b in c.client.writes("patch", "pods")}
        assert labels == {"a-1": "true", "a-2": "false"}
        assert result.requeue_after == pytest.approx(2 + 0.05)  # a-2 times out at T0 + 13
        status = c.status_patch()
        assert status["labelSelector"] == f"app=web,{RESERVED}=false"
        assert (status["replicas"], status["reservedPods"]) == (1, 1)
        children = dict(c.client.writes("patch", "deployments"))
        # a keeps its 2 pods (1 reserved): 1 substitute in b; a's rollout may take 2 - 0 pods down.
        assert children["web-a"]["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 2
        assert children["web-b"]["spec"] == {"replicas": 1}


# --- a subset whose cluster cannot be seen ---------------------------------------------


def down(now: float, previous: Condition | None = None, settings: Settings = DEFAULT, **kw: Any) -> Decision:
    return cluster_down(settings, subset="m1", cluster="member-1", since=T0, now=now, previous=previous, **kw)


def test_cluster_down_before_the_critical_time_waits_for_it() -> None:
    assert down(T0) == Decision(unschedulable=False, deadline=T0 + 10)
    assert down(T0 + 9.95) == Decision(unschedulable=False, deadline=T0 + 10)
    kept = Condition(True, "recover", "fine", T0 - 100)
    assert down(T0 + 5, kept).condition == kept


def test_cluster_down_after_the_critical_time_marks_the_subset() -> None:
    decision = down(T0 + 10)
    message = "cluster member-1 unreachable for more than 10s: its replicas move to later subsets"
    assert decision == Decision(
        unschedulable=True,
        condition=Condition(False, "ClusterUnreachable", message, T0 + 10),
        event=Event("Warning", "SubsetUnschedulable", f"subset m1: {message}"),
    )
    assert decision.deadline is None


def test_cluster_down_holds_the_mark_while_down_without_a_new_event() -> None:
    marked = down(T0 + 10).condition
    assert marked is not None
    for now in (T0 + 11, T0 + 10 + 20, T0 + 10_000):
        held = down(now, marked)
        assert (held.unschedulable, held.condition, held.event, held.deadline) == (True, marked, None, None)


def test_cluster_down_holds_a_mark_for_stuck_pods_too() -> None:
    stuck = Condition(False, "reschedule", "pods pending", T0 - 5)
    assert down(T0 + 100, stuck) == Decision(unschedulable=True, condition=stuck)


def test_cluster_back_gets_the_window_from_the_mark() -> None:
    marked = down(T0 + 10).condition
    back = run(DEFAULT, [running("p1")], T0 + 15, previous=marked)
    assert (back.unschedulable, back.deadline) == (True, T0 + 30)
    recovered = run(DEFAULT, [running("p1")], T0 + 30, previous=marked)
    assert recovered.unschedulable is False
    assert recovered.condition is not None and recovered.condition.reason == "recover"


def test_cluster_down_in_reservation_mode_reserves_the_last_known_replicas() -> None:
    decision = down(T0 + 10, settings=RESERVE, replicas=4)
    assert (decision.unschedulable, decision.reserved, decision.held) == (True, 4, 4)
    assert down(T0 + 10, replicas=4).reserved == 0
