"""Who owns an object in a member cluster: labels instead of ownerReferences.

An ownerReference cannot name an object in another cluster, and a member may be shared by
several hosts, each with its own UnitedDeployments. So a remote child carries its owner's uid
and name and the host's identity (``--cluster-id``, else the host's ``kube-system`` uid), and
an object is ours only when that identity is ours: a child another host made, even with a uid
that happens to match, is never adopted, counted or deleted here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol


class OwnerKeys(Protocol):
    """The label keys of the owner's group (the owning kind's ``Keys``) that remote objects carry."""

    @property
    def subset_name(self) -> str: ...
    @property
    def owner_uid(self) -> str: ...
    @property
    def owner_name(self) -> str: ...
    @property
    def owner_cluster(self) -> str: ...


class Owner(Protocol):
    """The owner of remote children, as far as their labels name it."""

    @property
    def uid(self) -> str: ...
    @property
    def name(self) -> str: ...


@dataclass(frozen=True, slots=True)
class RemoteKeys:
    """The labels of this host's remote children (``keys`` from the owner's group)."""

    keys: OwnerKeys
    host_id: str

    def labels(self, ud: Owner) -> dict[str, str]:
        """Labels a remote child of ``ud`` carries besides the usual ones."""
        return {
            self.keys.owner_uid: ud.uid,
            self.keys.owner_name: ud.name,
            self.keys.owner_cluster: self.host_id,
        }

    def pod_labels(self) -> dict[str, str]:
        """Labels added to a remote child's pod template, so member pod watches select ours only."""
        return {self.keys.owner_cluster: self.host_id}

    def selector(self) -> str:
        """Label selector of member informers: our subsets' objects made by this host."""
        return f"{self.keys.subset_name},{self.keys.owner_cluster}={self.host_id}"

    def owner_of(self, obj: Mapping[str, Any]) -> str | None:
        """The owning UnitedDeployment's uid, when this host made ``obj``; else None."""
        labels = _labels(obj)
        if labels.get(self.keys.owner_cluster) != self.host_id:
            return None
        return labels.get(self.keys.owner_uid) or None

    def ud_key(self, obj: Mapping[str, Any]) -> str | None:
        """``namespace/name`` of the UnitedDeployment a remote object of this host belongs to
        (the namespace is the object's own: children live in their owner's namespace)."""
        labels = _labels(obj)
        name = labels.get(self.keys.owner_name)
        namespace = (obj.get("metadata") or {}).get("namespace")
        if labels.get(self.keys.owner_cluster) != self.host_id or not name or not namespace:
            return None
        return f"{namespace}/{name}"


def _labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, Mapping) else {}
