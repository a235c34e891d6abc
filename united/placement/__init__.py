"""Placement: what a subset does to a pod, shared by every kind.

Node affinity and tolerations, the strategic-merge patch, label selectors and
int-or-percent values. A UnitedDeployment applies them to each child's pod template; a
WorkloadSpread applies them to each admitted pod. Pure functions of plain data.
"""
