"""The `niceeval` command line. Heavy imports happen inside commands so `niceeval --help` stays fast."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from niceeval._cli_calibrate import add_calibrate_command
from niceeval._cli_cases import add_case_commands
from niceeval._cli_github import add_github_flags
from niceeval._cli_store import add_store_commands, add_store_flags

if TYPE_CHECKING:
    from niceeval._eval.config import Config
    from niceeval._run.discovery import EvalEntry
    from niceeval._run.shard import Shard
    from niceeval._run.storing import StoredPlan

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def _positive_int(flag: str) -> type[int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} takes a whole number, got {text!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{flag} must be at least 1, got {value}")
        return value

    return parse  # type: ignore[return-value]


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--min-pass-rate takes a number between 0 and 1, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"--min-pass-rate must be between 0 and 1, got {value}")
    return value


def _pass_at_k(text: str) -> tuple[int, float]:
    k_text, _, rate_text = text.partition(":")
    try:
        k, rate = int(k_text), float(rate_text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--min-pass-at-k takes K:RATE, e.g. 3:0.9, got {text!r}") from None
    if k < 1 or not 0.0 <= rate <= 1.0:
        raise argparse.ArgumentTypeError(f"--min-pass-at-k needs K >= 1 and RATE between 0 and 1, got {text!r}")
    return k, rate


def _shard(text: str) -> Shard:
    from niceeval._run.shard import parse_shard

    return parse_shard(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--timeout takes seconds, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"--timeout must be positive, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="niceeval", description="Test LLM apps and AI agents.")
    parser.add_argument("--version", action="version", version=f"niceeval {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = commands.add_parser("run", help="run evals and report the results")
    run.add_argument("paths", nargs="*", help="eval files or folders, or file.py::name (default: config `evals`)")
    run.add_argument("-k", dest="keyword", help="only evals whose id contains this text")
    run.add_argument("--tag", action="append", default=[], help="only evals with this tag (repeatable)")
    run.add_argument(
        "--runs",
        type=_positive_int("--runs"),
        metavar="N",
        help="run every eval N times (default 1); the repeats run at the same time (within --concurrency), except "
        "for evals with @define_eval(sequential_runs=True), whose repeats run one after another",
    )
    run.add_argument(
        "--min-pass-rate", type=_rate, help="with --runs: share of runs that must pass (default 1, or 0 with pass@k)"
    )
    run.add_argument(
        "--min-pass-at-k", type=_pass_at_k, metavar="K:RATE", help="with --runs N: pass@K must reach RATE (K <= N)"
    )
    run.add_argument("--strict", action="store_true", help="soft misses (`scored`) fail too")
    run.add_argument("--concurrency", type=_positive_int("--concurrency"), help="runs at once (default: config)")
    run.add_argument(
        "--shard",
        type=_shard,
        metavar="I/N",
        help="run shard I of N: a stable part of the eval runs (shards 1/N..N/N run each exactly once); with "
        "--run-id ID, the shards write one suite run",
    )
    run.add_argument("--timeout", type=_seconds, help="seconds per run (default: config, 300)")
    run.add_argument("--fail-on-inconclusive", action="store_true", help="inconclusive assertions count as misses")
    run.add_argument("--json", type=Path, metavar="PATH", help="write the JSON report here")
    run.add_argument("--junit", type=Path, metavar="PATH", help="write JUnit XML here")
    run.add_argument("--html", type=Path, metavar="PATH", help="write a self-contained HTML report here")
    run.add_argument("--config", type=Path, metavar="PATH", help="config file (default: niceeval.config.py)")
    run.add_argument("--keep-sandbox", action="store_true", help="keep sandbox workspaces and print their paths")
    run.add_argument("--grader", metavar="MODEL", help="judge model for every judge call (provider/model)")
    cache = run.add_mutually_exclusive_group()
    cache.add_argument("--no-cache", action="store_true", help="always call judge models (no verdict cache)")
    cache.add_argument(
        "--cache-only", action="store_true", help="replay judge verdicts from the cache; a miss is inconclusive"
    )
    add_store_flags(run)
    add_github_flags(run)
    run.set_defaults(handler=_run)

    listing = commands.add_parser("list", help="list the evals found, with ids and tags")
    listing.add_argument("paths", nargs="*")
    listing.add_argument("--config", type=Path, metavar="PATH")
    listing.set_defaults(handler=_list)

    add_store_commands(commands)
    add_case_commands(commands)
    add_calibrate_command(commands)

    init = commands.add_parser("init", help="write a starter niceeval.config.py and one eval")
    init.set_defaults(handler=_init)

    cache_cmd = commands.add_parser("cache", help="manage the judge verdict cache")
    cache_commands = cache_cmd.add_subparsers(dest="cache_command", metavar="COMMAND", required=True)
    clear = cache_commands.add_parser("clear", help="delete every cached judge verdict")
    clear.add_argument("--config", type=Path, metavar="PATH")
    clear.set_defaults(handler=_cache_clear)

    view = commands.add_parser("view", help="browse stored results in a web viewer (127.0.0.1 by default)")
    view.add_argument("--host", default="127.0.0.1", help="address to listen on; other than loopback needs a token")
    view.add_argument("--port", type=int, default=7575, help="port (0 picks a free one)")
    view.add_argument("--token", help="access token (default: generated when the host is not loopback)")
    view.add_argument("--open", dest="open_browser", action="store_true", help="open it in the default browser")
    view.add_argument("--config", type=Path, metavar="PATH")
    add_store_flags(view)
    view.set_defaults(handler=_view)

    testing = commands.add_parser("testing", help="tools for testing agents offline")
    testing_commands = testing.add_subparsers(dest="testing_command", metavar="COMMAND", required=True)
    serve = testing_commands.add_parser(
        "serve", help="serve a local OpenAI/Anthropic-compatible API with scripted replies (127.0.0.1 only)"
    )
    serve.add_argument("--host", default="127.0.0.1", help="127.0.0.1 (default) or ::1")
    serve.add_argument("--port", type=int, default=8808, help="port (0 picks a free one)")
    serve.add_argument("--latency", type=float, default=0.0, help="seconds added before every answer")
    serve.add_argument(
        "--script", metavar="MODULE:NAME", help="a script (list of replies or function of the request); default: echo"
    )
    serve.set_defaults(handler=_serve)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("niceeval")
    except PackageNotFoundError:
        return "unknown"


def _load(args: argparse.Namespace) -> tuple[object, object]:
    from niceeval._cli_cases import discover_with_cases
    from niceeval._eval.config import find_root, load_config
    from niceeval._run.plan import expand

    root = find_root(Path.cwd())
    config = load_config(root, args.config.resolve() if args.config else None)
    discovery = discover_with_cases(config, args)
    plan = expand(discovery.evals, root=config.root, suite_variants=config.variants)
    discovery.evals = plan.evals
    discovery.errors.extend(plan.errors)
    return config, discovery


def _run(args: argparse.Namespace) -> int:
    import anyio
    from rich.console import Console

    from niceeval._cli_github import github_reporters
    from niceeval._cli_store import print_stored
    from niceeval._eval.config import Config
    from niceeval._run.discovery import Discovery
    from niceeval._run.execute import ExecOptions
    from niceeval._run.suite import SuiteOptions, run_suite, select
    from niceeval.report import ConsoleReporter, JsonReporter, JUnitReporter, Reporter

    config, discovery = _load(args)
    assert isinstance(config, Config) and isinstance(discovery, Discovery)
    if args.min_pass_at_k and args.min_pass_at_k[0] > (args.runs or 1):
        print(f"niceeval: --min-pass-at-k {args.min_pass_at_k[0]}:... needs --runs of at least that.", file=sys.stderr)
        return EXIT_USAGE
    if args.min_pass_rate is None:
        args.min_pass_rate = 0.0 if args.min_pass_at_k else 1.0
    entries = select(discovery.evals, keyword=args.keyword, tags=args.tag)
    if not entries and not discovery.errors:
        where = " ".join(args.paths or config.evals)
        filters = " after -k/--tag filtering" if discovery.evals else ""
        print(f"niceeval: no evals found in {where}{filters}. Write one with `niceeval init`.", file=sys.stderr)
        return EXIT_USAGE
    stored, entries = _plan_runs(config, args, entries)
    sink = stored.sink if stored else None
    reporters: list[Reporter] = [
        ConsoleReporter(
            Console(highlight=False, soft_wrap=True),
            strict=args.strict,
            min_pass_rate=args.min_pass_rate,
            min_pass_at_k=args.min_pass_at_k,
        )
    ]
    if sink is not None:
        reporters.insert(0, sink)  # the store first: a run is kept before any reporter can fail on it
    if args.json:
        reporters.append(JsonReporter(args.json, run_id=sink.run_id if sink else None))
    if args.junit:
        reporters.append(JUnitReporter(args.junit, strict=args.strict, min_pass_rate=args.min_pass_rate))
    if args.html:
        from niceeval.report.html import HtmlReporter

        reporters.append(HtmlReporter(args.html, run_id=sink.run_id if sink else None))
    reporters += github_reporters(args, sink)  # last: they turn GitHub workflow commands back on at the end
    options = SuiteOptions(
        runs=stored.runs if stored else args.runs or 1,
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
            keep_sandbox=args.keep_sandbox,
            judge=config.judge,
            grader=args.grader,
            no_cache=args.no_cache,
            cache_only=args.cache_only,
            agent_for_run=stored.agent_for_run if stored else None,
        ),
        done=stored.done if stored else frozenset(),
        prior=stored.prior if stored else (),
        shard=args.shard,
    )
    summary = anyio.run(run_suite, entries, discovery.errors, options, reporters)
    if sink is not None:
        sink.store.close()
        print_stored(sink)
    return summary.exit_code


def _plan_runs(
    config: Config, args: argparse.Namespace, entries: list[EvalEntry]
) -> tuple[StoredPlan | None, list[EvalEntry]]:
    """How `run` is recorded (None: the store is off), and the evals it runs (with --shard, the shard's)."""
    from niceeval._cli_store import store_plan_for

    stored = store_plan_for(config, args, entries)
    if args.shard is not None:
        print(f"niceeval: {args.shard.describe(entries, args.runs or 1)}", file=sys.stderr)
    if stored is None:
        return None, entries if args.shard is None else args.shard.select(entries, args.runs or 1)
    for note in stored.notes:
        print(f"niceeval: {note}", file=sys.stderr)
    return stored, stored.entries


def _list(args: argparse.Namespace) -> int:
    from niceeval._run.discovery import Discovery

    _, discovery = _load(args)
    assert isinstance(discovery, Discovery)
    for entry in discovery.evals:
        tags = f"  [{', '.join(entry.tags)}]" if entry.tags else ""
        print(f"{entry.id}{tags}")
    for error in discovery.errors:
        print(f"ERROR {error.describe()}", file=sys.stderr)
    print(f"{len(discovery.evals)} evals", file=sys.stderr)
    return EXIT_USAGE if discovery.errors else EXIT_OK


def _init(args: argparse.Namespace) -> int:
    from niceeval._init_template import write_starter

    for line in write_starter(Path.cwd()):
        print(line)
    return EXIT_OK


def _cache_clear(args: argparse.Namespace) -> int:
    from niceeval._eval.config import find_root, load_config
    from niceeval.judge import JudgeCache, default_cache_path

    config = load_config(find_root(Path.cwd()), args.config.resolve() if args.config else None)
    path = default_cache_path(config.root)
    removed = JudgeCache(path).clear() if path.exists() else 0
    print(f"removed {removed} cached verdicts from {path}")
    return EXIT_OK


def _serve(args: argparse.Namespace) -> int:
    import importlib

    from niceeval._core.errors import UsageError
    from niceeval.testing import serve

    script = None
    if args.script:
        module_name, _, attribute = args.script.partition(":")
        if not attribute:
            raise UsageError(f"--script takes MODULE:NAME (e.g. my_scripts:replies), got {args.script!r}.")
        sys.path.insert(0, str(Path.cwd()))
        try:
            script = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as exc:
            raise UsageError(f"--script {args.script}: {exc}") from None
    try:
        serve(host=args.host, port=args.port, script=script, latency=args.latency)
    except OSError as exc:
        where = f"{args.host}:{args.port}"
        raise UsageError(f"cannot listen on {where}: {exc.strerror}; pick another --port (0 = any free)") from None
    return EXIT_OK


def _view(args: argparse.Namespace) -> int:
    from niceeval._core.errors import ConfigError, UsageError
    from niceeval._eval.config import find_root, load_config
    from niceeval._run.storing import StoreRequest, store_location
    from niceeval.store import Store
    from niceeval.web._serve import ServeOptions, serve

    config = load_config(find_root(Path.cwd()), args.config.resolve() if args.config else None)
    location = store_location(StoreRequest(flag=args.store, configured=config.store, root=config.root))
    if location is None:
        raise ConfigError("the results store is off in the config (store=False); pass --store URL to view one.")
    with Store.open(location, root=config.root) as store:  # created when missing: cases can be written first
        options = ServeOptions(
            store=store, host=args.host, port=args.port, token=args.token, open_browser=args.open_browser
        )
        try:
            serve(options)
        except OSError as exc:
            where = f"{args.host}:{args.port}"
            raise UsageError(f"cannot listen on {where}: {exc.strerror}; pick another --port (0 = any free)") from None
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `niceeval` command; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    from niceeval._core.errors import NiceevalError  # after parsing: `--help` stays fast

    try:
        code: int = args.handler(args)
    except NiceevalError as exc:
        print(f"niceeval: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("niceeval: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    _quiet_if_stdout_closed()
    return code


def _quiet_if_stdout_closed() -> None:
    """`niceeval run | head` closes our stdout early: exit with the suite's code, without a traceback at exit."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
