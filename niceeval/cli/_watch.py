"""`niceeval watch [PATHS]`: score live production traces with the project's online evals (docs/online.md).

Only argparse is imported at module level (`niceeval --help` stays fast).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from niceeval.cli._common import add_config_flag, add_store_flag, open_rate, positive_int, project_config, seconds

if TYPE_CHECKING:
    from niceeval._eval.config import Config
    from niceeval._run.discovery import EvalEntry
    from niceeval.online._watch import AlarmRule, Watcher

TOKEN_VARIABLE = "NICEEVAL_WATCH_TOKEN"


def add_watch_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`niceeval watch [PATHS] [--port P] [--store URL] [--otel-endpoint URL] ...`."""
    watch = commands.add_parser(
        "watch",
        help="receive production traces over OTLP/HTTP and score them with the online evals (online=True)",
    )
    watch.add_argument("paths", nargs="*", metavar="PATH", help="eval files or folders (default: the config's evals)")
    watch.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; others need --token)"
    )
    watch.add_argument("--port", type=int, default=4318, help="OTLP/HTTP port (default 4318, OTLP's; 0: a free one)")
    watch.add_argument(
        "--token", help=f"bearer token every request must send (default: ${TOKEN_VARIABLE}); required beyond loopback"
    )
    watch.add_argument(
        "--concurrency", type=positive_int("--concurrency"), default=4, help="online evals at once (default 4)"
    )
    watch.add_argument(
        "--max-pending",
        type=positive_int("--max-pending"),
        default=1_000,
        help="online evals waiting to run; past it a trace is sampled away and counted (default 1000)",
    )
    watch.add_argument(
        "--max-open-traces",
        type=positive_int("--max-open-traces"),
        default=10_000,
        help="traces assembled at once; past it a new trace is dropped and counted (default 10000)",
    )
    watch.add_argument(
        "--judge-budget",
        type=positive_int("--judge-budget"),
        default=1_000,
        metavar="CALLS",
        help="judge requests an hour, never more: past it a judge call does not start and its verdict is "
        "inconclusive; a cached verdict still answers (default 1000)",
    )
    watch.add_argument(
        "--grace", type=seconds("--grace"), default=2.0, help="seconds a trace stays open after its root span (2)"
    )
    watch.add_argument(
        "--trace-timeout",
        type=seconds("--trace-timeout"),
        default=300.0,
        help="seconds after its first span that a trace with no root is scored anyway, with a note (300)",
    )
    watch.add_argument(
        "--alarm",
        action="append",
        default=[],
        type=_alarm,
        metavar="RULE",
        help="ASSERTION[:EVAL]>=REFERENCE, the reference a target ('rubric:helpful>=0.8'), the first N scores of the "
        "watch ('pass>=window:1000') or the --reference run ('pass>=ref'): fire when the scores' mean drops below "
        "it, by a test valid however long you watch (repeatable)",
    )
    watch.add_argument(
        "--reference",
        metavar="RUN_ID",
        help="the stored suite run that '>=ref' alarms compare with (its scores of the same assertion, in the store)",
    )
    watch.add_argument(
        "--alarm-alpha",
        type=open_rate("--alarm-alpha"),
        default=0.05,
        metavar="ALPHA",
        help="each alarm's chance of ever firing while the mean holds (default 0.05)",
    )
    watch.add_argument(
        "--on-alarm", metavar="COMMAND", help="shell command run when an alarm fires (evidence JSON on stdin)"
    )
    watch.add_argument("--duration", type=seconds("--duration"), help="stop after this many seconds (default: never)")
    watch.add_argument("--no-store", action="store_true", help="keep no results (print and export only)")
    watch.add_argument(
        "--otel-endpoint",
        metavar="URL",
        help="send each result as gen_ai.evaluation.result events, in the trace it scored, to this OTLP/HTTP traces "
        "URL; default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT when set",
    )
    add_config_flag(watch)
    add_store_flag(watch)
    watch.set_defaults(handler=_watch)


