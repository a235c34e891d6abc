"""Strategic-merge-patch metadata for pod templates and pods (``k8s.io/api/core/v1``, ~1.30).

A strategic merge patch cannot be applied from JSON alone: whether ``containers`` is merged
by ``name`` or replaced wholesale lives in the Go struct tags (``patchStrategy``,
``patchMergeKey``) of the typed API. This module restates those tags as data, so the pure
engine in :mod:`united.placement.patch` needs neither Go nor a Kubernetes client.

Sources, read field by field from ``staging/src/k8s.io/api/core/v1/types.go`` and
``apimachinery/pkg/apis/meta/v1/types.go``. Every list with a ``patchStrategy`` tag that can
occur in a ``PodTemplateSpec`` is here:

* ``ObjectMeta``: ``finalizers`` (merge, a set of strings), ``ownerReferences`` (by ``uid``);
* ``PodSpec``: ``volumes``, ``initContainers``, ``containers``, ``ephemeralContainers``,
  ``imagePullSecrets``, ``schedulingGates``, ``resourceClaims`` (by ``name``),
  ``hostAliases`` (by ``ip``), ``topologySpreadConstraints`` (by ``topologyKey``);
* ``Container`` and ``EphemeralContainerCommon``: ``ports`` (by ``containerPort``), ``env``
  (by ``name``), ``volumeMounts`` (by ``mountPath``), ``volumeDevices`` (by ``devicePath``);
* ``ObjectMeta`` again inside ``volumes[].ephemeral.volumeClaimTemplate.metadata``.

Everything else is atomic for strategic merge patch, even where the server-side-apply
markers say ``+listType=map``: ``tolerations``, ``envFrom``, ``resizePolicy``,
``resources.claims``, ``readinessGates``, all affinity terms (``nodeSelectorTerms``, ...),
``dnsConfig`` lists, ``command``/``args``. The ``retainKeys`` half of
``merge,retainKeys`` (``volumes``, ``resourceClaims``) only matters when *computing* a patch;
applying honours a ``$retainKeys`` directive wherever it appears, so it is not modelled.
Nor is ``patchStrategy: replace`` on structs: no field of a pod carries it.

Beyond merge keys the table records the JSON shape (object, list, scalar) of the composite
fields around them, which lets the engine reject a patch whose shape contradicts the API
(a map where ``containers`` expects a list) before applying it. Scalar fields are not
listed; a field that is not in the table is merged as a plain map or replaced as an atomic
list, which is exactly what the typed schema would do for it anyway.

A Pod has the same ``{metadata, spec}`` shape as a pod template, so :data:`POD` is the same
table; ``status`` is not described (the admission webhook patches ``spec``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, TypeAlias


@dataclass(frozen=True, slots=True, eq=False)
class ScalarSchema:
    """A string, number, boolean (or ``null``); used for the values of string maps and sets."""


@dataclass(frozen=True, slots=True, eq=False)
class ObjectSchema:
    """A JSON object: a struct with known ``fields``, or a map whose entries are all ``values``.

    A key that is in neither has no schema and is merged as plain JSON.
    """

    fields: Mapping[str, Schema] = field(default_factory=lambda: MappingProxyType({}))
    values: Schema | None = None

    def child(self, key: str) -> Schema | None:
        return self.fields.get(key, self.values)


@dataclass(frozen=True, slots=True, eq=False)
class ListSchema:
    """A JSON list. ``merge`` is ``patchStrategy: merge``; ``merge_key`` its ``patchMergeKey``.

    Without ``merge`` the list is atomic (replaced by the patch); with ``merge`` and no key it
    is a set of scalars (union); with a key, elements are objects merged by that key.
    """

    items: Schema | None = None
    merge: bool = False
    merge_key: str | None = None


Schema: TypeAlias = ObjectSchema | ListSchema | ScalarSchema

SCALAR: Final = ScalarSchema()


def obj(fields: Mapping[str, Schema] | None = None) -> ObjectSchema:
    """A struct; only composite fields need listing."""
    return ObjectSchema(fields=MappingProxyType(dict(fields or {})))


def string_map() -> ObjectSchema:
    """``map[string]string`` and ``ResourceList`` (quantities are strings or numbers)."""
    return ObjectSchema(values=SCALAR)


def atomic(items: Schema | None = None) -> ListSchema:
    """A list without a patch strategy: the patch replaces it wholesale."""
    return ListSchema(items=items)


def merge_by(key: str, items: ObjectSchema) -> ListSchema:
    """``patchStrategy: merge`` with ``patchMergeKey: key``."""
    return ListSchema(items=items, merge=True, merge_key=key)


def merge_set() -> ListSchema:
    """``patchStrategy: merge`` on a list of scalars: a union."""
    return ListSchema(items=SCALAR, merge=True)


_STRINGS = atomic(SCALAR)
_QUANTITIES = string_map()

LABEL_SELECTOR: Final = obj({"matchLabels": string_map(), "matchExpressions": atomic(obj({"values": _STRINGS}))})

OBJECT_META: Final = obj(
    {
        "labels": string_map(),
        "annotations": string_map(),
        "finalizers": merge_set(),
        "ownerReferences": merge_by("uid", obj()),
        "managedFields": atomic(obj()),
    }
)

_EXEC = obj({"command": _STRINGS})
_HTTP_GET = obj({"httpHeaders": atomic(obj())})
_PROBE = obj({"exec": _EXEC, "httpGet": _HTTP_GET, "tcpSocket": obj(), "grpc": obj()})
_HANDLER = obj({"exec": _EXEC, "httpGet": _HTTP_GET, "tcpSocket": obj(), "sleep": obj()})
_RESOURCES = obj({"limits": _QUANTITIES, "requests": _QUANTITIES, "claims": atomic(obj())})
_KEY_REF = obj()

CONTAINER: Final = obj(
    {
        "command": _STRINGS,
        "args": _STRINGS,
        "ports": merge_by("containerPort", obj()),
        "envFrom": atomic(obj({"configMapRef": _KEY_REF, "secretRef": _KEY_REF})),
        "env": merge_by(
            "name",
            obj(
                {
                    "valueFrom": obj(
                        {
                            "fieldRef": _KEY_REF,
                            "resourceFieldRef": _KEY_REF,
                            "configMapKeyRef": _KEY_REF,
                            "secretKeyRef": _KEY_REF,
                        }
                    )
                }
            ),
        ),
        "resources": _RESOURCES,
        "resizePolicy": atomic(obj()),
        "volumeMounts": merge_by("mountPath", obj()),
        "volumeDevices": merge_by("devicePath", obj()),
        "livenessProbe": _PROBE,
        "readinessProbe": _PROBE,
        "startupProbe": _PROBE,
        "lifecycle": obj({"postStart": _HANDLER, "preStop": _HANDLER}),
        "securityContext": obj(
            {
                "capabilities": obj({"add": _STRINGS, "drop": _STRINGS}),
                "seLinuxOptions": obj(),
                "windowsOptions": obj(),
                "seccompProfile": obj(),
                "appArmorProfile": obj(),
            }
        ),
    }
)

_NODE_SELECTOR_TERM = obj(
    {
        "matchExpressions": atomic(obj({"values": _STRINGS})),
        "matchFields": atomic(obj({"values": _STRINGS})),
    }
)
_POD_AFFINITY_TERM = obj(
    {
        "labelSelector": LABEL_SELECTOR,
        "namespaceSelector": LABEL_SELECTOR,
        "namespaces": _STRINGS,
        "matchLabelKeys": _STRINGS,
        "mismatchLabelKeys": _STRINGS,
    }
)
_POD_AFFINITY = obj(
    {
        "requiredDuringSchedulingIgnoredDuringExecution": atomic(_POD_AFFINITY_TERM),
        "preferredDuringSchedulingIgnoredDuringExecution": atomic(obj({"podAffinityTerm": _POD_AFFINITY_TERM})),
    }
)
AFFINITY: Final = obj(
    {
        "nodeAffinity": obj(
            {
                "requiredDuringSchedulingIgnoredDuringExecution": obj(
                    {"nodeSelectorTerms": atomic(_NODE_SELECTOR_TERM)}
                ),
                "preferredDuringSchedulingIgnoredDuringExecution": atomic(obj({"preference": _NODE_SELECTOR_TERM})),
            }
        ),
        "podAffinity": _POD_AFFINITY,
        "podAntiAffinity": _POD_AFFINITY,
    }
)

_ITEMS = atomic(obj({"fieldRef": _KEY_REF, "resourceFieldRef": _KEY_REF}))
VOLUME: Final = obj(
    {
        "configMap": obj({"items": _ITEMS}),
        "secret": obj({"items": _ITEMS}),
        "downwardAPI": obj({"items": _ITEMS}),
        "projected": obj({"sources": atomic(obj())}),
        "csi": obj({"volumeAttributes": string_map(), "nodePublishSecretRef": _KEY_REF}),
        "emptyDir": obj(),
        "hostPath": obj(),
        "persistentVolumeClaim": obj(),
        "nfs": obj(),
        "image": obj(),
        "ephemeral": obj(
            {
                "volumeClaimTemplate": obj(
                    {
                        "metadata": OBJECT_META,
                        "spec": obj(
                            {
                                "accessModes": _STRINGS,
                                "selector": LABEL_SELECTOR,
                                "resources": obj({"limits": _QUANTITIES, "requests": _QUANTITIES}),
                                "dataSource": obj(),
                                "dataSourceRef": obj(),
                            }
                        ),
                    }
                )
            }
        ),
    }
)

POD_SPEC: Final = obj(
    {
        "volumes": merge_by("name", VOLUME),
        "initContainers": merge_by("name", CONTAINER),
        "containers": merge_by("name", CONTAINER),
        "ephemeralContainers": merge_by("name", CONTAINER),
        "imagePullSecrets": merge_by("name", obj()),
        "hostAliases": merge_by("ip", obj({"hostnames": _STRINGS})),
        "topologySpreadConstraints": merge_by(
            "topologyKey", obj({"labelSelector": LABEL_SELECTOR, "matchLabelKeys": _STRINGS})
        ),
        "schedulingGates": merge_by("name", obj()),
        "resourceClaims": merge_by("name", obj({"source": obj()})),
        "tolerations": atomic(obj()),
        "readinessGates": atomic(obj()),
        "nodeSelector": string_map(),
        "overhead": _QUANTITIES,
        "resources": _RESOURCES,
        "affinity": AFFINITY,
        "securityContext": obj(
            {
                "seLinuxOptions": obj(),
                "windowsOptions": obj(),
                "seccompProfile": obj(),
                "appArmorProfile": obj(),
                "supplementalGroups": atomic(SCALAR),
                "sysctls": atomic(obj()),
            }
        ),
        "dnsConfig": obj({"nameservers": _STRINGS, "searches": _STRINGS, "options": atomic(obj())}),
        "os": obj(),
    }
)

POD_TEMPLATE: Final = obj({"metadata": OBJECT_META, "spec": POD_SPEC})
POD: Final = POD_TEMPLATE
