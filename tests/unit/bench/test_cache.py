"""``python -m bench.cache``: what one cached pod and child cost in-process, against issue 14's
4 KB each (RSS adds the allocator's share: the memory scenario measures that)."""

from __future__ import annotations

import pytest

from bench.cache import measure


def test_a_cached_pod_and_child_stay_under_4_kb_and_a_second_store_costs_only_its_index() -> None:
    figures = measure(500)
    assert figures["bytes_per_pod"] < 0.5 * figures["json_bytes_per_pod"], "projected and shared"
    assert figures["bytes_per_child"] < 4096 and figures["bytes_per_child_varied"] < 4096
    for kind in ("pod", "child"):
        assert figures[f"bytes_per_{kind}_two_stores"] - figures[f"bytes_per_{kind}"] < 600, "no second copy"


def test_the_figures_do_not_depend_on_what_this_process_compacted_before() -> None:
    """The pools start empty in every measurement: an earlier test that compacted the same
    objects (or filled the pools to their limits) once made a second store look free."""
    from bench.cache import _template, server_child
    from united.kube.client import DEPLOYMENTS
    from united.runtime.informer import keeper

    first = measure(200)
    keep, template = keeper(DEPLOYMENTS), _template()
    for i in range(300):
        keep(server_child(i, template))
    assert measure(200) == pytest.approx(first, rel=0.02)
