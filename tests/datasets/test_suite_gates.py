"""Suite-level gates: `--min-suite-pass-rate` over cases and `--min-mean NAME=R`, with their intervals."""

from __future__ import annotations

from pathlib import Path

import pytest

from niceeval.cli._main import main

from ._helpers import write

CONFIG = """\
from niceeval import define_config
config = define_config(agent=lambda message: message.upper(){extra})
"""

CASES = """\
- {id: a, input: alpha, assert: [{type: includes, value: ALPHA, metric: shout}]}
- {id: b, input: beta, assert: [{type: includes, value: BETA, metric: shout}]}
- {id: c, input: gamma, assert: [{type: includes, value: GAMMA, metric: shout}]}
- {id: d, input: delta, assert: [{type: includes, value: nope, metric: shout}, {type: similarity, value: DELTA}]}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "niceeval.config.py", CONFIG.format(extra=""))
    write(tmp_path, "data/cases.yaml", CASES)
    return tmp_path


def run(*flags: str) -> int:
    return main(["run", "data/cases.yaml", "--no-store", *flags])


def test_without_suite_gates_one_failing_case_fails_the_suite(project: Path) -> None:
    assert run() == 1


def test_a_suite_pass_rate_over_cases_tolerates_failing_cases(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("--min-suite-pass-rate", "0.75") == 0
    out = capsys.readouterr().out
    assert "suite gate: suite pass rate 0.75 (95% 0.30-0.95) >= 0.75: met" in out


def test_a_suite_pass_rate_under_the_gate_fails(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--min-suite-pass-rate", "0.8") == 1
    assert "suite pass rate 0.75 (95% 0.30-0.95) < 0.8: MISSED" in capsys.readouterr().out


def test_a_mean_gate_by_label_or_kind(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--min-suite-pass-rate", "0.5", "--min-mean", "shout=0.7", "--min-mean", "similarity=0.9") == 0
    out = capsys.readouterr().out
    assert "suite gate: mean shout 0.75 (95% " in out and ">= 0.7: met" in out
    assert "suite gate: mean similarity 1.00 (1 case: no spread to measure) >= 0.9: met" in out
    assert run("--min-suite-pass-rate", "0.5", "--min-mean", "shout=0.8") == 1
    assert "mean shout 0.75" in capsys.readouterr().out


def test_a_mean_gate_on_a_name_nothing_has_is_missed(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--min-suite-pass-rate", "0", "--min-mean", "helpful=0.5") == 1
    assert "mean helpful: no assertion named 'helpful' has a score (needs >= 0.5): MISSED" in capsys.readouterr().out


def test_the_config_sets_the_gates_and_the_command_line_wins(project: Path) -> None:
    write(project, "niceeval.config.py", CONFIG.format(extra=", min_suite_pass_rate=0.7, min_mean={'shout': 0.7}"))
    assert run() == 0
    assert run("--min-suite-pass-rate", "0.9") == 1


def test_a_bad_min_mean_is_a_usage_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--min-mean", "rubric") == 2
    assert "--min-mean takes NAME=R" in capsys.readouterr().err
