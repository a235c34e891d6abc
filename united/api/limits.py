"""What one UnitedDeployment may ask of the controller.

The controller serves every namespace from one event loop, and the same loop renews its
Lease: a spec whose pass costs seconds of CPU stalls everyone and costs the leader its
Lease. A pass costs about ``subsets x (template + subset)`` and one subset's share (merge
its patch, validate, render, diff) is the longest stretch between two points where the
pass yields, so both factors are bounded here. The limits are far above what real
topologies use (a few zones or pools, patches of a few KiB) and keep the worst subset's
share of a pass to tens of milliseconds; ``docs/reference/limits.md`` gives the figures.
"""

from __future__ import annotations

import json
from typing import Any, Final

MAX_SPEC_BYTES: Final = 512 * 1024
"""The whole ``spec``, serialized: bounds what is parsed and checked in one go. (``kubectl
apply`` keeps the whole object in an annotation, and an object's annotations may hold 256 KiB.)"""
MAX_SUBSETS: Final = 200
"""Items in ``spec.topology.subsets`` (also the CRD's ``maxItems``)."""
MAX_PATCH_BYTES: Final = 64 * 1024
"""A subset's ``patch``, serialized."""
MAX_PLACEMENT_BYTES: Final = 16 * 1024
"""A subset's ``nodeSelectorTerm``, and its ``tolerations``, each serialized."""
MAX_TEMPLATE_BYTES: Final = 128 * 1024
"""The workload template (``spec.template.<kind>Template``), serialized."""
MAX_REVISION_HISTORY: Final = 100
"""``spec.revisionHistoryLimit`` (also the CRD's ``maximum``): every kept ControllerRevision holds
a copy of the template, in etcd and in the controller's cache, and each is compared with the
template once per process (:class:`united.uniteddeployment.history.Likeness`)."""


def size(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON: what etcd and the API server hold of it."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str).encode())
