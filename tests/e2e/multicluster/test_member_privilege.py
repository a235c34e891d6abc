"""Least privilege in members: the controller's member credentials are bound only to the shipped
``manifests/member`` role (``joined`` applies it; every module of this package runs so). A whole
life — converge, ``/scale``, a subset removed, an orphan collected, deletion — has no member
request refused, and every request it sends a member is one the role grants. The documented kubectl
recipe turns the role's token Secret into a self-contained kubeconfig with exactly those rights;
the member overlays render as kubectl's own kustomize does."""

from __future__ import annotations

import base64
import re
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.controller.helpers import DEPLOYMENTS, ROOT, UD, patch_ud
from tests.e2e.multicluster.remote import (
    MEMBER_NAMESPACE,
    MEMBER_ROLE,
    MEMBER_SA,
    by_hand,
    converged,
    joined,
    remote_children,
    spread,
)
from tests.support.controller import Controller
from united import data, kustomization
from united.devcluster.cluster import LocalCluster
from united.devcluster.planes import Plane
from united.kube.client import NAMESPACES, SECRETS, KubeClient, PatchType
from united.kube.errors import Forbidden, NotFound
from united.kube.wait import eventually

__all__ = ["joined"]
pytestmark = pytest.mark.e2e

METHOD_VERBS = {
    "GET": {"list", "watch"},
    "POST": {"create"},
    "PATCH": {"patch"},
    "PUT": {"update"},
    "DELETE": {"delete"},
}
"""The RBAC verbs an HTTP method of the controller's member requests can be (it never GETs one
object in a member: a GET is a LIST or a WATCH)."""
LABEL = re.compile(r'(\w+)="([^"]*)"')
TOKEN_SECRET = "united-member-token"
REFUSED = re.compile(r"forbidden|unauthorized", re.IGNORECASE)
"""How a 403 or 401 reads in a log line (Kubernetes' messages say "is forbidden", "Unauthorized")."""


def member_requests(controller: Controller) -> dict[tuple[str, str, str, str], float]:
    """``united_member_requests_total`` by (cluster, verb, code, resource), for member-1 and -2."""
    out: dict[tuple[str, str, str, str], float] = {}
    for line in controller.metrics().splitlines():
        if not line.startswith("united_member_requests_total{"):
            continue
        head, _, value = line.rpartition(" ")
        labels = dict(LABEL.findall(head))
        if labels["cluster"] in ("member-1", "member-2"):
            out[labels["cluster"], labels["verb"], labels["code"], labels["resource"]] = float(value)
    return out


def granted() -> dict[str, set[str]]:
    [role] = [o for o in MEMBER_ROLE if o["kind"] == "ClusterRole"]
    out: dict[str, set[str]] = {}
    for rule in role["rules"]:
        for resource in rule["resources"]:
            out.setdefault(resource, set()).update(rule["verbs"])
    return out


