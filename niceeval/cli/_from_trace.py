"""`niceeval cases from-trace TRACE_ID [--to evals/regressions.py]`: a production trace an online eval scored,
saved beside the eval module and scored offline by the same online eval (`define_eval(trace=...)`), so the
verdict `niceeval watch` gave reproduces in `niceeval run`.

Only argparse is imported at module level (`niceeval --help` stays fast).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from niceeval.cli._common import add_config_flag, add_store_flag, open_existing_store

if TYPE_CHECKING:
    from niceeval._core.results import RunResult

DEFAULT_REGRESSIONS = Path("evals") / "regressions.py"
HEADER = '''"""Regressions from production traces (`niceeval cases from-trace`): each eval scores a saved trace
offline with the online eval that scored it live, so its verdict reproduces in `niceeval run`."""

from niceeval import define_eval
'''


def add_from_trace_command(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`niceeval cases from-trace TRACE_ID [--to PATH] [--eval NAME]`."""
    command = actions.add_parser(
        "from-trace", help="save a production trace an online eval scored as a regression eval that replays it"
    )
    command.add_argument(
        "trace_id", metavar="TRACE_ID", help="the trace id (32 hex digits), as /status and the store show"
    )
    command.add_argument(
        "--to",
        type=Path,
        default=DEFAULT_REGRESSIONS,
        metavar="PATH",
        help=f"eval module (default {DEFAULT_REGRESSIONS})",
    )
    command.add_argument(
        "--eval", metavar="NAME", help="the online eval whose verdict to keep (default: a failing one)"
    )
    add_store_flag(command)
    add_config_flag(command)
    command.set_defaults(handler=_from_trace)


def _from_trace(args: argparse.Namespace) -> int:
    from niceeval._core.errors import ConfigError
    from niceeval.tracing import Trace

    trace_id = args.trace_id.strip().lower()
    with open_existing_store(args) as store:
        results = store.trace_results(trace_id)
    if args.eval:
        results = [r for r in results if args.eval in (r.eval_id, r.eval_id.rpartition("::")[2])]
    if not results or not results[0].spans:
        raise ConfigError(
            f"no stored online result of trace {trace_id}"
            + (f" by eval {args.eval!r}" if args.eval else "")
            + ": `niceeval watch` stores the traces its online evals scored (one sampled away is not stored)"
        )
    chosen = next((r for r in results if r.outcome == "failed"), results[0])
    trace = Trace.of(record.span() for record in chosen.spans)
    module: Path = args.to
    saved = module.parent / "regressions" / f"{trace_id}.json"
    name = f"trace_{trace_id[:12]}"
    source = module.read_text(encoding="utf-8") if module.exists() else HEADER
    if f"def {name}(" in source:
        raise ConfigError(f"{module} already has {name}, the regression of trace {trace_id}; nothing written.")
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(trace.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    module.parent.mkdir(parents=True, exist_ok=True)
    module.write_text(source.rstrip("\n") + "\n" + _regression(chosen, name, saved.relative_to(module.parent)))
    print(f"saved trace {trace_id} ({len(trace.spans)} spans) to {saved}")
    print(f"wrote {name} to {module}: it scores the saved trace with {chosen.eval_id} (outcome then: {chosen.outcome})")
    return 0


def _regression(result: RunResult, name: str, saved: Path) -> str:
    """The eval that scores the saved trace with the online eval that scored it live."""
    file, _, eval_name = result.eval_id.partition("::")
    module = ".".join(Path(file).with_suffix("").parts)
    alias = f"{eval_name}_online"
    failed = [a.name for a in result.assertions if a.state == "failed"]
    why = f"{', '.join(failed)} failed" if failed else f"the run was {result.outcome}"
    online_is_async = _is_async(result)
    call = f"await {alias}(t)" if online_is_async else f"{alias}(t)"
    return (
        f"\nfrom {module} import {eval_name} as {alias}  # noqa: E402\n\n\n"
        f'@define_eval(name="{name}", trace="{saved.as_posix()}")\n'
        f"{'async def' if online_is_async else 'def'} {name}(t):\n"
        f'    """{eval_name} on production trace {result.case_id}: {why}."""\n'
        f"    {call}\n"
    )


def _is_async(result: RunResult) -> bool:
    """Whether the online eval that made `result` is `async def` (read from its file, where discovery put it)."""
    import ast

    try:
        tree = ast.parse(Path(result.file).read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return True
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if node.lineno == result.line or any(d.lineno == result.line for d in node.decorator_list):
            return isinstance(node, ast.AsyncFunctionDef)
    return True
