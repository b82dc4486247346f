"""`niceeval run`, `niceeval list` and `niceeval rescore` (which runs the same pipeline over recorded turns).

Only argparse is imported at module level (`niceeval --help` stays fast).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from niceeval._core.wording import plural
from niceeval.cli._common import (
    EXIT_OK,
    EXIT_USAGE,
    add_concurrency_flag,
    add_config_flag,
    add_judge_flags,
    add_noise_flags,
    add_reading_flags,
    add_report_flags,
    add_selection_flags,
    add_store_flag,
    add_strict_flag,
    pass_at_k,
    positive_int,
    rate,
    run_id,
    seconds,
    shard,
)
from niceeval.cli._github import add_github_flags

if TYPE_CHECKING:
    from niceeval._eval.config import Config
    from niceeval._run.discovery import EvalEntry


def add_run_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`niceeval run`, `niceeval list`, `niceeval rescore`."""
    run = commands.add_parser("run", help="run evals and report the results")
    run.add_argument("paths", nargs="*", help="eval files or folders, or file.py::name (default: config `evals`)")
    add_run_flags(run)
    run.set_defaults(handler=run_command)
    _add_list_and_rescore(commands, run)


def add_run_flags(run: argparse.ArgumentParser) -> None:
    """Every flag of `niceeval run` but its paths (`niceeval exp` takes them too)."""
    add_selection_flags(run)
    run.add_argument(
        "--runs",
        type=_runs,
        metavar="N|auto|LOW..HIGH",
        help="run every eval N times (default 1); the repeats run at the same time (within --concurrency), except "
        "for evals with @define_eval(sequential_runs=True), whose repeats run one after another. LOW..HIGH (auto: "
        "3..20): LOW runs each, then again only while the eval's verdict is not clear from its pass-rate interval, "
        "up to HIGH; @define_eval(runs=N) fixes one eval's count",
    )
    run.add_argument(
        "--tolerated-flake-rate",
        type=rate("--tolerated-flake-rate"),
        metavar="RATE",
        help="with --runs LOW..HIGH: an eval that passes is clear once its failure rate is shown to be under RATE "
        "(the 95%% interval's upper bound; default 0.2: 16 passes in a row), so passing evals stop early too",
    )
    run.add_argument(
        "--min-pass-rate",
        type=rate("--min-pass-rate"),
        help="with --runs: share of runs that must pass (default 1, or 0 with pass@k)",
    )
    run.add_argument(
        "--min-pass-at-k", type=pass_at_k, metavar="K:RATE", help="with --runs N: pass@K must reach RATE (K <= N)"
    )
    add_strict_flag(run)
    add_concurrency_flag(run)
    run.add_argument(
        "--shard",
        type=shard,
        metavar="I/N",
        help="run shard I of N: a stable part of the eval runs (shards 1/N..N/N run each exactly once); with "
        "--run-id ID, the shards write one suite run",
    )
    run.add_argument("--timeout", type=seconds("--timeout"), help="seconds per run (default: config, 300)")
    run.add_argument("--fail-on-inconclusive", action="store_true", help="inconclusive assertions count as misses")
    add_report_flags(run)
    add_config_flag(run)
    add_reading_flags(run)
    run.add_argument(
        "--keep-sandbox",
        nargs="?",
        const="all",
        choices=("failed", "all"),
        help="keep sandbox workspaces and print their paths: all (the default), or only those of failed runs",
    )
    add_judge_flags(run)
    run.add_argument(
        "--judge-samples",
        type=positive_int("--judge-samples"),
        metavar="K",
        help="ask each judge K times on the same output: the mean scores, unsettled verdicts are unstable",
    )
    _add_recording_flags(run)
    _add_control_flags(run)
    _add_suite_gate_flags(run)
    add_github_flags(run)
    add_noise_flags(run)


def _add_list_and_rescore(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], run: argparse.ArgumentParser
) -> None:
    listing = commands.add_parser("list", help="list the evals found, with ids and tags")
    listing.add_argument("paths", nargs="*", help="eval files or folders, or file.py::name (default: config `evals`)")
    add_config_flag(listing)
    add_reading_flags(listing)
    listing.set_defaults(handler=_list)

    rescore = commands.add_parser(
        "rescore", help="score a stored suite run again without calling the agent (turns replayed from the record)"
    )
    rescore.add_argument("rescore", metavar="RUN", help="suite run id (a unique prefix is enough), or `latest`")
    add_selection_flags(rescore)
    add_concurrency_flag(rescore)
    add_strict_flag(rescore)
    add_judge_flags(rescore)
    add_report_flags(rescore)
    add_config_flag(rescore)
    add_store_flag(rescore)
    rescore.set_defaults(handler=run_command)
    own = vars(rescore.parse_args(["RUN"]))
    rescore.set_defaults(**{k: v for k, v in vars(run.parse_args([])).items() if k not in own})


def _add_recording_flags(run: argparse.ArgumentParser) -> None:
    """How `run` is recorded: `--store URL | --no-store`, `--resume [RUN] | --rerun-failed [RUN]`, `--run-id ID`."""
    where = run.add_mutually_exclusive_group()
    add_store_flag(where)
    where.add_argument("--no-store", action="store_true", help="do not record this run in the results store")
    again = run.add_mutually_exclusive_group()
    resume = "finish a suite run in place: only its missing eval runs run (default: the latest unfinished)"
    again.add_argument("--resume", nargs="?", const="", metavar="RUN", help=resume)
    rerun = "rerun the failed evals of a suite run into a new one (default: the latest)"
    again.add_argument("--rerun-failed", nargs="?", const="", metavar="RUN", help=rerun)
    shared = (
        "name the suite run (e.g. gh-$GITHUB_RUN_ID): every --shard I/N given the same ID writes into one suite "
        "run; running a shard again after a crash completes its missing eval runs"
    )
    run.add_argument("--run-id", type=run_id, metavar="ID", help=shared)


