"""The commands that read the results store: `runs`, `show`, `diff`, `export`, `report`, `gc`; how `run` is recorded;
`store check` and `store import` (another tool's log stored as a suite run).

Only argparse is imported at module level (`niceeval --help` stays fast); commands import the store when run.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from niceeval._core.wording import plural
from niceeval.cli._common import (
    add_config_flag,
    add_gate_flags,
    add_noise_flags,
    add_report_flags,
    add_store_flag,
    open_existing_store,
    project_config,
)
from niceeval.cli._github import add_github_flags

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from pathlib import Path

    from niceeval._eval.config import Config
    from niceeval._run.discovery import EvalEntry
    from niceeval._run.storing import StoredPlan, StoreRequest
    from niceeval.attacks import AttackRates, RateChange
    from niceeval.store import DiffOptions, Store, SuiteRunInfo
    from niceeval.store._recorder import StoreSink


def add_store_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`runs`, `show`, `diff`, `export`, `report`, `gc`."""
    runs = commands.add_parser("runs", help="list the suite runs in the results store, latest first")
    runs.add_argument("--limit", type=int, default=20, help="how many (default 20)")
    runs.add_argument("--experiment", metavar="ID", help="only the suite runs of this experiment (`niceeval exp`)")
    add_config_flag(runs)
    add_store_flag(runs)
    runs.set_defaults(handler=_runs)

    show = commands.add_parser("show", help="the console report of a stored suite run (or of one eval in it)")
    show.add_argument("run", metavar="RUN", help="suite run id (a unique prefix is enough), or `latest`")
    show.add_argument("eval_id", metavar="EVAL_ID", nargs="?", help="one eval: every assertion and event of its runs")
    add_config_flag(show)
    add_store_flag(show)
    show.set_defaults(handler=_show)

    diff = commands.add_parser(
        "diff",
        help="compare two suite runs judged by one rule, with what the change costs; exit 1 only for a drop beyond "
        "noise (or past --max-drop, --max-cost-increase, --max-latency-increase)",
    )
    diff.add_argument(
        "base",
        metavar="BASE",
        help="the suite run to compare against (e.g. main's, or `latest~1`: the one before the latest)",
    )
    diff.add_argument(
        "head",
        metavar="HEAD",
        help="the suite run to judge (a unique id prefix, or `latest`; `REF~N`: N runs before REF)",
    )
    diff.add_argument("--threshold", type=float, default=0.1, help="score moves up to this are noise (default 0.1)")
    diff.add_argument("--json", action="store_true", help="print the diff as JSON")
    add_gate_flags(diff)
    add_config_flag(diff)
    add_store_flag(diff)
    diff.set_defaults(handler=_diff)

    export = commands.add_parser("export", help="write a stored suite run's JSON, JUnit and/or HTML report")
    export.add_argument("run", metavar="RUN", help="suite run id (a unique prefix is enough), or `latest`")
    add_report_flags(export)
    add_config_flag(export)
    add_store_flag(export)
    export.set_defaults(handler=_export)

    report = commands.add_parser(
        "report",
        help="a whole suite run (every shard's runs) from the store: console report, files when asked, the exit code "
        "the run earns (1 when an eval failed or a shard is missing)",
    )
    report.add_argument("run", metavar="RUN", help="suite run id (e.g. the --run-id of its shards), or `latest`")
    add_report_flags(report)
    add_config_flag(report)
    add_store_flag(report)
    add_github_flags(report)
    add_noise_flags(report)
    report.set_defaults(handler=_report)

    store = commands.add_parser("store", help="look after the results store itself")
    store_commands = store.add_subparsers(dest="store_command", metavar="COMMAND", required=True)
    check = store_commands.add_parser(
        "check", help="read every page of the results store: say whether it is sound and which suite runs can be read"
    )
    add_config_flag(check)
    add_store_flag(check)
    check.set_defaults(handler=_check)
    imported = store_commands.add_parser(
        "import",
        help="store another tool's run as a suite run (kind `import`), to diff against niceeval's: an Inspect log",
    )
    imported.add_argument("log", type=Path, metavar="LOG", help="an Inspect log: .eval or .json")
    imported.add_argument(
        "--eval-id",
        metavar="BASE",
        help="the eval whose cases the samples are: each becomes BASE[sample id] (default: the task's name); "
        "samples.jsonl::dataset compares with `niceeval run samples.jsonl`",
    )
    add_config_flag(imported)
    add_store_flag(imported)
    imported.set_defaults(handler=_import_log)

    gc = commands.add_parser("gc", help="delete all but the latest suite runs from the results store")
    gc.add_argument("--keep", type=int, required=True, metavar="N", help="how many of the latest suite runs to keep")
    add_config_flag(gc)
    add_store_flag(gc)
    gc.set_defaults(handler=_gc)


