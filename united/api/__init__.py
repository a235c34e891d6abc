"""API machinery every kind shares: field errors, Kubernetes name rules, size limits.

Each kind's own model, defaults and validation live in its package
(:mod:`united.uniteddeployment`, :mod:`united.workloadspread`).
"""
