"""Least privilege.

Static: the shipped ClusterRole and leader-election Role have no wildcards; the Deployment
runs the container as non-root with a read-only root filesystem, no privilege escalation and
no capabilities; the Dockerfile's final stage switches to a numeric non-root USER.

Dynamic: the controller (with leader election, under its ServiceAccount, through a fault
proxy that forwards its token) serves a representative workload: every child kind, scale,
subsets added and removed (children created and deleted, of every kind), template updates
past the revision history limit and back, adoption of an orphaned child, an invalid spec and
its repeated Event, deletion, and last (it fills a zone) reservation, which labels the pods
of a subset that cannot schedule. The proxy's log of what it asked for is compared with what
the roles grant: the API server refused nothing, and every granted permission that nothing
used is listed and must be one of those known and explained in ``docs/reliability.md``.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from pathlib import Path

import pytest
import yaml

from tests.chaos.figures import record
from tests.chaos.invariants import KEYS, scale, wait_converged
from tests.chaos.support import proxied_controller, proxy_for
from tests.e2e.conftest import KUBE_VERSION
from tests.e2e.controller.helpers import DEPLOYMENTS, EVENTS, PODS, UD, children, condition, get_ud, patch_ud, ud, zone
from tests.e2e.workloadspread import harness
from tests.support.controller import SYSTEM
from tests.support.faultproxy import LogEntry
from united import data, kustomization
from united.controller.webhooks import MUTATING, VALIDATING
from united.devcluster.cluster import LocalCluster
from united.devcluster.installation import DEV_WEBHOOK_CONFIGURATIONS
from united.devcluster.simulation import Simulation
from united.kube.client import (
    JSON,
    LEASES,
    NAMESPACES,
    SECRETS,
    KubeClient,
    PatchType,
)
from united.kube.errors import NotFound
from united.kube.wait import eventually
from united.workloadspread.model import DELETION_COST_ANNOTATION, MATCHED_ANNOTATION
from united.workloadspread.webhookconfig import EXCLUDE_LABEL
from united.workloadspread.webhookconfig import NAME as WEBHOOK_CONFIGURATION

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "manifests" / "base"

Permission = tuple[str, str, str]
"""(API group, resource[/subresource], verb)."""

UNUSED_AND_KNOWN: frozenset[Permission] = frozenset(
    {
        # Written by no request: the API server checks it when a child's owner reference sets
        # blockOwnerDeletion (OwnerReferencesPermissionEnforcement admission, off on the local
        # control plane, on in e.g. OpenShift). Kept.
        ("apps.united.io", "uniteddeployments/finalizers", "update"),
        # Written only for a Cluster object (multi-cluster), which this run has none of
        # (tests/e2e/multicluster/test_clusters.py writes it under the same role).
        ("apps.united.io", "clusters/status", "patch"),
        # The remote-children finalizer, only on UnitedDeployments with a subset in a member
        # cluster (tests/e2e/multicluster/test_multicluster_lifecycle.py).
        ("apps.united.io", "uniteddeployments", "patch"),
    }
)
"""Granted, not seen in the run, and kept on purpose (``docs/reliability.md`` says why)."""


def _docs(path: Path) -> list[JSON]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _rules(kind: str, path: Path) -> list[JSON]:
    return [rule for doc in _docs(path) if doc["kind"] == kind for rule in doc["rules"]]


def _granted(rules: Iterable[JSON]) -> set[Permission]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule.get("apiGroups") or []
        for resource in rule.get("resources") or []
        for verb in rule.get("verbs") or []
    }


WS_UNUSED_AND_KNOWN: frozenset[Permission] = frozenset(
    {
        # Adaptive rescheduling deletes a pod that stays unschedulable (tests/e2e/workloadspread).
        ("", "pods", "delete"),
        # Certificate renewal replaces the Secret (tests/e2e/runtime/test_webhooks_e2e.py).
        ("", "secrets", "update"),
        # The configurations are patched only when they differ from what the controller wants
        # (always, in-cluster, for the caBundle of the shipped ones); here they were created fresh.
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "patch"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "patch"),
        # The webhook re-reads a WorkloadSpread after a booking conflict (409), and GETs a pod's
        # owner its cache has not seen yet: both depend on timing.
        ("apps.united.io", "workloadspreads", "get"),
        ("apps", "deployments", "get"),
        ("apps", "replicasets", "get"),
        ("apps", "statefulsets", "get"),
        ("batch", "jobs", "get"),
        ("apps.kruise.io", "clonesets", "get"),
        ("apps.kruise.io", "statefulsets", "get"),
        # The opt-out label goes on kube-system and the controller's namespace only where the
        # server does not label namespaces with their name (1.20); since 1.21 that label excludes them.
        *([("", "namespaces", "patch")] if KUBE_VERSION.at_least(21) else []),
    }
)
"""Granted by the WorkloadSpread roles and possibly unused by the run below, each for a reason."""

CLUSTER_RULES = _rules("ClusterRole", BASE / "clusterrole.yaml")
LEASE_RULES = _rules("Role", BASE / "leader-election.yaml")
WS_CLUSTER_RULES = _rules("ClusterRole", BASE / "workloadspread-rbac.yaml")
WS_SECRET_RULES = _rules("Role", BASE / "workloadspread-rbac.yaml")
WS_RULES = [*WS_CLUSTER_RULES, *WS_SECRET_RULES]
"""The controller starts the WorkloadSpread informers in every run, so a UnitedDeployment run
may use these too; whether each is needed is the WorkloadSpread run's question."""
KRUISE_RULES = _rules("ClusterRole", ROOT / "manifests" / "kruise" / "clusterrole.yaml")


