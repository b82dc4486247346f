"""`niceeval report RUN --baseline BASE [--alpha A] [--max-drop D]` weighs the suite run against BASE as `niceeval run
--baseline` does: the same flags and defaults, the same comparison, printed, and a regression exits 1.

One drop serves every test: `fine` passes 10 of 10 runs in BASE and 5 of 10 in HEAD (HEAD is judged with
`--min-pass-rate 0.5`, so its own verdict passes): Fisher's test gives p=0.0325, q=0.065 over the two evals, and the
suite's pass rate falls from 100% to 75%.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._project import Project, make_project

EVALS = """\
from pathlib import Path

from niceeval import define_eval
from niceeval.expect import includes

ROOT = Path(__file__).resolve().parent.parent


@define_eval
async def fine(t):
    await t.send("hi")
    count = ROOT / "count"
    seen = int(count.read_text()) if count.exists() else 0
    count.write_text(str(seen + 1))
    broken = (ROOT / "broken").exists() and seen % 2 == 0  # every other run, once broken
    t.check(t.reply, includes("bye" if broken else "hi"))


@define_eval
async def other(t):
    await t.send("hello")
    t.check(t.reply, includes("hello"))
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Project, str, str]:
    """The project, and its BASE and HEAD suite runs."""
    project = make_project(tmp_path_factory.mktemp("report_baseline"))
    project.write("evals/ci.py", EVALS)
    once = ("--runs", "10", "--concurrency", "1")
    base = project.run(*once)
    (project.root / "broken").touch()
    (project.root / "count").unlink()
    head = project.run(*once, "--min-pass-rate", "0.5")
    assert (base.code, head.code) == (0, 0), base.output + head.output
    return project, str(base.report()["run_id"]), str(head.report()["run_id"])


def test_alpha_decides_whether_the_drop_is_beyond_noise(runs: tuple[Project, str, str]) -> None:
    project, base, head = runs
    default = project.cli("report", head, "--baseline", base)
    assert default.code == 0, default.output
    assert f"diff {base} -> {head}" in default.stdout
    assert "evals/ci.py::fine  passed -> scored  10/10 -> 5/10 runs passed" in default.stdout
    assert "no regression beyond noise at alpha 0.05 (1 change within noise)" in default.stdout

    looser = project.cli("report", head, "--baseline", base, "--alpha", "0.1")
    assert looser.code == 1, looser.output
    assert "REGRESSED: evals/ci.py::fine: -0.50 (95% -0.76 to -0.12), p=0.0325 (fisher) (q=0.065)" in looser.stdout


def test_max_drop_fails_a_drop_within_noise_larger_than_it(runs: tuple[Project, str, str]) -> None:
    project, base, head = runs
    past = project.cli("report", head, "--baseline", base, "--max-drop", "0.2")
    assert past.code == 1, past.output
    assert "REGRESSED: suite pass rate dropped by 0.250, more than --max-drop 0.2" in past.stdout

    within = project.cli("report", head, "--baseline", base, "--max-drop", "0.3")
    assert within.code == 0, within.output
    assert "no regression beyond noise at alpha 0.05 (1 change within noise) or larger than --max-drop 0.3" in (
        within.stdout
    )


def test_the_step_summary_shows_the_comparison_the_exit_code_follows(runs: tuple[Project, str, str]) -> None:
    project, base, head = runs
    summary = project.out / "summary.md"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_WORKSPACE": str(project.root)}
    result = project.cli("report", head, "--baseline", base, "--alpha", "0.1", env=env)
    assert result.code == 1, result.output
    text = summary.read_text(encoding="utf-8")
    assert f"### Compared with run {base}" in text
    assert "**1 regression** beyond noise (alpha 0.1)" in text


def test_the_json_report_is_the_run_s_whatever_the_comparison(runs: tuple[Project, str, str]) -> None:
    project, base, head = runs
    written: Path = project.out / "head.json"
    result = project.cli("report", head, "--baseline", base, "--max-drop", "0.2", "--json", str(written))
    assert result.code == 1
    report = json.loads(written.read_text(encoding="utf-8"))
    assert report["run_id"] == head and report["summary"]["failed"] == 0  # the regression is the comparison's


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--alpha", "0", "--alpha must be between 0 and 1 (exclusive, e.g. 0.05), got 0.0"),
        ("--alpha", "1", "--alpha must be between 0 and 1 (exclusive, e.g. 0.05), got 1.0"),
        ("--alpha", "often", "--alpha takes a number between 0 and 1, got 'often'"),
        ("--max-drop", "2", "--max-drop must be between 0 and 1, got 2.0"),
    ],
)
def test_a_bad_value_exits_2_naming_the_flag(project: Project, flag: str, value: str, message: str) -> None:
    result = project.cli("report", "latest", "--baseline", "latest", flag, value)
    assert result.code == 2
    assert f"niceeval report: error: argument {flag}: {message}" in result.stderr
