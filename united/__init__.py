"""united: a Kubernetes controller for UnitedDeployments and WorkloadSpreads.

Subsets (zones, node pools, elastic pools, CPU architectures) for pods: a UnitedDeployment
renders one child workload per subset; a WorkloadSpread places the pods of a workload that
already exists. One package per kind (``united.uniteddeployment``, ``united.workloadspread``),
the placement both share in ``united.placement``; their pure cores have no Kubernetes client
imports. All I/O lives in the runtime edge (``united.kube``, ``united.runtime``,
``united.controller``).
"""

__version__ = "0.1.0"
