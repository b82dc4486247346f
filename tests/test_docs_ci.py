"""docs/ci.md's workflows are real: the YAML parses, every `niceeval` command in it is one the command line
accepts, and the one-job GitHub workflow's scripts run: on main, then on a pull request compared with main."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from niceeval.cli._main import build_parser

DOC = Path(__file__).resolve().parent.parent / "docs" / "ci.md"
YAML_BLOCK = re.compile(r"```yaml\n(?P<body>.*?)```", re.S)

EXPRESSIONS = {"matrix.shard": "1", "github.run_id": "123456", "github.run_attempt": "1"}
VARIABLES = {
    "RUN_ID": "gh-123456-1",
    "NICEEVAL_STORE": "postgresql://ci@db/evals",
    "BASE": "gh-99-1",
    "base": "gh-99-1",
    "CI_NODE_INDEX": "1",
    "CI_NODE_TOTAL": "4",
}
OPERATORS = {"&&", "||", ";", "|", "&", "(", ")"}
REDIRECTS = {">", ">>", "<", ">&", "&>"}


def workflows() -> dict[str, dict[str, Any]]:
    """Each YAML block of the page, by the file name in its first line's comment."""
    found = {}
    for block in YAML_BLOCK.finditer(DOC.read_text(encoding="utf-8")):
        name = block["body"].splitlines()[0].removeprefix("# ").strip()
        found[name] = yaml.safe_load(block["body"])
    return found


def scripts(workflow: dict[str, Any]) -> list[str]:
    """The shell text of every GitHub `run:` step and GitLab `script:` line."""
    texts: list[str] = []
    for job in workflow.get("jobs", workflow).values():  # GitLab's jobs sit at the top level
        if not isinstance(job, dict):
            continue
        texts += [step["run"] for step in job.get("steps", []) if "run" in step]
        texts += job.get("script", [])
    return texts


def niceeval_commands(script: str) -> list[list[str]]:
    """The argument lists of the `niceeval` commands in a shell script (expressions and variables filled in)."""
    for expression, value in EXPRESSIONS.items():
        script = script.replace("${{ " + expression + " }}", value)
    assert "${{" not in script, f"an expression the test cannot fill in: {script}"
    commands: list[list[str]] = []
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        current: list[str] = []
        tokens = list(lexer)
        index = 0
        while index < len(tokens):
            token = tokens[index]
            if token in OPERATORS:
                commands.append(current)
                current = []
            elif token in REDIRECTS:
                if current and current[-1].isdigit():
                    current.pop()  # the `2` of `2>&1`
                index += 1  # the redirect's target
            else:
                current.append(token)
            index += 1
        commands.append(current)
    return [[_fill(token) for token in c] for c in commands if c and c[0] == "niceeval"]


def _fill(token: str) -> str:
    return re.sub(r"\$(\w+)", lambda m: VARIABLES[m.group(1)], token)


