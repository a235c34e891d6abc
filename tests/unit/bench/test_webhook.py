"""The pure parts the WorkloadSpread scenarios share: the spread they create, the maxima that
make every pod book, and the over-fill check that makes their figures honest."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.webhook import makes_token_secrets, maxima_for, placement, published, remove_configurations, spread
from united.api.groups import KRUISE_GROUP
from united.devcluster.nodes import ZONE_LABEL
from united.kube.errors import NotFound
from united.workloadspread.admission import admit
from united.workloadspread.injection import inject
from united.workloadspread.model import MATCHED_ANNOTATION
from united.workloadspread.webhookconfig import NAME


def placed(name: str, subset: str | None, spread_name: str = "ws", zone: str | None = None) -> dict[str, Any]:
    """A pod as the webhook answers it: annotated and required into its subset's zone."""
    if subset is None:
        return {"metadata": {"name": name}, "spec": {}}
    term = {"matchExpressions": [{"key": ZONE_LABEL, "operator": "In", "values": [zone or f"zone-{subset[1:]}"]}]}
    required = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    annotations = {MATCHED_ANNOTATION: json.dumps({"name": spread_name, "subset": subset})}
    return {"metadata": {"name": name, "annotations": annotations}, "spec": {"affinity": {"nodeAffinity": required}}}


def test_maxima_just_exceed_the_pods_so_every_pod_books_and_the_last_subset_has_room() -> None:
    assert maxima_for(200, 4) == [51, 51, 51, 51]  # 200 would fill all four exactly: one more each
    assert maxima_for(310, 3) == [104, 104, 104]
    assert maxima_for(1, 3) == [1, 1, 1]
    for pods, subsets in ((200, 4), (310, 3), (7, 2), (1, 1)):
        assert sum(maxima_for(pods, subsets)) > pods


def test_the_spread_is_valid_and_targets_the_deployment_with_every_maximum() -> None:
    doc = spread("ws", "ns", target="web", maxima=[3, None])
    ws = admit(doc)
    ref = ws.spec.target_ref
    assert ref is not None and (ref.kind, ref.name) == ("Deployment", "web")
    assert [(s.name, s.max_replicas) for s in ws.spec.subsets] == [("s0", 3), ("s1", None)]


def test_placement_counts_each_subset_and_flags_over_filled_ones_and_unplaced_pods() -> None:
    pods = [placed("a", "s0"), placed("b", "s0"), placed("c", "s1"), placed("d", None), placed("e", "s0", "other"),
            placed("f", "s9")]  # fmt: skip
    assert placement(pods, spread="ws", maxima=[2, 5]) == {
        "counts": {"s0": 2, "s1": 1}, "maxima": [2, 5], "unplaced": 3, "over_filled": {}, "wrong_zone": 0}  # fmt: skip
    assert placement(pods, spread="ws", maxima=[1, None])["over_filled"] == {"s0": 2}
    assert placement([], spread="ws", maxima=[1])["counts"] == {"s0": 0}


def test_a_placed_pod_must_require_its_subsets_zone_exactly() -> None:
    pods = [placed("a", "s0"), placed("b", "s1", zone="zone-0"), placed("c", "s1")]
    assert placement(pods, spread="ws", maxima=[5, 5])["wrong_zone"] == 1
    real = inject({"metadata": {"name": "p"}, "spec": {}}, admit(spread("ws", "ns", target="web", maxima=[1, 1])), "s1",
                  uid=None)  # fmt: skip
    assert placement([real], spread="ws", maxima=[1, 1]) == {
        "counts": {"s0": 0, "s1": 1}, "maxima": [1, 1], "unplaced": 0, "over_filled": {}, "wrong_zone": 0}  # fmt: skip


class VersionServer:
    def __init__(self, major: str, minor: str) -> None:
        self.answer = json.dumps({"major": major, "minor": minor, "gitVersion": f"v{major}.{minor}.0"})

    async def get_path(self, path: str) -> str:
        assert path == "/version"
        return self.answer


@pytest.mark.parametrize(
    ("major", "minor", "secrets"), [("1", "20", True), ("1", "23+", True), ("1", "24", False), ("1", "37", False)]
)
async def test_token_secrets_are_awaited_only_where_the_api_server_makes_them(
    major: str, minor: str, secrets: bool
) -> None:
    assert await makes_token_secrets(VersionServer(major, minor)) is secrets  # type: ignore[arg-type]


def test_a_kruise_spread_is_v1alpha1_with_that_versions_spelling_and_reads_as_ours_does() -> None:
    ours, kruise = (
        spread("ws", "ns", target="web", maxima=[3, None]),
        spread("ws", "ns", target="web", maxima=[3, None], group=KRUISE_GROUP),
    )
    assert (ours["apiVersion"], kruise["apiVersion"]) == ("apps.united.io/v1alpha1", "apps.kruise.io/v1alpha1")
    assert "requiredNodeSelector" in ours["spec"]["subsets"][0]
    assert "requiredNodeSelectorTerm" in kruise["spec"]["subsets"][0]  # OpenKruise's v1alpha1 field
    assert (
        kruise["spec"]["subsets"][0]["requiredNodeSelectorTerm"] == ours["spec"]["subsets"][0]["requiredNodeSelector"]
    )
    a, b = admit(ours), admit(kruise)
    assert [(s.name, s.max_replicas, s.required_node_selector) for s in a.spec.subsets] == [
        (s.name, s.max_replicas, s.required_node_selector) for s in b.spec.subsets
    ]


class Configurations:
    """Webhook configurations as the API server holds them."""

    def __init__(self, **live: dict[str, Any]) -> None:
        self.live = live
        self.deleted: list[tuple[str, str]] = []

    async def get(self, resource: Any, name: str) -> dict[str, Any]:
        if name not in self.live:
            raise NotFound(name, status=404)
        return self.live[name]

    async def delete(self, resource: Any, name: str) -> None:
        self.deleted.append((resource.kind, name))
        if self.live.pop(name, None) is None:
            raise NotFound(name, status=404)


def hook(name: str, ca: str | None = None) -> dict[str, Any]:
    return {"name": name, "clientConfig": {"caBundle": ca} if ca else {"service": {"path": "/p"}}}


async def test_a_peers_configurations_count_as_published_once_every_webhook_has_a_ca() -> None:
    mutating, validating = "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"
    docs = [{"kind": mutating, "metadata": {"name": "m"}, "webhooks": [hook("a")]},
            {"kind": validating, "metadata": {"name": "v"}, "webhooks": [hook("b"), hook("c")]}]  # fmt: skip
    client: Any = Configurations(m=docs[0])
    assert not await published(client, docs)  # one missing
    client.live |= {"m": {"webhooks": [hook("a", "CA")]}, "v": {"webhooks": [hook("b", "CA"), hook("c")]}}
    assert not await published(client, docs)  # one without its CA
    client.live["v"] = {"webhooks": [hook("b", "CA")]}
    assert not await published(client, docs)  # one dropped
    client.live["v"] = {"webhooks": [hook("b", "CA"), hook("c", "CA")]}
    assert await published(client, docs)
    await remove_configurations(client, docs)
    assert client.live == {}
    expected = [(mutating, NAME), (validating, NAME), (mutating, "m"), (validating, "v")]
    assert sorted(client.deleted) == sorted(expected)
