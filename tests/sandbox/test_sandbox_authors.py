"""Diffs that say who changed what: `t.sandbox.diff(author=...)` keeps the eval's own writes through `t.sandbox`
apart from the agent's, `turn.diff()` / `session.diff()` are one turn's / session's changes, and
`t.not_in_diff(pattern, side=...)` searches only the lines a diff adds (or removes): in local, bwrap and Docker
sandboxes alike."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from docker_helpers import BASE_IMAGE, needs_docker

from niceeval import EvalContext, define_eval
from niceeval._core.results import RunResult
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.agents import FunctionSession
from niceeval.expect import equals
from niceeval.sandbox import LocalSandbox, Stretch, bwrap_problem, current_sandbox, docker_sandbox, stretches_diff

SECRET = "sk-abcdefghijklmnopqrstuvwxyz"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    fixture = tmp_path / "fixtures" / "app"
    fixture.mkdir(parents=True)
    (fixture / "app.py").write_text(f"VALUE = 1\nKEY = '{SECRET}'\n")
    (fixture / "notes.txt").write_text("fixture\n")
    return tmp_path


def run(spec: EvalSpec, root: Path, **options: Any) -> RunResult:
    entry = EvalEntry(id=f"x.py::{spec.name}", spec=spec)
    return anyio.run(execute, entry, 0, ExecOptions(timeout=120, root=root, **options))


async def agent_shell(script: str) -> None:
    """What an agent does in the workspace: a command in the run's sandbox (not through `t.sandbox`)."""
    sandbox = current_sandbox()
    assert sandbox is not None
    done = await sandbox.run_shell(script)
    assert done.exit_code == 0, done.stderr


async def editing_agent(message: str, session: FunctionSession) -> str:
    await agent_shell(message)
    return "done"


def sandbox_of(kind: str) -> Any:
    if kind == "bwrap" and bwrap_problem() is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {bwrap_problem()}", pytrace=False)
        pytest.skip(str(bwrap_problem()))
    if kind == "docker":
        needs_docker()
        return docker_sandbox(image=BASE_IMAGE)
    return kind


@pytest.mark.parametrize("kind", ["local", "bwrap", "docker"])
def test_the_agents_diff_leaves_out_the_evals_own_writes(project: Path, kind: str) -> None:
    diffs: dict[str, Any] = {}

    @define_eval(fixture="fixtures/app", agent=editing_agent, sandbox=sandbox_of(kind))
    async def authors(t: EvalContext) -> None:
        await t.sandbox.write_text("config.json", "{}\n")
        await t.sandbox.write_text("notes.txt", "eval\n")
        await t.send("echo 'VALUE = 2' > app.py; echo agent > notes.txt")
        await t.sandbox.run_shell("echo built > out.txt")
        for author in ("agent", "eval", None):
            diffs[str(author)] = await t.sandbox.diff(author=author)
        t.check((await t.sandbox.diff(author="agent")).changed_paths, equals(["app.py", "notes.txt"]))

    result = run(authors, project)
    assert (result.error, result.outcome) == (None, "passed")
    agent, own, every = diffs["agent"], diffs["eval"], diffs["None"]
    assert agent.changed_paths == ["app.py", "notes.txt"]
    assert agent.change("notes.txt").old_content == "eval\n"  # as the agent found it, after the eval's write
    assert "-eval\n+agent\n" in agent.text and "sk-" in agent.text and "built" not in agent.text
    assert (own.added, own.modified) == (["config.json", "out.txt"], ["notes.txt"])
    assert own.change("notes.txt").content == "eval\n" and "VALUE = 2" not in own.text
    assert every.changed_paths == ["app.py", "config.json", "notes.txt", "out.txt"]
    assert "-fixture\n+agent\n" in every.text


