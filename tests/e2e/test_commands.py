"""`niceeval list`, `niceeval init`, the bare command, and the project's own example suite."""

from __future__ import annotations

import subprocess
import sys

from ._project import REPO_ROOT, Project

TAGGED = """\
from niceeval import define_eval


@define_eval(tags=["support", "refund"])
async def refund(t):
    pass


@define_eval
async def untagged(t):
    pass
"""


def test_list_prints_each_eval_id_with_its_tags(project: Project) -> None:
    project.write("evals/tagged.py", TAGGED)
    result = project.cli("list")
    assert result.code == 0, result.output
    assert result.stdout.splitlines() == [
        "evals/tagged.py::refund  [support, refund]",
        "evals/tagged.py::untagged",
    ]
    assert "2 evals" in result.stderr


def test_list_reports_a_broken_module_and_exits_2(project: Project) -> None:
    project.write("evals/tagged.py", TAGGED)
    project.write("evals/broken.py", "from niceeval import define_eval\nraise RuntimeError('at import')\n")
    result = project.cli("list")
    assert result.code == 2
    assert "evals/tagged.py::refund" in result.stdout
    assert "ERROR evals/broken.py:2: RuntimeError: at import" in result.stderr


def test_init_in_an_empty_folder_writes_a_project_that_passes(project: Project) -> None:
    (project.root / "niceeval.config.py").unlink()
    result = project.cli("init", env={"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""})
    assert result.code == 0, result.output
    assert result.stdout.splitlines()[:3] == [
        "wrote niceeval.config.py",
        "wrote evals/first.py",
        "wrote .niceeval/.gitignore",
    ]
    run = project.run(env={"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""})
    assert run.code == 0, run.output
    assert run.report()["summary"]["passed"] == 1


def test_init_prints_the_next_steps_naming_the_line_of_the_agent(project: Project) -> None:
    (project.root / "niceeval.config.py").unlink()
    result = project.cli("init")
    agent_line = project.line_of("niceeval.config.py", "def agent")
    assert result.stdout.splitlines()[3:] == [
        "",
        "The starter eval passes now, offline: niceeval run (or pytest evals/).",
        "Next:",
        "  1. Set a key for model agents and judges: OPENAI_API_KEY (or ANTHROPIC_API_KEY) in the environment,",
        "     or in a .env file beside niceeval.config.py (keep it out of git).",
        f"  2. Point the agent at your app: edit `def agent` at niceeval.config.py:{agent_line}, "
        "or use an adapter from",
        "     niceeval.agents (openai_agent, anthropic_agent, http_agent).",
        "  3. Browse the results: niceeval view",
    ]


def test_init_keeps_the_store_out_of_git_and_the_judge_cache_in_it(project: Project) -> None:
    (project.root / "niceeval.config.py").unlink()
    assert project.cli("init").code == 0
    assert '    # judge={"model": "openai/gpt-5.4-mini"},' in (project.root / "niceeval.config.py").read_text()
    subprocess.run(["git", "init", "-q"], cwd=project.root, check=True, timeout=30)
    ignored = [".niceeval/results.db", ".niceeval/results.db-wal", ".niceeval/prices.json"]
    paths = [*ignored, ".niceeval/judge-cache.sqlite", ".niceeval/.gitignore"]
    checked = subprocess.run(
        ["git", "check-ignore", *paths], cwd=project.root, capture_output=True, text=True, timeout=30
    )
    assert checked.stdout.split() == ignored


def test_pytest_runs_the_evals_of_a_fresh_init_through_the_plugin(project: Project) -> None:
    (project.root / "niceeval.config.py").unlink()
    assert project.cli("init").code == 0
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v"],
        cwd=project.root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "evals/first.py::greets_back PASSED" in done.stdout
    assert "1 passed" in done.stdout


def test_a_second_init_keeps_the_existing_files(project: Project) -> None:
    (project.root / "niceeval.config.py").unlink()
    assert project.cli("init").code == 0
    edited = project.write("evals/first.py", "# my own evals\n")
    config_before = (project.root / "niceeval.config.py").read_text()
    result = project.cli("init")
    assert result.code == 0, result.output
    assert "kept niceeval.config.py (already exists)" in result.stdout
    assert "kept evals/first.py (already exists)" in result.stdout
    assert edited.read_text() == "# my own evals\n"
    assert (project.root / "niceeval.config.py").read_text() == config_before


def test_the_bare_command_prints_help_and_exits_2(project: Project) -> None:
    result = project.cli()
    assert result.code == 2
    assert "usage: niceeval" in result.stdout
    assert "run" in result.stdout and "list" in result.stdout and "init" in result.stdout


def test_the_projects_own_example_suite_passes(project: Project) -> None:
    result = project.cli("run", "--json", str(project.out / "report.json"), cwd=REPO_ROOT)
    assert result.code == 0, result.output
    summary = result.report()["summary"]
    assert summary["failed"] == 0 and summary["errors"] == 0
    assert summary["passed"] >= 1
