"""`define_eval_group`: evals that run in order in one sandbox, with a setup before them and a teardown after.

A group is found like an eval (discovery scans the module's globals); its members stay evals of their own, with
their own ids, results and reports. The runner (`_run/eval_groups.py`) runs one *attempt* of the group per run
index: one sandbox, the setup, each member in the order given, the teardown (also after a failure).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING

from niceeval._core.errors import UsageError, caller_location
from niceeval._core.sandbox_kinds import SANDBOX_KINDS, SandboxChoice, SandboxDeclaration
from niceeval._eval.spec import EvalSpec

if TYPE_CHECKING:
    from niceeval.sandbox import Sandbox

GroupHook = Callable[["Sandbox"], Awaitable[None]] | Sequence[str]
"""A group's setup or teardown: an async function of the group's sandbox, or shell commands run there."""

_MEMBER_OPTIONS = ("fixture", "sandbox", "setup", "runs", "sequential_runs")
"""Options a member cannot have: the group decides its workspace and how many times (and in what order) it runs."""


@dataclass(frozen=True, kw_only=True, slots=True, eq=False)
class EvalGroup:
    """Evals that share one sandbox and run in order (`define_eval_group`).

    A group is the object its file defines: compared and hashed by identity (its sandbox declaration may hold a
    dict, as `docker_sandbox(env=...)` does).
    """

    name: str
    """The group's name, shown in reports beside its members' ids; unique in its file."""
    members: tuple[EvalSpec, ...]
    """The evals, in the order each attempt runs them."""
    fixture: str | None = None
    """Folder copied into the group's workspace (beside the group's file, or under the project root); None: an
    empty workspace."""
    sandbox: SandboxChoice | None = None
    """What runs the workspace's commands: `local`, `bwrap`, `docker` or a declaration; None: the config's."""
    setup: GroupHook | None = None
    """Run once per attempt, in the sandbox, before the first member."""
    teardown: GroupHook | None = None
    """Run once per attempt after the last member, also when a member or the setup failed."""
    file: Path
    line: int

    @property
    def where(self) -> str:
        return f"{self.file.name}:{self.line}"


def _hook(value: object, what: str, where: str) -> GroupHook | None:
    if value is None or inspect.iscoroutinefunction(value):
        return value
    if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise UsageError(
        f"{where}: define_eval_group({what}=...) takes an async function of the sandbox "
        f"(`async def {what}(sandbox): ...`, the sandbox's API is awaited) "
        f"or a list of shell commands, e.g. {what}=['make db']; got {value!r:.80}."
    )


def _members(evals: object, where: str) -> tuple[EvalSpec, ...]:
    if isinstance(evals, str) or not isinstance(evals, list | tuple) or not evals:
        raise UsageError(f"{where}: define_eval_group(evals=...) takes the evals in order, e.g. evals=[create, edit].")
    members = tuple(evals)
    for member in members:
        if not isinstance(member, EvalSpec):
            name = getattr(member, "__name__", repr(member)[:60])
            raise UsageError(
                f"{where}: {name} in define_eval_group(evals=...) is not an eval; decorate it with @define_eval."
            )
        for option in _MEMBER_OPTIONS:
            if getattr(member, option) not in (None, (), False):
                raise UsageError(
                    f"{where}: eval {member.name!r} (line {member.line}) sets {option}=, but a group's members run "
                    f"in the group's sandbox, once per attempt, in order: give fixture=, sandbox= and setup= to "
                    f"define_eval_group and remove {option}= from the eval."
                )
    if len({id(m) for m in members}) != len(members):
        raise UsageError(f"{where}: an eval appears twice in define_eval_group(evals=...); list each once.")
    return members


def _sandbox(value: object, where: str) -> SandboxChoice | None:
    if value is None or value in SANDBOX_KINDS or isinstance(value, SandboxDeclaration):
        return value
    raise UsageError(
        f"{where}: define_eval_group(sandbox=...) is one of {', '.join(SANDBOX_KINDS)} or a declaration such as "
        f"docker_sandbox(...); got {value!r:.80}."
    )


def define_eval_group(
    name: str,
    *,
    evals: Sequence[EvalSpec],
    fixture: str | PurePath | None = None,
    sandbox: SandboxChoice | None = None,
    setup: GroupHook | None = None,
    teardown: GroupHook | None = None,
) -> EvalGroup:
    """Run `evals` in order in one sandbox, after `setup` and before `teardown`, once per attempt (`--runs N`).

    Each member is still an eval of its own: its id, result and report are its own, and a member that fails does
    not stop the others. They share the workspace: what one member's agent changed, the next one sees.

    Args:
        name: The group's name (unique in its file).
        evals: The member evals, in the order they run; defined in the same file, without `fixture=`,
            `sandbox=`, `setup=`, `runs=` or `sequential_runs=` of their own.
        fixture: A folder copied into the group's workspace (None: an empty one).
        sandbox: `local`, `bwrap`, `docker` or a declaration (`docker_sandbox(...)`); None: the config's.
        setup: Run in the sandbox before the first member: a function of the sandbox, or shell commands that
            must each exit 0. If it fails, every member of the attempt fails saying so.
        teardown: Run after the last member, also after a failure.
    """
    where = caller_location(1) or "define_eval_group"
    if not isinstance(name, str) or not name.strip():
        raise UsageError(f"{where}: define_eval_group() needs a name first, e.g. define_eval_group('checkout', ...).")
    if fixture is not None and not isinstance(fixture, str | PurePath):
        raise UsageError(f"{where}: define_eval_group(fixture=...) is a folder path, e.g. 'fixtures/app'.")
    frame = sys._getframe(1)
    return EvalGroup(
        name=name.strip(),
        members=_members(evals, where),
        fixture=str(fixture) if fixture is not None else None,
        sandbox=_sandbox(sandbox, where),
        setup=_hook(setup, "setup", where),
        teardown=_hook(teardown, "teardown", where),
        file=Path(frame.f_code.co_filename).resolve(),
        line=frame.f_lineno,
    )


def hook_name(hook: GroupHook) -> str:
    """How a setup or teardown is named in a failure: the function's name, or its commands."""
    if callable(hook):
        return f"{getattr(hook, '__name__', 'the function')}()"
    return " && ".join(hook)
