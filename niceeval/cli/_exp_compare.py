"""`niceeval exp compare A B ...`: setups side by side, each with its 95% intervals, each pair on the cases both
ran, and the Pareto front on quality, cost and latency.

`add_exp_compare` adds the `compare` command to the `exp` group's subcommands. Only argparse is imported at
module level (`niceeval --help` stays fast); the command imports the store and rich when run.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from niceeval._core.wording import share
from niceeval.cli._common import add_config_flag, add_store_flag, open_existing_store, open_rate, rate

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from niceeval.store import Measured, SetupComparison


def add_exp_compare(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`compare SETUP SETUP [SETUP ...]`."""
    compare = commands.add_parser(
        "compare",
        help="compare setups (experiments, or suite runs by id): each with its 95%% intervals, each pair on the "
        "cases both ran, and the setups no other beats on quality, cost and latency at once",
    )
    compare.add_argument(
        "setups", nargs="+", metavar="SETUP",
        help="an experiment id (its latest finished suite run), or a suite run id (a unique prefix, or `latest`); "
        "two or more",
    )  # fmt: skip
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    compare.add_argument(
        "--strict", action=argparse.BooleanOptionalAction, default=None,
        help="judge every setup with (or without) --strict (default: as the first setup's run was)",
    )  # fmt: skip
    compare.add_argument(
        "--min-pass-rate", type=rate("--min-pass-rate"), metavar="RATE",
        help="judge every setup with this --min-pass-rate (default: the first setup's run's)",
    )  # fmt: skip
    compare.add_argument(
        "--alpha", type=open_rate("--alpha"), default=0.05,
        help="the level of the paired tests of each pair (default 0.05)",
    )  # fmt: skip
    add_config_flag(compare)
    add_store_flag(compare)
    compare.set_defaults(handler=_compare)


def _compare(args: argparse.Namespace) -> int:
    import json

    from rich.console import Console

    from niceeval.store import CompareOptions

    options = CompareOptions(strict=args.strict, min_pass_rate=args.min_pass_rate, alpha=args.alpha)
    with open_existing_store(args) as store:
        comparison = store.compare(args.setups, options)
    if args.json:
        print(json.dumps(comparison.describe(), indent=2))
    else:
        print_comparison(comparison, Console(highlight=False, soft_wrap=True))
    return 0


def print_comparison(comparison: SetupComparison, console: Console) -> None:
    """A column per setup (each measure with its interval below it), each pair's relation, and the front."""
    from rich.text import Text

    rule = f"{'--strict ' if comparison.strict else ''}--min-pass-rate {comparison.min_pass_rate:g}"
    console.print(Text(f"{len(comparison.setups)} setups, each judged with {rule}; under each value its 95% interval"))
    console.print(_setups_table(comparison))
    for pair in comparison.pairs:
        over = f"{pair.shared_cases} shared case{'s' * (pair.shared_cases != 1)}"
        console.print(Text(f"{_name(pair.first)} vs {_name(pair.second)} over {over}: {_line(pair.relation_line)}"))
        if pair.suite is not None:
            console.print(Text(f"  pass rate {_rate(pair.suite.base_rate)} -> {_rate(pair.suite.head_rate)}: "
                               f"{pair.suite.evidence}"))  # fmt: skip
        if pair.verdict_line:
            console.print(Text(f"  {_name(pair.second)} against {_name(pair.first)}, every measure: "
                               f"{_line(pair.verdict_line)}"))  # fmt: skip
    front = ", ".join(_name(name) for name in comparison.front)
    console.print(Text(f"front (no other setup beats these on pass rate, cost and p50 latency at once): {front}"))


def _setups_table(comparison: SetupComparison) -> Table:
    """A row per measure, a column per setup."""
    from rich.table import Table
    from rich.text import Text

    setups = comparison.setups
    table = Table(show_edge=False, pad_edge=False, show_lines=True)
    table.add_column("")
    for setup in setups:
        table.add_column(Text(_name(setup.name)))
    table.add_row("run", *(Text(s.suite_run_id[:12]) for s in setups))
    table.add_row("cases", *(Text(f"{s.cases} ({s.runs} runs)") for s in setups))
    rows: list[tuple[str, list[Measured | None]]] = [
        ("pass rate", [s.pass_rate for s in setups]),
        ("cost/eval run", [s.cost_per_run for s in setups]),
        ("cost/passed run", [s.cost_per_pass for s in setups]),
        ("p50 latency", [s.latency_p50 for s in setups]),
        ("p95 latency", [s.latency_p95 for s in setups]),
    ]
    rows += [(f"mean {_name(name)}", [s.mean_scores.get(name) for s in setups]) for name in comparison.score_names]
    for label, measured in rows:
        table.add_row(Text(label), *(_cell(m) for m in measured))
    table.add_row("front", *(Text("yes" if s.on_front else "no") for s in setups))
    return table


def _cell(measured: Measured | None) -> Text:
    """The value, and below it (dim) its interval or the note saying why there is none."""
    from rich.text import Text

    if measured is None:
        return Text("-")
    cell = Text(measured.text)
    if measured.spread:
        cell.append("\n" + measured.spread.removeprefix("95% CI "), style="dim")
    return cell


def _name(name: str) -> str:
    from niceeval._core.text import clean

    return clean(name, 80)


def _line(text: str) -> str:
    from niceeval._core.text import clean

    return clean(text, 600)


def _rate(value: float | None) -> str:
    return "n/a" if value is None else share(value)
