"""The fault proxy in front of the real API server: the project's client works through
it unchanged, and every injected fault surfaces as the typed error the controller's
reliability code expects (cut watch, in-stream 410, 410 on connect, 429 with
Retry-After, 409 on PATCH); the request log records what was sent.

(Named ``..._e2e`` because a second ``test_faultproxy.py`` basename, next to the unit
tests', breaks pytest's collection of the whole suite: the test directories are not
packages.)"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.support.faultproxy import FaultProxy, ThreadedFaultProxy
from united.devcluster import certs, crds
from united.devcluster.cluster import LocalCluster
from united.devcluster.credentials import StaticUser
from united.kube.apply import install_crds
from united.kube.client import CLONE_SETS, CONFIG_MAPS, JSON, KubeClient, PatchType, WatchEvent, WatchStream
from united.kube.errors import Conflict, Forbidden, Gone, TooManyRequests, TransientError

pytestmark = pytest.mark.e2e

TEST_TOKEN = "e2e-through-the-proxy"


def config_map(name: str, **data: str) -> JSON:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def next_event(events: WatchStream, within: float = 10.0) -> WatchEvent:
    return await asyncio.wait_for(anext(events), within)


async def next_change(events: WatchStream, within: float = 10.0) -> WatchEvent:
    """The next event that is not a BOOKMARK."""
    async with asyncio.timeout(within):
        while (event := await anext(events)).type == "BOOKMARK":
            pass
        return event


@pytest.fixture(scope="module")
def proxy_certs(tmp_path_factory: pytest.TempPathFactory) -> certs.CertificateSet:
    """One serving certificate for every proxy of this module (openssl takes a moment)."""
    return certs.generate(tmp_path_factory.mktemp("faultproxy-pki"))


@pytest.fixture
async def proxy(cluster: LocalCluster, proxy_certs: certs.CertificateSet) -> AsyncIterator[FaultProxy]:
    async with FaultProxy(
        cluster.server,
        token=cluster.admin.token,
        ca_cert=cluster.ca_cert,
        certificates=proxy_certs,
        identities={TEST_TOKEN: "test"},
    ) as running:
        yield running


@pytest.fixture
async def pkube(proxy: FaultProxy) -> AsyncIterator[KubeClient]:
    """An admin client through the proxy (the proxy adds the admin token)."""
    async with proxy.kube_client(token=TEST_TOKEN) as client:
        yield client


async def test_list_and_watch_through_the_proxy(proxy: FaultProxy, pkube: KubeClient, namespace: str) -> None:
    await pkube.create(CONFIG_MAPS, config_map("before"), namespace=namespace)
    listed = await pkube.list(CONFIG_MAPS, namespace=namespace)
    assert [c["metadata"]["name"] for c in listed.items] == ["before"]
    async with pkube.watch(
        CONFIG_MAPS, namespace=namespace, resource_version=listed.resource_version, timeout_seconds=60
    ) as events:
        await pkube.create(CONFIG_MAPS, config_map("w", a="1"), namespace=namespace)
        assert (await next_change(events)).type == "ADDED"
        await pkube.patch(CONFIG_MAPS, "w", {"data": {"a": "2"}}, namespace=namespace, patch_type=PatchType.STRATEGIC)
        modified = await next_change(events)
        assert (modified.type, modified.object["data"]) == ("MODIFIED", {"a": "2"})
        await pkube.delete(CONFIG_MAPS, "w", namespace=namespace)
        assert (await next_change(events)).type == "DELETED"
    log = proxy.log
    assert log.counts(identity="test") == {
        ("create", "configmaps"): 2,
        ("list", "configmaps"): 1,
        ("watch", "configmaps"): 1,
        ("patch", "configmaps"): 1,
        ("delete", "configmaps"): 1,
    }
    assert all(e.forwarded and e.status is not None and 200 <= e.status < 300 for e in log)
    assert not log.requests(faulted=True)
    (watch,) = log.requests(verb="watch")
    assert watch.events >= 3 and watch.namespace == namespace


@pytest.mark.parametrize(("how", "ends_with"), [("reset", TransientError), ("eof", StopAsyncIteration)])
async def test_a_cut_watch_ends_and_a_rewatch_resumes(
    proxy: FaultProxy, pkube: KubeClient, kube: KubeClient, namespace: str, how: str, ends_with: type[BaseException]
) -> None:
    listed = await pkube.list(CONFIG_MAPS, namespace=namespace)
    async with pkube.watch(
        CONFIG_MAPS, namespace=namespace, resource_version=listed.resource_version, timeout_seconds=60
    ) as events:
        await kube.create(CONFIG_MAPS, config_map("one"), namespace=namespace)
        assert (await next_change(events)).object["metadata"]["name"] == "one"
        assert proxy.cut_watches(path=f"/namespaces/{namespace}/configmaps", how=how) == 1  # type: ignore[arg-type]
        with pytest.raises(ends_with):
            await next_change(events)
        resume_from = events.resource_version
    await kube.create(CONFIG_MAPS, config_map("two"), namespace=namespace)  # while nobody watches
    async with pkube.watch(
        CONFIG_MAPS, namespace=namespace, resource_version=resume_from, timeout_seconds=60
    ) as events:
        event = await next_change(events)
        assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "two")
    (cut, _) = proxy.log.requests(verb="watch")
    assert cut.faults == [f"cut:{how}"]


async def test_an_injected_410_raises_gone(proxy: FaultProxy, pkube: KubeClient, namespace: str) -> None:
    listed = await pkube.list(CONFIG_MAPS, namespace=namespace)
    async with pkube.watch(
        CONFIG_MAPS, namespace=namespace, resource_version=listed.resource_version, timeout_seconds=60
    ) as events:
        await proxy.wait_for_watches(1, path=namespace)
        assert proxy.inject_watch_error(path=namespace) == 1
        with pytest.raises(Gone) as caught:
            await next_change(events)
    assert (caught.value.status, caught.value.reason) == (410, "Expired")
    # the caller's answer to Gone: re-list, re-watch
    relisted = await pkube.list(CONFIG_MAPS, namespace=namespace)
    async with pkube.watch(
        CONFIG_MAPS, namespace=namespace, resource_version=relisted.resource_version, timeout_seconds=60
    ) as events:
        await pkube.create(CONFIG_MAPS, config_map("after"), namespace=namespace)
        assert (await next_change(events)).object["metadata"]["name"] == "after"


async def test_a_410_on_connect_raises_gone(proxy: FaultProxy, pkube: KubeClient, namespace: str) -> None:
    rule = proxy.add_rule(watch=True, respond=410, count=1)
    with pytest.raises(Gone):
        async with pkube.watch(CONFIG_MAPS, namespace=namespace, resource_version="1", timeout_seconds=60):
            pass
    assert rule.fired == 1
    listed = await pkube.list(CONFIG_MAPS, namespace=namespace)
    async with pkube.watch(CONFIG_MAPS, namespace=namespace, resource_version=listed.resource_version) as events:
        await pkube.create(CONFIG_MAPS, config_map("x"), namespace=namespace)
        assert (await next_change(events)).type == "ADDED"


async def test_429_carries_retry_after(proxy: FaultProxy, pkube: KubeClient, namespace: str) -> None:
    proxy.add_rule(methods="GET", path=r"/configmaps$", watch=False, respond=429, retry_after=3, count=1)
    with pytest.raises(TooManyRequests) as caught:
        await pkube.list(CONFIG_MAPS, namespace=namespace)
    assert caught.value.retry_after == 3.0
    await pkube.list(CONFIG_MAPS, namespace=namespace)  # count=1: the retry goes through
    assert [e.status for e in proxy.log.requests(verb="list")] == [429, 200]


async def test_a_409_on_patch_is_a_conflict_and_changes_nothing(
    proxy: FaultProxy, pkube: KubeClient, kube: KubeClient, namespace: str
) -> None:
    await kube.create(CONFIG_MAPS, config_map("c", a="1"), namespace=namespace)
    rule = proxy.add_rule(methods={"PATCH", "PUT"}, path=r"/configmaps/c$", respond=409)
    with pytest.raises(Conflict):
        await pkube.patch(CONFIG_MAPS, "c", {"data": {"a": "2"}}, namespace=namespace, patch_type=PatchType.MERGE)
    assert (await kube.get(CONFIG_MAPS, "c", namespace=namespace))["data"] == {"a": "1"}
    proxy.remove_rule(rule)
    patched = await pkube.patch(CONFIG_MAPS, "c", {"data": {"a": "2"}}, namespace=namespace, patch_type=PatchType.MERGE)
    assert patched["data"] == {"a": "2"}
    assert [(e.status, e.forwarded) for e in proxy.log.writes()] == [(409, False), (200, True)]


async def test_the_log_records_content_types_of_custom_object_patches(
    proxy: FaultProxy, pkube: KubeClient, kube: KubeClient, namespace: str
) -> None:
    await install_crds(kube, crds.kruise_crds())
    await pkube.create(
        CLONE_SETS,
        {
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "CloneSet",
            "metadata": {"name": "p"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "p"}}, "template": {}},
        },
        namespace=namespace,
    )
    mark = proxy.log.mark()
    await pkube.patch(
        CLONE_SETS, "p", {"metadata": {"labels": {"m": "1"}}}, namespace=namespace, patch_type=PatchType.MERGE
    )
    await pkube.patch(
        CLONE_SETS,
        "p",
        [{"op": "add", "path": "/metadata/annotations", "value": {"j": "1"}}],
        namespace=namespace,
        patch_type=PatchType.JSON,
    )
    await pkube.apply(
        CLONE_SETS,
        {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "metadata": {"name": "p"}},
        namespace=namespace,
        field_manager="united-e2e",
    )
    patches = proxy.log.requests(method="PATCH", resource="clonesets", since=mark)
    assert [e.mime_type for e in patches] == [
        "application/merge-patch+json",
        "application/json-patch+json",
        "application/apply-patch+yaml",
    ]
    assert all(e.status == 200 and e.name == "p" and e.namespace == namespace for e in patches)
    assert patches[-1].param("fieldManager") == "united-e2e"


async def test_forward_auth_applies_rbac_to_the_clients_identity(
    cluster: LocalCluster, proxy_certs: certs.CertificateSet, namespace: str, unprivileged_user: StaticUser
) -> None:
    async with FaultProxy(
        cluster.server,
        ca_cert=cluster.ca_cert,
        certificates=proxy_certs,
        forward_auth=True,
        identities={cluster.admin.token: "admin", unprivileged_user.token: "nobody"},
    ) as proxy:
        async with proxy.kube_client(token=unprivileged_user.token) as nobody:
            with pytest.raises(Forbidden, match=unprivileged_user.name):
                await nobody.list(CONFIG_MAPS, namespace=namespace)
        async with proxy.kube_client(token=cluster.admin.token) as admin:
            await admin.list(CONFIG_MAPS, namespace=namespace)
        assert [(e.identity, e.status) for e in proxy.log] == [("nobody", 403), ("admin", 200)]


@pytest.fixture
def threaded_proxy(cluster: LocalCluster, proxy_certs: certs.CertificateSet) -> Iterator[ThreadedFaultProxy]:
    with ThreadedFaultProxy(
        cluster.server, token=cluster.admin.token, ca_cert=cluster.ca_cert, certificates=proxy_certs
    ) as running:
        yield running


async def test_a_subprocess_uses_the_proxy_through_its_kubeconfig(
    cluster: LocalCluster, threaded_proxy: ThreadedFaultProxy, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    """kubectl (a Go client, in another process) reads the written kubeconfig, trusts the
    proxy's CA, and its requests are logged and faulted like any other."""
    await kube.create(CONFIG_MAPS, config_map("seen-by-kubectl"), namespace=namespace)
    kubeconfig = threaded_proxy.write_kubeconfig(tmp_path / "proxy.kubeconfig", token="kubectl-token")
    threaded_proxy.name_token("kubectl-token", "kubectl")

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                str(cluster.binaries.kubectl),
                f"--kubeconfig={kubeconfig}",
                f"--cache-dir={tmp_path / 'kubectl-cache'}",
                "--request-timeout=20s",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    listed = await asyncio.to_thread(kubectl, "get", "configmaps", "-n", namespace, "-o", "name")
    assert listed.returncode == 0, listed.stderr
    assert "configmap/seen-by-kubectl" in listed.stdout
    threaded_proxy.add_rule(methods="DELETE", respond=403, message="the fault proxy says no", count=1)
    refused = await asyncio.to_thread(kubectl, "delete", "configmap", "seen-by-kubectl", "-n", namespace)
    assert refused.returncode != 0 and "the fault proxy says no" in refused.stderr
    await kube.get(CONFIG_MAPS, "seen-by-kubectl", namespace=namespace)  # still there
    entries = threaded_proxy.log.requests(identity="kubectl", resource="configmaps")
    assert [(e.verb, e.status) for e in entries] == [("list", 200), ("delete", 403)]
    assert entries[0].user_agent.startswith("kubectl/")
