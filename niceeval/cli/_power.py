"""`niceeval power [RUN] [--detect DROP]`: the smallest drop in pass rate a stored suite run can detect.

Only argparse is imported at module level (`niceeval --help` stays fast).
"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import TYPE_CHECKING

from niceeval.cli._common import add_config_flag, add_store_flag, open_existing_store, open_rate

if TYPE_CHECKING:
    from niceeval.stats import Power
    from niceeval.store import SuiteRunDetail


def add_power_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`niceeval power [RUN] [--detect DROP] [--alpha A] [--power P]`."""
    power = commands.add_parser(
        "power",
        help="the smallest drop in pass rate a stored suite run can detect, and the cases or runs a given drop needs",
    )
    power.add_argument("run", metavar="RUN", nargs="?", default="latest", help="suite run id (default: latest)")
    power.add_argument("--detect", type=open_rate("--detect"), metavar="DROP", help="a drop to detect, e.g. 0.05")
    power.add_argument("--alpha", type=open_rate("--alpha"), default=0.05, help="significance level (default 0.05)")
    power.add_argument("--power", type=open_rate("--power"), default=0.8, help="chance to detect (default 0.8)")
    add_config_flag(power)
    add_store_flag(power)
    power.set_defaults(handler=_power)


def _power(args: argparse.Namespace) -> int:
    from niceeval.stats import power

    with open_existing_store(args) as store:
        detail = store.run(args.run)
    rates, runs = case_rates(detail)
    result = power(rates, runs, detect=args.detect, alpha=args.alpha, power=args.power)
    for line in power_lines(detail.run.id, result):
        print(line)
    return 0


def case_rates(detail: SuiteRunDetail) -> tuple[list[float], int]:
    """Each eval's pass rate over its counted runs (the run's own rule), and the most common number of runs."""
    counts: dict[str, list[int]] = {}
    for info in detail.eval_runs:
        if info.outcome == "skipped":
            continue
        tally = counts.setdefault(info.eval_id, [0, 0])
        tally[0] += info.outcome == "passed" or (info.outcome == "scored" and not detail.run.strict)
        tally[1] += 1
    runs = Counter(n for _, n in counts.values()).most_common(1)
    return [k / n for k, n in counts.values()], runs[0][0] if runs else 1


def power_lines(run_id: str, result: Power) -> list[str]:
    """What `niceeval power` prints."""
    if result.detectable_drop is None or result.pass_rate is None:
        return [f"run {run_id}: {result.note or 'nothing to measure'}"]
    lines = [
        f"run {run_id}: {result.cases} cases x {result.runs} run{'s' * (result.runs != 1)}, pass rate "
        f"{result.pass_rate:.0%}, run-to-run variance {result.run_to_run_variance:.3f}",
        f"smallest drop in pass rate detected {result.power:.0%} of the time at alpha {result.alpha:g}: "
        f"{result.detectable_drop:.2f}",
    ]
    if result.detect is not None:
        each = f"{result.runs} run{'s' * (result.runs != 1)} each"
        lines.append(f"to detect a drop of {result.detect:g}: {result.cases_needed} cases at {each}")
        if result.runs_needed is not None:
            lines.append(f"  or {result.runs_needed} runs of each of the {result.cases} cases")
        elif result.note:
            lines.append(f"  ({result.note})")
    return lines
