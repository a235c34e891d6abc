"""The reconciler on fake caches and a recording client (the e2e suite runs it for real)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.test_adaptive import Cluster, FakeClient
from united.kube.errors import Forbidden, error_from_status, namespace_terminating

TERMINATING = {
    "kind": "Status",
    "status": "Failure",
    "reason": "Forbidden",
    "message": 'controllerrevisions.apps "web-1" is forbidden: unable to create new content in namespace ns '
    "because it is being terminated",
    "details": {
        "causes": [
            {
                "reason": "NamespaceTerminating",
                "message": "namespace ns is being terminated",
                "field": "metadata.namespace",
            }
        ]
    },
    "code": 403,
}


class RefusingClient(FakeClient):
    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__()
        self.body = body

    async def create(self, resource: Any, body: Any, *, namespace: str) -> Any:
        self.calls.append(("create", resource.plural, "", body))
        raise error_from_status(403, self.body)


async def test_a_namespace_being_deleted_ends_the_pass_without_more_writes() -> None:
    c = Cluster({}, replicas=2, a=(1, 1), b=(1, 1))
    c.client = RefusingClient(TERMINATING)
    result = await c.reconcile(0.0)
    assert result.requeue_after is None
    assert [(v, w) for v, w, _, _ in c.client.calls] == [("create", "controllerrevisions")]
    assert c.recorder.events == []


async def test_another_forbidden_create_still_fails_the_pass() -> None:
    c = Cluster({}, replicas=2, a=(1, 1), b=(1, 1))
    c.client = RefusingClient({**TERMINATING, "details": {}})
    with pytest.raises(Forbidden, match="forbidden"):
        await c.reconcile(0.0)


def test_namespace_terminating_reads_the_status_cause() -> None:
    assert namespace_terminating(error_from_status(403, TERMINATING))
    assert not namespace_terminating(error_from_status(403, {**TERMINATING, "details": {}}))
    assert not namespace_terminating(error_from_status(409, TERMINATING))
