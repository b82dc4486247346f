"""GitHub Actions output: annotations one line each at the right place, a step summary no model output can mark up."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from test_reporters import miss, result

from niceeval._core.errors import ErrorInfo
from niceeval._core.results import RunResult
from niceeval._core.summary import EvalTally, PlannedEval, Problem, SuiteSummary
from niceeval.report._step_summary import md
from niceeval.report.github import Annotation, GitHubOptions, GitHubReporter, escape_data, escape_property
from niceeval.store import OutcomeChange, RunDiff
from niceeval.store._models import MeanScoreChange

TOKEN = "0123456789abcdef"


def github_output(
    tmp_path: Path,
    runs: list[RunResult],
    *,
    n_runs: int = 1,
    problems: list[Problem] | None = None,
    **options: object,
) -> tuple[list[str], str]:
    """Drive a GitHub reporter over `runs` (project files under tmp_path); the commands after the stop, and the
    step summary."""
    out = io.StringIO()
    summary_path = tmp_path / "summary.md"
    reporter = GitHubReporter(
        GitHubOptions(out=out, summary_path=summary_path, workspace=tmp_path, cwd=tmp_path, **options),  # type: ignore[arg-type]
        token=TOKEN,
    )
    ids = list(dict.fromkeys(r.eval_id for r in runs))
    plan = [PlannedEval(id=i, file="evals/x.py", line=1, runs=n_runs) for i in ids]
    tallies = {p.id: EvalTally(eval=p) for p in plan}
    reporter.start(plan, problems or [])
    for run in runs:
        tallies[run.eval_id].add(run)
        reporter.run_finished(run)
    assert set(reporter._tallies) == set(reporter._pending)  # a done eval's tally is dropped, none held per eval
    strict = bool(options.get("strict", False))
    min_pass_rate = float(options.get("min_pass_rate", 1.0))  # type: ignore[arg-type]
    reporter.finish(
        SuiteSummary.of(
            list(tallies.values()),
            problems=problems or [],
            duration_s=1.25,
            strict=strict,
            min_pass_rate=min_pass_rate,
        )
    )
    lines = out.getvalue().splitlines()
    assert lines[0] == f"::stop-commands::{TOKEN}"
    assert lines[1] == f"::{TOKEN}::"
    return lines[2:], summary_path.read_text(encoding="utf-8") if summary_path.exists() else ""


@pytest.fixture
def evals_file(tmp_path: Path) -> Path:
    path = tmp_path / "evals" / "x.py"
    path.parent.mkdir()
    path.write_text("# evals\n")
    return path


def test_data_escapes_percent_and_line_ends_as_github_decodes_them() -> None:
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"


def test_a_property_also_escapes_colons_and_commas() -> None:
    assert escape_property("evals/x.py::fn, a: b") == "evals/x.py%3A%3Afn%2C a%3A b"


def test_control_characters_become_visible_so_a_message_stays_one_line() -> None:
    assert escape_data("a\x1b[2J\u2028b\x85c") == "a\\x1b[2J\\u2028b\\x85c"


def test_an_annotation_is_one_command_line_with_file_line_and_title() -> None:
    note = Annotation(level="error", title="niceeval e::f: includes", message="a\nb", file="evals/x.py", line=3)
    assert note.command() == "::error file=evals/x.py,line=3,title=niceeval e%3A%3Af%3A includes::a%0Ab"


def test_a_gate_miss_is_an_error_at_the_assertion_line(tmp_path: Path, evals_file: Path) -> None:
    commands, _ = github_output(tmp_path, [result("evals/x.py::e", "failed", assertions=[miss("includes('x')")])])
    assert len(commands) == 1
    assert commands[0].startswith("::error file=evals/x.py,line=3,title=niceeval evals/x.py%3A%3Ae%3A includes('x')::")
    assert "[gate] includes('x'): score 0.00 < 1.00%0Aexpected: something%0Areason: nope" in commands[0]


def test_a_soft_miss_of_a_scored_eval_is_a_warning(tmp_path: Path, evals_file: Path) -> None:
    commands, _ = github_output(tmp_path, [result("evals/x.py::e", "scored", assertions=[miss("polite", "soft")])])
    assert len(commands) == 1
    assert commands[0].startswith("::warning file=evals/x.py,line=3,")
    assert commands[0].endswith("%0Asoft miss: the eval is `scored` (fails under --strict)")


def test_a_soft_miss_beside_a_gate_miss_stays_a_warning_unless_strict(tmp_path: Path, evals_file: Path) -> None:
    run = result("evals/x.py::e", "failed", assertions=[miss("exact"), miss("polite", "soft")])
    commands, _ = github_output(tmp_path, [run])
    assert [c.split(" ", 1)[0] for c in commands] == ["::error", "::warning"]
    strict, _ = github_output(tmp_path, [run], strict=True)
    assert [c.split(" ", 1)[0] for c in strict] == ["::error", "::error"]


def test_a_miss_repeated_across_runs_is_one_annotation_naming_the_runs(tmp_path: Path, evals_file: Path) -> None:
    runs = [result("evals/x.py::e", "failed", index=i, assertions=[miss("exact")]) for i in range(3)]
    commands, _ = github_output(tmp_path, runs, n_runs=3)
    assert len(commands) == 1
    assert "::runs 1-3 (3×): [gate] exact" in commands[0]


def test_a_miss_the_pass_rate_tolerated_is_a_warning_saying_so(tmp_path: Path, evals_file: Path) -> None:
    runs = [
        result("evals/x.py::e", "passed", index=0),
        result("evals/x.py::e", "failed", index=1, assertions=[miss("a")]),
    ]
    commands, _ = github_output(tmp_path, runs, n_runs=2, min_pass_rate=0.5)
    assert len(commands) == 1
    assert commands[0].startswith("::warning ") and commands[0].endswith(
        "%0Atolerated: the eval met --min-pass-rate 0.5"
    )


def test_an_error_is_annotated_at_the_users_line(tmp_path: Path, evals_file: Path) -> None:
    error = ErrorInfo(type="ValueError", message="boom\n::error::fake", location="evals/x.py:9")
    commands, _ = github_output(tmp_path, [result("evals/x.py::e", "failed", error=error)])
    assert commands == [
        "::error file=evals/x.py,line=9,title=niceeval evals/x.py%3A%3Ae%3A error ValueError::"
        "ValueError: boom%0A::error::fake"
    ]


def test_a_place_outside_the_repository_is_annotated_without_a_file(tmp_path: Path) -> None:
    outside = miss("exact").model_copy(update={"location": "/somewhere/else.py:4"})
    commands, _ = github_output(tmp_path, [result("evals/x.py::e", "failed", assertions=[outside])])
    assert commands[0].startswith("::error title=")


def test_at_most_ten_errors_are_annotated_and_a_notice_counts_the_rest(tmp_path: Path, evals_file: Path) -> None:
    runs = [result(f"evals/x.py::e{i}", "failed", assertions=[miss("exact")]) for i in range(13)]
    commands, summary = github_output(tmp_path, runs)
    assert sum(c.startswith("::error ") for c in commands) == 10
    assert commands[-1].startswith("::notice title=niceeval::3 more misses not annotated")
    assert "### Failed (13)" in summary


def test_load_problems_come_first_among_the_errors(tmp_path: Path, evals_file: Path) -> None:
    runs = [result(f"evals/x.py::e{i}", "failed", assertions=[miss("exact")]) for i in range(10)]
    problem = Problem(location="evals/x.py:2", message="SyntaxError: invalid syntax")
    commands, summary = github_output(tmp_path, runs, problems=[problem])
    assert commands[0] == "::error file=evals/x.py,line=2,title=niceeval load error::SyntaxError: invalid syntax"
    assert commands[-1].startswith("::notice title=niceeval::1 more miss not annotated")
    assert "## niceeval: errors" in summary


def test_the_step_summary_has_totals_spend_and_a_row_per_miss(tmp_path: Path, evals_file: Path) -> None:
    runs = [
        result("evals/x.py::a", "failed", assertions=[miss("exact", actual="'hi'")]),
        result("evals/x.py::b", "scored", assertions=[miss("polite", "soft")]),
        result("evals/x.py::c", "passed"),
    ]
    _, summary = github_output(tmp_path, runs, run_id="abc123")
    assert summary.startswith("## niceeval run abc123: failed\n")
    assert "1 passed, 1 scored, **1 failed**, 0 skipped · 3 evals, 3 runs · pass rate 67% · 1.25 s" in summary
    assert "| agent | 0 calls | 0 | $0 |" in summary
    assert (
        "| evals/x&#46;py&#58;&#58;a | ✗ gate exact | evals/x&#46;py&#58;3 | score 0&#46;00 &#60; 1&#46;00;" in summary
    )
    assert "### Scored (soft misses; the suite passes on them) (1)" in summary


def test_the_step_summary_is_appended_to_what_earlier_steps_wrote(tmp_path: Path, evals_file: Path) -> None:
    (tmp_path / "summary.md").write_text("# earlier step\n")
    _, summary = github_output(tmp_path, [result("evals/x.py::c", "passed")])
    assert summary.startswith("# earlier step\n## niceeval: passed")


@pytest.mark.parametrize(
    "hostile",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "a | b | c",
        "![pixel](https://evil.example/p.png)",
        "[click](javascript:alert(1))",
        "www.evil.example and https://evil.example",
        "**bold** _em_ ~~gone~~ `code` $x^2$",
        "line one\n| --- |\n## heading",
        "&lt;script&gt;",
        "\u202egnp.exe",
    ],
)
def test_no_model_output_survives_as_markup_in_the_step_summary(hostile: str) -> None:
    inert = md(hostile, 400)
    assert "\n" not in inert
    assert not re.search(r"[<>|\[\]`*_~$\\:@]|\.\w|&(?!#\d+;)", inert), inert


def test_the_rendered_step_summary_reads_as_the_model_wrote_it() -> None:
    import html

    hostile = "ok <b>|</b> [x](y) 100% ✓"
    assert html.unescape(md(hostile)) == hostile


def test_the_baseline_diff_shows_changes_by_evidence(tmp_path: Path, evals_file: Path) -> None:
    diff = RunDiff(
        base="base1",
        head="head1",
        threshold=0.1,
        changed=[
            OutcomeChange(
                eval_id="evals/x.py::down", base="passed", head="failed", regressed=True, change="regression",
                base_passes=10, base_runs=10, head_passes=0, head_runs=10, evidence="-1.00, p=1.08e-05 (fisher)",
            ),
            OutcomeChange(eval_id="evals/x.py::up", base="failed", head="passed", regressed=False, change="noise"),
        ],
        new=["evals/x.py::fresh"],
        reasons=["evals/x.py::down: -1.00"],
    )  # fmt: skip
    _, summary = github_output(tmp_path, [result("evals/x.py::c", "passed")], baseline=lambda: diff)
    assert "### Compared with run base1" in summary
    assert "**1 regression** beyond noise (alpha 0.05) · 1 within noise · 1 new, 0 gone" in summary
    down = summary.index("| evals/x&#46;py&#58;&#58;down | passed → failed | 10/10 → 0/10 |")
    up = summary.index("| evals/x&#46;py&#58;&#58;up | failed → passed | 0/0 → 0/0 |  | noise |")
    assert down < up
    assert "**regressed**" in summary[down:up]
    assert "New: evals/x&#46;py&#58;&#58;fresh" in summary


def _mean_score(assertion: str, *, change: str, regressed: bool, p_value: float | None) -> MeanScoreChange:
    return MeanScoreChange.model_validate(
        dict(
            assertion=assertion, cases=12, clusters=12, base_mean=0.84, head_mean=0.71, difference=-0.13, low=-0.2,
            high=-0.06, p_value=p_value, q_value=p_value, note=None,
            evidence=f"-0.13 (95% -0.20 to -0.06), p={p_value}", change=change, regressed=regressed,
        )
    )  # fmt: skip


def test_the_baseline_diff_shows_each_scores_paired_test_by_evidence(tmp_path: Path, evals_file: Path) -> None:
    diff = RunDiff(
        base="base1", head="head1", threshold=0.1,
        mean_scores=[
            _mean_score("rubric", change="regression", regressed=True, p_value=0.001),
            _mean_score("sim|<b>", change="noise", regressed=False, p_value=0.3),
        ],
        reasons=["score rubric: -0.13"],
    )  # fmt: skip
    _, summary = github_output(tmp_path, [result("evals/x.py::c", "passed")], baseline=lambda: diff)
    assert "**1 regression** beyond noise (alpha 0.05) · 1 within noise" in summary
    evidence = "-0&#46;13 &#40;95% -0&#46;20 to -0&#46;06&#41;, p=0&#46;001 (q=0.001)"
    rubric = summary.index(f"| rubric | 12 | 0.84 → 0.71 | {evidence} |")
    noise = summary.index("| sim&#124;&#60;b&#62; | 12 | 0.84 → 0.71 |")
    assert rubric < noise
    assert "**regressed**" in summary[rubric:noise] and summary[noise:].split("\n")[0].endswith("| noise |")


def test_a_baseline_that_cannot_be_read_is_said_and_the_summary_written(tmp_path: Path, evals_file: Path) -> None:
    def gone() -> RunDiff:
        raise OSError("database is locked")

    _, summary = github_output(tmp_path, [result("evals/x.py::c", "passed")], baseline=gone)
    assert "## niceeval: passed" in summary
    assert "Not compared: OSError&#58; database is locked" in summary


def test_api_misuse_is_annotated_once_as_the_runs_error(tmp_path: Path, evals_file: Path) -> None:
    error = ErrorInfo(type="UsageError", message="add await", location="evals/x.py:5", kind="usage")
    problem = Problem(location="evals/x.py:5", message="add await", kind="usage")
    commands, summary = github_output(tmp_path, [result("evals/x.py::e", "failed", error=error)], problems=[problem])
    assert len(commands) == 1 and commands[0].startswith("::error file=evals/x.py,line=5,title=niceeval evals/x.py")
    assert "### Errors (1)" in summary


def test_the_step_summary_gives_the_score_evals_mean_points(tmp_path: Path, evals_file: Path) -> None:
    runs = [
        result("evals/x.py::a", "passed").model_copy(update={"points": 2.0, "points_possible": 4.0}),
        result("evals/x.py::b", "passed").model_copy(update={"points": 3.0, "points_possible": 3.0}),
    ]
    _, summary = github_output(tmp_path, runs)
    assert "Mean points 75% of possible (95% CI 0%-100%) over 2 cases, 2 runs" in summary
