"""``united join`` as a person runs it, against member-1 (a local member plane) and the session's
host, with one kubeconfig holding both contexts and the session's controller running.

What it proves: one command makes the member usable (the ``Cluster`` turns ``Ready`` and a
UnitedDeployment's subset there converges); running it again changes nothing but the token — the
member's old token stops working, the host's Secret holds the new one, the controller keeps
serving without a restart, still one ``Cluster``, one Secret, one child; the token is never
printed; it is a TokenRequest token bound to a Secret of the join's own in the member (deleting
that Secret revokes it), and the command says when it expires.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.controller.helpers import UD, wait_ready, zone
from tests.e2e.controller.helpers import ud as make_ud
from tests.e2e.multicluster.remote import HOME, ready_pods, remote_children
from tests.support.controller import Controller
from united.devcluster.cluster import LocalCluster
from united.devcluster.planes import Plane
from united.kube.client import PODS, SECRETS, KubeClient, PatchType
from united.kube.errors import NotFound, Unauthorized
from united.kube.wait import eventually
from united.multicluster.join import JOINED_AS
from united.multicluster.resource import CLUSTERS

pytestmark = pytest.mark.e2e

MEMBER = "member-1"


@pytest.fixture
def contexts(cluster: LocalCluster, members: dict[str, Plane], tmp_path: Path) -> Path:
    """One kubeconfig with contexts ``host`` and ``member`` (each plane's admin), as people have."""
    config: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "current-context": "host"}
    for context, path in (("host", cluster.admin_kubeconfig), ("member", members[MEMBER].admin_kubeconfig)):
        one = yaml.safe_load(path.read_text())
        config.setdefault("clusters", []).append({**one["clusters"][0], "name": context})
        config.setdefault("users", []).append({**one["users"][0], "name": context})
        config.setdefault("contexts", []).append({"name": context, "context": {"cluster": context, "user": context}})
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
async def leaves(kube: KubeClient, controller: Controller) -> AsyncIterator[None]:
    """member-1's ``Cluster`` and Secret go after the test (the controller forgets the member)."""
    yield
    for resource, namespace in ((CLUSTERS, None), (SECRETS, HOME)):
        with contextlib.suppress(NotFound):
            await kube.delete(resource, MEMBER, namespace=namespace)


async def united_join(kubeconfig: Path, *extra: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "united", "join", MEMBER, "--member-context", "member",
        "--member-kubeconfig", str(kubeconfig), "--host-kubeconfig", str(kubeconfig), "--wait", "120",
        "--all-namespaces", "--create-namespaces", *extra,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), timeout=300)
    assert proc.returncode is not None
    assert "Traceback" not in err.decode(), err.decode()
    return proc.returncode, out.decode(), err.decode()


async def stored_kubeconfig(kube: KubeClient) -> bytes:
    secret = await kube.get(SECRETS, MEMBER, namespace=HOME)
    return base64.b64decode(secret["data"]["kubeconfig"])


def token_of(kubeconfig: bytes) -> str:
    return str(yaml.safe_load(kubeconfig)["users"][0]["user"]["token"])


@pytest.mark.compat
async def test_join_then_rejoin_rotates_the_token(
    contexts: Path,
    leaves: None,
    kube: KubeClient,
    member_kube: dict[str, KubeClient],
    namespace: str,
    controller: Controller,
) -> None:
    code, out, err = await united_join(contexts)
    assert code == 0, err
    assert out.startswith(f"Cluster {MEMBER}: Ready=True (Reachable: "), out
    first = await stored_kubeconfig(kube)
    printed = token_of(first) in out + err
    assert not printed, "the token was printed"

    doc = make_ud("joined", [zone("h", "zone-a"), {"name": "m1", "cluster": MEMBER}], replicas=4)
    await kube.create(UD, doc, namespace=namespace)
    member = member_kube[MEMBER]

    async def converged() -> None:
        assert [c["spec"]["replicas"] for c in await remote_children(member, namespace)] == [2]
        assert await ready_pods(member, namespace, "joined") == 2

    await eventually(converged, within=120, what="the subset in member-1 converged")
    await wait_ready(kube, namespace, doc, within=60)
    assert controller.proc is not None
    pid = controller.proc.pid

    code, out, err = await united_join(contexts)
    assert code == 0, err
    assert out.startswith(f"Cluster {MEMBER}: Ready=True"), out
    second = await stored_kubeconfig(kube)
    rotated = token_of(second) != token_of(first)
    assert rotated, "the re-join kept the token"
    printed = token_of(second) in out + err
    assert not printed, "the token was printed"
    async with await KubeClient.from_kubeconfig_data(first, where="the old kubeconfig") as old:

        async def refused() -> None:
            with pytest.raises(Unauthorized):
                await old.list(PODS, namespace=namespace)

        # The API server caches a token's successful authentication for 10 s.
        await eventually(refused, within=30, what="the old token refused", retry_on=(pytest.fail.Exception,))
    assert [c["metadata"]["name"] for c in (await kube.list(CLUSTERS)).items if c["metadata"]["name"] == MEMBER] == [
        MEMBER
    ]
    assert [s["metadata"]["name"] for s in (await kube.list(SECRETS, namespace=HOME)).items].count(MEMBER) == 1
    tokens = await member.list(SECRETS, namespace="united-system", label_selector=f"{JOINED_AS}={MEMBER}")
    assert len(tokens.items) == 1, "the previous token Secret was not retired"

    await wait_ready(kube, namespace, doc, within=60)
    await kube.patch(
        UD, "joined", {"spec": {"replicas": 6}}, patch_type=PatchType.MERGE, namespace=namespace, subresource="scale"
    )

    async def scaled() -> None:
        assert [c["spec"]["replicas"] for c in await remote_children(member, namespace)] == [3]

    await eventually(scaled, within=60, what="member-1 scaled with the new credentials")
    assert controller.proc is not None and controller.proc.pid == pid, "the controller restarted"


async def test_the_token_expires_and_dies_with_its_secret(
    contexts: Path, leaves: None, kube: KubeClient, member_kube: dict[str, KubeClient], namespace: str
) -> None:
    code, out, err = await united_join(contexts, "--token-days", "30")
    assert code == 0, err
    assert out.startswith(f"Cluster {MEMBER}: Ready=True (Reachable: "), out
    assert "note: the member's token expires at " in err and "(in 30 days)" in err, err
    stored = await stored_kubeconfig(kube)
    printed = token_of(stored) in out + err
    assert not printed, "the token was printed"
    member = member_kube[MEMBER]
    (anchor,) = (await member.list(SECRETS, namespace="united-system", label_selector=f"{JOINED_AS}={MEMBER}")).items
    assert anchor["type"] == "Opaque" and "token" not in (anchor.get("data") or {})
    await member.delete(SECRETS, anchor["metadata"]["name"], namespace="united-system")
    async with await KubeClient.from_kubeconfig_data(stored, where="the joined kubeconfig") as joined:

        async def refused() -> None:
            with pytest.raises(Unauthorized):
                await joined.list(PODS, namespace=namespace)

        await eventually(refused, within=30, what="the token refused", retry_on=(pytest.fail.Exception,))