async def test_a_whole_life_with_the_member_role_only(
    joined: dict[str, Plane],
    kube: KubeClient,
    member_kube: dict[str, KubeClient],
    namespace: str,
    controller: Controller,
) -> None:
    before, log_from = member_requests(controller), controller.log_path.stat().st_size
    doc = spread("least", 6)
    await kube.create(UD, doc, namespace=namespace)
    await converged(kube, member_kube, namespace, doc, 2)
    scale = {"spec": {"replicas": 9}}
    await kube.patch(UD, "least", scale, patch_type=PatchType.MERGE, namespace=namespace, subresource="scale")
    await converged(kube, member_kube, namespace, doc, 3)
    kept = [s for s in doc["spec"]["topology"]["subsets"] if s["name"] != "m2"]
    await patch_ud(kube, namespace, doc, {"spec": {"topology": {"subsets": kept}}})

    async def removed() -> None:
        assert await remote_children(member_kube["member-2"], namespace) == [], "member-2 still has m2's child"

    await eventually(removed, within=60, what="m2's child deleted in member-2")
    host_id = (await kube.get(NAMESPACES, "kube-system"))["metadata"]["uid"]
    orphan = by_hand("stray", owner="gone", owner_uid=str(uuid.uuid4()), host_id=host_id)
    await member_kube["member-1"].create(DEPLOYMENTS, orphan, namespace=namespace)

    async def collected() -> None:
        names = [c["metadata"]["name"] for c in await remote_children(member_kube["member-1"], namespace)]
        assert "stray" not in names, names

    await eventually(collected, within=90, what="the orphan collected in member-1")
    await kube.delete(UD, "least", namespace=namespace)

    async def gone() -> None:
        assert await remote_children(member_kube["member-1"], namespace) == [], "member-1 children left"
        try:
            await kube.get(UD, "least", namespace=namespace)
        except NotFound:
            return
        raise AssertionError("the UnitedDeployment is still there")

    await eventually(gone, within=60, what="remote children deleted, then the UnitedDeployment")

    after = member_requests(controller)
    sent = {k: n - before.get(k, 0.0) for k, n in after.items() if n > before.get(k, 0.0)}
    refused = {k: n for k, n in sent.items() if k[2] in ("401", "403")}
    assert refused == {}, f"member requests refused: {refused}"
    grants = granted()
    for (cluster, verb, code, resource), n in sorted(sent.items()):
        if resource == "nonresource":  # GET /version, the probe: open to every authenticated user
            continue
        assert METHOD_VERBS[verb] & grants.get(resource, set()), f"{cluster}: {n:g} x {verb} {resource} ({code})"
    exercised = {(verb, resource) for _, verb, _, resource in sent}
    wanted = {
        ("GET", "pods"),
        ("POST", "namespaces"),
        ("POST", "deployments"),
        ("PATCH", "deployments"),
        ("DELETE", "deployments"),
    }
    assert wanted <= exercised, f"the scenario did not exercise {wanted - exercised}"
    with controller.log_path.open("rb") as log:
        log.seek(log_from)
        lines = log.read().decode(errors="replace").splitlines()
    forbidden = [x for x in lines if '"member-' in x and REFUSED.search(x)]
    assert forbidden == [], forbidden[:5]


def kubectl(cluster: LocalCluster, kubeconfig: Path, *args: str) -> str:
    done = subprocess.run(
        [str(cluster.binaries.kubectl), f"--kubeconfig={kubeconfig}", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_the_join_recipe_makes_a_self_contained_kubeconfig_with_the_role_only(
    joined: dict[str, Plane], cluster: LocalCluster, tmp_path: Path
) -> None:
    """The documented recipe, step by step (``--kubeconfig`` of the member's admin for ``--context
    member``), on member-2's token Secret."""
    plane = joined["member-2"]
    admin = plane.admin_kubeconfig
    get = ["-n", MEMBER_NAMESPACE, "get", "secret", TOKEN_SECRET, "-o"]

    async def filled() -> None:
        assert kubectl(cluster, admin, *get, "jsonpath={.data.token}"), "no token yet"

    await eventually(filled, within=30, what="the member's token controller fills the Secret")
    ca = tmp_path / "member-ca.crt"
    ca.write_bytes(base64.b64decode(kubectl(cluster, admin, *get, r"jsonpath={.data.ca\.crt}")))
    token = base64.b64decode(kubectl(cluster, admin, *get, "jsonpath={.data.token}")).decode()
    made = tmp_path / "member-2.kubeconfig"
    server, authority = f"--server={plane.server}", f"--certificate-authority={ca}"
    kubectl(cluster, made, "config", "set-cluster", "member-2", server, authority, "--embed-certs=true")
    kubectl(cluster, made, "config", "set-credentials", MEMBER_SA, f"--token={token}")
    kubectl(cluster, made, "config", "set-context", "member-2", "--cluster=member-2", f"--user={MEMBER_SA}")
    kubectl(cluster, made, "config", "use-context", "member-2")
    async with await KubeClient.from_kubeconfig_data(made.read_bytes(), where="the recipe's kubeconfig") as member:
        assert '"gitVersion"' in await member.get_path("/version")
        await member.list(DEPLOYMENTS)
        with pytest.raises(Forbidden):
            await member.list(SECRETS, namespace=MEMBER_NAMESPACE)
        with pytest.raises(Forbidden):
            await member.get(DEPLOYMENTS, "any", namespace="default")


def test_the_member_overlays_render_as_kubectl_kustomize_does(cluster: LocalCluster) -> None:
    for overlay in ("member", "member-no-namespaces"):
        done = subprocess.run(
            [str(cluster.binaries.kubectl), "kustomize", str(ROOT / "manifests" / overlay)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        theirs = [d for d in yaml.safe_load_all(done.stdout) if d]

        def key(obj: dict[str, Any]) -> str:
            return yaml.safe_dump(obj, sort_keys=True)

        ours = kustomization.build(data.MANIFESTS, overlay)
        assert sorted(ours, key=key) == sorted(theirs, key=key), overlay