def accepted(argv: list[str]) -> str | None:
    """None when `niceeval ARGV` parses; else what argparse said."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            build_parser().parse_args(argv)
    except SystemExit:
        return err.getvalue().strip() or "exited"
    return None


def test_the_page_holds_the_three_workflows() -> None:
    assert set(workflows()) == {
        ".github/workflows/evals.yml",
        ".github/workflows/evals-sharded.yml",
        ".gitlab-ci.yml",
    }


def test_the_sharded_workflow_runs_four_shards_then_one_report_job() -> None:
    jobs = workflows()[".github/workflows/evals-sharded.yml"]["jobs"]
    assert jobs["shard"]["strategy"]["matrix"]["shard"] == [1, 2, 3, 4]
    assert jobs["report"]["needs"] == "shard"
    workflow = workflows()[".github/workflows/evals-sharded.yml"]
    assert workflow["env"]["RUN_ID"] == "gh-${{ github.run_id }}"  # no run_attempt: a re-run completes its shard
    shard_runs = [step["run"] for step in jobs["shard"]["steps"] if "run" in step]
    shard = 'niceeval run --shard ${{ matrix.shard }}/4 --run-id "$RUN_ID" --store "$NICEEVAL_STORE"'
    assert f"{shard} || [ $? -eq 1 ]" in shard_runs  # a failing eval is the report job's to judge
    report_runs = " ".join(step["run"] for step in jobs["report"]["steps"] if "run" in step)
    assert 'niceeval report "$RUN_ID"' in report_runs and '--baseline "$BASE"' in report_runs


@pytest.mark.parametrize(("code", "job_fails"), [(0, False), (1, False), (2, True), (137, True)])
def test_a_shard_job_fails_only_when_the_shard_could_not_run(code: int, job_fails: bool) -> None:
    jobs = workflows()[".github/workflows/evals-sharded.yml"]["jobs"]
    (script,) = [step["run"] for step in jobs["shard"]["steps"] if "niceeval run" in step.get("run", "")]
    guard = script.partition("||")[2]
    done = subprocess.run(["bash", "-c", f"(exit {code}) || {guard}"], check=False)
    assert (done.returncode != 0) is job_fails


@pytest.mark.parametrize("name", sorted(workflows()))
def test_every_niceeval_command_in_a_workflow_is_accepted_by_the_command_line(name: str) -> None:
    commands = [c for script in scripts(workflows()[name]) for c in niceeval_commands(script)]
    assert commands, "no niceeval command found"
    refused = {shlex.join(c): why for c in commands if (why := accepted(c[1:])) is not None}
    assert refused == {}


def test_the_workflows_use_the_commands_the_page_describes() -> None:
    used = {
        c[1] for workflow in workflows().values() for script in scripts(workflow) for c in niceeval_commands(script)
    }
    assert used == {"run", "report", "diff", "show"}


def _steps(name: str) -> dict[str, str]:
    jobs = workflows()[".github/workflows/evals.yml"]["jobs"]
    return {step["name"]: step["run"] for step in jobs[name]["steps"] if "run" in step and "name" in step}


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_the_one_job_workflow_records_main_then_compares_a_pull_request_with_it(tmp_path: Path) -> None:
    steps = _steps("evals")
    (tmp_path / "niceeval.config.py").write_text(
        "import os\nfrom niceeval import define_config\n\n"
        "config = define_config(agent=lambda m: os.environ.get('REPLY', 'hello'))\n"
    )
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "greet.py").write_text(
        "from niceeval import define_eval\nfrom niceeval.expect import includes\n\n\n"
        "@define_eval\nasync def greets(t):\n    await t.send('hi')\n    t.check(t.reply, includes('hello'))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("NICEEVAL")}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
        NICEEVAL_STORE=str(tmp_path / "store.db"),
        GITHUB_ENV=str(tmp_path / "github_env"),
        GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"),
        GITHUB_WORKSPACE=str(tmp_path),
    )

    main = {**env, "RUN_ID": "gh-1-1", "BASE": ""}
    ran = _bash(steps["Run the evals"], tmp_path, main)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert {p.name for p in tmp_path.iterdir()} >= {"junit.xml", "report.json", "report.html"}
    assert _bash(steps["Remember this run as main's baseline"], tmp_path, main).returncode == 0

    pull = {**env, "RUN_ID": "gh-2-1", "REPLY": "bye", "GITHUB_ACTIONS": "true"}
    found = _bash(steps["Use it as the baseline when the store still has it"], tmp_path, pull)
    assert found.returncode == 0, found.stderr
    assert (tmp_path / "github_env").read_text() == "BASE=gh-1-1\n"
    pull["BASE"] = "gh-1-1"
    ran = _bash(steps["Run the evals"], tmp_path, pull)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "### Compared with run gh-1-1" in (tmp_path / "summary.md").read_text()
    gate = _bash(steps["Fail on regressions against main"], tmp_path, pull)
    assert gate.returncode == 1
    assert "noise      evals/greet.py::greets  passed -> failed" in gate.stdout  # one run of one eval: no proof
    assert "REGRESSED: suite pass rate dropped by 1.000, more than --max-drop 0.1" in gate.stdout
