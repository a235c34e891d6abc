"""``python -m bench.limits`` and the ``limits`` scenario: the figures of a pass at the limits
(how long it holds the loop, in CPU time) and their row in the report. The bounds are the
unit test's (tests/unit/uniteddeployment/test_worst_case.py), in calls; here, only that the
figures are measured and shown."""

from __future__ import annotations

import pytest

from bench.limits import CASES, limits_bench, main
from bench.report import render
from bench.run import IN_PROCESS, SCENARIOS, in_process_only

SMALL = {"small": {"subsets": 4, "template_bytes": 2048, "patch_bytes": 256, "placement_bytes": 128}}


def test_each_case_gives_the_longest_stretch_of_each_pass_and_the_passes_in_all() -> None:
    [(name, figures)] = limits_bench(SMALL).items()
    assert name == "small" and figures["subsets"] == 4
    assert 0 < figures["first_longest_ms"] <= figures["cpu_ms"]
    assert 0 < figures["steady_longest_ms"] <= figures["cpu_ms"]
    assert figures["turns"] > 2 * 4, "the passes yield at least once per subset"


def test_the_scenario_runs_in_process_and_its_row_names_the_case_and_the_figures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert "limits" in SCENARIOS and "limits" in IN_PROCESS
    assert set(CASES) == {"most subsets", "largest template"}
    monkeypatch.setattr("bench.limits.CASES", SMALL)
    results = in_process_only(["limits"])
    assert set(results) == {"limits"}
    f = results["limits"]["small"]
    table = render({**results, "machine": {"cpus": 2}})
    row = "| A pass at the limits, small (4 subsets, template 2 KiB) | longest the loop is held, first / steady pass"
    assert row in table
    assert f"| {f['first_longest_ms']:.1f} / {f['steady_longest_ms']:.1f} ms CPU ({f['cpu_ms']:.0f} ms, " in table


def test_the_command_prints_a_line_for_each_case(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("bench.limits.CASES", SMALL)
    monkeypatch.setattr("bench.limits.configure_logging", lambda **_: None)  # the session's logging stays
    assert main([]) == 0
    [line] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("small:")]
    assert line.startswith("small: longest stretch ") and "ms CPU (first pass)" in line and "turns" in line