def test_turn_and_session_diffs_are_their_own_changes(project: Path) -> None:
    seen: dict[str, list[str]] = {}

    @define_eval(fixture="fixtures/app", agent=editing_agent, sandbox="local")
    async def turns(t: EvalContext) -> None:
        first = await t.send("echo 'VALUE = 2' > app.py")
        await t.sandbox.write_text("seed.txt", "from the eval\n")
        second = await t.send("echo two > b.txt; echo 'VALUE = 3' > app.py")
        later = t.new_session()
        third = await t.send("rm notes.txt")
        seen["first"] = (await first.diff()).changed_paths
        seen["second"] = (await second.diff()).changed_paths
        seen["third"] = (await third.diff()).deleted
        seen["session 2"] = (await later.diff()).changed_paths
        seen["first text"] = [(await first.diff()).text]

    result = run(turns, project)
    assert (result.error, result.outcome) == (None, "passed")
    assert seen["first"] == ["app.py"]
    assert "+VALUE = 2" in seen["first text"][0] and "VALUE = 3" not in seen["first text"][0]
    assert seen["second"] == ["app.py", "b.txt"]
    assert seen["third"] == ["notes.txt"] and seen["session 2"] == ["notes.txt"]


def test_a_sessions_diff_spans_its_turns_without_the_evals_writes(project: Path) -> None:
    seen: list[Any] = []

    @define_eval(fixture="fixtures/app", agent=editing_agent, sandbox="local")
    async def session(t: EvalContext) -> None:
        await t.send("echo 'VALUE = 2' > app.py")
        await t.sandbox.write_text("app.py", "VALUE = 'eval'\n")
        await t.send("echo extra >> app.py; echo two > b.txt")
        seen.append(await t.session.diff())

    result = run(session, project)
    assert (result.error, result.outcome) == (None, "passed")
    (diff,) = seen
    assert diff.changed_paths == ["app.py", "b.txt"]
    change = diff.change("app.py")
    assert change.old_content.startswith("VALUE = 1\n") and change.content == "VALUE = 'eval'\nextra\n"


def test_turn_diff_outside_a_sandbox_eval_teaches_the_fixture(project: Path) -> None:
    @define_eval(agent=lambda message: "hi")
    async def plain(t: EvalContext) -> None:
        turn = await t.send("hello")
        await turn.diff()

    result = run(plain, project)
    assert result.error is not None and result.error.type == "UsageError"
    assert "turn 1: turn.diff() is the workspace change of a sandbox eval" in result.error.message
    assert "@define_eval(fixture=" in result.error.message


def test_a_wrong_author_is_a_usage_error(project: Path) -> None:
    @define_eval(fixture="fixtures/app", sandbox="local")
    async def wrong(t: EvalContext) -> None:
        await t.sandbox.diff(author="human")  # type: ignore[arg-type]

    result = run(wrong, project)
    assert result.error is not None and "t.sandbox.diff(author='human')" in result.error.message
    assert "'agent'" in result.error.message


def removes_the_secret(message: str, session: FunctionSession) -> str:
    assert session.workspace is not None
    (session.workspace / "app.py").write_text("VALUE = 2\nKEY = os.environ['KEY']\n")
    return "done"


def adds_a_secret(message: str, session: FunctionSession) -> str:
    assert session.workspace is not None
    (session.workspace / "notes.txt").write_text(f"fixture\ntoken {SECRET}\n")
    return "done"


@pytest.mark.parametrize(
    ("agent", "states"),
    [
        (removes_the_secret, {"added": "passed", "removed": "failed", "both": "failed"}),
        (adds_a_secret, {"added": "failed", "removed": "passed", "both": "failed"}),
    ],
)
def test_not_in_diff_searches_the_side_asked_for(project: Path, agent: Any, states: dict[str, str]) -> None:
    @define_eval(fixture="fixtures/app", agent=agent, sandbox="local")
    async def sides(t: EvalContext) -> None:
        await t.send("edit")
        t.not_in_diff(r"sk-[a-z]{20,}", side="added").label("added")
        t.not_in_diff(r"sk-[a-z]{20,}", side="removed").label("removed")
        t.not_in_diff(r"sk-[a-z]{20,}").label("both")

    result = run(sides, project)
    assert {a.name: a.state for a in result.assertions} == states
    if agent is adds_a_secret:
        added = next(a for a in result.assertions if a.name == "added")
        assert added.reason == "found at line 6 of the diff"


