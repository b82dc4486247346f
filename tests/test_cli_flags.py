"""The flags several commands share are declared once, so each command checks them alike."""

from __future__ import annotations

import subprocess
import sys

import pytest

from niceeval.cli import main


@pytest.mark.parametrize("command", [["run"], ["rescore", "latest"]])
def test_concurrency_below_one_is_refused_by_every_command_that_takes_it(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*command, "--concurrency", "-1"])
    assert exited.value.code == 2
    assert "--concurrency must be at least 1, got -1" in capsys.readouterr().err


def test_rescore_takes_runs_defaults_for_the_flags_it_does_not_offer() -> None:
    from niceeval.cli._main import build_parser

    args = build_parser().parse_args(["rescore", "latest"])
    assert (args.runs, args.shard, args.no_store, args.resume, args.paths) == (None, None, False, None, [])
    assert args.rescore == "latest"


def test_python_dash_m_niceeval_is_the_command() -> None:
    done = subprocess.run([sys.executable, "-m", "niceeval", "--help"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0
    assert "Test LLM apps and AI agents." in done.stdout
    assert "rescore" in done.stdout