def _alarm(text: str) -> str:
    """`--alarm RULE`, checked when parsed (a bad rule exits 2 naming the flag); read with its alpha and
    reference run later."""
    from niceeval.online._watch import alarm_syntax

    try:
        alarm_syntax(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _watch(args: argparse.Namespace) -> int:
    import anyio

    from niceeval._run.discovery import discover

    config = project_config(args)
    found = discover(config.root, args.paths or config.evals)
    for error in found.errors:
        print(f"niceeval: {error.file}:{error.line or 0}: {error.message}", file=sys.stderr)
    if found.errors:
        return 2
    if not found.online:
        print(
            "niceeval watch: no online evals found: declare one with @define_eval(online=True) (docs/online.md)",
            file=sys.stderr,
        )
        return 2
    try:
        rules = _rules(args)
    except ValueError as exc:
        print(f"niceeval watch: {exc}", file=sys.stderr)
        return 2
    watcher, close = _watcher(args, config, found.online, rules)
    try:
        anyio.run(_until_stopped, watcher, args.duration)
    finally:
        close()
    return 0


def _rules(args: argparse.Namespace) -> tuple[AlarmRule, ...]:
    """The `--alarm` rules with their alpha, `ref` ones read against the `--reference` run's stored results.

    Raises:
        ValueError: A `ref` rule without `--reference`, or one whose assertion that run never scored.
    """
    from niceeval.online._watch import parse_alarm

    stored = None
    if args.reference is not None:
        from niceeval.cli._common import open_existing_store

        with open_existing_store(args) as store:
            run_id = store.resolve(args.reference)
            stored = (run_id, list(store.results(run_id)))
    return tuple(parse_alarm(text, alpha=args.alarm_alpha, stored=stored) for text in args.alarm)


def _watcher(
    args: argparse.Namespace, config: Config, evals: list[EvalEntry], rules: tuple[AlarmRule, ...]
) -> tuple[Watcher, Callable[[], None]]:
    """The watcher the flags describe, and what closes its store afterwards."""
    import time

    from niceeval._run.execute import ExecOptions
    from niceeval._run.storing import StoreRequest, store_location, suite_start
    from niceeval.online._watch import (
        AssemblyLimits,
        OnlineRecord,
        OtelSink,
        ResultSink,
        Watcher,
        WatchOptions,
    )
    from niceeval.report.otel import EvaluationExporter, otel_endpoint
    from niceeval.store._recorder import Recorder

    options = WatchOptions(
        host=args.host,
        port=args.port,
        token=args.token or os.environ.get(TOKEN_VARIABLE) or None,
        concurrency=args.concurrency,
        max_pending=args.max_pending,
        judge_calls_per_hour=args.judge_budget,
        limits=AssemblyLimits(grace=args.grace, timeout=args.trace_timeout, max_traces=args.max_open_traces),
        alarms=rules,
        on_alarm=args.on_alarm,
    )
    execution = ExecOptions(timeout=config.timeout, pricing=config.pricing, root=config.root, judge=config.judge)
    location = store_location(
        StoreRequest(flag=args.store, off=args.no_store, configured=config.store, root=config.root)
    )
    recorder = Recorder.open(location, config.root) if location is not None else None
    record = None
    if recorder is not None:
        start = suite_start(config.root, None, strict=False, min_pass_rate=1.0)
        record = OnlineRecord(recorder, start, evals, clock=time.monotonic)
    endpoint = otel_endpoint(args.otel_endpoint)
    exporter = EvaluationExporter(endpoint) if endpoint else None
    sinks: list[ResultSink] = [OtelSink(exporter)] if exporter is not None else []
    watcher = Watcher(evals, execution, options, record=record, sinks=sinks)

    def close() -> None:
        if exporter is not None:
            exporter.close()
        if recorder is not None:
            recorder.close()

    return watcher, close


async def _until_stopped(watcher: Watcher, duration: float | None) -> None:
    import signal

    import anyio

    stopping = anyio.Event()

    async def on_signal() -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                stopping.set()
                return

    async def after(seconds_: float) -> None:
        await anyio.sleep(seconds_)
        stopping.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(on_signal)
        if duration is not None:
            tg.start_soon(after, duration)
        await watcher.run(stopping)
        tg.cancel_scope.cancel()
