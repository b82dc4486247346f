"""pass@k and pass^k: the unbiased estimators, per eval with --runs N, and the --min-pass-at-k gate."""

from __future__ import annotations

from math import comb
from pathlib import Path

import pytest

from niceeval._core.passk import pass_at_k, pass_hat_k
from niceeval.cli import main

from ._helpers import run_project, write


def test_pass_at_k_is_one_minus_the_chance_that_k_draws_all_fail() -> None:
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(10, 3, 2) == pytest.approx(1 - comb(7, 2) / comb(10, 2))
    assert pass_at_k(5, 4, 2) == 1.0  # fewer failures than draws: some draw passes
    assert pass_at_k(4, 0, 4) == 0.0


def test_pass_hat_k_is_the_chance_that_k_draws_all_pass() -> None:
    assert pass_hat_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_hat_k(10, 3, 2) == pytest.approx(comb(3, 2) / comb(10, 2))
    assert pass_hat_k(10, 3, 4) == 0.0
    assert pass_hat_k(4, 4, 4) == 1.0


def test_k_beyond_the_runs_is_refused() -> None:
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_at_k(3, 1, 4)


FLAKY = """\
from niceeval import define_eval
from niceeval.expect import equals

calls = iter(range(1000))

@define_eval
def flaky(t):
    t.check(next(calls) % 3 == 0, equals(True))
"""


def test_each_eval_reports_pass_at_k_and_pass_hat_k_for_every_k_up_to_the_runs(tmp_path: Path) -> None:
    write(tmp_path, "evals/flaky_k.py", FLAKY)
    kept = run_project(tmp_path, runs=6, min_pass_rate=0.0)
    assert kept.summary is not None
    (tally,) = kept.tallies
    assert list(tally.pass_at_k(strict=False)) == [1, 2, 3, 4, 5, 6]
    assert tally.pass_at_k(strict=False)[3] == pytest.approx(pass_at_k(6, 2, 3))
    assert tally.pass_hat_k(strict=False)[2] == pytest.approx(pass_hat_k(6, 2, 2))


@pytest.mark.parametrize(("gate", "status"), [((3, 0.8), "scored"), ((3, 0.81), "failed"), ((2, 0.6), "scored")])
def test_min_pass_at_k_fails_an_eval_whose_pass_at_k_is_under_the_rate(
    tmp_path: Path, gate: tuple[int, float], status: str
) -> None:
    write(tmp_path, "evals/flaky_gate.py", FLAKY)
    kept = run_project(tmp_path, runs=6, min_pass_rate=0.0, min_pass_at_k=gate)  # 2 of 6 pass: pass@3 = 0.8
    assert kept.summary is not None
    assert kept.summary.status_of(kept.tallies[0]) == status


def test_min_pass_at_k_beyond_the_runs_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, "evals/flaky_cli.py", FLAKY)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--runs", "2", "--min-pass-at-k", "3:0.9"]) == 2
    assert "--min-pass-at-k 3:... needs --runs of at least that" in capsys.readouterr().err


def test_min_pass_at_k_takes_k_colon_rate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        main(["run", "--min-pass-at-k", "0.9"])
    assert "takes K:RATE" in capsys.readouterr().err
