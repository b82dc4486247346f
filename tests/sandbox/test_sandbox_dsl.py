"""The sandbox DSL of issue 21: run_command(check=True), read/write_bytes, no_changes, changed_paths,
file_changed(before=, after=), and the teaching error for `t.sandbox.diff.is_empty()`."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from niceeval import EvalContext, define_eval
from niceeval._core.results import RunResult
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.agents import FunctionSession
from niceeval.expect import includes


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "fixtures" / "app"
    folder.mkdir(parents=True)
    (folder / "app.py").write_text("VALUE = 1\n")
    (folder / "logo.bin").write_bytes(b"\x00\x01")
    return tmp_path


def run(spec: EvalSpec, root: Path, agent: Any) -> RunResult:
    entry = EvalEntry(id=f"x.py::{spec.name}", spec=spec)
    return anyio.run(execute, entry, 0, ExecOptions(timeout=60, agent=agent, root=root))


def editor(message: str, session: FunctionSession) -> str:
    assert session.workspace is not None
    (session.workspace / "app.py").write_text("VALUE = 2\n")
    return "done"


def idle(message: str) -> str:
    return "nothing to do"


def states(result: RunResult) -> dict[str, str]:
    return {a.name: a.state for a in result.assertions if not a.name.startswith("EVAL.py")}


def test_file_changed_checks_the_text_before_and_after(root: Path) -> None:
    @define_eval(fixture="fixtures/app", agent=editor)
    async def ev(t: EvalContext) -> None:
        await t.send("edit")
        t.file_changed("app.py", before="VALUE = 1\n", after=includes("= 2")).label("right")
        t.file_changed("app.py", before=re.compile("VALUE = 1"), after="VALUE = 3\n").label("wrong after")
        t.changed_paths(["app.py"])
        t.changed_paths(["app.py", "b.py"]).label("one too many")
        t.no_changes()

    result = run(ev, root, editor)
    assert states(result) == {
        "right": "passed",
        "wrong after": "failed",
        "changed_paths(['app.py'])": "passed",
        "one too many": "failed",
        "no_changes": "failed",
    }
    reasons = {a.name: a.reason for a in result.assertions}
    assert reasons["wrong after"] == "after: expected 'VALUE = 3\\n', got 'VALUE = 2\\n'"
    assert reasons["one too many"] == "unexpected: []; unchanged: ['b.py']"


def test_no_changes_passes_on_an_untouched_workspace(root: Path) -> None:
    @define_eval(fixture="fixtures/app", agent=idle)
    async def ev(t: EvalContext) -> None:
        await t.send("look")
        t.no_changes()

    assert states(run(ev, root, idle)) == {"no_changes": "passed"}


def test_run_command_check_raises_with_the_output_at_the_line(root: Path) -> None:
    @define_eval(fixture="fixtures/app", agent=idle)
    async def ev(t: EvalContext) -> None:
        ok = await t.sandbox.run_command(sys.executable, ["-c", "print('fine')"], check=True)
        assert ok.stdout.strip() == "fine"
        await t.sandbox.run_command(sys.executable, ["-c", "import sys; print('boom'); sys.exit(3)"], check=True)

    result = run(ev, root, idle)
    assert result.outcome == "failed" and result.error is not None
    assert result.error.type == "CommandFailed"
    assert "exited 3:\nboom" in result.error.message
    assert result.error.location is not None and "test_sandbox_dsl.py" in result.error.location


def test_t_sandbox_passes_the_command_options_through_and_a_misspelt_one_names_the_closest(root: Path) -> None:
    seen: list[tuple[str, float]] = []

    @define_eval(fixture="fixtures/app", agent=idle)
    async def ev(t: EvalContext) -> None:
        (t.sandbox.path / "sub").mkdir()
        done = await t.sandbox.run_shell("pwd", cwd="sub", timeout=7, env={"X": "1"}, record=False, check=True)
        seen.append((done.cwd, done.timeout))
        await t.sandbox.run_command("true", timout=3)  # type: ignore[call-arg]

    result = run(ev, root, idle)
    assert seen == [("sub", 7.0)]
    assert result.error is not None and result.error.type == "TypeError"
    assert result.error.message == (
        "run_command() got an unexpected keyword argument 'timout'; did you mean 'timeout'? "
        "Its options: cwd, env, record, timeout."
    )


def test_read_and_write_bytes(root: Path) -> None:
    seen: list[bytes] = []

    @define_eval(fixture="fixtures/app", agent=idle)
    async def ev(t: EvalContext) -> None:
        seen.append(await t.sandbox.read_bytes("logo.bin"))
        await t.sandbox.write_bytes("out/data.bin", b"\xff\xfe")
        seen.append(await t.sandbox.read_bytes("out/data.bin"))
        t.file_added("out/data.bin")

    result = run(ev, root, idle)
    assert seen == [b"\x00\x01", b"\xff\xfe"]
    assert states(result) == {"file_added('out/data.bin')": "passed"}


def test_diff_used_as_in_the_typescript_guide_teaches_the_python_form(root: Path) -> None:
    @define_eval(fixture="fixtures/app", agent=idle)
    async def ev(t: EvalContext) -> None:
        t.check(t.sandbox.diff.is_empty(), includes("x"))

    result = run(ev, root, idle)
    assert result.error is not None and result.error.kind == "usage"
    assert "write (await t.sandbox.diff()).is_empty()" in result.error.message
    assert "'function' object" not in result.error.message


def test_awaiting_the_diff_still_works(root: Path) -> None:
    @define_eval(fixture="fixtures/app", agent=editor)
    async def ev(t: EvalContext) -> None:
        await t.send("edit")
        diff = await t.sandbox.diff()
        t.check(diff.changed_paths, includes("app.py"))

    assert run(ev, root, editor).outcome == "passed"
