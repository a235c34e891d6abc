"""The generic client against the real API server: CRUD, typed errors, watches and
every patch content type (the json-patch default trap cannot happen here)."""

from __future__ import annotations

import asyncio

import pytest

from united.devcluster.simulation import Simulation
from united.kube.client import CLONE_SETS, CONFIG_MAPS, JSON, KubeClient, PatchType
from united.kube.errors import AlreadyExists, ApiError, Conflict, Invalid, NotFound

pytestmark = pytest.mark.e2e


def config_map(name: str, **data: str) -> JSON:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def test_crud_and_typed_errors(kube: KubeClient, namespace: str) -> None:
    created = await kube.create(CONFIG_MAPS, config_map("c", a="1"), namespace=namespace)
    with pytest.raises(AlreadyExists):
        await kube.create(CONFIG_MAPS, config_map("c"), namespace=namespace)

    stale = dict(created)
    fresh = await kube.replace(CONFIG_MAPS, {**created, "data": {"a": "2"}}, namespace=namespace)
    assert fresh["data"] == {"a": "2"}
    with pytest.raises(Conflict):
        await kube.replace(CONFIG_MAPS, {**stale, "data": {"a": "3"}}, namespace=namespace)

    with pytest.raises(Invalid):
        await kube.create(CONFIG_MAPS, config_map("Not_Valid"), namespace=namespace)

    await kube.delete(CONFIG_MAPS, "c", namespace=namespace)
    with pytest.raises(NotFound):
        await kube.get(CONFIG_MAPS, "c", namespace=namespace)


async def test_dry_run_persists_nothing(kube: KubeClient, namespace: str) -> None:
    answer = await kube.create(CONFIG_MAPS, config_map("dry"), namespace=namespace, dry_run=True)
    assert answer["metadata"]["name"] == "dry"
    with pytest.raises(NotFound):
        await kube.get(CONFIG_MAPS, "dry", namespace=namespace)


async def test_list_then_watch_sees_every_change(kube: KubeClient, namespace: str) -> None:
    await kube.create(CONFIG_MAPS, config_map("before"), namespace=namespace)
    listed = await kube.list(CONFIG_MAPS, namespace=namespace, label_selector="")
    assert "before" in [c["metadata"]["name"] for c in listed.items]
    assert all(c["kind"] == "ConfigMap" for c in listed.items)

    async def changes() -> None:
        await kube.create(CONFIG_MAPS, config_map("w", a="1"), namespace=namespace)
        await kube.patch(CONFIG_MAPS, "w", {"data": {"a": "2"}}, namespace=namespace, patch_type=PatchType.STRATEGIC)
        await kube.delete(CONFIG_MAPS, "w", namespace=namespace)

    seen: list[tuple[str, str]] = []
    async with kube.watch(
        CONFIG_MAPS, namespace=namespace, resource_version=listed.resource_version, timeout_seconds=30
    ) as events:
        writer = asyncio.create_task(changes())
        async for event in events:
            if event.type == "BOOKMARK":
                continue
            seen.append((event.type, event.object["metadata"]["name"]))
            if event.type == "DELETED":
                break
        await writer
        assert events.resource_version
    assert seen == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


async def test_every_patch_type_on_a_custom_resource(kube: KubeClient, namespace: str, sim: Simulation) -> None:
    """``sim`` is requested for the CloneSet CRD it installs."""
    body: JSON = {
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "CloneSet",
        "metadata": {"name": "p"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "p"}},
            "template": {"metadata": {"labels": {"app": "p"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
        },
    }
    await kube.create(CLONE_SETS, body, namespace=namespace)

    merged = await kube.patch(
        CLONE_SETS, "p", {"metadata": {"labels": {"m": "1"}}}, namespace=namespace, patch_type=PatchType.MERGE
    )
    assert merged["metadata"]["labels"] == {"m": "1"}

    patched = await kube.patch(
        CLONE_SETS,
        "p",
        [{"op": "add", "path": "/metadata/annotations", "value": {"j": "1"}}],
        namespace=namespace,
        patch_type=PatchType.JSON,
    )
    assert patched["metadata"]["annotations"] == {"j": "1"}

    applied = await kube.apply(
        CLONE_SETS,
        {
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "CloneSet",
            "metadata": {"name": "p", "labels": {"ssa": "1"}},
        },
        namespace=namespace,
        field_manager="united-e2e",
        force=True,
    )
    assert applied["metadata"]["labels"] == {"m": "1", "ssa": "1"}
    managers = {m["manager"] for m in applied["metadata"]["managedFields"]}
    assert "united-e2e" in managers

    with pytest.raises(ApiError) as info:
        await kube.patch(
            CLONE_SETS, "p", {"spec": {"replicas": 1}}, namespace=namespace, patch_type=PatchType.STRATEGIC
        )
    assert info.value.status == 415


async def test_a_bytes_body_keeps_raw_fields_patchable(kube: KubeClient, namespace: str) -> None:
    """ControllerRevision.data is immutable and compared byte for byte: created from a JSON
    body (re-encoded by Python) a later metadata patch is refused as a change of ``data``;
    created from bytes (sent as YAML, normalised by the API server) it is not."""
    from united.kube.client import Resource
    from united.uniteddeployment import revision

    revisions = Resource("apps", "v1", "controllerrevisions", True, "ControllerRevision")

    def body(name: str) -> JSON:
        return {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {"name": name, "labels": {"a": "b"}},
            "data": {"spec": {"b": "<é&>", "a": [1, 2.5, {"z": None}]}},
            "revision": 1,
        }

    await kube.create(revisions, body("from-json"), namespace=namespace)
    with pytest.raises(Invalid, match="data"):
        await kube.patch(
            revisions, "from-json", {"metadata": {"labels": None}}, patch_type=PatchType.MERGE, namespace=namespace
        )
    await kube.create(revisions, revision.go_json(body("from-bytes")), namespace=namespace)
    patched = await kube.patch(
        revisions, "from-bytes", {"metadata": {"labels": None}}, patch_type=PatchType.MERGE, namespace=namespace
    )
    assert patched["data"] == {"spec": {"a": [1, 2.5, {"z": None}], "b": "<é&>"}}
