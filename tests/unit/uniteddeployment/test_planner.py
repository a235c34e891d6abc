"""A pass as data: the planner turns what was read into the writes it intends and the status,
with no client; the executor sends the list in order and folds its failures into the status."""

from __future__ import annotations

import copy
import json
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, cast

import pytest

from tests.unit.uniteddeployment.test_adaptive import KEYS, FakeClient, FakeRecorder, store_of
from tests.unit.uniteddeployment.test_remote import ud as manifest
from united.api.document import Json
from united.kube import Resource
from united.kube.errors import Conflict
from united.multicluster.identity import RemoteKeys
from united.runtime.controller import RetryableError
from united.uniteddeployment import history, planner, sync
from united.uniteddeployment.admission import admit
from united.uniteddeployment.children import claim
from united.uniteddeployment.executor import Execution
from united.uniteddeployment.intents import CHILD, REVISION, Emit, Stage, Write
from united.uniteddeployment.reconciler import Caches, Reconciler
from united.uniteddeployment.sites import Site

UD = Resource("apps.united.io", "v1alpha1", "uniteddeployments", True, "UnitedDeployment")


@dataclass(frozen=True)
class Host:
    cluster: str | None = None
    usable: bool = True
    remote: RemoteKeys | None = None
    reason: str = ""
    since: float = 0.0
    detail: str = ""


def run(steps: Generator[None, None, planner.Pass]) -> planner.Pass:
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def seen(obj: Json, *, children: list[Json] = (), revisions: list[Json] = (), previous: Json | None = None) -> Any:  # type: ignore[assignment]
    ud = admit(obj)
    assert ud.spec.template is not None
    revs = planner.Revisions(list(revisions), [], lambda name: False, history.Likeness(ud.spec.template))
    i = sync.Inputs(ud, previous or {}, KEYS, 1_000.0)
    return planner.Seen(i, "ns/web", 1, "T", "deploymentTemplate", revs, claim(ud, children, KEYS), Host())


def applied(obj: Json, planned: planner.Pass) -> tuple[list[Json], list[Json]]:
    """The children and revisions as the API server keeps them once ``planned`` is sent."""
    children, revisions = [], []
    for n, w in enumerate(x for x in planned.intents if isinstance(x, Write)):
        if w.target == REVISION:
            revisions.append(json.loads(cast(bytes, w.body)) | {"metadata": {"name": w.name, "namespace": "ns"}})
        else:
            child = copy.deepcopy(cast(Json, w.body))
            child["metadata"] |= {"name": f"web-{n}", "uid": f"c{n}", "resourceVersion": "5"}
            children.append(child)
    for r in revisions:
        r["metadata"]["ownerReferences"] = [{"uid": "u1", "controller": True, "kind": "UnitedDeployment"}]
    return children, revisions


def test_a_new_uniteddeployment_plans_its_revision_then_its_children_in_topology_order() -> None:
    obj = manifest({"name": "a"}, {"name": "b"}, replicas=3)
    planned = run(planner.plan(seen(obj)))
    shape = [(w.stage, w.verb, w.target) for w in planned.intents if isinstance(w, Write)]
    assert shape == [
        (Stage.REVISIONS, "create", REVISION),
        (Stage.CHILDREN, "create", CHILD),
        (Stage.CHILDREN, "create", CHILD),
    ]
    assert [i.stage for i in planned.intents] == sorted(i.stage for i in planned.intents)
    bodies = [cast(Json, w.body) for w in planned.intents if isinstance(w, Write) and w.target == CHILD]
    assert [b["metadata"]["labels"][KEYS.subset_name] for b in bodies] == ["a", "b"]
    status = planned.report.status([])
    assert status is not None
    assert [s["desired"] for s in status["subsetStatuses"]] == [b["spec"]["replicas"] for b in bodies]
    assert sum(b["spec"]["replicas"] for b in bodies) == 3
    failed = planned.report.status(["create a: conflict"])
    assert failed is not None and "create a: conflict" in json.dumps(failed["conditions"])


def test_a_pass_over_what_it_wrote_intends_no_write() -> None:
    obj = manifest({"name": "a"}, {"name": "b"}, replicas=3)
    first = run(planner.plan(seen(obj)))
    children, revisions = applied(obj, first)
    status = first.report.status([])
    again = run(planner.plan(seen(obj, children=children, revisions=revisions, previous=status)))
    assert [i for i in again.intents if isinstance(i, Write)] == []


def test_a_child_to_adopt_puts_the_owner_recheck_first() -> None:
    obj = manifest({"name": "a"}, replicas=1)
    first = run(planner.plan(seen(obj)))
    children, revisions = applied(obj, first)
    for child in children:
        child["metadata"]["ownerReferences"] = []  # an orphan with our labels
    planned = run(planner.plan(seen(obj, children=children, revisions=revisions)))
    writes = [w for w in planned.intents if isinstance(w, Write)]
    assert (writes[0].stage, writes[0].verb) == (Stage.GUARD, "recheck")
    assert [w.verb for w in writes[1:]] == ["patch"] and "ownerReferences" in json.dumps(writes[1].body)


class Refusing(FakeClient):
    async def patch(self, resource: Any, name: str, body: Any, **kw: Any) -> Json:
        self.calls.append(("patch", resource.plural, name, body))
        raise Conflict("the object has been modified")


async def test_the_executor_sends_the_list_in_order_and_collects_a_failed_child_write() -> None:
    obj = manifest({"name": "a"}, replicas=1)
    client, recorder = Refusing(), FakeRecorder()
    caches = Caches(uniteddeployments=store_of([obj]), revisions=store_of(), pods=store_of())
    r = Reconciler(client=client, caches=caches, recorder=recorder, ud_resource=UD)  # type: ignore[arg-type]
    planned = planner.Pass(
        [
            Emit(Stage.PODS, "Normal", "First", "before any write"),
            Write(
                Stage.CHILDREN,
                "patch",
                CHILD,
                "web-a",
                {"spec": {"replicas": 2}},
                "deploymentTemplate",
                action="update",
                what="a",
            ),
            Write(
                Stage.CLEANUP,
                "delete",
                CHILD,
                "web-z",
                variant="deploymentTemplate",
                action="delete",
                what="z",
                success=("SuccessfulDelete", "Deleted web-z"),
            ),
        ],
        planner.Report(fixed=None),
    )
    host = Site(None, cast(Any, client), None, None)
    with pytest.raises(RetryableError, match="update a: conflict"):
        await Execution(r, obj, {}, {None: host}).run(planned)
    assert [(verb, name) for verb, _, name, _ in client.calls] == [("patch", "web-a"), ("delete", "web-z")]
    assert [e[1] for e in recorder.events] == ["First", "SuccessfulDelete"]
