"""The WorkloadSpread bad-input corpus: every file in ``bad_inputs/`` is one invalid manifest.

Each file starts with a comment naming what is wrong, then one ``# validate: <line>`` per
line ``united validate FILE`` must print on stderr (notes aside). A file with a twin in
``bad_inputs/old/`` is an update: it is validated with ``--old`` that twin. A file with a
second WorkloadSpread checks the conflict rule (the other spreads of the file stand for the
namespace's). Every file goes through ``united validate`` in process (``cli.main``: an
exception would fail the test), a few through the real entry point as subprocesses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.unit.cli.test_cli import ERROR_LINE, united
from united import cli

HERE = Path(__file__).parent / "bad_inputs"


@dataclass(frozen=True)
class Case:
    path: Path
    title: str
    expected: list[str]

    @property
    def args(self) -> list[str]:
        old = HERE / "old" / self.path.name
        return ["validate", str(self.path), *(["--old", str(old)] if old.exists() else [])]


def _case(path: Path) -> Case:
    comments = [line[2:] for line in path.read_text().splitlines() if line.startswith("# ")]
    title, *checks = comments
    expected = [c.removeprefix("validate: ") for c in checks if c.startswith("validate: ")]
    return Case(path, title, expected)


CASES = [_case(p) for p in sorted(HERE.glob("*.yaml"))]


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith("note: ")]


def test_the_corpus_has_at_least_twenty_kinds_of_bad_input() -> None:
    assert len({c.title for c in CASES}) == len(CASES) >= 20
    assert all(c.expected for c in CASES)
    assert {p.name for p in (HERE / "old").glob("*.yaml")} <= {c.path.name for c in CASES}


@pytest.mark.parametrize("case", CASES, ids=[c.path.stem for c in CASES])
def test_validate_prints_exactly_the_expected_lines(case: Case, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(case.args) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert _errors(err) == case.expected
    assert all(ERROR_LINE.match(line) for line in case.expected)
    assert cli.main([*case.args, "-o", "json"]) == 2
    out, _ = capsys.readouterr()
    fields = [dict(zip(("field", "message"), line.split(": ", 1), strict=True)) for line in case.expected]
    assert yaml.safe_load(out) == {"valid": False, "errors": fields}


@pytest.mark.parametrize(
    "name", ["09-percent-without-sign.yaml", "30-two-spreads-one-workload.yaml", "31-target-ref-changed.yaml"]
)
def test_the_entry_point_prints_the_same(name: str) -> None:
    (case,) = [c for c in CASES if c.path.name == name]
    r = united(*case.args)
    assert (r.code, r.out, r.errors) == (2, "", case.expected)


def test_the_shared_base_is_valid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The files differ from one valid manifest in what they break (not all for one shared reason)."""
    doc = yaml.safe_load((HERE / "31-target-ref-changed.yaml").read_text())
    path = tmp_path / "base.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert cli.main(["validate", str(path)]) == 0
    assert capsys.readouterr() == ("valid\n", "")