@pytest.mark.chaos
def test_the_shipped_roles_have_no_wildcards() -> None:
    assert CLUSTER_RULES and LEASE_RULES
    for rule in (*CLUSTER_RULES, *LEASE_RULES, *WS_CLUSTER_RULES, *WS_SECRET_RULES, *KRUISE_RULES):
        assert not rule.get("nonResourceURLs"), rule
        for field in ("apiGroups", "resources", "verbs", "resourceNames"):
            assert all("*" not in value for value in rule.get(field) or []), rule
        assert not {"escalate", "bind", "impersonate"} & set(rule["verbs"]), rule
    secrets = {r for _, r, _ in _granted((*CLUSTER_RULES, *LEASE_RULES))} & {"secrets", "configmaps", "nodes"}
    assert not secrets, f"the controller needs none of {secrets}"
    # The Lease: create (its name is not known before it exists), get/update of its one name.
    named = [r for r in LEASE_RULES if r.get("resourceNames")]
    assert named == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["united-controller"],
            "verbs": ["get", "update"],
        }
    ]


@pytest.mark.chaos
def test_the_workloadspread_roles_write_only_what_they_name() -> None:
    """Cluster-wide, WorkloadSpread writes only its own kind, pods, and objects it names
    (its two webhook configurations, the compat CRD, the two namespaces it labels out of its
    webhooks); Secrets only in its own namespace, by name but for create (whose name RBAC
    cannot know); creating webhook configurations is in no shipped role (manifests/dev only)."""
    writes = {"create", "update", "patch", "delete", "deletecollection"}
    unnamed_writes = {
        (group, resource, verb)
        for rule in WS_CLUSTER_RULES
        if not rule.get("resourceNames")
        for group, resource, verb in _granted([rule])
        if verb in writes
    }
    assert unnamed_writes == {
        ("apps.united.io", "workloadspreads/status", "patch"),
        ("", "pods", "patch"),
        ("", "pods", "delete"),
    }
    named = sorted(
        (rule["apiGroups"], rule["resources"], rule["resourceNames"], rule["verbs"])
        for rule in WS_CLUSTER_RULES
        if rule.get("resourceNames")
    )
    assert named == [
        ([""], ["namespaces"], ["kube-system", "united-system"], ["get", "patch"]),
        (
            ["admissionregistration.k8s.io"],
            ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
            ["united-workloadspread"],
            ["get", "patch"],
        ),
        (["apiextensions.k8s.io"], ["customresourcedefinitions"], ["workloadspreads.apps.kruise.io"], ["get", "patch"]),
    ]
    assert not {"secrets", "configmaps"} & {r for _, r, _ in _granted(WS_CLUSTER_RULES)}
    assert WS_SECRET_RULES == [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
        {
            "apiGroups": [""],
            "resources": ["secrets"],
            "resourceNames": ["united-webhook-certs"],
            "verbs": ["get", "update"],
        },
    ]
    kruise = {(g, r, v) for g, r, v in _granted(KRUISE_RULES) if r.startswith("workloadspreads")}
    ours = {("apps.kruise.io", r, v) for g, r, v in _granted(WS_CLUSTER_RULES) if g == "apps.united.io"}
    assert kruise == ours, "the kruise overlay grants the same on apps.kruise.io"
    configurations = {"mutatingwebhookconfigurations", "validatingwebhookconfigurations"}
    assert not any(
        "create" in rule["verbs"] and configurations & set(rule["resources"])
        for overlay in ("base", "kruise")
        for doc in kustomization.build(data.MANIFESTS, overlay)
        if doc["kind"] in ("ClusterRole", "Role")
        for rule in doc["rules"]
    )


