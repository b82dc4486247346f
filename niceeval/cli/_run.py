"""`niceeval run`, `niceeval list` and `niceeval rescore` (which runs the same pipeline over recorded turns).

Only argparse is imported at module level (`niceeval --help` stays fast).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from niceeval._core.wording import plural
from niceeval.cli._common import (
    EXIT_OK,
    EXIT_USAGE,
    add_concurrency_flag,
    add_config_flag,
    add_judge_flags,
    add_noise_flags,
    add_report_flags,
    add_selection_flags,
    add_store_flag,
    add_strict_flag,
    pass_at_k,
    positive_int,
    project_config,
    rate,
    run_id,
    seconds,
    shard,
)
from niceeval.cli._github import add_github_flags

if TYPE_CHECKING:
    from collections.abc import Mapping

    from niceeval._eval.config import Config
    from niceeval._run.discovery import Discovery, EvalEntry
    from niceeval._run.experiments import ExperimentRun
    from niceeval._run.storing import StoredPlan
    from niceeval._run.suite_gates import SuiteGates
    from niceeval.report import Reporter
    from niceeval.store import RunDiff
    from niceeval.store._recorder import StoreSink


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


def _suite_gates(config: Config, args: argparse.Namespace) -> SuiteGates:
    from niceeval._run.suite_gates import SuiteGates, parse_min_mean

    means = dict(config.min_mean)
    means.update(parse_min_mean(text) for text in getattr(args, "min_mean", []))
    given = getattr(args, "min_suite_pass_rate", None)
    return SuiteGates(
        min_pass_rate=given if given is not None else config.min_suite_pass_rate,
        min_means=tuple(means.items()),
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


_OTEL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def _otel_endpoint(args: argparse.Namespace) -> str | None:
    flag = getattr(args, "otel_endpoint", None)
    if flag is None and not any(os.environ.get(name) for name in _OTEL_VARIABLES):
        return None  # nothing asked: the OpenTelemetry SDK is not even imported
    from niceeval.report.otel import otel_endpoint

    return otel_endpoint(flag)


def _dry_run(config: Config, args: argparse.Namespace, entries: list[EvalEntry], identities: Mapping[str, str]) -> int:
    from niceeval._run.dryrun import plan_lines
    from niceeval._run.execute import ExecOptions

    if getattr(args, "experiment", None) is not None:
        from niceeval.cli._exp_plan import experiment_plan

        return experiment_plan(config, args, entries, identities)

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


def _load(args: argparse.Namespace) -> tuple[Config, Discovery]:
    from niceeval._run.plan import expand
    from niceeval.cli._cases import discover_with_cases

    config = project_config(args)
    discovery = discover_with_cases(config, args)
    plan = expand(discovery.evals, root=config.root, suite_variants=config.variants)
    discovery.evals = plan.evals
    discovery.errors.extend(plan.errors)
    for note in plan.notes:
        print(f"niceeval: not mapped: {note}", file=sys.stderr)
    return config, discovery


def _runs(text: str) -> object:
    """`--runs N`, `auto` or `LOW..HIGH` (an `AdaptiveRuns`); a bad value exits 2 naming the flag."""
    from niceeval.stats import parse_runs

    try:
        return parse_runs(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--runs {exc}") from None


def _adaptive(args: argparse.Namespace) -> str | None:
    """Split `--runs LOW..HIGH` into `args.adaptive` and `args.runs = LOW`; a problem with the mix, if any."""
    from niceeval.stats import AdaptiveRuns

    runs = getattr(args, "runs", None)
    tolerated = getattr(args, "tolerated_flake_rate", None)
    if not isinstance(runs, AdaptiveRuns):
        args.adaptive = None
        return None if tolerated is None else "--tolerated-flake-rate goes with --runs LOW..HIGH (or auto)."
    if tolerated is not None and tolerated >= 1:
        return f"--tolerated-flake-rate must be under 1 (e.g. 0.2), got {tolerated}."
    if tolerated is not None:
        runs = AdaptiveRuns(least=runs.least, most=runs.most, tolerated_flake_rate=tolerated)
    args.adaptive = runs
    args.runs = runs.least
    if getattr(args, "shard", None) is not None or getattr(args, "run_id", None):
        return f"--runs {args.adaptive} cannot be split into shards (each shard decides alone): give --runs N."
    return None


def run_command(args: argparse.Namespace) -> int:
    """`niceeval run` (and `rescore`, and each experiment of `niceeval exp`, `args.experiment`): the exit code."""
    from niceeval._run.gc_pacing import paused_collection

    with paused_collection():
        return _run_suite(args)


def _run_suite(args: argparse.Namespace) -> int:
    import anyio
    from rich.console import Console

    from niceeval._run.execute import ExecOptions
    from niceeval._run.gc_pacing import paced_collection
    from niceeval._run.suite import SuiteOptions, run_suite, select
    from niceeval._run.suite_gates import GateCollector, gated_exit_code
    from niceeval.cli._github import github_reporters, resolve_baseline
    from niceeval.cli._store import print_stored
    from niceeval.report import ConsoleReporter

    if (problem := _adaptive(args)) is not None:
        print(f"niceeval: {problem}", file=sys.stderr)
        return EXIT_USAGE
    config, discovery = _load(args)
    experiment: ExperimentRun | None = getattr(args, "experiment", None)
    if experiment is not None:
        config = experiment.configure(config)
    if args.min_pass_at_k and args.min_pass_at_k[0] > (args.runs or 1):
        print(f"niceeval: --min-pass-at-k {args.min_pass_at_k[0]}:... needs --runs of at least that.", file=sys.stderr)
        return EXIT_USAGE
    if args.min_pass_rate is None:
        args.min_pass_rate = 0.0 if args.min_pass_at_k else 1.0
    entries = select(discovery.evals, keyword=args.keyword, tags=args.tag)
    entries = experiment.select(entries) if experiment is not None else entries
    if not entries and not discovery.errors:
        where = " ".join(args.paths or config.evals)
        filters = " after -k/--tag filtering" if discovery.evals else ""
        print(f"niceeval: no evals found in {where}{filters}. Write one with `niceeval init`.", file=sys.stderr)
        return EXIT_USAGE
    identities = experiment.identities(config, entries, args.grader) if experiment is not None else {}
    if getattr(args, "dry_run", False):
        return _dry_run(config, args, entries, identities)
    stored, entries = _plan_runs(config, args, entries, identities)
    sink = stored.sink if stored else None
    jsonl = getattr(args, "jsonl", None)
    reporters: list[Reporter] = [
        ConsoleReporter(
            Console(highlight=False, soft_wrap=True, stderr=jsonl == "-"),
            strict=args.strict,
            min_pass_rate=args.min_pass_rate,
            min_pass_at_k=args.min_pass_at_k,
            runs_label=f"{args.adaptive} runs (adaptive)" if args.adaptive else None,
        ),
        collector := GateCollector(gates=_suite_gates(config, args)),
    ]
    if sink is not None:
        reporters.insert(0, sink)  # the store first: a run is kept before any reporter can fail on it
    reporters += _file_reporters(args, sink)
    gate = _BaselineGate(sink, resolve_baseline(args, sink), args) if sink is not None else None
    if gate is None and args.baseline:
        resolve_baseline(args, sink)  # says that --baseline needs the store
    baseline = gate.baseline if gate else None
    # last: they turn GitHub workflow commands back on at the end
    reporters += github_reporters(args, sink, baseline, gate.diff if gate and baseline else None)
    options = SuiteOptions(
        runs=stored.runs if stored and not args.adaptive else args.runs or 1,
        adaptive=args.adaptive,
        concurrency=args.concurrency or config.concurrency,
        strict=args.strict,
        min_pass_rate=args.min_pass_rate,
        min_pass_at_k=args.min_pass_at_k,
        exec=ExecOptions(
            timeout=args.timeout or config.timeout,
            agent=config.agent,
            fail_on_inconclusive=args.fail_on_inconclusive or config.fail_on_inconclusive,
            pricing=config.pricing,
            root=config.root,
            keep_sandbox=args.keep_sandbox or False,
            sandbox=config.sandbox,
            judge=config.judge,
            grader=args.grader,
            judge_samples=getattr(args, "judge_samples", None),
            no_cache=args.no_cache,
            cache_only=args.cache_only,
            agent_for_run=stored.agent_for_run if stored else None,
            experiment=experiment.view() if experiment is not None else None,
            identities=identities,
        ),
        done=stored.done if stored else frozenset(),
        prior=stored.prior if stored else (),
        shard=args.shard,
        budget=getattr(args, "budget", None),
        exitfirst=getattr(args, "exitfirst", False),
        early_exit=experiment is not None and experiment.experiment.early_exit,
    )
    with paced_collection(process_ends=getattr(args, "process_ends", False)):
        summary = anyio.run(run_suite, entries, discovery.errors, options, reporters)
    print("".join(f"suite gate: {verdict.describe()}\n" for verdict in collector.verdicts), end="")
    code = gated_exit_code(summary, collector.gates, collector.verdicts)
    if sink is not None:
        if gate is not None and gate.baseline is not None:
            code = gate.exit_code(code)
        sink.close()
        print_stored(sink)
    return code


def _file_reporters(args: argparse.Namespace, sink: StoreSink | None) -> list[Reporter]:
    """The reports `run` writes as asked: JSON, JUnit, HTML, JSON lines, OpenTelemetry spans."""
    reporters: list[Reporter] = []
    jsonl = getattr(args, "jsonl", None)
    if args.json:
        from niceeval.report.json_report import JsonReporter

        reporters.append(JsonReporter(args.json, run_id=sink.run_id if sink else None))
    if args.junit:
        from niceeval.report.junit import JUnitReporter

        reporters.append(JUnitReporter(args.junit, strict=args.strict, min_pass_rate=args.min_pass_rate))
    if args.html:
        from niceeval.report.html import HtmlReporter

        reporters.append(HtmlReporter(args.html, run_id=sink.run_id if sink else None))
    if jsonl:
        from niceeval.report.jsonl import JsonlReporter

        reporters.append(JsonlReporter(jsonl))
    endpoint = _otel_endpoint(args)
    if endpoint:
        from niceeval.report.otel import OtelReporter

        reporters.append(OtelReporter(endpoint, run_id=sink.run_id if sink else None))
    return reporters


class _BaselineGate:
    """`niceeval run --baseline RUN`: this run against RUN, as `niceeval diff RUN THIS --alpha --max-drop` weighs
    them (both judged by this run's rule); a regression beyond noise makes the run exit 1. The comparison is made
    once, after the last run is stored, and shared with the GitHub step summary."""

    def __init__(self, sink: StoreSink, baseline: str | None, args: argparse.Namespace) -> None:
        self.sink = sink
        self.baseline = baseline
        self.args = args
        self._diff: RunDiff | None = None

    def diff(self) -> RunDiff:
        from niceeval._core.errors import NiceevalError
        from niceeval.cli._common import noise_options

        if self._diff is None:
            assert self.baseline is not None
            if self.sink.error is not None:
                raise NiceevalError(f"this run was not fully stored ({self.sink.error}), so it cannot be compared")
            self._diff = self.sink.store.diff(self.baseline, self.sink.run_id, noise_options(self.args))
        return self._diff

    def exit_code(self, code: int) -> int:
        """The run's exit code with the baseline comparison's verdict: 1 for a regression beyond noise, or when
        the runs cannot be compared (the gate cannot say the run is no worse)."""
        from niceeval.cli._github import gated_by_baseline

        assert self.baseline is not None
        return gated_by_baseline(code, self.baseline, self.diff)


def _plan_runs(
    config: Config, args: argparse.Namespace, entries: list[EvalEntry], identities: Mapping[str, str]
) -> tuple[StoredPlan | None, list[EvalEntry]]:
    """How `run` is recorded (None: the store is off), and the evals it runs (with --shard, the shard's)."""
    from niceeval.cli._store import store_plan_for

    stored = store_plan_for(config, args, entries, identities)
    if args.shard is not None:
        print(f"niceeval: {args.shard.describe(entries, args.runs or 1)}", file=sys.stderr)
    if stored is None:
        return None, entries if args.shard is None else args.shard.select(entries, args.runs or 1)
    for note in stored.notes:
        print(f"niceeval: {note}", file=sys.stderr)
    return stored, stored.entries


def _list(args: argparse.Namespace) -> int:
    _, discovery = _load(args)
    for entry in discovery.evals:
        tags = f"  [{', '.join(entry.tags)}]" if entry.tags else ""
        print(f"{entry.id}{tags}")
    for error in discovery.errors:
        print(f"ERROR {error.describe()}", file=sys.stderr)
    print(plural(len(discovery.evals), "eval"), file=sys.stderr)
    return EXIT_USAGE if discovery.errors else EXIT_OK
