"""Well-known label and annotation keys, all under one API group.

Serving our own CRD they live under ``apps.united.io``; serving OpenKruise manifests they
live under ``apps.kruise.io`` so that existing children, pods and tools (WorkloadSpread,
dashboards, ``kubectl -l apps.kruise.io/subset-name=…``) keep working. One setting, one
code path: everything that writes or reads a key asks a :class:`Keys`.
"""

from __future__ import annotations

from dataclasses import dataclass

from united.api.groups import GROUP

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

    # Multi-cluster: children in member clusters carry labels instead of ownerReferences (an
    # ownerReference cannot point into another cluster); they exist only in our group.

    @property
    def owner_uid(self) -> str:
        """Remote child label: the owning UnitedDeployment's ``metadata.uid``."""
        return f"{self.group}/owner-uid"

    @property
    def owner_name(self) -> str:
        """Remote child label: the owning UnitedDeployment's name, so a member's event maps to a key."""
        return f"{self.group}/owner-name"

    @property
    def owner_cluster(self) -> str:
        """Remote child and pod-template label: the identity of the host the owner lives in, so
        two hosts sharing a member never see each other's children or pods."""
        return f"{self.group}/owner-cluster"

    @property
    def cluster(self) -> str:
        """Remote child annotation: the ``Cluster`` name in the host, for people in the member."""
        return f"{self.group}/cluster"

    @property
    def created_by_cluster(self) -> str:
        """Label on a namespace we created in a member: the host identity (we never delete it)."""
        return f"{self.group}/created-by-cluster"

    @property
    def remote_children_finalizer(self) -> str:
        """UnitedDeployment finalizer: its remote children must go before it does."""
        return f"{self.group}/remote-children"

    @property
    def abandon_remote_children(self) -> str:
        """UnitedDeployment annotation: ``"member-1,member-2"`` or ``"*"``, clusters whose remote
        children deletion stops waiting for."""
        return f"{self.group}/abandon-remote-children"
