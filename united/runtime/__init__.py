"""Generic controller machinery, with no knowledge of UnitedDeployments.

* :mod:`united.runtime.queue` — a de-duplicating, rate-limited work queue of keys;
* :mod:`united.runtime.informer` — list + watch into a local store, with handlers;
* :mod:`united.runtime.leader` — leader election on a coordination.k8s.io Lease.

They mirror client-go's workqueue, informer and leaderelection packages, because
operators and readers already know how those behave; see each module for where and
why they differ.
"""

from united.runtime.informer import ADDED, DELETED, MODIFIED, Change, EventHandler, Informer, Store, object_key
from united.runtime.leader import LeaderElector
from united.runtime.queue import (
    BucketRateLimiter,
    ExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    NoQueueMetrics,
    QueueMetrics,
    RateLimiter,
    ShutDown,
    WorkQueue,
    default_controller_rate_limiter,
)

__all__ = [
    "ADDED",
    "DELETED",
    "MODIFIED",
    "BucketRateLimiter",
    "Change",
    "EventHandler",
    "ExponentialFailureRateLimiter",
    "Informer",
    "LeaderElector",
    "MaxOfRateLimiter",
    "NoQueueMetrics",
    "QueueMetrics",
    "RateLimiter",
    "ShutDown",
    "Store",
    "WorkQueue",
    "default_controller_rate_limiter",
    "object_key",
]
