"""The runtime's edge to the Kubernetes API: a generic async client and typed errors.

Only ``united.kube.client`` and ``united.kube.library`` import ``kubernetes_asyncio``; everything else talks to
the cluster through :class:`~united.kube.client.KubeClient` and plain dicts.
"""

from united.kube.client import (
    JSON,
    KubeClient,
    ObjectList,
    PatchType,
    Resource,
    WatchEvent,
    WatchStream,
)
from united.kube.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Fenced,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    TooManyRequests,
    TransientError,
    Unauthorized,
)

__all__ = [
    "JSON",
    "AlreadyExists",
    "ApiError",
    "Conflict",
    "Fenced",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeClient",
    "NotFound",
    "ObjectList",
    "PatchType",
    "Resource",
    "TooManyRequests",
    "TransientError",
    "Unauthorized",
    "WatchEvent",
    "WatchStream",
]