def _usd(text: str) -> float:
    try:
        value = float(text.removeprefix("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--budget takes an amount in USD, e.g. --budget 2.50; got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"--budget must be positive, got {text!r}")
    return value


def _count(flag: str, *, least: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = least - 1
        if value < least:
            raise argparse.ArgumentTypeError(f"{flag} takes a whole number of at least {least}, got {text!r}")
        return value

    return parse


def _add_suite_gate_flags(run: argparse.ArgumentParser) -> None:
    """`--min-suite-pass-rate R`, `--min-mean NAME=R` (also `min_suite_pass_rate=`, `min_mean=` in the config)."""
    run.add_argument(
        "--min-suite-pass-rate",
        type=rate("--min-suite-pass-rate"),
        metavar="R",
        help="pass the suite when at least R of its cases pass (a failing case alone no longer fails it)",
    )
    run.add_argument(
        "--min-mean",
        action="append",
        default=[],
        metavar="NAME=R",
        help="fail the suite when the mean score of the assertions named (or of kind) NAME is under R; repeatable",
    )
    run.add_argument(
        "--min-mean-points",
        type=rate("--min-mean-points"),
        metavar="R",
        help="fail the suite when score evals (define_eval(points=N)) earn under R of their points on average",
    )


def _add_control_flags(run: argparse.ArgumentParser) -> None:
    """`--budget USD`, `-x/--exitfirst`, `--dry-run`, `--jsonl PATH|-`."""
    run.add_argument(
        "--budget",
        type=_usd,
        metavar="USD",
        help="start no new run once agent + judge spend reaches USD (runs under way finish); exit 1 when reached",
    )
    run.add_argument("-x", "--exitfirst", action="store_true", help="start no new run once an eval has failed")
    run.add_argument(
        "--infra-retries",
        type=_count("--infra-retries", least=0),
        metavar="N",
        help="run a run that failed for infra (provider outage after its retries, sandbox that did not start, judge "
        "unavailable) again up to N times before reporting it (default: config infra_retries, 2); infra runs are "
        "left out of pass rates",
    )
    run.add_argument(
        "--stop-after-infra",
        type=_count("--stop-after-infra", least=1),
        metavar="N",
        help="stop the suite run after N runs in a row failed for infra (runs under way finish; exit 1)",
    )
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (evals x cases x variants x runs, judge calls expected, cached verdicts) and call nothing",
    )
    run.add_argument(
        "--jsonl",
        metavar="PATH",
        help="write one JSON object per finished run and per suite event to PATH (- for stdout), flushed as they come",
    )
    run.add_argument(
        "--otel-endpoint",
        metavar="URL",
        help="export the suite as OpenTelemetry traces (suite -> eval run -> turn -> judge call) to this OTLP/HTTP "
        "traces URL; default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT when set",
    )


def _dry_run(config: Config, args: argparse.Namespace, entries: list[EvalEntry]) -> int:
    from niceeval._run.dryrun import plan_lines
    from niceeval._run.execute import ExecOptions
    from niceeval.cli._suite import slot_identities

    if getattr(args, "experiment", None) is not None:
        from niceeval.cli._exp_plan import experiment_plan

        return experiment_plan(config, args, entries, slot_identities(config, args, entries))

    judging = ExecOptions(
        timeout=args.timeout or config.timeout,
        pricing=config.pricing,
        root=config.root,
        judge=config.judge,
        grader=args.grader,
        judge_samples=getattr(args, "judge_samples", None),
    )
    for line in plan_lines(entries, args.runs or 1, judging):
        print(line)
    return EXIT_OK


def _runs(text: str) -> object:
    """`--runs N`, `auto` or `LOW..HIGH` (an `AdaptiveRuns`); a bad value exits 2 naming the flag."""
    from niceeval.stats import parse_runs

    try:
        return parse_runs(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--runs {exc}") from None


def run_command(args: argparse.Namespace) -> int:
    """`niceeval run` (and `rescore`, and each experiment of `niceeval exp`, `args.experiment`): the exit code."""
    from niceeval._run.gc_pacing import paused_collection

    with paused_collection():
        return _run_suite(args)


def _run_suite(args: argparse.Namespace) -> int:
    import anyio

    from niceeval._run.gc_pacing import paced_collection
    from niceeval._run.suite import run_suite
    from niceeval.cli._suite import RefusedRun, conclude_suite, prepare_suite, selected_evals

    try:
        config, discovery, entries = selected_evals(args)
    except RefusedRun as exc:
        print(f"niceeval: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if getattr(args, "dry_run", False):
        return _dry_run(config, args, list(entries))
    suite = prepare_suite(config, discovery, entries, args)
    with paced_collection(process_ends=getattr(args, "process_ends", False)):
        summary = anyio.run(run_suite, suite.entries, suite.errors, suite.options, suite.reporters)
    return conclude_suite(suite, summary)


def _list(args: argparse.Namespace) -> int:
    from niceeval.cli._suite import load_evals

    _, discovery, planned = load_evals(args)
    for entry in planned:
        tags = f"  [{', '.join(entry.tags)}]" if entry.tags else ""
        print(f"{entry.id}{tags}")
    for error in discovery.errors:
        print(f"ERROR {error.describe()}", file=sys.stderr)
    print(plural(len(planned), "eval"), file=sys.stderr)
    return EXIT_USAGE if discovery.errors else EXIT_OK
