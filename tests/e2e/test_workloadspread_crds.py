"""The WorkloadSpread CRDs on the real API server (1.20): both are accepted and Established
(the compat one with its conversion webhook), a WorkloadSpread in each group is stored as
sent, and everything the webhook and the controller write to ``status`` survives the
server's structural pruning. (Reading a stored v1beta1 object as v1alpha1 goes through the
conversion webhook the controller serves: tests/e2e/workloadspread.)"""

from __future__ import annotations

import pytest

from tests.unit.workloadspread.test_crds import written_status
from tests.unit.workloadspread.test_validation import base
from united import data
from united.api.groups import GROUP, KRUISE_GROUP
from united.kube.apply import install_crds
from united.kube.client import CRDS, KubeClient, Resource
from united.kube.errors import Conflict
from united.workloadspread.model import KRUISE_BETA

pytestmark = pytest.mark.e2e

UNITED = Resource(GROUP, "v1alpha1", "workloadspreads", True, "WorkloadSpread")
KRUISE = Resource(KRUISE_GROUP, "v1beta1", "workloadspreads", True, "WorkloadSpread")


@pytest.mark.parametrize(("resource", "api_version"), [(UNITED, f"{GROUP}/v1alpha1"), (KRUISE, KRUISE_BETA)])
async def test_a_workload_spread_and_its_status_are_stored_as_written(
    kube: KubeClient, namespace: str, resource: Resource, api_version: str
) -> None:
    await install_crds(kube, data.documents(*data.crds(GROUP), *data.crds(KRUISE_GROUP)))
    compat = await kube.get(CRDS, f"workloadspreads.{KRUISE_GROUP}")
    assert compat["spec"]["conversion"]["strategy"] == "Webhook"
    doc = base(api_version)
    doc["metadata"]["namespace"] = namespace
    created = await kube.create(resource, doc, namespace=namespace)
    assert created["spec"] == doc["spec"]
    status = written_status(generations=True)
    # A session controller serving every namespace may write this spread's status too: the
    # answer to our own write is what the server stored from it.
    for _ in range(10):
        current = await kube.get(resource, doc["metadata"]["name"], namespace=namespace)
        try:
            updated = await kube.replace(resource, {**current, "status": status}, namespace=namespace,
                                         subresource="status")  # fmt: skip
            break
        except Conflict:
            continue
    else:
        raise AssertionError("ten status writes in a row conflicted")
    assert updated["status"] == status
    records = [m["fieldsV1"]["f:status"] for m in updated["metadata"]["managedFields"] if "f:status" in m["fieldsV1"]]
    assert records and all(r == {} for r in records), "the status is one atomic field to the field manager"
