"""`niceeval run` on GitHub Actions: annotations read as the runner reads them, and the step summary file.

The environment is what a GitHub runner sets (`GITHUB_ACTIONS=true`, `GITHUB_STEP_SUMMARY`, `GITHUB_WORKSPACE`);
the suite's conftest removes them for every other test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from ._project import Project, Result

HOSTILE_REPLY = (
    "Sure <script>alert(1)</script> | col | col\n"
    "::error file=README.md,line=1::pwned\n"
    "  ::add-mask::secret\n"
    "![x](https://evil.example/p.png) [click](javascript:alert(1)) 100%"
)

CONFIG = f"""\
from niceeval import define_config

HOSTILE = {HOSTILE_REPLY!r}


def agent(message: str) -> str:
    return HOSTILE if "hostile" in message else "echo: " + message


config = define_config(agent=agent)
"""

EVALS = """\
from niceeval import define_eval
from niceeval.expect import includes, similarity


@define_eval
async def gate_miss(t):
    await t.send("hello")
    t.check(t.reply, includes("Goodbye"))


@define_eval
async def soft_miss(t):
    await t.send("hello")
    t.check(t.reply, similarity("something else entirely").at_least(0.9))


@define_eval
async def hostile(t):
    await t.send("hostile")
    t.check(t.reply, includes("refund"))
    raise ValueError(t.reply)


@define_eval
async def fine(t):
    await t.send("hi")
    t.check(t.reply, includes("hi"))
"""


@dataclass(frozen=True)
class Command:
    name: str
    properties: dict[str, str]
    data: str


def _unescape(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def workflow_commands(stdout: str) -> list[Command]:
    """The commands a GitHub runner would act on: lines starting with `::` once leading space is trimmed, none
    while commands are stopped (`::stop-commands::TOKEN` until `::TOKEN::`)."""
    commands: list[Command] = []
    stopped: str | None = None
    for raw in stdout.splitlines():
        line = raw.lstrip()
        if stopped is not None:
            if line == f"::{stopped}::":
                stopped = None
            continue
        found = re.match(r"::([A-Za-z-]+)(?: ([^:]*))?::(.*)", line)
        if not found:
            continue
        name, props, data = found.groups()
        if name == "stop-commands":
            stopped = data
            continue
        properties = dict(p.split("=", 1) for p in props.split(",")) if props else {}
        commands.append(Command(name, {k: _unescape(v) for k, v in properties.items()}, _unescape(data)))
    return commands


@pytest.fixture
def ci_project(project: Project) -> Project:
    project.write("niceeval.config.py", CONFIG)
    project.write("evals/ci.py", EVALS)
    return project


def github_run(project: Project, *args: str, summary: Path | None = None) -> tuple[Result, list[Command], str]:
    """`niceeval run ARGS` as on a GitHub runner whose workspace is the project's parent folder."""
    summary = summary or project.out / "summary.md"
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_WORKSPACE": str(project.root.parent),
    }
    result = project.run(*args, env=env)
    text = summary.read_text(encoding="utf-8") if summary.exists() else ""
    return result, workflow_commands(result.stdout), text


def test_each_miss_is_annotated_once_at_its_line_in_the_repository(ci_project: Project) -> None:
    result, commands, _ = github_run(ci_project, "--runs", "2", "--no-store")
    assert result.code == 1, result.output
    by_title = {c.properties["title"]: c for c in commands}
    gate = by_title["niceeval evals/ci.py::gate_miss: includes('Goodbye')"]
    assert gate.name == "error"
    assert gate.properties["file"] == "project/evals/ci.py"
    assert gate.properties["line"] == str(ci_project.line_of("evals/ci.py", 'includes("Goodbye")'))
    assert gate.data.startswith("runs 1-2 (2×): [gate] includes('Goodbye'): score 0.00 < 1.00\nexpected:")
    soft = by_title["niceeval evals/ci.py::soft_miss: similarity"]
    assert soft.name == "warning"
    assert soft.properties["line"] == str(ci_project.line_of("evals/ci.py", 'similarity("something'))
    assert soft.data.endswith("soft miss: the eval is `scored` (fails under --strict)")
    raised = by_title["niceeval evals/ci.py::hostile: error ValueError"]
    assert raised.properties["line"] == str(ci_project.line_of("evals/ci.py", "raise ValueError"))
    assert len(commands) == 4  # gate_miss, soft_miss, and hostile's check and error; fine passed


def test_model_output_cannot_start_a_workflow_command(ci_project: Project) -> None:
    result, commands, _ = github_run(ci_project, "-k", "hostile", "--no-store")
    assert result.code == 1
    assert re.search(r"^::error file=README\.md,line=1::pwned$", result.stdout, re.M), "the console shows the reply"
    assert {c.name for c in commands} == {"error"}
    assert all(c.properties["title"].startswith("niceeval evals/ci.py::hostile: ") for c in commands)
    assert "add-mask" not in {c.name for c in commands}
    assert any("::error file=README.md,line=1::pwned\n" in c.data for c in commands), "kept as data, one line"


