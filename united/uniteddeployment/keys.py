"""Well-known label and annotation keys, all under one API group.

Serving our own CRD they live under ``apps.united.io``; serving OpenKruise manifests they
live under ``apps.kruise.io`` so that existing children, pods and tools (WorkloadSpread,
dashboards, ``kubectl -l apps.kruise.io/subset-name=…``) keep working. One setting, one
code path: everything that writes or reads a key asks a :class:`Keys`.
"""

from __future__ import annotations

from dataclasses import dataclass

from united.uniteddeployment.model import GROUP

#: Label on ControllerRevisions; a Kubernetes convention, not ours.
REVISION_HASH_LABEL = "controller.kubernetes.io/hash"


@dataclass(frozen=True, slots=True)
class Keys:
    group: str = GROUP

    @property
    def subset_name(self) -> str:
        """Child, child selector and pod label: which subset a child or pod belongs to."""
        return f"{self.group}/subset-name"

    @property
    def revision(self) -> str:
        """Child and pod label: the UnitedDeployment revision name the pod template came from."""
        return f"{self.group}/controller-revision-hash"

    @property
    def subset_patch(self) -> str:
        """Child annotation: the subset patch as compact JSON (``""`` when none), as Kruise writes it."""
        return f"{self.group}/subset-patch"

    @property
    def spec_hash(self) -> str:
        """Child annotation: hash of the rendered child spec, so a reconcile can diff without
        being fooled by the API server's defaulting of the live object."""
        return f"{self.group}/spec-hash"

    @property
    def reserved_pod(self) -> str:
        """Pod label in reservation mode: ``"true"`` for a reserved (pending) pod."""
        return f"{self.group}/united-deployment-reserved-pod"
