"""The WorkloadSpread kind: subsets for the pods of a workload that already exists.

Nothing here owns a workload. A pod admission webhook places each new pod in a subset and
books it in the status; the controller recounts the status from the pods, writes
``pod-deletion-cost`` so scale-in removes the right pods first, and (Adaptive) moves pods
out of subsets that cannot schedule them. ``model`` is the API; the pure core decides,
``reconciler`` and ``webhook`` meet the cluster.
"""
