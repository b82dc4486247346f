"""Sandbox evals end to end through the runner: workspace, diff assertions, commands, hidden EVAL.py, cleanup."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from niceeval import EvalContext, UsageError, define_eval
from niceeval._core.results import RunResult
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.agents import FunctionSession
from niceeval.expect import command_succeeded


@pytest.fixture
def fixture(tmp_path: Path) -> Path:
    folder = tmp_path / "fixtures" / "app"
    folder.mkdir(parents=True)
    (folder / "app.py").write_text("VALUE = 1\n")
    (folder / "old.py").write_text("gone soon\n")
    (folder / "EVAL.py").write_text("import app\n\ndef test_value():\n    assert app.VALUE == 2\n")
    return folder


def run(spec: EvalSpec, root: Path, *, agent: Any = None, keep: bool = False) -> RunResult:
    entry = EvalEntry(id=f"x.py::{spec.name}", spec=spec)
    options = ExecOptions(timeout=60, agent=agent, root=root, keep_sandbox=keep)
    return anyio.run(execute, entry, 0, options)


def editor(message: str, session: FunctionSession) -> str:
    assert session.workspace is not None
    assert not (session.workspace / "EVAL.py").exists(), "the hidden tests must not be visible to the agent"
    (session.workspace / "app.py").write_text("VALUE = 2\n")
    (session.workspace / "old.py").unlink()
    (session.workspace / "new.py").write_text("TOKEN = 'sk-abcdefghijklmnopqrstuvwxyz'\n")
    return "done"


def states(result: RunResult) -> dict[str, str]:
    return {a.name: a.state for a in result.assertions}


def test_diff_assertions_and_hidden_tests_score_the_workspace(fixture: Path) -> None:
    @define_eval(fixture="fixtures/app", agent=editor)
    async def ev(t: EvalContext) -> None:
        await t.send("edit")
        t.file_changed("app.py")
        t.file_deleted("old.py")
        t.file_added("new.py")
        t.file_changed("new.py").label("new.py counts as added, not changed")
        t.not_in_diff(re.compile(r"sk-[a-z]{20,}")).label("no secrets")

    result = run(ev, fixture.parent.parent)
    assert states(result) == {
        "file_changed('app.py')": "passed",
        "file_deleted('old.py')": "passed",
        "file_added('new.py')": "passed",
        "new.py counts as added, not changed": "failed",
        "no secrets": "failed",
        "EVAL.py::test_value": "passed",
    }


def test_a_failing_hidden_test_is_a_failed_gate_with_pytests_text(fixture: Path) -> None:
    @define_eval(fixture="fixtures/app", agent=lambda m: "did nothing")
    async def ev(t: EvalContext) -> None:
        await t.send("edit")

    result = run(ev, fixture.parent.parent)
    miss = result.assertions[0]
    assert (result.outcome, miss.name, miss.severity) == ("failed", "EVAL.py::test_value", "gate")
    assert "assert 1 == 2" in miss.reason


def test_a_hidden_test_file_with_a_syntax_error_is_a_clear_failed_assertion(fixture: Path) -> None:
    (fixture / "EVAL.py").write_text("def test_x(:\n")

    @define_eval(fixture="fixtures/app")
    async def ev(t: EvalContext) -> None:
        pass

    result = run(ev, fixture.parent.parent)
    assert result.outcome == "failed" and result.error is None
    assert "SyntaxError" in result.assertions[0].reason or "invalid syntax" in result.assertions[0].reason


def test_commands_run_in_the_workspace_and_are_recorded_as_shell_actions(fixture: Path) -> None:
    @define_eval(fixture="fixtures/app", validation="none")
    async def ev(t: EvalContext) -> None:
        ok = await t.sandbox.run_command(sys.executable, ["-c", "import app; print(app.VALUE)"])
        t.check(ok, command_succeeded())
        bad = await t.sandbox.run_shell("exit 3")
        t.check(bad, command_succeeded())
        t.no_failed_shell_commands()

    result = run(ev, fixture.parent.parent)
    assert [a.state for a in result.assertions] == ["passed", "failed", "failed"]
    assert "exited 3" in result.assertions[1].reason
    assert [e.type for e in result.events] == ["action.called", "action.called"]


def test_scripts_must_exit_zero(fixture: Path) -> None:
    @define_eval(fixture="fixtures/app", validation="none", scripts=["true", "false"])
    async def ev(t: EvalContext) -> None:
        pass

    result = run(ev, fixture.parent.parent)
    assert [a.state for a in result.assertions] == ["passed", "failed"]


def test_the_workspace_is_removed_unless_kept(fixture: Path) -> None:
    seen: list[Path] = []

    @define_eval(fixture="fixtures/app", validation="none")
    async def ev(t: EvalContext) -> None:
        seen.append(Path(t.sandbox.path))

    assert run(ev, fixture.parent.parent).sandbox_path is None
    assert not seen[0].exists()
    kept = run(ev, fixture.parent.parent, keep=True).sandbox_path
    assert kept is not None and Path(kept).is_dir() and (Path(kept) / "app.py").exists()


def test_a_missing_fixture_fails_the_run_naming_the_path(tmp_path: Path) -> None:
    @define_eval(fixture="fixtures/nope")
    async def ev(t: EvalContext) -> None:
        pass

    result = run(ev, tmp_path)
    assert result.error is not None and result.error.kind == "usage"
    assert "fixture 'fixtures/nope' is not a folder" in result.error.message


def test_sandbox_evals_must_be_async() -> None:
    def ev(t: object) -> None: ...

    with pytest.raises(UsageError, match="must be `async def`"):
        define_eval(fixture="fixtures/app")(ev)


def test_t_sandbox_outside_a_sandbox_eval_says_how_to_get_one(tmp_path: Path) -> None:
    @define_eval
    async def ev(t: EvalContext) -> None:
        print(t.sandbox.path)

    result = run(ev, tmp_path)
    assert result.error is not None and "give the eval a fixture" in result.error.message


def test_the_workspace_diff_is_kept_with_the_run(fixture: Path) -> None:
    @define_eval(fixture="fixtures/app", agent=editor)
    async def ev(t: EvalContext) -> None:
        await t.send("edit")

    diff = run(ev, fixture.parent.parent).workspace_diff
    assert diff is not None
    assert "diff --git a/app.py b/app.py" in diff and "-VALUE = 1" in diff and "+VALUE = 2" in diff
    assert "deleted file" in diff and "new.py" in diff


def test_an_untouched_workspace_has_no_diff(fixture: Path) -> None:
    @define_eval(fixture="fixtures/app", agent=lambda message: "nothing to do")
    async def ev(t: EvalContext) -> None:
        await t.send("look only")

    assert run(ev, fixture.parent.parent).workspace_diff is None
