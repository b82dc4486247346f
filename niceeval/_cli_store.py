"""The store's part of the command line: `--store/--no-store` on `run`, and `runs`, `show`.

Only argparse is imported at module level (`niceeval --help` stays fast); commands import the store when run.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from niceeval._cli_github import add_github_flags

if TYPE_CHECKING:
    from niceeval._eval.config import Config
    from niceeval._run.discovery import EvalEntry
    from niceeval._run.storing import StoredPlan
    from niceeval.store import Store, StoreSink


def add_store_flags(parser: argparse.ArgumentParser) -> None:
    """`--store URL` and `--no-store` (on `run` and on the commands that read the store)."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--store", metavar="URL", help="results store: a SQLite path or postgresql://... (default .niceeval/results.db)"
    )
    if parser.prog.endswith(" run"):
        where.add_argument("--no-store", action="store_true", help="do not record this run in the results store")
        again = parser.add_mutually_exclusive_group()
        resume = "finish a suite run in place: only its missing eval runs run (default: the latest unfinished)"
        again.add_argument("--resume", nargs="?", const="", metavar="RUN", help=resume)
        rerun = "rerun the failed evals of a suite run into a new one (default: the latest)"
        again.add_argument("--rerun-failed", nargs="?", const="", metavar="RUN", help=rerun)
        shared = (
            "name the suite run (e.g. gh-$GITHUB_RUN_ID): every --shard I/N given the same ID writes into one suite "
            "run; running a shard again after a crash completes its missing eval runs"
        )
        parser.add_argument("--run-id", type=_run_id, metavar="ID", help=shared)


def _run_id(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}", text) or text == "latest":
        raise argparse.ArgumentTypeError(
            f"--run-id takes 1 to 32 letters, digits, '.', '_' or '-', starting with a letter or digit "
            f"(e.g. gh-$GITHUB_RUN_ID), and not 'latest'; got {text!r}"
        )
    return text


