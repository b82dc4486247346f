"""A production trace an online eval scored, written as a regression eval beside the project's evals: the trace is
saved as JSON (its input, and each tool call's arguments and output, are read from it) and an eval is appended to
the regressions module that runs the same online eval on it offline.

Two replays (`define_eval(trace=..., replay=...)`): `live` runs the agent under test on the trace's input with its
tool calls answered from the trace, so a regression in the agent reproduces and a fix makes the eval pass;
`recorded` scores the saved trace as it was, so the verdict `niceeval watch` gave reproduces whatever the agent.

Both `niceeval cases from-trace` and the viewer's button write through `write_regression`.
"""

from __future__ import annotations

import ast
import json
import keyword
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from niceeval._core.errors import ConfigError
from niceeval.tracing import Trace

if TYPE_CHECKING:
    from niceeval._core.results import RunResult
    from niceeval.store import Store

Replay = Literal["live", "recorded"]
_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
DEFAULT_MODULE = Path("evals") / "regressions.py"
HEADER = '''"""Regressions from production traces (`niceeval cases from-trace`): each eval runs, offline, the online
eval that scored a saved trace live: on the live agent with its tools answered from the trace (replay="live"), or
on the trace as recorded (replay="recorded")."""

from niceeval import define_eval
'''


@dataclass(frozen=True, kw_only=True, slots=True)
class RegressionRequest:
    """Which trace to write as a regression, where, and how it replays.

    Args:
        trace_id: The production trace (32 hex digits).
        root: The project folder the online eval's file is relative to (where `niceeval watch` ran).
        module: The eval module to append to, relative to `root` (created with a header when missing).
        eval_name: The online eval whose verdict to keep (its name or id); None: a failing one first.
        replay: `live` (the agent under test runs, its tools answered from the trace) or `recorded`.
        agent: For `live`: `module:name` of the agent to run, imported by the eval; None: the config's agent.
    """

    trace_id: str
    root: Path
    module: Path = DEFAULT_MODULE
    eval_name: str | None = None
    replay: Replay = "live"
    agent: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class WrittenRegression:
    """What `write_regression` wrote."""

    name: str
    """The new eval's name (`trace_<first 12 hex digits>`)."""
    module: Path
    saved: Path
    """The saved trace's JSON file."""
    online_eval: str
    """The id of the online eval the regression runs."""
    outcome: str
    """That eval's outcome on the trace when `niceeval watch` scored it."""
    spans: int
    tool_calls: int
    replay: Replay


def write_regression(store: Store, request: RegressionRequest) -> WrittenRegression:
    """Save the trace and append its regression eval to the module; nothing is written when anything is wrong.

    Raises:
        ConfigError: The trace id is not 32 hex digits, the store holds no online result of the trace (by that
            eval), the agent is not `module:name`,
            the module already has the trace's regression, or a file cannot be written (the message names it).
    """
    from niceeval._core.events import ActionCalledEvent
    from niceeval.tracing import events_from_spans

    trace_id = request.trace_id.strip().lower()
    if not _TRACE_ID.match(trace_id):
        raise ConfigError(
            f"{request.trace_id!r} is not a trace id: give its 32 hex digits, as /status and the store show"
        )
    chosen = _chosen_result(store, trace_id, request.eval_name)
    trace = Trace.of(record.span() for record in chosen.spans)
    agent = _agent_import(request.agent) if request.agent is not None else None
    module = request.root / request.module
    saved = module.parent / "regressions" / f"{trace_id}.json"
    name = f"trace_{trace_id[:12]}"
    try:
        source = module.read_text(encoding="utf-8") if module.exists() else HEADER
        if f"def {name}(" in source:
            raise ConfigError(f"{module} already has {name}, the regression of trace {trace_id}; nothing written.")
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps(trace.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        written = _Written(name, saved.relative_to(module.parent), request.replay, agent)
        code = _regression(chosen, written, request.root)
        with module.open("w", encoding="utf-8") as out:
            out.write(source.rstrip("\n") + "\n" + code)
    except OSError as exc:
        raise ConfigError(
            f"cannot write the regression of trace {trace_id}: {exc.strerror or exc} ({exc.filename or module}); "
            "choose a writable module with --to PATH"
        ) from None
    calls = sum(1 for event in events_from_spans(trace.spans) if isinstance(event, ActionCalledEvent))
    return WrittenRegression(
        name=name,
        module=module,
        saved=saved,
        online_eval=chosen.eval_id,
        outcome=chosen.outcome,
        spans=len(trace.spans),
        tool_calls=calls,
        replay=request.replay,
    )


def _chosen_result(store: Store, trace_id: str, eval_name: str | None) -> RunResult:
    results = store.trace_results(trace_id)
    if eval_name:
        results = [r for r in results if eval_name in (r.eval_id, r.eval_id.rpartition("::")[2])]
    if not results or not results[0].spans:
        raise ConfigError(
            f"no stored online result of trace {trace_id}"
            + (f" by eval {eval_name!r}" if eval_name else "")
            + ": `niceeval watch` stores the traces its online evals scored (one sampled away is not stored)"
        )
    return next((r for r in results if r.outcome == "failed"), results[0])


def _agent_import(agent: str) -> tuple[str, str]:
    """`module:name` split and checked, so the written import is valid Python."""
    module, _, name = agent.partition(":")
    parts = module.split(".")
    if not name or not name.isidentifier() or keyword.iskeyword(name) or not all(p.isidentifier() for p in parts):
        raise ConfigError(
            f"--agent {agent!r} names the agent to replay as MODULE:NAME, e.g. --agent support.bot:agent "
            "(importable from the project folder)"
        )
    return module, name


@dataclass(frozen=True, slots=True)
class _Written:
    name: str
    saved: Path
    replay: Replay
    agent: tuple[str, str] | None


def _regression(result: RunResult, written: _Written, root: Path) -> str:
    """The eval that runs the online eval that scored the trace live on the saved trace."""
    file, _, eval_name = result.eval_id.partition("::")
    module = ".".join(Path(file).with_suffix("").parts)
    alias = f"{eval_name}_online"
    failed = [a.name for a in result.assertions if a.state == "failed"]
    why = f"{', '.join(failed)} failed" if failed else f"the run was {result.outcome}"
    why = why.replace("\\", "/").replace('"', "'")  # an assertion's name, in a docstring: no escapes, no quotes
    online_is_async = _is_async(result, root)
    call = f"await {alias}(t)" if online_is_async else f"{alias}(t)"
    imports = f"\nfrom {module} import {eval_name} as {alias}  # noqa: E402\n"
    options = f'name="{written.name}", trace="{written.saved.as_posix()}"'
    if written.replay == "live":
        options += ', replay="live"'
        how = "the live agent on its input, its tools answered from the trace"
    else:
        how = "the trace as recorded"
    if written.agent is not None:
        imports += f"from {written.agent[0]} import {written.agent[1]}  # noqa: E402\n"
        options += f", agent={written.agent[1]}"
    return (
        f"{imports}\n\n"
        f"@define_eval({options})\n"
        f"{'async def' if online_is_async else 'def'} {written.name}(t):\n"
        f'    """{eval_name} on production trace {result.case_id} ({why}), replayed: {how}."""\n'
        f"    {call}\n"
    )


def _is_async(result: RunResult, root: Path) -> bool:
    """Whether the online eval that made `result` is `async def` (read from its file, where discovery put it)."""
    try:
        tree = ast.parse((root / result.file).read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return True
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if node.lineno == result.line or any(d.lineno == result.line for d in node.decorator_list):
            return isinstance(node, ast.AsyncFunctionDef)
    return True
