"""``python -m bench``'s arguments for the WorkloadSpread scenarios: defaults, the config they
become, and bad values refused by argparse (exit 2, a message, no traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.run import SCENARIOS, compile_sources, config_of, parser


def test_defaults_run_both_scenarios_first_at_the_issues_sizes() -> None:
    args = parser().parse_args([])
    assert SCENARIOS[:2] == ("scaleout", "admission") and args.scenarios.split(",") == list(SCENARIOS)
    config = config_of(args)
    assert (config["admission_pods"], config["admission_burst"]) == (300, 10)
    assert (config["scaleout_replicas"], config["scaleout_qps"], config["scaleout_repeats"]) == (200, [20, 1000], 1)


def test_sizes_are_configurable() -> None:
    args = parser().parse_args(["--admission-pods", "5", "--admission-burst", "3", "--scaleout-replicas", "10",
                                "--scaleout-qps", " 50 ,", "--scaleout-repeats", "2"])  # fmt: skip
    config = config_of(args)
    assert (config["admission_pods"], config["admission_burst"]) == (5, 3)
    assert (config["scaleout_replicas"], config["scaleout_qps"], config["scaleout_repeats"]) == (10, [50], 2)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--admission-pods", "0"], "argument --admission-pods: '0': must be at least 1"),
        (["--admission-burst", "x"], "argument --admission-burst: 'x': must be a whole number"),
        (["--scaleout-qps", "20,fast"], "argument --scaleout-qps: 'fast': must be a whole number"),
        (["--scaleout-qps", ","], "argument --scaleout-qps: ',': must list at least one number"),
        (["--scaleout-replicas", "-3"], "argument --scaleout-replicas: '-3': must be at least 1"),
    ],
)
def test_bad_values_exit_2_with_the_argument_and_the_reason(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_the_source_tree_s_packages_are_byte_compiled_as_an_installed_wheel_s_are(tmp_path: Path) -> None:
    for package in ("united", "bench"):
        (tmp_path / package / "sub").mkdir(parents=True)
        (tmp_path / package / "sub" / "mod.py").write_text("X = 1\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "mod.py").write_text("X = 1\n")
    compile_sources(tmp_path)
    for package in ("united", "bench"):
        compiled = list((tmp_path / package / "sub" / "__pycache__").glob("mod.*.pyc"))
        assert len(compiled) == 1, package
    assert not (tmp_path / "other" / "__pycache__").exists()
