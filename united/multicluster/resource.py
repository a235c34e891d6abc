"""Where ``Cluster`` objects live in the REST tree.

Kept apart from :mod:`united.multicluster.model`, which stays pure: ``Resource`` comes from the
kube client, the only package that may import ``kubernetes_asyncio``.
"""

from __future__ import annotations

from united.api.groups import GROUP
from united.kube.client import Resource
from united.multicluster.model import KIND, PLURAL, VERSION

CLUSTERS = Resource(GROUP, VERSION, PLURAL, False, KIND)
