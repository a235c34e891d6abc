"""Render child workloads: one per subset, exactly as the controller creates them.

Everything common to all kinds lives here: ``generateName``
``<ud>-<subset>-``, labels (template labels, selector labels, subset name, revision), the
child selector (the UnitedDeployment selector plus the subset-name label), the controller
owner reference, the pod template placed into its subset (:mod:`united.placement.subset`), replicas,
and the subset-patch annotation. What differs per kind sits behind :class:`ChildKind`.

We also stamp ``<group>/spec-hash``: a digest of everything we render except replicas and
partition. The API server defaults a child's spec on write, so comparing our rendering with
the live spec would see differences forever; comparing our own digest does not.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from united.api.document import Json
from united.api.names import child_prefix
from united.multicluster.identity import RemoteKeys
from united.placement.subset import patch_text, place
from united.uniteddeployment.keys import Keys
from united.uniteddeployment.model import (
    ADVANCED_STATEFUL_SET,
    CLONE_SET,
    DEPLOYMENT,
    KIND,
    STATEFUL_SET,
    Subset,
    UnitedDeployment,
)
from united.uniteddeployment.render import advanced_statefulset, cloneset, deployment, statefulset
from united.uniteddeployment.render.kind import ChildKind

KINDS: dict[str, ChildKind] = {
    STATEFUL_SET: statefulset.KIND,
    ADVANCED_STATEFUL_SET: advanced_statefulset.KIND,
    CLONE_SET: cloneset.KIND,
    DEPLOYMENT: deployment.KIND,
}


@dataclass(frozen=True, slots=True)
class Rendered:
    """A rendered child, and whether its workload will really hold the partition we asked."""

    object: Json
    partition_applied: bool
    complete: bool = True
    """False for a child rendered from a kept blueprint: it has no pod template
    (:mod:`united.uniteddeployment.render.blueprints`)."""


def kind_of(ud: UnitedDeployment) -> ChildKind:
    template = ud.spec.template
    if template is None:
        raise ValueError("spec.template: Required value: no workload template")
    return KINDS[template.variant]


def child_selector(ud: UnitedDeployment, subset: str, keys: Keys) -> Json:
    selector = ud.spec.selector.to_dict() if ud.spec.selector else {}
    selector["matchLabels"] = {**selector.get("matchLabels", {}), keys.subset_name: subset}
    return selector


def owner_reference(ud: UnitedDeployment) -> Json:
    return {
        "apiVersion": ud.api_version,
        "kind": KIND,
        "name": ud.name,
        "uid": ud.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def render(
    ud: UnitedDeployment,
    *,
    subset: Subset,
    replicas: int,
    partition: int,
    revision: str,
    keys: Keys,
    remote: RemoteKeys | None = None,
) -> Rendered:
    """Render the child of ``subset``; ``ud`` must be defaulted and valid."""
    made = blueprint(ud, subset=subset, revision=revision, keys=keys, remote=remote)
    return finish(made, kind_of(ud), replicas, partition)


def blueprint(
    ud: UnitedDeployment, *, subset: Subset, revision: str, keys: Keys, remote: RemoteKeys | None = None
) -> Json:
    """The child of ``subset`` but for replicas and partition: what costs (placing the pod
    template into the subset, the spec digest) and changes only with the spec and the revision,
    so that it can be kept between passes (:mod:`united.uniteddeployment.render.blueprints`).

    A child in a member cluster (``remote``) cannot carry an ownerReference to the host's
    UnitedDeployment: it carries owner labels instead (:class:`~united.multicluster.identity.RemoteKeys`),
    its pod template the host's identity (member pod watches select this host's pods only), and
    the ``Cluster`` name as an annotation. The labels are in the spec digest like any other."""
    kind = kind_of(ud)
    template = ud.spec.template
    assert template is not None
    selector_labels = dict(ud.spec.selector.match_labels) if ud.spec.selector else {}
    labels = {
        **(template.metadata.get("labels") or {}),
        **selector_labels,
        keys.revision: revision,
        keys.subset_name: subset.name,
    }
    annotations = {**(template.metadata.get("annotations") or {}), keys.subset_patch: patch_text(subset.patch)}
    if remote is not None:
        labels |= remote.labels(ud)
        annotations[keys.cluster] = subset.cluster or ""
    # The pod template is copied once, by place(); here it only keeps its key's position.
    spec: Json = {k: None if k == "template" else copy.deepcopy(v) for k, v in template.spec.items()}
    spec.pop("replicas", None)
    spec["selector"] = child_selector(ud, subset.name, keys)
    pod = dict(template.pod_template)
    pod_meta = pod["metadata"] = dict(pod.get("metadata") or {})
    pod_meta["labels"] = {**(pod_meta.get("labels") or {}), keys.subset_name: subset.name, keys.revision: revision}
    if remote is not None:
        pod_meta["labels"] |= remote.pod_labels()
    spec["template"] = place(
        pod,
        node_selector_term=subset.node_selector_term,
        tolerations=subset.tolerations,
        patch=subset.patch,
    )
    annotations[keys.spec_hash] = spec_digest(labels=labels, annotations=annotations, spec=spec)
    metadata: Json = {
        "generateName": child_prefix(ud.name, subset.name),
        "labels": labels,
        "annotations": annotations,
    }
    if remote is None:
        metadata["ownerReferences"] = [owner_reference(ud)]
    if ud.namespace:
        metadata["namespace"] = ud.namespace
    return {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": metadata, "spec": spec}


def finish(blueprint: Json, kind: ChildKind, replicas: int, partition: int) -> Rendered:
    """``blueprint`` with ``replicas`` and ``partition``: a new object that shares the blueprint's
    nested values, so it costs what its top level holds, not its pod template. Nothing may
    change those values in place: the partition and the reservation override replace the
    strategy they write (:meth:`ChildKind.set_partition`)."""
    meta = blueprint["metadata"]
    metadata = {
        **meta,
        "labels": dict(meta["labels"]),
        "annotations": dict(meta["annotations"]),
    }
    if "ownerReferences" in meta:
        metadata["ownerReferences"] = [dict(ref) for ref in meta["ownerReferences"]]
    spec = {**blueprint["spec"], "replicas": replicas}
    applied = kind.set_partition(spec, partition)
    return Rendered(object={**blueprint, "metadata": metadata, "spec": spec}, partition_applied=applied)


def spec_digest(**parts: Any) -> str:
    """A short, stable digest of JSON data (sorted keys), for change detection only."""
    data = json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(data).hexdigest()[:16]
