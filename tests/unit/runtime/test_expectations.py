"""Our own recent writes overlay a lagging cache until it catches up, for at most the TTL."""

from __future__ import annotations

from united.api.document import Json
from united.kube.client import CONTROLLER_REVISIONS, DEPLOYMENTS
from united.runtime.expectations import Expectations, LastWrite, rv_of


def obj(name: str, rv: int, uid: str = "u") -> Json:
    return {"metadata": {"name": name, "resourceVersion": str(rv), "uid": uid}}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def names(objs: list[Json]) -> dict[str, int]:
    return {o["metadata"]["name"]: rv_of(o) for o in objs}


def test_a_created_object_stands_in_until_the_cache_shows_it() -> None:
    e = Expectations()
    e.remember("ns/ud", DEPLOYMENTS, "a-x", obj("a-x", 5), rv=5)
    assert names(e.fresh("ns/ud", DEPLOYMENTS, [])) == {"a-x": 5}
    assert names(e.fresh("ns/ud", DEPLOYMENTS, [obj("b", 1)])) == {"b": 1, "a-x": 5}
    assert names(e.fresh("ns/ud", DEPLOYMENTS, [obj("a-x", 5)])) == {"a-x": 5}
    assert len(e) == 0, "the cache caught up: nothing expected any more"
    assert names(e.fresh("ns/ud", DEPLOYMENTS, [])) == {}


def test_a_patched_object_overlays_an_older_cached_version_only() -> None:
    e = Expectations()
    e.remember("ns/ud", DEPLOYMENTS, "a", obj("a", 7), rv=7)
    assert names(e.fresh("ns/ud", DEPLOYMENTS, [obj("a", 6)])) == {"a": 7}
    assert names(e.fresh("ns/ud", DEPLOYMENTS, [obj("a", 9)])) == {"a": 9}


def test_writes_are_kept_apart_by_key_resource_and_cluster() -> None:
    e = Expectations()
    e.remember("ns/ud", DEPLOYMENTS, "a", obj("a", 5), rv=5, cluster="m1")
    assert e.fresh("ns/ud", DEPLOYMENTS, []) == []
    assert e.fresh("ns/ud", CONTROLLER_REVISIONS, [], cluster="m1") == []
    assert e.fresh("ns/other", DEPLOYMENTS, [], cluster="m1") == []
    assert names(e.fresh("ns/ud", DEPLOYMENTS, [], cluster="m1")) == {"a": 5}


def test_a_deleted_object_is_hidden_until_the_cache_drops_it() -> None:
    e = Expectations()
    e.remember("ns/ud", DEPLOYMENTS, "a", None, rv=4, uid="u1")
    assert e.fresh("ns/ud", DEPLOYMENTS, [obj("a", 4, "u1")]) == []
    # a later version of the uid we deleted was written before the delete: gone too
    assert e.fresh("ns/ud", DEPLOYMENTS, [obj("a", 6, "u1")]) == []
    # a newer object of the same name (another uid) is someone else's: shown, expectation dropped
    assert names(e.fresh("ns/ud", DEPLOYMENTS, [obj("a", 8, "u2")])) == {"a": 8}
    assert len(e) == 0


def test_an_expectation_expires_after_the_ttl() -> None:
    clock = Clock()
    e = Expectations(ttl=10.0, clock=clock)
    e.remember("ns/ud", DEPLOYMENTS, "a", obj("a", 5), rv=5)
    clock.now = 10.0
    assert names(e.fresh("ns/ud", DEPLOYMENTS, [])) == {"a": 5}
    clock.now = 10.5
    assert e.fresh("ns/ud", DEPLOYMENTS, []) == []
    assert len(e) == 0


def test_forget_and_clear() -> None:
    e = Expectations()
    e.remember("ns/a", DEPLOYMENTS, "x", obj("x", 1), rv=1)
    e.remember("ns/b", DEPLOYMENTS, "y", obj("y", 1), rv=1)
    e.forget("ns/a")
    assert e.fresh("ns/a", DEPLOYMENTS, []) == [] and len(e) == 1
    e.clear()
    assert len(e) == 0


def test_the_last_write_is_read_while_the_cache_is_older() -> None:
    w: LastWrite[str] = LastWrite()
    assert w.newer("ns/a", obj("a", 3)) is None
    w.record("ns/a", 5, "written")
    assert w.newer("ns/a", obj("a", 4)) == (5, "written")
    assert w.newer("ns/a", obj("a", 5)) is None
    assert "ns/a" in w, "kept: a pass may carry the answer's version while the cache lags"
    assert w.newer("ns/a", obj("a", 4)) == (5, "written")
    w.forget("ns/a")
    assert "ns/a" not in w


def test_the_last_write_of_another_object_is_forgotten() -> None:
    w: LastWrite[Json] = LastWrite()
    w.record("ns/a", 5, obj("a", 5, "u1"), uid="u1")
    assert w.newer("ns/a", obj("a", 2, "u2")) is None
    assert "ns/a" not in w


def test_resource_versions_that_are_not_numbers_read_as_zero() -> None:
    assert rv_of({"metadata": {"resourceVersion": "abc"}}) == 0
    assert rv_of({}) == 0
