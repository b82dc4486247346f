"""`niceeval cases from-trace TRACE_ID [--to evals/regressions.py] [--replay live|recorded]`: a production trace an
online eval scored, saved beside the eval module with an eval that runs the same online eval on it offline: on the
live agent with its tools answered from the trace (`--replay live`, the default when the config has an agent), or
on the trace as recorded (`--replay recorded`).

Only argparse is imported at module level (`niceeval --help` stays fast).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Literal

from niceeval.cli._common import add_config_flag, add_store_flag, open_existing_store, project_config

DEFAULT_REGRESSIONS = Path("evals") / "regressions.py"


def add_from_trace_command(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`niceeval cases from-trace TRACE_ID [--to PATH] [--eval NAME] [--replay MODE] [--agent MODULE:NAME]`."""
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
    command.add_argument(
        "--replay",
        choices=("live", "recorded"),
        help="live: run the agent on the trace's input, its tools answered from the trace; recorded: score the "
        "trace as it was (default: live when the config has an agent, else recorded)",
    )
    command.add_argument(
        "--agent",
        metavar="MODULE:NAME",
        help="with --replay live: the agent to run (e.g. support.bot:agent) instead of the config's",
    )
    add_store_flag(command)
    add_config_flag(command)
    command.set_defaults(handler=_from_trace)


def _from_trace(args: argparse.Namespace) -> int:
    from niceeval._core.errors import ConfigError, relative
    from niceeval.online import RegressionRequest, write_regression

    if args.replay == "recorded" and args.agent:
        raise ConfigError("--agent names the agent a live replay runs; drop it, or use --replay live.")
    agent = _named_agent(args.agent) if args.agent else project_config(args).agent
    replay: Literal["live", "recorded"] = args.replay or ("live" if agent is not None else "recorded")
    if replay == "live":
        _check_agent(agent)
    if args.replay is None and replay == "recorded":
        print("the config has no agent: the regression scores the trace as recorded (--replay recorded)")
    request = RegressionRequest(
        trace_id=args.trace_id, root=Path.cwd(), module=args.to, eval_name=args.eval, replay=replay, agent=args.agent
    )
    with open_existing_store(args) as store:
        written = write_regression(store, request)
    print(f"saved trace {written.saved.stem} ({written.spans} spans) to {relative(str(written.saved))}")
    if replay == "live":
        how = f"runs the agent on its input, its {written.tool_calls} recorded tool call(s) answering its tools"
    else:
        how = "scores the saved trace"
    print(
        f"wrote {written.name} to {relative(str(written.module))}: it {how}, with {written.online_eval} "
        f"(outcome then: {written.outcome})"
    )
    return 0


def _named_agent(spec: str) -> object:
    """The agent `--agent MODULE:NAME` names, imported from the current folder."""
    import importlib
    import sys

    from niceeval._core.errors import ConfigError

    module, _, name = spec.partition(":")
    sys.path.insert(0, str(Path.cwd()))
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(f"--agent {spec}: cannot import it ({exc}); give MODULE:NAME") from None
    finally:
        sys.path.remove(str(Path.cwd()))


def _check_agent(agent: object) -> None:
    """A live replay needs an agent whose tools niceeval can answer: checked now, before anything is written."""
    from niceeval._core.errors import ConfigError, UsageError
    from niceeval.agents._runtime import PerVariant, check_replays_tools

    if isinstance(agent, PerVariant):
        return  # built per variant: each run checks the agent it builds
    try:
        check_replays_tools(agent)
    except UsageError as exc:
        raise ConfigError(str(exc)) from None
