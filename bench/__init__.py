"""Benchmarks of the controller against the API server's own write floor.

``python -m bench`` runs every scenario on a fresh local control plane and writes
``bench/results/latest.json`` and ``latest.md``; ``python -m bench --help`` lists the sizes.
See ``docs/performance.md`` for what each figure means.
"""
