"""`niceeval simulate check`: can a discriminator judge tell the simulated users' conversations from real ones?

Only argparse is imported at module level (`niceeval --help` stays fast).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from niceeval.cli._common import add_config_flag, add_judge_flags, add_store_flag, open_existing_store, project_config

if TYPE_CHECKING:
    from niceeval.simulation import RealismReport, Transcript


def add_simulate_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`niceeval simulate check --real PATH [--simulated PATH | --run REF]`."""
    simulate = commands.add_parser("simulate", help="simulated users: check that they resemble real ones")
    actions = simulate.add_subparsers(dest="simulate_command", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check", help="a discriminator judge tells simulated conversations from real ones (near 50%%: realistic)"
    )
    check.add_argument("--real", type=Path, required=True, metavar="PATH", help="real conversations, JSONL")
    source = check.add_mutually_exclusive_group()
    source.add_argument("--simulated", type=Path, metavar="PATH", help="simulated conversations, JSONL")
    source.add_argument(
        "--run", default="latest", metavar="REF", help="take the simulated conversations of this stored suite run"
    )
    check.add_argument("--json", type=Path, metavar="PATH", help="write the report as JSON here")
    add_judge_flags(check, cache_only=False)
    add_config_flag(check)
    add_store_flag(check)
    check.set_defaults(handler=_check)


def _check(args: argparse.Namespace) -> int:
    import anyio

    from niceeval._core.errors import ConfigError
    from niceeval.simulation import read_transcripts

    config = project_config(args)
    model = args.grader or config.judge.model
    if model is None:
        raise ConfigError(
            "niceeval simulate check needs a judge model: pass --grader openai/... or set "
            "define_config(judge={'model': 'openai/...'})."
        )
    real = read_transcripts(args.real, "real")
    simulated = read_transcripts(args.simulated, "simulated") if args.simulated else _stored(args)
    report = anyio.run(_discriminate, [*real, *simulated], model, config.root, args)
    for line in report.lines():
        print(line)
    if args.json:
        args.json.write_text(json.dumps(report.describe(), indent=2) + "\n", encoding="utf-8")
    return 0


def _stored(args: argparse.Namespace) -> list[Transcript]:
    from niceeval._core.errors import ConfigError
    from niceeval.simulation import simulated_transcripts

    with open_existing_store(args) as store:
        run_id = store.resolve(args.run)
        found = simulated_transcripts(store.results(run_id))
    if not found:
        raise ConfigError(f"suite run {run_id} has no conversation of t.simulate: pass --simulated PATH or --run REF.")
    print(f"niceeval: {len(found)} simulated conversation(s) from suite run {run_id}", file=sys.stderr)
    return found


async def _discriminate(
    transcripts: list[Transcript], model: str, root: Path, args: argparse.Namespace
) -> RealismReport:
    from niceeval._run.judging import SuiteJudges
    from niceeval.providers import RetryPolicy
    from niceeval.simulation import UserModel, discriminate

    judges = SuiteJudges(root, no_cache=args.no_cache)
    try:
        access = UserModel(model=model, clients=judges.clients(), cache=judges.cache(), retry=RetryPolicy())
        return await discriminate(transcripts, access)
    finally:
        await judges.aclose()
