"""united: a Kubernetes controller for UnitedDeployments.

One pod template, an ordered list of subsets (zones, node pools, elastic pools, CPU
architectures), one child workload per subset. The pure core (``united.api``,
``united.allocation``, ``united.render``, ``united.revision``, ``united.patch``) has no
Kubernetes client imports; all I/O lives in the runtime edge.
"""

__version__ = "0.1.0"