@pytest.mark.chaos
def test_the_container_runs_as_non_root_with_a_read_only_root_filesystem() -> None:
    (deployment,) = [d for d in _docs(BASE / "deployment.yaml") if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] > 0 and pod["securityContext"]["runAsGroup"] > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod.get("hostNetwork") is not True and pod.get("hostPID") is not True
    assert pod.get("automountServiceAccountToken") is not False  # it talks to the API server
    for container in pod["containers"]:
        context = container["securityContext"]
        assert context["readOnlyRootFilesystem"] is True
        assert context["allowPrivilegeEscalation"] is False
        assert context["capabilities"] == {"drop": ["ALL"]}
        assert context.get("privileged") is not True
        assert not container.get("volumeMounts"), "a read-only root filesystem and nothing to write to"

    stages = re.split(r"(?im)^FROM\s", (ROOT / "Dockerfile").read_text())
    final = stages[-1]
    users = re.findall(r"(?im)^USER\s+(\S+)", final)
    assert users, "the final stage must switch to a non-root USER"
    uid, _, gid = users[-1].partition(":")
    assert uid.isdigit() and int(uid) > 0, f"USER {users[-1]}: numeric and not root (runAsNonRoot needs a number)"
    assert not gid or (gid.isdigit() and int(gid) > 0)
    assert int(uid) == pod["securityContext"]["runAsUser"]
    # No .pyc written at run time: the root filesystem is read-only.
    assert re.search(r"(?m)^ENV .*PYTHONDONTWRITEBYTECODE=1", final)


def _group_of(path: str) -> str:
    parts = [p for p in path.split("/") if p]
    return parts[1] if parts[:1] == ["apis"] else ""


def _assert_nothing_refused(entries: Iterable[LogEntry], namespace: str) -> None:
    """403 also answers writes into a namespace being deleted (earlier tests' namespaces, whose
    children the controller may try to recreate until their owners are gone), so only requests
    in this test's namespace, the controller's and at cluster scope are judged."""
    judged = [e for e in entries if e.namespace in (None, namespace, SYSTEM)]
    refused = sorted({f"{e.verb} {e.resource} {e.path}" for e in judged if e.status in (401, 403)})
    assert not refused, f"the API server refused: {refused}"


def _used(entries: Iterable[LogEntry]) -> set[Permission]:
    used = set()
    for e in entries:
        if e.resource in ("nonresource", "discovery"):
            continue
        used.add((_group_of(e.path), e.resource, e.verb))
    return used


