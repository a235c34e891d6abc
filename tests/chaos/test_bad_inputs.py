"""The bad-input matrix: every file in ``bad_inputs/`` is one invalid manifest.

Each file starts with three comment lines::

    # <what is wrong>
    # validate: <the exact line `united validate FILE` prints on stderr; FILE stands for the path>
    # cluster: stalled                  the API server stores it; the controller reports this same line
    # cluster: stalled: <line>          ... but the API server pruned it first, so the controller sees <line>
    # cluster: rejected 422: <text>     the CRD schema (or the API server's own checks) refuse it: 422 with <text>
    # cluster: rejected 400             not a UnitedDeployment object at all: the API server cannot decode it
    # cluster: <verdict>; 1.25+: <verdict>   the second from 1.25, where the CRD's CEL rules apply

``united validate`` (a subprocess) must exit 2 with that line and no traceback. On the cluster,
every manifest is sent as it is; those the API server stores must get ``Stalled``
(``InvalidSpec``, the line in its message) and a Warning Event, with no child created. Then
each of them (but the two whose error is in the name) is applied as an update to a
converged UnitedDeployment, which must stall with the line and keep its children untouched,
while another UnitedDeployment keeps converging and the controller keeps running. The
controller's request log (a proxy without faults) shows no write to a child other than the
bystander's.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.chaos.figures import record
from tests.chaos.invariants import scale, storm_doc, wait_converged
from tests.chaos.support import proxied_controller, proxy_for, raw_create
from tests.e2e.conftest import KUBE_VERSION
from tests.e2e.controller.helpers import CHILDREN, EVENTS, UD, children, condition
from tests.unit.uniteddeployment.test_validation import CASES as RULES
from tests.unit.uniteddeployment.test_validation import base
from united.api.crdrules import RULES_SINCE
from united.devcluster.cluster import LocalCluster
from united.devcluster.simulation import Simulation
from united.kube.client import JSON, KubeClient
from united.kube.errors import ApiError
from united.kube.wait import eventually

HERE = Path(__file__).parent / "bad_inputs"
ROOT = Path(__file__).resolve().parents[2]
CHILD_RESOURCES = ("deployments", "statefulsets", "clonesets")


@dataclass(frozen=True)
class Case:
    path: Path
    title: str
    validate: str
    verdict: str
    """``stalled`` or ``rejected``."""
    code: int
    text: str
    """What the Stalled message or the API server's answer must contain."""
    exact: bool = True
    """False: the API server's own wording, recorded from 1.20's, which later releases change
    ("Too long: may not be more than 63 bytes"); on those only its field path must match."""

    @property
    def id(self) -> str:
        return self.path.stem

    def document(self) -> JSON:
        doc: JSON = yaml.safe_load(self.path.read_text())
        return doc


def _load(path: Path) -> Case:
    head = [line[2:] for line in path.read_text().splitlines()[:3]]
    title, validate, cluster = head
    assert validate.startswith("validate: ") and cluster.startswith("cluster: "), f"{path.name}: bad header"
    validate = validate.removeprefix("validate: ").replace("FILE", str(path))
    cluster = cluster.removeprefix("cluster: ")
    older, _, newer = cluster.partition(f"; {RULES_SINCE[0]}.{RULES_SINCE[1]}+: ")
    recent = (KUBE_VERSION.major, KUBE_VERSION.minor) >= RULES_SINCE
    cluster = newer if newer and recent else older
    if cluster == "stalled":
        return Case(path, title, validate, "stalled", 0, validate)
    if cluster.startswith("stalled: "):
        return Case(path, title, validate, "stalled", 0, cluster.removeprefix("stalled: "))
    found = re.fullmatch(r"rejected (\d{3})(?:: (.*))?", cluster)
    assert found, f"{path.name}: bad cluster verdict {cluster!r}"
    return Case(path, title, validate, "rejected", int(found[1]), found[2] or "", exact=bool(newer) or not recent)


def _expected(case: Case) -> str:
    """What the API server's refusal must contain (see :attr:`Case.exact`)."""
    text = _unindexed(case.text)
    return text if case.exact else text.split(": ", 1)[0] + ": "


def _unindexed(text: str) -> str:
    """``text`` without list indices: 1.20's schema errors say ``subsets.name``, newer ones ``subsets[0].name``."""
    return re.sub(r"\[\d+\]", "", text)


CASES = [_load(p) for p in sorted(HERE.glob("*.yaml"))]
STORED = [c for c in CASES if c.verdict == "stalled"]
SPEC_ONLY = [c for c in STORED if c.document()["metadata"]["name"].startswith("bad-")]
"""Stored cases whose error is in the spec alone (not in the name), so they apply to any object."""


@pytest.mark.chaos
def test_the_matrix_covers_every_validation_rule() -> None:
    assert len(CASES) >= 40
    lines = {c.validate for c in CASES}
    missing = [title for title, _, line in RULES if line not in lines]
    assert not missing, f"validation rules without a bad input file: {missing}"
    assert {c.verdict for c in CASES} == {"stalled", "rejected"}