def add_store_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`niceeval runs` and `niceeval show`."""
    runs = commands.add_parser("runs", help="list the suite runs in the results store, latest first")
    runs.add_argument("--limit", type=int, default=20, help="how many (default 20)")
    runs.add_argument("--config", type=Path, metavar="PATH")
    add_store_flags(runs)
    runs.set_defaults(handler=_runs)

    show = commands.add_parser("show", help="the console report of a stored suite run (or of one eval in it)")
    show.add_argument("run", metavar="RUN", help="suite run id (a unique prefix is enough), or `latest`")
    show.add_argument("eval_id", metavar="EVAL_ID", nargs="?", help="one eval: every assertion and event of its runs")
    show.add_argument("--config", type=Path, metavar="PATH")
    add_store_flags(show)
    show.set_defaults(handler=_show)

    diff = commands.add_parser("diff", help="compare two suite runs; exit 1 when something regressed")
    diff.add_argument("base", metavar="BASE", help="the suite run to compare against (e.g. main's)")
    diff.add_argument("head", metavar="HEAD", help="the suite run to judge (a unique id prefix, or `latest`)")
    diff.add_argument("--threshold", type=float, default=0.1, help="score moves up to this are noise (default 0.1)")
    diff.add_argument("--json", action="store_true", help="print the diff as JSON")
    diff.add_argument("--config", type=Path, metavar="PATH")
    add_store_flags(diff)
    diff.set_defaults(handler=_diff)

    export = commands.add_parser("export", help="write a stored suite run's JSON, JUnit and/or HTML report")
    export.add_argument("run", metavar="RUN", help="suite run id (a unique prefix is enough), or `latest`")
    export.add_argument("--json", type=Path, metavar="PATH", help="write the JSON report here")
    export.add_argument("--junit", type=Path, metavar="PATH", help="write JUnit XML here")
    export.add_argument("--html", type=Path, metavar="PATH", help="write a self-contained HTML report here")
    export.add_argument("--config", type=Path, metavar="PATH")
    add_store_flags(export)
    export.set_defaults(handler=_export)

    report = commands.add_parser(
        "report",
        help="a whole suite run (every shard's runs) from the store: console report, files when asked, the exit code "
        "the run earns (1 when an eval failed or a shard is missing)",
    )
    report.add_argument("run", metavar="RUN", help="suite run id (e.g. the --run-id of its shards), or `latest`")
    report.add_argument("--json", type=Path, metavar="PATH", help="write the JSON report here")
    report.add_argument("--junit", type=Path, metavar="PATH", help="write JUnit XML here")
    report.add_argument("--html", type=Path, metavar="PATH", help="write a self-contained HTML report here")
    report.add_argument("--config", type=Path, metavar="PATH")
    add_store_flags(report)
    add_github_flags(report)
    report.set_defaults(handler=_report)

    rescore = commands.add_parser(
        "rescore", help="score a stored suite run again without calling the agent (turns replayed from the record)"
    )
    rescore.add_argument("rescore", metavar="RUN", help="suite run id (a unique prefix is enough), or `latest`")
    rescore.add_argument("-k", dest="keyword", help="only evals whose id contains this text")
    rescore.add_argument("--tag", action="append", default=[], help="only evals with this tag (repeatable)")
    rescore.add_argument("--concurrency", type=int, help="runs at once (default: config)")
    rescore.add_argument("--strict", action="store_true", help="soft misses (`scored`) fail too")
    rescore.add_argument("--grader", metavar="MODEL", help="judge model for every judge call (provider/model)")
    cache = rescore.add_mutually_exclusive_group()
    cache.add_argument("--no-cache", action="store_true", help="always call judge models (no verdict cache)")
    cache.add_argument("--cache-only", action="store_true", help="judge verdicts from the cache only")
    rescore.add_argument("--json", type=Path, metavar="PATH", help="write the JSON report here")
    rescore.add_argument("--junit", type=Path, metavar="PATH", help="write JUnit XML here")
    rescore.add_argument("--html", type=Path, metavar="PATH", help="write a self-contained HTML report here")
    rescore.add_argument("--config", type=Path, metavar="PATH")
    add_store_flags(rescore)
    rescore.set_defaults(handler=_rescore)

    gc = commands.add_parser("gc", help="delete all but the latest suite runs from the results store")
    gc.add_argument("--keep", type=int, required=True, metavar="N", help="how many of the latest suite runs to keep")
    gc.add_argument("--config", type=Path, metavar="PATH")
    add_store_flags(gc)
    gc.set_defaults(handler=_gc)


def store_plan_for(config: Config, args: argparse.Namespace, entries: list[EvalEntry]) -> StoredPlan | None:
    """How this `niceeval run` is recorded (None with the store off); a store that cannot open exits 2."""
    from niceeval._core.errors import ConfigError
    from niceeval._eval.config import CONFIG_FILE
    from niceeval._run.shard import Shard
    from niceeval._run.storing import (
        StoreRequest,
        open_store,
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
    store = open_store(request)
    if store is None:
        if again or run_id:
            raise ConfigError(
                "--resume, --rerun-failed and --run-id need the results store, which the config turns off."
            )
        return None
    config_file = args.config.resolve() if args.config else config.root / CONFIG_FILE
    start = suite_start(config.root, config_file, strict=args.strict, min_pass_rate=args.min_pass_rate)
    try:
        if getattr(args, "rescore", None) is not None:
            from niceeval._run.rescore import plan_rescore

            return plan_rescore(store, start, entries, args.rescore)
        if args.resume is not None:
            return plan_resume(store, start, entries, args.runs, args.resume or None)
        if args.rerun_failed is not None:
            return plan_rerun(store, start, entries, args.runs, args.rerun_failed or None)
        if run_id is not None:
            return plan_shard(store, start.model_copy(update={"id": run_id}), entries, args.runs, shard or Shard(1, 1))
        if shard is not None:  # without --run-id, a shard is a suite run of its own
            return plan_new(store, start, shard.select(entries, args.runs or 1), args.runs)
        return plan_new(store, start, entries, args.runs)
    except Exception:
        store.close()
        raise


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
            print(f"stored as run {sink.run_id} in {sink.store.url} (niceeval show {sink.run_id})")


def _open_existing(args: argparse.Namespace) -> Store:
    from niceeval._core.errors import ConfigError
    from niceeval._eval.config import find_root, load_config
    from niceeval._run.storing import StoreRequest, store_location
    from niceeval.store import Store

    config = load_config(find_root(Path.cwd()), args.config.resolve() if args.config else None)
    location = store_location(StoreRequest(flag=args.store, configured=config.store, root=config.root))
    if location is None:
        raise ConfigError("the results store is off in the config (store=False); pass --store URL to read one.")
    if "://" not in location and not Path(location).exists():
        raise ConfigError(f"no results store at {location} yet: `niceeval run` creates it (or pass --store URL).")
    return Store.open(location, root=config.root)


def _runs(args: argparse.Namespace) -> int:
    from niceeval._store_views import runs_table

    with _open_existing(args) as store:
        for line in runs_table(store.runs(limit=args.limit)):
            print(line)
    return 0


def _show(args: argparse.Namespace) -> int:
    from rich.console import Console

    from niceeval._store_views import show_run

    with _open_existing(args) as store:
        show_run(store, args.run, args.eval_id, Console(highlight=False, soft_wrap=True))
    sys.stdout.flush()
    return 0


def _diff(args: argparse.Namespace) -> int:
    import json

    from niceeval._store_views import diff_lines

    with _open_existing(args) as store:
        diff = store.diff(args.base, args.head, threshold=args.threshold)
    if args.json:
        print(json.dumps(diff.describe(), indent=2))
    else:
        for line in diff_lines(diff):
            print(line)
    return 1 if diff.regressed else 0


def _export(args: argparse.Namespace) -> int:
    from niceeval._core.errors import ConfigError
    from niceeval._store_views import export_reports

    if not args.json and not args.junit and not args.html:
        raise ConfigError("niceeval export needs --json PATH, --junit PATH and/or --html PATH.")
    with _open_existing(args) as store:
        run_id = export_reports(store, args.run, json_path=args.json, junit_path=args.junit, html_path=args.html)
    print(f"exported suite run {run_id} to " + " and ".join(str(p) for p in (args.json, args.junit, args.html) if p))
    return 0


def _report(args: argparse.Namespace) -> int:
    from rich.console import Console

    from niceeval._cli_github import report_github_reporters
    from niceeval._store_views import report_run

    with _open_existing(args) as store:
        code = report_run(
            store,
            args.run,
            Console(highlight=False, soft_wrap=True),
            json_path=args.json,
            junit_path=args.junit,
            html_path=args.html,
            more=lambda info: report_github_reporters(args, store, info),
        )
    sys.stdout.flush()
    return code


def _gc(args: argparse.Namespace) -> int:
    from niceeval._core.errors import ConfigError

    if args.keep < 0:
        raise ConfigError(f"--keep takes how many suite runs to keep (0 or more), got {args.keep}.")
    with _open_existing(args) as store:
        suites, runs = store.gc(keep=args.keep)
    print(f"deleted {suites} suite runs ({runs} eval runs); kept the latest {args.keep} and any still running")
    return 0


def _rescore(args: argparse.Namespace) -> int:
    from niceeval import cli

    defaults = vars(cli._parser().parse_args(["run"]))  # every `run` option this command does not take
    for name, value in defaults.items():
        if not hasattr(args, name):
            setattr(args, name, value)
    return cli._run(args)
