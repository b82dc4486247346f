"""One attempt of an eval group: one sandbox, the setup, each member in order, the teardown (also after a failure).

The suite queues one work item per group and run index (`repeats.work`); a worker runs it here and hands each
member's result on as if the member had run alone, so tallies, comparisons and reporters see ordinary runs. A
member that fails does not stop the others; one whose error is fatal (`EvalFatalError`) does: the members after it
fail saying so. A setup that fails fails every member of the attempt, naming the setup.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from niceeval._core.errors import ErrorInfo, UsageError, error_info, relative
from niceeval._core.results import RunResult
from niceeval._eval.compare import Comparison
from niceeval._eval.groups import EvalGroup, GroupHook, hook_name
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute_run, failed_without_running

if TYPE_CHECKING:
    from niceeval._run.sandboxing import CommandLog
    from niceeval.sandbox import LocalSandbox

FATAL_ERROR_TYPES = frozenset({"EvalFatalError"})
"""Errors after which a group's later members do not run in that attempt (by type name: the class is another
room's)."""


class GroupHookError(Exception):
    """A group's setup or teardown failed: a command exited non-zero, or the function raised."""


@dataclass(frozen=True, kw_only=True, slots=True)
class MemberRun:
    """One member's finished run in a group attempt, with the comparisons it registered."""

    entry: EvalEntry
    result: RunResult
    comparisons: list[Comparison]


async def run_group_attempt(
    group: EvalGroup,
    members: Sequence[EvalEntry],
    run_index: int,
    options: ExecOptions,
    started: Callable[[str, int], None],
) -> list[MemberRun]:
    """Run `members` (the group's evals selected for this attempt, in order) in one sandbox; every member gets a
    result, whatever fails."""
    from niceeval._run.sandboxing import CommandLog, SharedWorkspace

    commands = CommandLog()
    runs: list[MemberRun] = []
    warnings: list[str] = []
    sandbox: LocalSandbox | None = None
    kept: Path | None = None
    try:
        fatal: ErrorInfo | None = None
        try:
            sandbox = await _open(group, members[0], run_index, options, commands)
            if group.setup is not None:
                await _hook(group.setup, sandbox, options.timeout, f"setup {hook_name(group.setup)}")
        except Exception as exc:
            fatal = _failure(group, exc, "its sandbox or setup failed, so no member ran")
        for member in members:
            if fatal is not None:
                runs.append(_not_run(member, run_index, options, fatal, started))
                continue
            assert sandbox is not None
            started(member.id, run_index)
            result, comparisons = await execute_run(member, run_index, options, SharedWorkspace(sandbox, commands))
            runs.append(MemberRun(entry=member, result=result, comparisons=comparisons))
            if result.error is not None and result.error.type in FATAL_ERROR_TYPES:
                message = f"not run: {member.id} raised {result.error.type} earlier in group {group.name!r}"
                fatal = ErrorInfo(type="GroupStopped", message=message, location=_where(group))
    finally:
        if sandbox is not None:
            with anyio.CancelScope(shield=True):
                warnings += await _teardown(group, sandbox, options.timeout)
                kept = await sandbox.close(keep=_keep(options, runs))
    return [_finished(run, warnings, kept) for run in runs]


async def _open(
    group: EvalGroup, leader: EvalEntry, run_index: int, options: ExecOptions, commands: CommandLog
) -> LocalSandbox:
    """The group's workspace: its fixture (or an empty folder) copied into the group's sandbox kind."""
    from niceeval._run.sandboxing import WorkspaceSettings, open_workspace

    settings = WorkspaceSettings(
        default=group.sandbox or options.sandbox, cache=options.root / ".niceeval" / "fixtures", root=options.root
    )
    if group.fixture is not None:
        return await open_workspace(_fixture(group, options.root), commands, leader, run_index, settings)
    with tempfile.TemporaryDirectory(prefix="niceeval-group-") as empty:
        return await open_workspace(Path(empty), commands, leader, run_index, settings)


def _fixture(group: EvalGroup, root: Path) -> Path:
    assert group.fixture is not None
    for base in (group.file.parent, root):
        folder = (base / group.fixture).resolve()
        if folder.is_dir():
            return folder
    raise UsageError(
        f"{_where(group)}: fixture {group.fixture!r} of group {group.name!r} is not a folder beside the eval file "
        "or under the project root; create it or fix the path in define_eval_group(fixture=...)."
    )


async def _hook(hook: GroupHook, sandbox: LocalSandbox, timeout: float, what: str) -> None:
    """Run a setup or teardown: the async function of the sandbox, or each command (each must exit 0)."""
    with anyio.fail_after(timeout):
        if callable(hook):
            await hook(sandbox)
            return
        for command in hook:
            ran = await sandbox.run_shell(command)
            if not ran.succeeded:
                output = (ran.stderr or ran.stdout).strip()[-500:]
                raise GroupHookError(f"the group's {what}: `{command}` exited {ran.exit_code}: {output}")


async def _teardown(group: EvalGroup, sandbox: LocalSandbox, timeout: float) -> list[str]:
    """Run the teardown; a failure is a warning on every member's run (their outcomes stand)."""
    if group.teardown is None:
        return []
    what = f"teardown {hook_name(group.teardown)}"
    try:
        await _hook(group.teardown, sandbox, timeout, what)
    except Exception as exc:
        return [f"group {group.name!r}: {what} failed: {_failure(group, exc, '').message}"]
    return []


def _failure(group: EvalGroup, exc: Exception, consequence: str) -> ErrorInfo:
    info = error_info(exc)
    if isinstance(exc, TimeoutError):
        info = info.model_copy(update={"message": f"did not finish within {info.message or 'its timeout'}"})
    said = f"group {group.name!r}: {consequence}: {info.type}: {info.message}" if consequence else info.message
    return info.model_copy(update={"message": said, "location": info.location or _where(group)})


def _where(group: EvalGroup) -> str:
    return f"{relative(str(group.file))}:{group.line}"


def _not_run(
    member: EvalEntry, run_index: int, options: ExecOptions, why: ErrorInfo, started: Callable[[str, int], None]
) -> MemberRun:
    started(member.id, run_index)
    return MemberRun(entry=member, result=failed_without_running(member, run_index, options, why), comparisons=[])


def _keep(options: ExecOptions, runs: Sequence[MemberRun]) -> bool:
    """`--keep-sandbox` for a group's sandbox: always, never, or when a member's run failed."""
    if options.keep_sandbox != "failed":
        return bool(options.keep_sandbox)
    return any(run.result.outcome == "failed" for run in runs)


def _finished(run: MemberRun, warnings: list[str], kept: Path | None) -> MemberRun:
    if not warnings and kept is None:
        return run
    update = {"warnings": [*run.result.warnings, *warnings], "sandbox_path": str(kept) if kept else None}
    return MemberRun(entry=run.entry, result=run.result.model_copy(update=update), comparisons=run.comparisons)
