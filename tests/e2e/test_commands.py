"""`niceeval list`, `niceeval init`, the bare command, and the project's own example suite."""

from __future__ import annotations

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
    result = project.cli("init")
    assert result.code == 0, result.output
    assert result.stdout.splitlines() == ["wrote niceeval.config.py", "wrote evals/first.py", "next: niceeval run"]
    run = project.run()
    assert run.code == 0, run.output
    assert run.report()["summary"]["passed"] == 1


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
