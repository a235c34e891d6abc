"""A simulated volume provisioner, so StatefulSets with volumeClaimTemplates run.

Without one, every PersistentVolumeClaim stays Pending and the scheduler reports
"pod has unbound immediate PersistentVolumeClaims" forever. This plays an external
provisioner: for each Pending claim without a volume it creates a PersistentVolume
of the requested size, access modes, volume mode and class, *pre-bound* to the claim
(``spec.claimRef``); kube-controller-manager's own ``persistentvolume-binder`` then
completes the binding exactly as it does for a real provisioner. Released volumes
it created (their claim was deleted) are deleted again.

The volumes are ``hostPath`` entries that nothing mounts (there is no kubelet).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from united.kube.client import JSON, KubeClient, Resource
from united.kube.errors import AlreadyExists, Conflict, NotFound

from .background import Background
from .reflector import Reflector, object_key

log = logging.getLogger(__name__)

PERSISTENT_VOLUMES = Resource("", "v1", "persistentvolumes", False, "PersistentVolume")
PERSISTENT_VOLUME_CLAIMS = Resource("", "v1", "persistentvolumeclaims", True, "PersistentVolumeClaim")
PROVISIONER = "devcluster.united.dev/simulated"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
SIMULATED_VOLUME_LABEL = "volume.united.dev/simulated"


def volume_name(claim: JSON) -> str:
    """``pvc-<claim uid>``, the name dynamic provisioners conventionally use."""
    return f"pvc-{claim['metadata']['uid']}"


def wants_volume(claim: JSON) -> bool:
    """A claim that is Pending, not being deleted and not bound to a volume yet."""
    meta = claim.get("metadata") or {}
    spec = claim.get("spec") or {}
    phase = (claim.get("status") or {}).get("phase", "Pending")
    return phase == "Pending" and not meta.get("deletionTimestamp") and not spec.get("volumeName")


def volume_for(claim: JSON) -> JSON:
    """The PersistentVolume that satisfies ``claim``, pre-bound to it."""
    namespace, name = object_key(claim)
    spec = claim.get("spec") or {}
    size = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
    volume_spec: JSON = {
        "capacity": {"storage": size},
        "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
        "volumeMode": spec.get("volumeMode") or "Filesystem",
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": spec.get("storageClassName") or "",
        "claimRef": {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "namespace": namespace,
            "name": name,
            "uid": claim["metadata"]["uid"],
        },
        "hostPath": {"path": f"/nonexistent/united-simulated-volumes/{claim['metadata']['uid']}"},
    }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": volume_name(claim),
            "labels": {SIMULATED_VOLUME_LABEL: "true"},
            "annotations": {PROVISIONED_BY: PROVISIONER},
        },
        "spec": volume_spec,
    }


def is_released(volume: JSON) -> bool:
    """A volume this provisioner made whose claim is gone."""
    annotations = (volume.get("metadata") or {}).get("annotations") or {}
    phase = (volume.get("status") or {}).get("phase")
    return annotations.get(PROVISIONED_BY) == PROVISIONER and phase in ("Released", "Failed")


class VolumeProvisioner(Background):
    """Provisions pre-bound volumes for pending claims and deletes released ones."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self._claims = Reflector(client, PERSISTENT_VOLUME_CLAIMS, self._on_claim)
        self._volumes = Reflector(
            client, PERSISTENT_VOLUMES, self._on_volume, label_selector=f"{SIMULATED_VOLUME_LABEL}=true"
        )
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Start watching; returns once both watches have listed once."""
        self._tasks = [asyncio.create_task(r.run()) for r in (self._claims, self._volumes)]
        async with asyncio.timeout(60):  # awaited one by one: no gathering future left unread on a cancel
            for reflector in (self._claims, self._volumes):
                await reflector.synced.wait()

    async def _on_claim(self, event: str, claim: JSON) -> None:
        if event == "DELETED" or not wants_volume(claim):
            return
        with contextlib.suppress(AlreadyExists):
            await self.client.create(PERSISTENT_VOLUMES, volume_for(claim))
            log.info("provisioned %s for claim %s/%s", volume_name(claim), *object_key(claim))

    async def _on_volume(self, event: str, volume: JSON) -> None:
        if event == "DELETED" or not is_released(volume):
            return
        _, name = object_key(volume)
        uid = (volume.get("metadata") or {}).get("uid")
        with contextlib.suppress(NotFound, Conflict):
            await self.client.delete(PERSISTENT_VOLUMES, name, preconditions={"uid": str(uid)} if uid else None)
