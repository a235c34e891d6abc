"""Generic controller machinery, with no knowledge of UnitedDeployments.

* :mod:`united.runtime.queue` — a de-duplicating, rate-limited work queue of keys;
* :mod:`united.runtime.informer` — list + watch into a local store, with handlers;
* :mod:`united.runtime.leader` — leader election on a coordination.k8s.io Lease.

They mirror client-go's workqueue, informer and leaderelection packages, because
operators and readers already know how those behave; see each module for where and
why they differ.

Import from the modules themselves (``from united.runtime.queue import WorkQueue``):
this package re-exports nothing, so importing one runtime module (say, metrics)
never drags in the others or the Kubernetes client, and no import cycle can form
between the client and the runtime.
"""