@pytest.mark.chaos
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_united_validate_prints_the_field_error(case: Case) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "united", "validate", str(case.path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert case.validate in done.stderr.splitlines(), done.stderr


async def _owners_of_children(kube: KubeClient, namespace: str) -> set[str]:
    """Names of the owners of every workload of every child kind in ``namespace``."""
    owners = set()
    for resource in CHILDREN.values():
        for child in (await kube.list(resource, namespace=namespace)).items:
            owners |= {ref["name"] for ref in child["metadata"].get("ownerReferences") or []}
    return owners


def _child_facts(kids: list[JSON]) -> dict[str, Any]:
    return {
        k["metadata"]["name"]: (
            k["metadata"]["generation"],
            k["metadata"].get("labels"),
            k["metadata"].get("annotations"),
            k["metadata"].get("ownerReferences"),
        )
        for k in kids
    }


@pytest.mark.chaos
@pytest.mark.e2e
@pytest.mark.timeout(600)
async def test_the_cluster_refuses_or_stalls_every_bad_input_and_serves_the_rest(
    cluster: LocalCluster,
    sim: Simulation,
    kube: KubeClient,
    namespace: str,
    controller_identity: Path,
    tmp_path: Path,
) -> None:
    proxy = proxy_for(cluster, controller_identity, name="bad-inputs")
    controller = proxied_controller(proxy, controller_identity, tmp_path / "proxy.kubeconfig", name="chaos-bad-inputs")
    controller.start()
    try:
        assert controller.proc is not None
        pid = controller.proc.pid
        victim = base()  # the valid manifest every bad input was derived from
        victim["metadata"] = {"name": "victim"}
        await kube.create(UD, victim, namespace=namespace)
        await kube.create(UD, storm_doc("bystander", 0, replicas=3), namespace=namespace)
        await wait_converged(
            kube, namespace, within=90, what="victim and bystander converged", controllers=[controller]
        )
        before = _child_facts(await children(kube, namespace, victim))
        assert len(before) == 2
        mark = proxy.log.mark()

        # 1. Every manifest as it is.
        rejected = 0
        for case in CASES:
            if case.verdict == "rejected" and case.code == 400:
                status, text = await raw_create(cluster, UD, namespace, case.path.read_bytes())
                assert status == 400, f"{case.id}: {status} {text}"
                rejected += 1
            elif case.verdict == "rejected":
                with pytest.raises(ApiError) as refused:
                    await kube.create(UD, case.document(), namespace=namespace)
                assert refused.value.status == case.code, f"{case.id}: {refused.value}"
                assert _expected(case) in _unindexed(str(refused.value)), f"{case.id}: {refused.value}"
                rejected += 1
            else:
                await kube.create(UD, case.document(), namespace=namespace)
        await scale(kube, namespace, "bystander", 5)

        async def all_stalled() -> None:
            uds = {u["metadata"]["name"]: u for u in (await kube.list(UD, namespace=namespace)).items}
            events = (await kube.list(EVENTS, namespace=namespace)).items
            warned = {
                e["involvedObject"]["name"] for e in events if e["type"] == "Warning" and e["reason"] == "InvalidSpec"
            }
            waiting = []
            for case in STORED:
                name = case.document()["metadata"]["name"]
                stalled = condition(uds[name], "Stalled")
                if (stalled.get("status"), stalled.get("reason")) != ("True", "InvalidSpec"):
                    waiting.append(f"{case.id}: not stalled: {stalled}")
                elif case.text not in stalled["message"]:
                    waiting.append(f"{case.id}: {stalled['message']!r} lacks {case.text!r}")
                elif name not in warned:
                    waiting.append(f"{case.id}: no Warning Event")
            assert not waiting, f"{len(waiting)} not yet: " + "; ".join(waiting[:5])

        await eventually(all_stalled, within=120, interval=0.5, what="every stored bad input stalled with an Event")
        bad_names = {c.document()["metadata"]["name"] for c in STORED}
        assert not bad_names & await _owners_of_children(kube, namespace), "children created for bad inputs"

        # 2. Every stored manifest's spec as an update of a converged UnitedDeployment.
        for case in SPEC_ONLY:
            live = await kube.get(UD, "victim", namespace=namespace)
            live["spec"] = case.document()["spec"]
            updated = await kube.replace(UD, live, namespace=namespace)

            async def stalled(generation: int = updated["metadata"]["generation"], case: Case = case) -> None:
                obj = await kube.get(UD, "victim", namespace=namespace)
                c = condition(obj, "Stalled")
                assert obj["status"].get("observedGeneration") == generation
                assert (c.get("status"), c.get("reason")) == ("True", "InvalidSpec"), c
                assert case.text in c["message"], c["message"]

            await eventually(stalled, within=30, interval=0.2, what=f"victim stalled by {case.id}")
            assert _child_facts(await children(kube, namespace, victim)) == before, f"{case.id} changed a child"
        assert controller.proc.poll() is None and controller.proc.pid == pid

        # Nothing but the bystander's children was written meanwhile.
        writes = [
            f"{e.method} {e.path}"
            for e in proxy.log.writes(identity="bad-inputs", since=mark)
            if e.resource in CHILD_RESOURCES and not (e.name or "").startswith("bystander-")
        ]
        assert not writes, f"child writes for bad inputs: {writes}"

        # 3. The victim, fixed, converges again; the bad ones go.
        for case in STORED:
            await kube.delete(UD, case.document()["metadata"]["name"], namespace=namespace)
        live = await kube.get(UD, "victim", namespace=namespace)
        live["spec"] = victim["spec"]
        await kube.replace(UD, live, namespace=namespace)
        await wait_converged(
            kube, namespace, within=90, what="victim fixed, bystander scaled", controllers=[controller]
        )
        assert _child_facts(await children(kube, namespace, victim)).keys() == before.keys()
    finally:
        code = controller.stop()
        proxy.stop()
    assert code == 0, f"controller exited with {code}; see {controller.log_path}"
    record(
        "bad inputs",
        {
            "manifests": len(CASES),
            "united validate: exit 2 with the field error, no traceback": len(CASES),
            "refused by the API server (422 schema, 400 undecodable)": rejected,
            "stored, then Stalled with a Warning Event and no child": len(STORED),
            "applied as updates to a converged UnitedDeployment, children untouched": len(SPEC_ONLY),
            "controller restarts": 0,
        },
    )