def store_plan_for(
    config: Config, args: argparse.Namespace, entries: Iterable[EvalEntry], identities: Mapping[str, str] | None = None
) -> StoredPlan | None:
    """How this `niceeval run` (or one experiment of `niceeval exp`, `args.experiment`, whose slots have
    `identities`) is recorded (None with the store off); a store that cannot open exits 2."""
    from niceeval._core.errors import ConfigError
    from niceeval._run.storing import (
        StoreRequest,
        open_recorder,
        plan_new,
        plan_rerun,
        plan_resume,
        plan_shard,
        suite_start,
    )

    again = args.resume is not None or args.rerun_failed is not None
    shard, run_id = getattr(args, "shard", None), getattr(args, "run_id", None)
    _refuse_mixed(again=again, shard=shard is not None, run_id=run_id)
    if args.no_store and (again or run_id):
        raise ConfigError("--resume, --rerun-failed and --run-id use the results store; drop --no-store.")
    request = StoreRequest(flag=args.store, off=args.no_store, configured=config.store, root=config.root)
    experiment = getattr(args, "experiment", None)
    if experiment is not None:
        return _experiment_plan(config, args, list(entries), request, identities or {})
    reads = again or run_id is not None or getattr(args, "rescore", None) is not None
    if not reads:  # a new suite run only writes: the recorder, without SQLAlchemy, when the store is ready
        recorder = open_recorder(request)
        if recorder is None:
            return None
        config_file = _config_file(config, args)
        start = suite_start(config.root, config_file, strict=args.strict, min_pass_rate=args.min_pass_rate)
        entries = shard.select(entries, args.runs or 1) if shard is not None else entries
        return plan_new(recorder, start, entries, args.runs)
    recorder = open_recorder(request)
    if recorder is None:
        if again or run_id:
            raise ConfigError(
                "--resume, --rerun-failed and --run-id need the results store, which the config turns off."
            )
        return None
    config_file = _config_file(config, args)
    start = suite_start(config.root, config_file, strict=args.strict, min_pass_rate=args.min_pass_rate)
    entries = list(entries)  # a resumed, rescored or named suite run matches its stored plan against every eval
    try:
        if getattr(args, "rescore", None) is not None:
            from niceeval._run.rescore import plan_rescore

            return plan_rescore(recorder, start, entries, args.rescore)
        if args.resume is not None:
            return plan_resume(recorder, start, entries, args.runs, args.resume or None)
        if args.rerun_failed is not None:
            return plan_rerun(recorder, start, entries, args.runs, args.rerun_failed or None)
        if shard is None:
            from niceeval._run.shard import Shard

            shard = Shard(1, 1)  # a named suite run (--run-id) written whole: one shard of one
        return plan_shard(recorder, start.model_copy(update={"id": run_id}), entries, args.runs, shard)
    except Exception:
        recorder.close()
        raise


def _experiment_plan(
    config: Config,
    args: argparse.Namespace,
    entries: list[EvalEntry],
    request: StoreRequest,
    identities: Mapping[str, str],
) -> StoredPlan | None:
    """One experiment of `niceeval exp`: a new suite run tagged with it, carrying what earlier runs recorded."""
    from niceeval._run.storing import open_recorder, plan_experiment, suite_start

    recorder = open_recorder(request)
    if recorder is None:
        return None
    start = suite_start(
        config.root, _config_file(config, args), strict=args.strict, min_pass_rate=args.min_pass_rate
    ).model_copy(update={"experiment": args.experiment.id})
    return plan_experiment(recorder, start, entries, args.runs, args.experiment, identities)


