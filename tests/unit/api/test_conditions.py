"""kstatus conditions as every kind writes them."""

from __future__ import annotations

from united.api.conditions import kstatus


def build(previous: dict[str, dict[str, str]], **kw: object) -> dict[str, tuple[str, str, str, str]]:
    defaults: dict[str, object] = {"reconciling": None, "stalled": None, "generation": 7, "now": "t1"}
    out = kstatus(previous, **{**defaults, **kw})  # type: ignore[arg-type]
    return {c["type"]: (c["status"], c["reason"], c["message"], c["lastTransitionTime"]) for c in out}


def test_reconciling_and_stalled_are_written_only_while_true() -> None:
    settled = build({}, ready=(True, "Ready", "3 ready"), others={"Updated": (False, "Updating", "r2")})
    assert settled == {"Ready": ("True", "Ready", "3 ready", "t1"), "Updated": ("False", "Updating", "r2", "t1")}
    moving = build({}, ready=(False, "Progressing", "1 of 3"), reconciling=("Progressing", "1 of 3"))
    assert list(moving) == ["Ready", "Reconciling"] and moving["Reconciling"][:2] == ("True", "Progressing")
    stuck = build({}, ready=(False, "InvalidSpec", "bad"), stalled=("InvalidSpec", "bad"))
    assert list(stuck) == ["Ready", "Stalled"] and stuck["Stalled"] == ("True", "InvalidSpec", "bad", "t1")


def test_a_transition_time_moves_only_with_the_status() -> None:
    before = {
        "Ready": {"status": "False", "lastTransitionTime": "t0"},
        "Stalled": {"status": "True", "lastTransitionTime": "t0"},
    }
    same = build(before, ready=(False, "Other", "m"), stalled=("Other", "m"))
    assert (same["Ready"][3], same["Stalled"][3]) == ("t0", "t0")
    flipped = build(before, ready=(True, "Ready", ""))
    assert flipped["Ready"][3] == "t1" and "Stalled" not in flipped
    back = build(
        {"Ready": {"status": "True", "lastTransitionTime": "t1"}}, now="t2", ready=(False, "X", ""), stalled=("X", "")
    )
    assert back["Stalled"][3] == "t2"  # absent was False: True again is a transition
