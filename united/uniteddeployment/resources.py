"""The API resource of each child kind, for the code that lists, watches and writes children:
the reconciler, and the member clusters' informers and orphan collector, which must not depend
on the reconciler to know what a child is."""

from __future__ import annotations

from united.kube.client import Resource
from united.uniteddeployment.render import KINDS


def resource_of(variant: str) -> Resource:
    kind = KINDS[variant]
    group, _, version = kind.api_version.rpartition("/")
    return Resource(group, version, kind.plural, True, kind.kind)