def _config_file(config: Config, args: argparse.Namespace) -> Path:
    from niceeval._eval.config import CONFIG_FILE

    return args.config.resolve() if args.config else config.root / CONFIG_FILE


def _refuse_mixed(*, again: bool, shard: bool, run_id: str | None) -> None:
    from niceeval._core.errors import ConfigError

    if shard and again:
        raise ConfigError(
            "--shard does not combine with --resume or --rerun-failed. To complete a shard that did not finish, run "
            "its command again with the same --run-id: only its missing eval runs run."
        )
    if run_id is not None and again:
        raise ConfigError(
            f"--run-id {run_id} names the suite run to write, and --resume/--rerun-failed name their own: drop one."
        )


def print_stored(sink: StoreSink) -> None:
    """One line after the run: where it was stored and how to look at it again."""
    if sink.error is None:
        with contextlib.suppress(OSError):  # `niceeval run | head`: the console is gone, the run is not
            print(f"stored as run {sink.run_id} in {sink.url} (niceeval show {sink.run_id})")


def _runs(args: argparse.Namespace) -> int:
    from niceeval.cli._views import runs_table

    with open_existing_store(args) as store:
        found = store.runs(limit=args.limit, experiment=args.experiment)
        gone = store.abandoned(found)  # left `running` by a writer that is gone: killed, or its end not written
        found = [info.model_copy(update={"status": "interrupted"}) if info.id in gone else info for info in found]
        for line in runs_table(found, store.pass_rates(found)):
            print(line)
    return 0


def _show(args: argparse.Namespace) -> int:
    from rich.console import Console

    from niceeval.cli._views import show_run

    with open_existing_store(args) as store:
        show_run(store, args.run, args.eval_id, Console(highlight=False, soft_wrap=True))
    sys.stdout.flush()
    return 0


def _diff_options(args: argparse.Namespace) -> DiffOptions:
    from niceeval.store import DiffOptions

    return DiffOptions(
        threshold=args.threshold, strict=args.strict, min_pass_rate=args.min_pass_rate, alpha=args.alpha,
        max_drop=args.max_drop, max_cost_increase=args.max_cost_increase,
        max_latency_increase=args.max_latency_increase,
    )  # fmt: skip


def _diff(args: argparse.Namespace) -> int:
    import json

    from niceeval.attacks import change_lines
    from niceeval.cli._views import diff_lines, missing_runs

    with open_existing_store(args) as store:
        diff = store.diff(args.base, args.head, _diff_options(args))
        sides = [("base", store.info(diff.base)), ("head", store.info(diff.head))]  # headers: not every eval run
        gaps = [f"{side} run {info.id}{missing_runs(info)}" for side, info in sides if missing_runs(info)]
        attacks = _attack_changes(store, diff.base, diff.head)
    if args.json:
        print(json.dumps({**diff.describe(), "attacks": [change.describe() for change in attacks]}, indent=2))
    else:
        for line in [*diff_lines(diff), *(change_lines(attacks) if attacks else [])]:
            print(line)
    for gap in gaps:  # a diff over part of a suite run says so (on stderr: the JSON on stdout stays parseable)
        print(f"niceeval: note: {gap.replace(' · ', ': ', 1)}", file=sys.stderr)
    return 1 if diff.regressed or any(change.rose for change in attacks) else 0


def _attack_changes(store: Store, base: str, head: str) -> list[RateChange]:
    """The attack success rates' moves when both runs ran attack cases (`niceeval.attacks`); a rise regresses."""
    from niceeval.attacks import FAMILIES, attack_rates, compare_rates

    def rates(run: str) -> AttackRates | None:
        attacked = store.evals_with_case(run, [f"{f}-" for f in FAMILIES])
        return attack_rates(store.results(run, eval_ids=attacked)) if attacked else None  # the attack evals alone

    before, after = rates(base), rates(head)
    return compare_rates(before, after) if before is not None and after is not None else []


def _export(args: argparse.Namespace) -> int:
    from niceeval._core.errors import ConfigError
    from niceeval.cli._views import export_reports

    if not args.json and not args.junit and not args.html:
        raise ConfigError("niceeval export needs --json PATH, --junit PATH and/or --html PATH.")
    with open_existing_store(args) as store:
        run_id = export_reports(store, args.run, json_path=args.json, junit_path=args.junit, html_path=args.html)
    print(f"exported suite run {run_id} to " + " and ".join(str(p) for p in (args.json, args.junit, args.html) if p))
    return 0


