"""Benchmarks of the controller against the API server's own write floor (issue #7).

``python -m bench`` runs every scenario on a fresh local control plane and writes
``bench/results/latest.json`` and ``latest.md``; ``python -m bench --help`` lists the sizes.
See README "Performance" for what each figure means.
"""