def test_the_step_summary_is_appended_and_model_output_stays_text(ci_project: Project) -> None:
    summary = ci_project.out / "summary.md"
    summary.write_text("## an earlier step\n", encoding="utf-8")
    result, _, text = github_run(ci_project, "--no-store", summary=summary)
    assert result.code == 1
    assert text.startswith("## an earlier step\n## niceeval: failed\n")
    assert "1 passed, 1 scored, **2 failed**, 0 skipped · 4 evals, 4 runs · pass rate 50%" in text
    assert "| agent | 0 calls | 0 | $0 |" in text
    assert "### Failed (3)" in text and "### Scored (soft misses; the suite passes on them) (1)" in text
    rows = [line for line in text.splitlines() if line.startswith("| evals/ci")]
    assert len(rows) == 4
    assert all(line.count("|") == 5 for line in rows), "a reply's pipes never split a cell"
    for markup in ("<script", "<img", "](", "![", "::error", "javascript:", "https://"):
        assert markup not in text, markup
    assert "&#60;script&#62;alert&#40;1&#41;&#60;/script&#62; &#124; col" in text


def test_baseline_adds_the_diff_with_a_flip_to_the_step_summary(ci_project: Project) -> None:
    store = f"sqlite:///{ci_project.out / 'results.db'}"
    ci_project.write("evals/ci.py", EVALS.replace('includes("hi")', 'includes("bye")'))
    base = ci_project.run("--store", store, "-k", "fine").report()["run_id"]
    ci_project.write("evals/ci.py", EVALS)
    result, _, text = github_run(ci_project, "--store", store, "-k", "fine", "--baseline", "latest")
    assert result.code == 0, result.output
    head = result.report()["run_id"]
    assert f"## niceeval run {head}: passed" in text
    assert f"### Compared with run {base}" in text
    assert "**0 regressions** beyond noise (alpha 0.05) · 1 within noise" in text
    assert "| evals/ci&#46;py&#58;&#58;fine | failed → passed | 0/1 → 1/1 |" in text

    result, _, text = github_run(ci_project, "--store", store, "-k", "fine", "--baseline", base[:6])
    assert result.code == 0
    assert f"### Compared with run {base}" in text.rsplit("## niceeval run", 1)[1]


def test_an_unknown_baseline_exits_2_before_running(ci_project: Project) -> None:
    result, commands, text = github_run(ci_project, "--baseline", "nosuchrun")
    assert result.code == 2
    assert "no suite run 'nosuchrun'" in result.stderr
    assert (commands, text) == ([], "")


def test_no_github_turns_it_off_on_a_runner(ci_project: Project) -> None:
    result, _, text = github_run(ci_project, "--no-github", "--no-store", "-k", "gate_miss")
    assert result.code == 1
    assert "::" not in result.stdout.replace("evals/ci.py::gate_miss", "")
    assert text == ""


def test_report_writes_the_whole_suite_run_s_annotations_summary_and_diff(ci_project: Project) -> None:
    """The job that gathers a sharded suite run gets the GitHub output of all of it, with model output kept inert."""
    store = f"sqlite:///{ci_project.out / 'results.db'}"
    base = ci_project.run("--store", store, "-k", "fine", "--no-github").report()["run_id"]
    for shard in ("1/2", "2/2"):
        ci_project.run("--store", store, "--shard", shard, "--run-id", "gh-7", "--no-github")
    summary = ci_project.out / "report-summary.md"
    workspace = str(ci_project.root.parent)
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_WORKSPACE": workspace}
    result = ci_project.cli("report", "gh-7", "--store", store, "--baseline", base, env=env)
    assert result.code == 1, result.output
    commands = workflow_commands(result.stdout)
    titles = {c.properties["title"] for c in commands if c.name in ("error", "warning")}
    assert "niceeval evals/ci.py::gate_miss: includes('Goodbye')" in titles  # from whichever shard ran it
    assert "niceeval evals/ci.py::soft_miss: similarity" in titles
    assert "add-mask" not in {c.name for c in commands}  # the hostile reply, printed by the report, stays inert
    text = summary.read_text(encoding="utf-8")
    assert "## niceeval run gh-7: failed" in text
    assert "1 passed, 1 scored, **2 failed**, 0 skipped · 4 evals, 4 runs" in text
    assert f"### Compared with run {base}" in text
    assert "<script" not in text


def test_report_with_an_unknown_baseline_exits_2(ci_project: Project) -> None:
    store = f"sqlite:///{ci_project.out / 'results.db'}"
    run_id = ci_project.run("--store", store, "-k", "fine", "--no-github").report()["run_id"]
    result = ci_project.cli("report", run_id, "--store", store, "--baseline", "nosuchrun", "--github")
    assert result.code == 2
    assert "no suite run 'nosuchrun'" in result.stderr
