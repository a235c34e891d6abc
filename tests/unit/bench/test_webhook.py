"""The pure parts the WorkloadSpread scenarios share: the spread they create, the maxima that
make every pod book, and the over-fill check that makes their figures honest."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.webhook import makes_token_secrets, maxima_for, placement, spread
from united.devcluster.nodes import ZONE_LABEL
from united.workloadspread.admission import admit
from united.workloadspread.injection import inject
from united.workloadspread.model import MATCHED_ANNOTATION


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
