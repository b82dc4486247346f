"""The suite `niceeval run` runs, from its flags to its exit code, shared by the command and `niceeval.run()`.

`selected_evals` loads the config and finds the evals, `prepare_suite` builds the reporters and options (and
records the suite run when the store is on), `run_suite` runs it, `conclude_suite` prints the gates and closes the
store. The command runs the suite with `anyio.run`; `niceeval.run_async` awaits it on the caller's loop.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from niceeval._core.errors import UsageError
from niceeval._core.wording import plural
from niceeval.cli._common import project_config, reading_of

if TYPE_CHECKING:
    from collections.abc import Mapping

    from niceeval._core.summary import SuiteSummary
    from niceeval._eval.config import Config
    from niceeval._run.discovery import Discovery, EvalEntry, LoadError
    from niceeval._run.experiments import ExperimentRun
    from niceeval._run.plan import EvalStream
    from niceeval._run.storing import StoredPlan
    from niceeval._run.suite import SuiteOptions
    from niceeval._run.suite_gates import GateCollector, SuiteGates
    from niceeval.report import Reporter
    from niceeval.store import RunDiff
    from niceeval.store._recorder import StoreSink


def _suite_gates(config: Config, args: argparse.Namespace) -> SuiteGates:
    from niceeval._run.suite_gates import SuiteGates, parse_min_mean

    means = dict(config.min_mean)
    means.update(parse_min_mean(text) for text in getattr(args, "min_mean", []))
    given = getattr(args, "min_suite_pass_rate", None)
    return SuiteGates(
        min_pass_rate=given if given is not None else config.min_suite_pass_rate,
        min_means=tuple(means.items()),
        min_mean_points=getattr(args, "min_mean_points", None),
    )


_OTEL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def _otel_endpoint(args: argparse.Namespace) -> str | None:
    flag = getattr(args, "otel_endpoint", None)
    if flag is None and not any(os.environ.get(name) for name in _OTEL_VARIABLES):
        return None  # nothing asked: the OpenTelemetry SDK is not even imported
    from niceeval.report.otel import otel_endpoint

    return otel_endpoint(flag)


def load_evals(args: argparse.Namespace) -> tuple[Config, Discovery, EvalStream]:
    """The project's config, what discovery found (with the datasets' bad rows among its errors), and the planned
    evals: a stream, each dataset read again as it is iterated."""
    from niceeval._run.plan import expand
    from niceeval.cli._cases import discover_with_cases

    config = project_config(args)
    try:
        reading = reading_of(args, list(getattr(args, "paths", None) or []), config.root)
    except ValueError as exc:
        raise RefusedRun(str(exc)) from None
    discovery = discover_with_cases(config, args, reading)
    plan = expand(discovery.evals, root=config.root, suite_variants=config.variants)
    discovery.errors.extend(plan.errors)
    for note in plan.notes:
        print(f"niceeval: not mapped: {note}", file=sys.stderr)
    return config, discovery, plan.evals


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


class RefusedRun(UsageError):
    """`run`'s flags or the evals found refuse the run before any eval starts (exit code 2)."""


def selected_evals(args: argparse.Namespace) -> tuple[Config, Discovery, EvalStream]:
    """The project's config, what discovery found, and the evals `-k` / `--tag` keep (a stream: an experiment's
    selection is held).

    Raises:
        RefusedRun: the flags do not go together, or no eval was found.
    """
    from niceeval._run.plan import EvalStream
    from niceeval._run.suite import select

    if (problem := _adaptive(args)) is not None:
        raise RefusedRun(problem)
    config, discovery, planned = load_evals(args)
    experiment: ExperimentRun | None = getattr(args, "experiment", None)
    if experiment is not None:
        config = experiment.configure(config)
    if args.min_pass_at_k and args.min_pass_at_k[0] > (args.runs or 1):
        raise RefusedRun(f"--min-pass-at-k {args.min_pass_at_k[0]}:... needs --runs of at least that.")
    if args.min_pass_rate is None:
        args.min_pass_rate = 0.0 if args.min_pass_at_k else 1.0
    entries = select(planned, keyword=args.keyword, tags=args.tag)
    entries = EvalStream.of(experiment.select(list(entries))) if experiment is not None else entries
    if not entries and not discovery.errors:
        where = " ".join(args.paths or config.evals)
        if not planned:
            raise RefusedRun(f"no evals found in {where}. Write one with `niceeval init`.")
        asked = [f"-k {args.keyword!r}"] if args.keyword else []
        asked += [f"--tag {tag}" for tag in args.tag or ()]
        chosen = " ".join(asked) or "the experiment's selection"
        found = plural(len(planned), "eval")
        raise RefusedRun(
            f"no eval in {where} matches {chosen} ({found} found there): check the selection; "
            "`niceeval list` shows every eval with its id and tags."
        )
    return config, discovery, entries


