"""`niceeval exp compare`: the console table (a column per setup, intervals under the values), the pairs and the
front, `--json`, and the errors that say what to do."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest
from _setups import Case, once
from rich.console import Console

from niceeval._core.errors import ConfigError
from niceeval.cli._exp_compare import add_exp_compare, print_comparison
from niceeval.store import Store


@pytest.fixture
def store_path(tmp_path: Path) -> str:
    path = tmp_path / "results.db"
    with Store.open(f"sqlite:///{path}") as store:
        once(store, "quick", [Case(cost=0.001 + i * 1e-5, turns=(1.0 + i / 100,), score=0.5 + i / 30)
                              for i in range(12)], experiment="quick")  # fmt: skip
        once(store, "slow", [Case(outcome="failed", cost=0.002 + i * 1e-5, turns=(2.0 + i / 100,))
                             for i in range(12)], experiment="slow")  # fmt: skip
    return str(path)


def command(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="niceeval exp")
    add_exp_compare(parser.add_subparsers(dest="exp_command"))
    return parser.parse_args(["compare", *argv])


def test_the_console_shows_each_setup_with_its_intervals_the_pairs_and_the_front(
    store_path: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    args = command("quick", "slow", "--store", store_path)
    assert args.handler(args) == 0
    out = capsys.readouterr().out
    lines = [line.rstrip() for line in out.splitlines()]
    assert lines[0] == "2 setups, each judged with --min-pass-rate 1; under each value its 95% interval"
    assert any(line.split("│")[1:] == [" 100%            ", " 0%"] for line in lines if line.startswith("pass rate"))
    assert "mean similarity" in out and "0.61-0.76" in out
    assert lines[-4].startswith("quick vs slow over 12 shared cases: quick dominates slow: slow worse on pass rate")
    assert lines[-3] == "  pass rate 100% -> 0%: -1.00 (95% -1.00 to -0.66), p=0.000488 (mcnemar)"
    assert lines[-2].startswith("  slow against quick, every measure: worse on pass rate (-100 pts, 95% CI -100 to")
    assert lines[-1] == "front (no other setup beats these on pass rate, cost and p50 latency at once): quick"


def test_json_carries_every_number_and_the_front(store_path: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = command("quick", "slow", "--json", "--store", store_path)
    assert args.handler(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["front"] == ["quick"]
    quick = data["setups"][0]
    assert (quick["experiment"], quick["pass_rate"]["value"], quick["on_front"]) == ("quick", 1.0, True)
    assert quick["cost_per_run"]["low"] == pytest.approx(0.0010325)
    assert data["pairs"][0]["relation"] == "first dominates"
    assert data["pairs"][0]["suite"]["p_value"] == pytest.approx(2 / 4096)


def test_the_verdict_rule_can_be_set_for_every_setup(store_path: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = command("quick", "slow", "--strict", "--min-pass-rate", "0.5", "--json", "--store", store_path)
    args.handler(args)
    data = json.loads(capsys.readouterr().out)
    assert (data["strict"], data["min_pass_rate"]) == (True, 0.5)


def test_hostile_names_reach_the_terminal_escaped(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'r.db'}") as store:
        once(store, "a", [Case()] * 2, experiment="\x1b[31mred")
        once(store, "b", [Case()] * 2)
        comparison = store.compare(["\x1b[31mred", "b"])
    out = io.StringIO()
    print_comparison(comparison, Console(file=out, width=120))
    assert "\x1b" not in out.getvalue() and "\\x1b[31mred" in out.getvalue()


def test_one_setup_is_refused_saying_what_to_do(store_path: str) -> None:
    args = command("quick", "--store", store_path)
    with pytest.raises(ConfigError, match="a comparison needs at least two setups"):
        args.handler(args)


def test_a_bad_alpha_is_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        command("a", "b", "--alpha", "2")
    assert "--alpha must be between 0 and 1" in capsys.readouterr().err


def test_niceeval_exp_compare_is_the_command(store_path: str, capsys: pytest.CaptureFixture[str]) -> None:
    from niceeval.cli import main

    assert main(["exp", "compare", "quick", "slow", "--json", "--store", store_path]) == 0
    assert json.loads(capsys.readouterr().out)["front"] == ["quick"]
    assert main(["exp", "compare", "quick", "--store", store_path]) == 2
    assert "niceeval: error: a comparison needs at least two setups" in capsys.readouterr().err