def _template_image(doc: JSON, image: str) -> JSON:
    template: JSON = doc["spec"]["template"]
    variant = next(iter(template))
    template[variant]["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return template


@pytest.mark.chaos
@pytest.mark.e2e
@pytest.mark.timeout(600)
async def test_every_granted_permission_is_needed_and_nothing_more_is_asked(
    cluster: LocalCluster,
    sim: Simulation,
    kube: KubeClient,
    namespace: str,
    controller_identity: Path,
    tmp_path: Path,
) -> None:
    # A fresh install: the controller creates its Lease (an earlier test may have left one).
    with contextlib.suppress(NotFound):
        await kube.delete(LEASES, "united-controller", namespace=SYSTEM)
    proxy = proxy_for(cluster, controller_identity, name="rbac")
    controller = proxied_controller(
        proxy, controller_identity, tmp_path / "proxy.kubeconfig", name="chaos-rbac", leader_elect=True
    )
    controller.start()
    zones = [zone("a", "zone-a"), zone("b", "zone-b")]
    docs = {
        variant: ud(f"lp-{short}", zones, replicas=2, variant=variant, revisionHistoryLimit=2)
        for variant, short in (
            ("deploymentTemplate", "deploy"),
            ("statefulSetTemplate", "sts"),
            ("cloneSetTemplate", "clone"),
            ("advancedStatefulSetTemplate", "asts"),
        )
    }
    web = docs["deploymentTemplate"]
    try:
        for doc in docs.values():
            await kube.create(UD, doc, namespace=namespace)
        await wait_converged(kube, namespace, within=120, what="every child kind", controllers=[controller])
        for doc in docs.values():
            await scale(kube, namespace, doc["metadata"]["name"], 3)
        await wait_converged(kube, namespace, within=90, what="scaled", controllers=[controller])
        for doc in docs.values():
            if doc is not web:  # a subset removed: its child deleted, for every other kind
                await patch_ud(kube, namespace, doc, {"spec": {"topology": {"subsets": zones[:1]}}})
        await wait_converged(kube, namespace, within=90, what="subset b removed", controllers=[controller])

        # Template updates past the history limit (revisions created and deleted), then back
        # to a kept revision (its number bumped).
        for image in ("app:2", "app:3", "app:2"):
            await patch_ud(kube, namespace, web, {"spec": {"template": _template_image(web, image)}})
            await wait_converged(kube, namespace, within=90, what=f"image {image}", controllers=[controller])

        # Subsets added and removed.
        await patch_ud(kube, namespace, web, {"spec": {"topology": {"subsets": [*zones, zone("c", "zone-c")]}}})
        await wait_converged(kube, namespace, within=90, what="subset c added", controllers=[controller])
        await patch_ud(kube, namespace, web, {"spec": {"topology": {"subsets": [zone("c", "zone-c")]}}})
        await wait_converged(kube, namespace, within=90, what="subsets a, b removed", controllers=[controller])

        # Adoption: a child that lost its owner reference is claimed again.
        (child,) = await children(kube, namespace, web)
        await kube.patch(
            DEPLOYMENTS,
            child["metadata"]["name"],
            {"metadata": {"ownerReferences": None}},
            patch_type=PatchType.MERGE,
            namespace=namespace,
        )

        async def adopted() -> None:
            owned = await children(kube, namespace, web)
            assert [c["metadata"]["uid"] for c in owned] == [child["metadata"]["uid"]], "not adopted yet"

        await eventually(adopted, within=60, what="orphaned child adopted")

        # An invalid spec: Stalled and a Warning Event, repeated (the Event is patched), then fixed.
        await patch_ud(
            kube, namespace, web, {"spec": {"topology": {"subsets": [zone("c", "zone-c", replicas="120%")]}}}
        )

        async def warned(times: int) -> None:
            obj = await get_ud(kube, namespace, web)
            assert condition(obj, "Stalled").get("reason") == "InvalidSpec"
            events = await kube.list(EVENTS, namespace=namespace, field_selector="involvedObject.name=lp-deploy")
            counts = [e["count"] for e in events.items if e["reason"] == "InvalidSpec"]
            assert counts and max(counts) >= times, counts

        await eventually(lambda: warned(1), within=60, what="invalid spec stalled, a Warning Event")
        # One pass per touch (touches sent at once may share a pass): the Event is patched.
        await patch_ud(kube, namespace, web, {"metadata": {"labels": {"touch": "1"}}})
        await eventually(lambda: warned(2), within=60, what="invalid spec stalled, its Event repeated")
        await patch_ud(kube, namespace, web, {"spec": {"topology": {"subsets": [zone("c", "zone-c")]}}})

        # Deletion: the garbage collector removes the children; the controller forgets it.
        await kube.delete(UD, docs["cloneSetTemplate"]["metadata"]["name"], namespace=namespace)
        await wait_converged(kube, namespace, within=90, what="after all that", controllers=[controller])

        # Reservation: pods of a subset that cannot schedule are labelled reserved (pods patch).
        await sim.set_zone_full("zone-a")
        reserving = ud("lp-reserve", zones, replicas=2)
        reserving["spec"]["topology"]["scheduleStrategy"] = {
            "type": "Adaptive",
            "adaptive": {"rescheduleCriticalSeconds": 2, "unschedulableDuration": 60, "reserveUnschedulablePods": True},
        }
        await kube.create(UD, reserving, namespace=namespace)

        async def reserved() -> None:
            pods = await kube.list(PODS, namespace=namespace, label_selector="app=lp-reserve")
            marked = [p for p in pods.items if p["metadata"]["labels"].get(KEYS.reserved_pod) == "true"]
            assert marked, "no pod labelled reserved yet"

        await eventually(reserved, within=90, what="unschedulable pods labelled reserved")
        await kube.delete(UD, "lp-reserve", namespace=namespace)
        await sim.set_zone_full("zone-a", False)
    finally:
        code = controller.stop()
        proxy.stop()
    assert code == 0, f"controller exited with {code}; see {controller.log_path}"

    entries = proxy.log.requests(identity="rbac")
    _assert_nothing_refused(entries, namespace)
    used = _used(entries)
    granted = _granted(CLUSTER_RULES) | _granted(LEASE_RULES)
    # The WorkloadSpread controller runs too (its CRD is installed); its roles are judged below.
    workloadspread = _granted(WS_CLUSTER_RULES) | _granted(WS_SECRET_RULES)
    assert used <= granted | workloadspread, f"used but not granted: {used - granted - workloadspread}"
    unused = granted - used
    record(
        "least privilege",
        {
            "requests": len(entries),
            "permissions granted": len(granted),
            "permissions used": len(used),
            "granted but unused": sorted(" ".join(p) for p in unused),
            "refused (403)": 0,
        },
    )
    assert unused == UNUSED_AND_KNOWN, (
        f"granted but unused (drop them, or explain them in UNUSED_AND_KNOWN): {sorted(unused - UNUSED_AND_KNOWN)}; "
        f"now used: {sorted(UNUSED_AND_KNOWN - unused)}"
    )


@pytest.mark.chaos
@pytest.mark.e2e
@pytest.mark.timeout(600)
async def test_workloadspread_permissions_are_each_needed_and_suffice(
    cluster: LocalCluster,
    sim: Simulation,
    kube: KubeClient,
    namespace: str,
    controller_identity: Path,
    tmp_path: Path,
) -> None:
    """The controller and its pod webhook under the ServiceAccount (``--webhook-url`` mode, so
    the development role lets it create the configurations) serve a WorkloadSpread through
    everything that writes: its first certificate Secret, the configurations, the compat CRD's
    conversion, the namespaces labelled out, adoption of pods that existed before the spread,
    bookings on scale-out, deletion costs and the deleting bookkeeping on scale-in, an
    Adaptive deletion, an invalid spread's Event. Nothing is refused, and each permission
    of ``workloadspread-rbac.yaml`` is used."""
    with contextlib.suppress(NotFound):
        await kube.delete(SECRETS, "united-webhook-certs", namespace=SYSTEM)
    # Configurations that drifted (no webhooks at all): the controller patches them back.
    for resource in (MUTATING, VALIDATING):
        with contextlib.suppress(NotFound):
            await kube.delete(resource, WEBHOOK_CONFIGURATION)
        await kube.create(resource, {"apiVersion": resource.api_version, "kind": resource.kind,
                                     "metadata": {"name": WEBHOOK_CONFIGURATION}, "webhooks": []})  # fmt: skip
    for name in ("kube-system", SYSTEM):
        await kube.patch(NAMESPACES, name, {"metadata": {"labels": {EXCLUDE_LABEL: None}}},
                         patch_type=PatchType.MERGE)  # fmt: skip
    # The pods that exist before the spread land in zone-c, so zone-a has a slot left to fail in.
    await sim.set_zone_full("zone-a")
    await sim.set_zone_full("zone-b")
    await kube.create(DEPLOYMENTS, harness.deployment(2), namespace=namespace)

    async def running() -> None:
        pods = await kube.list(PODS, namespace=namespace, label_selector=f"app={harness.APP}")
        assert len(pods.items) == 2 and all(p["spec"].get("nodeName") for p in pods.items)

    await eventually(running, within=60, what="pods that exist before the spread, scheduled")
    proxy = proxy_for(cluster, controller_identity, name="rbac-ws")
    target = harness.Target(kube, namespace, {"zone-a": 1, "zone-b": 2, "zone-c": None})
    async with harness.webhook_flags(cluster, namespace=SYSTEM) as flags:
        controller = proxied_controller(proxy, controller_identity, tmp_path / "proxy.kubeconfig",
                                        name="chaos-rbac-ws", extra=flags)  # fmt: skip
        controller.start()
        try:
            await kube.create(harness.SPREADS, harness.spread(target.maxima, strategy={
                "type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 2}}), namespace=namespace)  # fmt: skip

            async def adopted() -> None:
                pods = await kube.list(PODS, namespace=namespace, label_selector=f"app={harness.APP}")
                assert all(MATCHED_ANNOTATION in (p["metadata"].get("annotations") or {}) for p in pods.items)

            await eventually(adopted, within=60, what="the pods that existed before adopted")
            await eventually(lambda: harness.sent_to_webhook(kube, namespace), within=30,
                             what="the webhook selects the namespace")  # fmt: skip
            await sim.set_zone_full("zone-b", False)
            await target.patch({"replicas": 6})

            async def moved() -> None:
                deletes = [e for e in proxy.log.requests(identity="rbac-ws") if e.verb == "delete"]
                assert any(e.resource == "pods" for e in deletes), deletes

            await eventually(moved, within=90, what="an unschedulable pod of zone-a deleted (Adaptive)")
            await sim.set_zone_full("zone-a", False)
            await target.patch({"replicas": 3})

            async def costed() -> None:
                pods = await kube.list(PODS, namespace=namespace, label_selector=f"app={harness.APP}")
                live = [p for p in pods.items if not p["metadata"].get("deletionTimestamp")]
                assert len(live) == 3
                assert all(DELETION_COST_ANNOTATION in (p["metadata"].get("annotations") or {}) for p in live)

            await eventually(costed, within=90, what="scaled in, deletion costs on the pods left")
            bad = harness.spread({"zone-a": 1, "zone-b": None})  # no CRD validation rule catches it
            bad["metadata"]["name"] = "bad"
            bad["spec"]["subsets"][1]["maxReplicas"] = "50%"
            await kube.create(harness.SPREADS, bad, namespace=namespace)

            async def warned() -> None:
                events = await kube.list(EVENTS, namespace=namespace, field_selector="involvedObject.name=bad")
                assert any(e["type"] == "Warning" for e in events.items), events.items

            await eventually(warned, within=60, what="the invalid spread's Warning Event")
        finally:
            code = controller.stop()
            proxy.stop()
    assert code == 0, f"controller exited with {code}; see {controller.log_path}"

    entries = proxy.log.requests(identity="rbac-ws")
    _assert_nothing_refused(entries, namespace)
    used = _used(entries)
    dev = _granted(_rules("ClusterRole", DEV_WEBHOOK_CONFIGURATIONS))
    granted = _granted(CLUSTER_RULES) | _granted(LEASE_RULES) | _granted(WS_RULES) | dev
    assert used <= granted, f"used but not granted: {used - granted}"
    unused = _granted(WS_RULES) - used
    record("least privilege (WorkloadSpread)", {"requests": len(entries), "permissions granted": len(granted),
                                                "granted but unused": sorted(" ".join(p) for p in unused)})  # fmt: skip
    assert unused <= WS_UNUSED_AND_KNOWN, (
        f"granted but unused (drop them, or explain them in WS_UNUSED_AND_KNOWN): "
        f"{sorted(unused - WS_UNUSED_AND_KNOWN)}"
    )