def slot_identities(config: Config, args: argparse.Namespace, entries: Iterable[EvalEntry]) -> Mapping[str, str]:
    """`niceeval exp`: each eval's slot identity under the experiment (`args.experiment`); empty for `run`."""
    experiment: ExperimentRun | None = getattr(args, "experiment", None)
    return experiment.identities(config, list(entries), args.grader) if experiment is not None else {}


@dataclass(frozen=True, kw_only=True, slots=True)
class PreparedSuite:
    """A suite ready to run: what `run_suite` takes, and what `conclude_suite` reads when it has run."""

    entries: Iterable[EvalEntry]
    errors: list[LoadError]
    options: SuiteOptions
    reporters: list[Reporter]
    collector: GateCollector
    sink: StoreSink | None
    gate: _BaselineGate | None


def prepare_suite(
    config: Config,
    discovery: Discovery,
    entries: EvalStream,
    args: argparse.Namespace,
    extra: Sequence[Reporter] = (),
) -> PreparedSuite:
    """The reporters (the store first, then the console, the gates, `extra`, the files asked for) and the options
    the suite runs with; the suite run is recorded when the store is on."""
    from rich.console import Console

    from niceeval._run.suite_gates import GateCollector
    from niceeval.cli._github import github_reporters, resolve_baseline
    from niceeval.report import ConsoleReporter

    identities = slot_identities(config, args, entries)
    stored, planned = _plan_runs(config, args, entries, identities)
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
        *extra,
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
    return PreparedSuite(
        entries=planned,
        errors=discovery.errors,
        options=_suite_options(config, args, stored, identities),
        reporters=reporters,
        collector=collector,
        sink=sink,
        gate=gate,
    )


def _suite_options(
    config: Config, args: argparse.Namespace, stored: StoredPlan | None, identities: Mapping[str, str]
) -> SuiteOptions:
    from niceeval._run.execute import ExecOptions
    from niceeval._run.suite import SuiteOptions

    experiment: ExperimentRun | None = getattr(args, "experiment", None)

    return SuiteOptions(
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
            classify_failure=config.classify_failure,
            experiment=experiment.view() if experiment is not None else None,
            identities=identities,
        ),
        done=stored.done if stored else frozenset(),
        prior=stored.prior if stored else (),
        shard=args.shard,
        budget=getattr(args, "budget", None),
        exitfirst=getattr(args, "exitfirst", False),
        infra_retries=config.infra_retries if getattr(args, "infra_retries", None) is None else args.infra_retries,
        stop_after_infra=getattr(args, "stop_after_infra", None) or config.stop_after_infra,
        early_exit=experiment is not None and experiment.experiment.early_exit,
    )


def conclude_suite(suite: PreparedSuite, summary: SuiteSummary) -> int:
    """After the suite: the suite gates' verdicts and the baseline comparison printed, the store closed (waiting
    for its writer), where the run was stored; the exit code."""
    from niceeval._run.suite_gates import gated_exit_code
    from niceeval.cli._store import print_stored

    collector, sink, gate = suite.collector, suite.sink, suite.gate
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
    config: Config, args: argparse.Namespace, entries: EvalStream, identities: Mapping[str, str]
) -> tuple[StoredPlan | None, Iterable[EvalEntry]]:
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
