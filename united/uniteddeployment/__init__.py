"""The UnitedDeployment kind: one child workload per subset.

Pure core: ``model``, ``defaults``, ``validation``, ``admission`` (all three in one call),
``allocation``, ``adaptive``, ``revision``, ``history``, ``children``, ``diff``, ``status`` and
``render`` (one module per child kind). ``reconciler`` is where they meet the cluster.
"""
