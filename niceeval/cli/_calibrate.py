"""`niceeval calibrate`: run the judges on labelled cases and measure how often they agree with the labels.

Only argparse is imported at module level (`niceeval --help` stays fast).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from niceeval.cli._common import add_config_flag, add_judge_flags, add_selection_flags, add_store_flag, project_config

if TYPE_CHECKING:
    from collections.abc import Iterable

    from niceeval._eval.config import Config
    from niceeval._run.discovery import EvalEntry
    from niceeval.report.calibration import Label
    from niceeval.store._recorder import StoreSink


def add_calibrate_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`niceeval calibrate [PATHS] [--split S]`."""
    calibrate = commands.add_parser(
        "calibrate", help="run the judges on labelled cases (expected_label, split) and report their agreement"
    )
    calibrate.add_argument("paths", nargs="*", help="eval files or folders (default: config `evals`)")
    calibrate.add_argument("--split", help="only cases of this split (golden, holdout, ...)")
    add_selection_flags(calibrate, tags=False)
    add_judge_flags(calibrate, cache_only=False)
    calibrate.add_argument("--json", type=Path, metavar="PATH", help="write the calibration report as JSON here")
    add_config_flag(calibrate)
    where = calibrate.add_mutually_exclusive_group()
    add_store_flag(where)
    where.add_argument("--no-store", action="store_true", help="do not record this calibration in the store")
    calibrate.set_defaults(handler=calibrate_command)


def labelled_cases(entries: Iterable[EvalEntry], split: str | None) -> tuple[list[EvalEntry], dict[str, Label]]:
    from niceeval._core.errors import UsageError
    from niceeval.report.calibration import Label

    chosen, labels = [], {}
    for entry in entries:
        if entry.case is None:
            continue
        expected = entry.case.label("expected_label")
        if expected is None:
            continue
        if expected not in ("pass", "fail"):
            raise UsageError(f"{entry.case.source}: expected_label is 'pass' or 'fail', got {expected!r}.")
        case_split = str(entry.case.label("split") or "unsplit")
        if split is not None and case_split != split:
            continue
        chosen.append(entry)
        labels[entry.id] = Label(expected=expected, split=case_split)
    return chosen, labels


def _store_sink(config: Config, args: argparse.Namespace) -> StoreSink | None:
    from niceeval._eval.config import CONFIG_FILE
    from niceeval._run.storing import StoreRequest, open_recorder, suite_start

    request = StoreRequest(flag=args.store, off=args.no_store, configured=config.store, root=config.root)
    recorder = open_recorder(request)
    if recorder is None:
        return None
    config_file = args.config.resolve() if args.config else config.root / CONFIG_FILE
    start = suite_start(config.root, config_file, strict=False, min_pass_rate=1.0)
    return recorder.sink(start.model_copy(update={"kind": "calibrate"}))


def calibrate_command(args: argparse.Namespace) -> int:
    """Run the labelled cases' evals, print agreement per split and judge model.

    Exit 0, or 1 when a labelled run crashed (its verdicts are missing), or 2 for a usage or load problem.
    """
    import anyio

    from niceeval._core.text import clean
    from niceeval._run.discovery import discover
    from niceeval._run.execute import ExecOptions
    from niceeval._run.plan import expand
    from niceeval._run.suite import SuiteOptions, run_suite, select
    from niceeval.report import Reporter
    from niceeval.report.calibration import CalibrationReporter, overfit_warnings, render

    config = project_config(args)
    found = discover(config.root, args.paths or config.evals)
    plan = expand(found.evals, root=config.root, suite_variants=config.variants)
    entries, labels = labelled_cases(select(plan.evals, keyword=args.keyword), args.split)
    errors = [*found.errors, *plan.errors]
    if not entries:
        where = " ".join(args.paths or config.evals)
        print(f"niceeval: no labelled cases in {where}: give cases expected_label: pass|fail.", file=sys.stderr)
        return 2
    calibration = CalibrationReporter(labels)
    reporters: list[Reporter] = [calibration]
    sink = _store_sink(config, args)
    if sink is not None:
        reporters.insert(0, sink)
    options = SuiteOptions(
        concurrency=config.concurrency,
        exec=ExecOptions(
            timeout=config.timeout,
            agent=config.agent,
            pricing=config.pricing,
            root=config.root,
            judge=config.judge,
            grader=args.grader,
            no_cache=args.no_cache,
        ),
    )
    try:
        summary = anyio.run(run_suite, entries, errors, options, reporters)
    finally:
        if sink is not None:
            sink.close()
    rows = calibration.rows()
    for line in render(rows):
        print(clean(line, 2000))
    for warning in overfit_warnings(rows):
        print(f"WARNING {clean(warning, 2000)}")
    for problem in summary.problems:
        print(clean(f"ERROR {problem.location}: {problem.message}", 2000), file=sys.stderr)
    for eval_id, error in calibration.errors:
        print(clean(f"ERROR {eval_id}: {error}", 2000), file=sys.stderr)
    if sink is not None:
        print(f"calibration stored as suite run {sink.run_id} (niceeval show {sink.run_id})")
    if args.json:
        report = {"rows": [row.as_dict() for row in rows], "warnings": overfit_warnings(rows)}
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 2 if summary.problems else 1 if calibration.errors else 0
