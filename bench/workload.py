"""What the bench creates and expects: UnitedDeployment manifests, their allocations, the
exact writes a controller must make for them (the floor's plan), and plain Deployments.

Expectations come from the pure core (``allocation``, ``render``, ``history`` and ``status``
of :mod:`united.uniteddeployment`), so the floor writes byte-for-byte the children,
ControllerRevision and status the controller writes.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Mapping
from typing import Any

from united.api.document import Json
from united.api.groups import GROUP
from united.api.selector import parse as parse_selector
from united.uniteddeployment.admission import admit
from united.uniteddeployment.allocation import SubsetState, allocate
from united.uniteddeployment.history import plan as history_plan
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import UnitedDeployment
from united.uniteddeployment.render import owner_reference, render
from united.uniteddeployment.status import ChildView, Facts, compute

IMAGE = "registry.invalid/united/bench:1"
KEYS = Keys(GROUP)
ZONES = ("zone-a", "zone-b", "zone-c")


def ud_name(i: int) -> str:
    return f"ud-{i:05d}"


def subset_names(m: int) -> list[str]:
    return [f"s{j}" for j in range(m)]


def united_deployment(name: str, namespace: str, *, subsets: int, replicas: int, group: str = GROUP) -> Json:
    """A UnitedDeployment of Deployments: ``subsets`` zone subsets, replicas split evenly.

    In OpenKruise's group it carries ``revisionHistoryLimit``, which OpenKruise's own
    admission would default: the bench creates objects before any controller runs, and
    OpenKruise's controller reads that field without a default of its own."""
    pod = {
        "metadata": {"labels": {"app": name}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": IMAGE,
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }
            ],
            "terminationGracePeriodSeconds": 0,
        },
    }
    subset_list = [
        {
            "name": s,
            "nodeSelectorTerm": {
                "matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [ZONES[j % len(ZONES)]]}
                ]
            },
        }
        for j, s in enumerate(subset_names(subsets))
    ]
    doc: Json = {
        "apiVersion": f"{group}/v1alpha1",
        "kind": "UnitedDeployment",
        "metadata": {"name": name, "namespace": namespace, "labels": {"bench.united.dev/ud": "true"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "deploymentTemplate": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"selector": {"matchLabels": {"app": name}}, "template": pod},
                }
            },
            "topology": {"subsets": subset_list},
        },
    }
    if group != GROUP:
        doc["spec"]["revisionHistoryLimit"] = 10
    return doc


def allocation(
    doc: Mapping[str, Any], replicas: int | None = None, state: Mapping[str, int] | None = None
) -> dict[str, int]:
    """Replicas per subset the controller will give, given the children's replicas now."""
    ud = admit(dict(doc), replicas=replicas)
    now = {name: SubsetState(replicas=n) for name, n in (state or {}).items()}
    return {a.name: a.replicas for a in allocate(ud.spec, now).subsets}


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def floor_plan(doc: Mapping[str, Any]) -> Json:
    """The writes a controller must make for a new UnitedDeployment: its ControllerRevision,
    one child per subset and one status patch. Owner UIDs are left empty (the floor script
    fills them in from its LIST)."""
    ud: UnitedDeployment = admit(dict(doc))
    owner = owner_reference(ud)
    history = history_plan(ud, [], owner_reference=owner, current=None, collision_count=0)
    assert history.create is not None
    plan = allocate(ud.spec, {})
    children = []
    applied: dict[str, bool] = {}
    views: dict[str, ChildView] = {}
    for subset in ud.spec.subsets:
        a = plan[subset.name]
        rendered = render(
            ud, subset=subset, replicas=a.replicas, partition=a.partition, revision=history.updated, keys=KEYS
        )
        children.append(rendered.object)
        applied[subset.name] = rendered.partition_applied
        views[subset.name] = ChildView(name="", spec_replicas=a.replicas, current=False)
    status = compute(
        Facts(
            generation=1,
            previous={},
            label_selector=str(parse_selector(ud.spec.selector.to_dict())) if ud.spec.selector else "",
            now=_now(),
            plan=plan,
            children=views,
            partition_applied=applied,
            updated_revision=history.updated,
            current_revision=None,
            collision_count=history.collision_count,
        )
    )
    return {"revision": history.create, "children": children, "status": status}


def with_owner(obj: Json, uid: str) -> Json:
    """``obj`` with the UID filled into its controller owner reference."""
    out = copy.deepcopy(obj)
    for ref in out["metadata"].get("ownerReferences") or []:
        ref["uid"] = uid
    return out


def plain_deployment(
    name: str, namespace: str, *, replicas: int, subset_label: bool, template: Json | None = None
) -> Json:
    """A Deployment shaped like a rendered child. ``subset_label``: carries the subset label,
    so the controller's child informer caches it (an orphan: no owner)."""
    if template is None:
        doc = united_deployment("mem", namespace, subsets=1, replicas=replicas)
        template = floor_plan(doc)["children"][0]
    body = copy.deepcopy(template)
    meta = body["metadata"]
    meta.pop("generateName", None)
    meta.pop("ownerReferences", None)
    meta["name"] = name
    meta["namespace"] = namespace
    if not subset_label:
        for labels in (meta.get("labels") or {}, body["spec"]["selector"]["matchLabels"]):
            labels.pop(KEYS.subset_name, None)
        body["spec"]["template"]["metadata"]["labels"].pop(KEYS.subset_name, None)
    body["spec"]["replicas"] = replicas
    return body


def pod(name: str, namespace: str, *, template: Json) -> Json:
    """A pod as a child's ReplicaSet makes it from ``template`` (a rendered child), left to no
    scheduler (``schedulerName`` names none) so it stays where the bench puts it."""
    spec = copy.deepcopy(template["spec"]["template"])
    labels = {**spec["metadata"].get("labels", {}), "pod-template-hash": "5d4f8c9b7"}
    spec["spec"]["schedulerName"] = "bench-nobody"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": spec["spec"],
    }


def pod_status(ip: str) -> Json:
    """A running, ready pod's status as a kubelet reports it (one container)."""
    now = _now()
    return {
        "phase": "Running",
        "conditions": [
            {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
            for kind in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
        ],
        "hostIP": "10.0.0.1",
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": now,
        "qosClass": "Burstable",
        "containerStatuses": [
            {
                "name": "main",
                "state": {"running": {"startedAt": now}},
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                "image": IMAGE,
                "imageID": IMAGE + "@sha256:" + "0" * 64,
                "containerID": "containerd://" + "1" * 64,
                "started": True,
            }
        ],
    }


def deployment_status(replicas: int, generation: int = 1) -> Json:
    """A Deployment status as the deployment controller writes it for a healthy rollout."""
    now = _now()
    return {
        "observedGeneration": generation,
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
        "conditions": [
            {
                "type": "Available",
                "status": "True",
                "lastUpdateTime": now,
                "lastTransitionTime": now,
                "reason": "MinimumReplicasAvailable",
                "message": "Deployment has minimum availability.",
            },
            {
                "type": "Progressing",
                "status": "True",
                "lastUpdateTime": now,
                "lastTransitionTime": now,
                "reason": "NewReplicaSetAvailable",
                "message": 'ReplicaSet "child-5d4f8c9b7" has successfully progressed.',
            },
        ],
    }