def _report(args: argparse.Namespace) -> int:
    from rich.console import Console

    from niceeval.cli._github import ReportBaseline
    from niceeval.cli._views import report_run

    with open_existing_store(args) as store:
        baseline = ReportBaseline(args, store)
        code = report_run(
            store,
            args.run,
            Console(highlight=False, soft_wrap=True),
            json_path=args.json,
            junit_path=args.junit,
            html_path=args.html,
            more=baseline.reporters,
        )
        code = baseline.exit_code(code)
    sys.stdout.flush()
    return code


def _check(args: argparse.Namespace) -> int:
    from niceeval.store import StoreError

    try:
        store = open_existing_store(args)
    except StoreError as exc:  # refused on opening: empty, not SQLite, cut short
        print(f"damaged: {exc}")
        return 1
    readable, unreadable = 0, []
    try:
        with store:
            problems = store.check()
            for info in _all_runs(store):
                try:
                    store.run(info.id)
                    readable += 1
                except Exception:
                    unreadable.append(info.id)
    except StoreError as exc:  # so damaged that not even the list of suite runs can be read
        print(f"damaged: {exc}")
        return 1
    for problem in problems:
        print(f"  {problem}")
    print(f"{readable} suite runs readable" + (f"; unreadable: {', '.join(unreadable)}" if unreadable else ""))
    if problems or unreadable:
        print(f"damaged: {store.url}: copy what you need with `niceeval export RUN`, then move the file away.")
        return 1
    print(f"ok: {store.url} is sound")
    return 0


def _import_log(args: argparse.Namespace) -> int:
    """`niceeval store import LOG`: the log's samples stored as the eval runs of a new suite run."""
    from niceeval._core.errors import ConfigError
    from niceeval._run.storing import StoreRequest, new_run_id, store_location
    from niceeval.store import SuiteRunStart, read_inspect_log
    from niceeval.store._recorder import Recorder, SuiteEnd

    config = project_config(args)
    log = read_inspect_log(args.log, eval_id=args.eval_id)
    for note in log.notes:
        print(f"niceeval: not mapped: {note}", file=sys.stderr)
    location = store_location(StoreRequest(flag=args.store, configured=config.store, root=config.root))
    if location is None:
        raise ConfigError("the results store is off in the config (store=False); pass --store URL to import into one.")
    run_id = new_run_id()
    start = SuiteRunStart(
        id=run_id, kind="import", command=["niceeval", "store", "import", str(args.log)], root=str(config.root)
    )
    recorder = Recorder.open(location, config.root)
    try:
        recorder.begin(start, log.plan)
        recorder.add(run_id, log.runs)
        errors = ({"location": str(args.log), "message": f"Inspect: {log.error}"},) if log.error else ()
        end = SuiteEnd(
            status="finished" if log.status in ("success", "error") else "interrupted",
            exit_code=None,
            duration_s=log.duration_s,
            errors=errors,
        )
        recorder.finish(run_id, end)
        url = recorder.url
    finally:
        recorder.close()
    print(
        f"imported {plural(len(log.runs), 'sample run')} of Inspect task {log.task} ({log.model or 'no model'}, "
        f"{log.status}) as run {run_id} in {url} (niceeval show {run_id})"
    )
    return 0


def _all_runs(store: Store) -> list[SuiteRunInfo]:
    found, offset = [], 0
    while batch := store.runs(limit=500, offset=offset):
        found += batch
        offset += len(batch)
    return found


def _gc(args: argparse.Namespace) -> int:
    from niceeval._core.errors import ConfigError

    if args.keep < 0:
        raise ConfigError(f"--keep takes how many suite runs to keep (0 or more), got {args.keep}.")
    from niceeval.store._recorder import Recorder

    with open_existing_store(args) as store:
        recorder = Recorder.of(store)
        try:
            suites, runs = recorder.gc(keep=args.keep)
        finally:
            recorder.close()
    print(
        f"deleted {plural(suites, 'suite run')} ({plural(runs, 'eval run')}); "
        f"kept the latest {args.keep} and any still running"
    )
    return 0