def test_not_in_diff_refuses_an_unknown_side(project: Path) -> None:
    @define_eval(fixture="fixtures/app", sandbox="local")
    async def bad(t: EvalContext) -> None:
        t.not_in_diff("x", side="new")  # type: ignore[arg-type]

    result = run(bad, project)
    assert result.error is not None and "not_in_diff(side='new'): the side is one of added, removed, both" in (
        result.error.message
    )


def test_stretches_compose_first_found_and_last_left(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "c.txt").write_text("untouched\n")

    async def main() -> None:
        async with await LocalSandbox.create(tmp_path) as sandbox:
            await anyio.sleep(0.2)  # the copies settle: later snapshots trust their lstat
            start = await sandbox.snapshot()
            await sandbox.write_text("a.txt", "two\n")
            middle = await sandbox.snapshot()
            await sandbox.write_text("a.txt", "one\n")
            await sandbox.write_text("b.txt", "new\n")
            end = await sandbox.snapshot()
            assert middle["a.txt"].text == "two\n" and end["a.txt"].text == "one\n"
            assert end["c.txt"] is middle["c.txt"] is start["c.txt"]  # not read again: one state, one text
            both = stretches_diff([Stretch(before=start, after=middle), Stretch(before=middle, after=end)])
            assert both.changed_paths == ["b.txt"]  # a.txt came back to what the first stretch found
            assert stretches_diff([Stretch(before=start, after=middle)]).modified == ["a.txt"]

    anyio.run(main)


def test_the_guides_who_changed_what_example_passes(tmp_path: Path) -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "sandbox.md").read_text(encoding="utf-8")
    start = text.index("## Who changed what")
    section = text[start : text.index("\n## ", start + 1)]
    for block in re.finditer(r"```python\n# file: (?P<path>\S+)\n(?P<body>.*?)```", section, re.S):
        target = tmp_path / block["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block["body"], encoding="utf-8")
    (tmp_path / "niceeval.config.py").write_text(
        "from niceeval import define_config\n\nconfig = define_config(store=False)\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "niceeval", "run"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "only_the_agents_changes" in done.stdout and "1 passed" in done.stdout, done.stdout


def test_a_snapshot_sees_a_same_size_rewrite_made_at_once(tmp_path: Path) -> None:
    """The file system's clock may not move between two quick writes: a file changed just before a snapshot is
    read again by the next one, whatever its lstat says."""
    (tmp_path / "a.txt").write_text("one\n")

    async def main() -> None:
        async with await LocalSandbox.create(tmp_path) as sandbox:
            for text in ("two\n", "six\n", "ten\n"):
                await sandbox.write_text("a.txt", text)
                assert (await sandbox.snapshot())["a.txt"].text == text

    anyio.run(main)


def test_a_rewrite_with_the_old_times_restored_is_still_seen(tmp_path: Path) -> None:
    """`touch -r` can set a file's modification time back, never its change time: the rewrite is seen."""
    (tmp_path / "a.txt").write_text("one\n")

    async def main() -> None:
        async with await LocalSandbox.create(tmp_path) as sandbox:
            await anyio.sleep(0.2)
            path = sandbox.path / "a.txt"
            before = path.stat()
            assert (await sandbox.snapshot())["a.txt"].text == "one\n"
            await anyio.sleep(0.2)
            path.write_text("two\n")
            os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
            assert (await sandbox.snapshot())["a.txt"].text == "two\n"

    anyio.run(main)
