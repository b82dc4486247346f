"""What several commands share, declared once: exit codes, argument types, flag groups, the project's config.

Only argparse is imported at module level (`niceeval --help` stays fast).
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from niceeval._eval.config import Config
    from niceeval._eval.reading import Reading
    from niceeval._run.shard import Shard
    from niceeval.store import DiffOptions, Store

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_TERMINATED = 143
"""128 + SIGTERM, as a shell reports a process SIGTERM ended."""


def positive_int(flag: str) -> Callable[[str], int]:
    """An argument type: a whole number of at least 1, named in the error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} takes a whole number, got {text!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{flag} must be at least 1, got {value}")
        return value

    return parse


def rate(flag: str) -> Callable[[str], float]:
    """An argument type: a number between 0 and 1, named in the error."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} takes a number between 0 and 1, got {text!r}") from None
        if not 0.0 <= value <= 1.0:
            raise argparse.ArgumentTypeError(f"{flag} must be between 0 and 1, got {value}")
        return value

    return parse


def pass_at_k(text: str) -> tuple[int, float]:
    """`--min-pass-at-k K:RATE`."""
    k_text, _, rate_text = text.partition(":")
    try:
        k, value = int(k_text), float(rate_text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--min-pass-at-k takes K:RATE, e.g. 3:0.9, got {text!r}") from None
    if k < 1 or not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"--min-pass-at-k needs K >= 1 and RATE between 0 and 1, got {text!r}")
    return k, value


def shard(text: str) -> Shard:
    """`--shard I/N`."""
    from niceeval._run.shard import parse_shard

    return parse_shard(text)


def seconds(flag: str) -> Callable[[str], float]:
    """An argument type: a positive number of seconds, named in the error."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} takes seconds, got {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{flag} must be positive, got {value}")
        return value

    return parse


def run_id(text: str) -> str:
    """`--run-id ID`: a name safe in URLs, file names and CI variables."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}", text) or text == "latest":
        raise argparse.ArgumentTypeError(
            f"--run-id takes 1 to 32 letters, digits, '.', '_' or '-', starting with a letter or digit "
            f"(e.g. gh-$GITHUB_RUN_ID), and not 'latest'; got {text!r}"
        )
    return text


def open_rate(flag: str) -> Callable[[str], float]:
    """An argument type: a number strictly between 0 and 1 (a significance level), named in the error."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} takes a number between 0 and 1, got {text!r}") from None
        if not 0.0 < value < 1.0:
            raise argparse.ArgumentTypeError(f"{flag} must be between 0 and 1 (exclusive, e.g. 0.05), got {value}")
        return value

    return parse


def percent(flag: str) -> Callable[[str], float]:
    """An argument type: a percentage (`10%` or `10`), returned as a fraction (0.1), named in the error."""

    def parse(text: str) -> float:
        try:
            value = float(text.strip().removesuffix("%"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} takes a percentage, e.g. {flag} 10%, got {text!r}") from None
        if value < 0:
            raise argparse.ArgumentTypeError(f"{flag} must be 0% or more, got {text!r}")
        return value / 100

    return parse


def add_noise_flags(parser: argparse.ArgumentParser) -> None:
    """What a comparison of two runs calls a regression: `--alpha`, `--max-drop`, `--max-cost-increase`,
    `--max-latency-increase`."""
    parser.add_argument(
        "--alpha", type=open_rate("--alpha"), default=0.05,
        help="a drop fails only when significant at this level, after false discovery control (default 0.05)",
    )  # fmt: skip
    parser.add_argument(
        "--max-drop", type=rate("--max-drop"), metavar="RATE",
        help="also fail when the suite's pass rate, or a graded assertion's mean score (0-1), drops by more than "
        "RATE, significant or not",
    )  # fmt: skip
    parser.add_argument(
        "--max-cost-increase", type=percent("--max-cost-increase"), metavar="PCT",
        help="also fail when the agent's cost per eval run rose by more than PCT (e.g. 10%%) even at the low end "
        "of its 95%% interval",
    )  # fmt: skip
    parser.add_argument(
        "--max-latency-increase", type=percent("--max-latency-increase"), metavar="PCT",
        help="also fail when p50 or p95 turn latency rose by more than PCT (e.g. 20%%) even at the low end of its "
        "95%% interval",
    )  # fmt: skip


def noise_options(args: argparse.Namespace) -> DiffOptions:
    """The comparison `--alpha`, `--max-drop` and the cost and latency limits ask for (`run --baseline`,
    `report --baseline`): both runs judged by the head run's verdict rule."""
    from niceeval.store import DiffOptions

    return DiffOptions(
        alpha=args.alpha, max_drop=args.max_drop, max_cost_increase=args.max_cost_increase,
        max_latency_increase=args.max_latency_increase,
    )  # fmt: skip


def add_gate_flags(parser: argparse.ArgumentParser) -> None:
    """How a comparison of two runs gates: `--alpha`, `--max-drop`, and the verdict rule for both sides."""
    add_noise_flags(parser)
    parser.add_argument(
        "--strict", action=argparse.BooleanOptionalAction, default=None,
        help="judge both runs with (or without) --strict (default: as the head run was)",
    )  # fmt: skip
    parser.add_argument(
        "--min-pass-rate", type=rate("--min-pass-rate"), metavar="RATE",
        help="judge both runs with this --min-pass-rate (default: the head run's)",
    )  # fmt: skip


def add_config_flag(parser: argparse.ArgumentParser) -> None:
    """`--config PATH`."""
    parser.add_argument("--config", type=Path, metavar="PATH", help="config file (default: niceeval.config.py)")


def add_selection_flags(parser: argparse.ArgumentParser, *, tags: bool = True) -> None:
    """`-k TEXT` and `--tag T`."""
    parser.add_argument(
        "-k",
        dest="keyword",
        help='only evals whose id contains this text; pytest\'s grammar: -k "refund and not slow", -k "a or b"',
    )
    if tags:
        parser.add_argument("--tag", action="append", default=[], help="only evals with this tag (repeatable)")


def add_concurrency_flag(parser: argparse.ArgumentParser) -> None:
    """`--concurrency C`."""
    parser.add_argument("--concurrency", type=positive_int("--concurrency"), help="runs at once (default: config)")


def add_strict_flag(parser: argparse.ArgumentParser) -> None:
    """`--strict`."""
    parser.add_argument("--strict", action="store_true", help="soft misses (`scored`) fail too")


def add_judge_flags(parser: argparse.ArgumentParser, *, cache_only: bool = True) -> None:
    """`--grader MODEL`, `--no-cache` and (unless told otherwise) `--cache-only`."""
    parser.add_argument("--grader", metavar="MODEL", help="judge model for every judge call (provider/model)")
    cache = parser.add_mutually_exclusive_group()
    cache.add_argument("--no-cache", action="store_true", help="always call judge models (no verdict cache)")
    if cache_only:
        cache.add_argument(
            "--cache-only", action="store_true", help="replay judge verdicts from the cache; a miss is inconclusive"
        )


def add_report_flags(parser: argparse.ArgumentParser) -> None:
    """`--json PATH`, `--junit PATH`, `--html PATH`."""
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the JSON report here")
    parser.add_argument("--junit", type=Path, metavar="PATH", help="write JUnit XML here")
    parser.add_argument("--html", type=Path, metavar="PATH", help="write a self-contained HTML report here")


def add_store_flag(parser: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup) -> None:
    """`--store URL`."""
    parser.add_argument(
        "--store", metavar="URL", help="results store: a SQLite path or postgresql://... (default .niceeval/results.db)"
    )


def project_config(args: argparse.Namespace) -> Config:
    """The project's config: `--config PATH`, or `niceeval.config.py` found from the current folder up."""
    from niceeval._eval.config import find_root, load_config

    return load_config(find_root(Path.cwd()), args.config.resolve() if args.config else None)


def open_existing_store(args: argparse.Namespace) -> Store:
    """The results store a reading command names (`--store`, the config, or the default), which must exist."""
    from niceeval._core.errors import ConfigError
    from niceeval._run.storing import StoreRequest, store_location
    from niceeval.store import Store

    config = project_config(args)
    location = store_location(StoreRequest(flag=args.store, configured=config.store, root=config.root))
    if location is None:
        raise ConfigError("the results store is off in the config (store=False); pass --store URL to read one.")
    if "://" not in location and not Path(location).exists():
        raise ConfigError(f"no results store at {location} yet: `niceeval run` creates it (or pass --store URL).")
    return Store.open(location, root=config.root)


def _fields(text: str) -> tuple[tuple[str, str], ...]:
    """`--fields input=question,target=answer`."""
    from niceeval._eval.reading import parse_fields

    try:
        return parse_fields(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--fields {exc}") from None


def add_reading_flags(parser: argparse.ArgumentParser) -> None:
    """`--data FILE` and `--fields ROLE=FIELD,...`: how a dataset file named on the command line is read."""
    parser.add_argument(
        "--data",
        type=Path,
        metavar="FILE",
        help='the rows a definition runs over: an OpenAI Evals definition\'s items (JSONL of {"item": ...}; default: '
        "inline, or NAME.jsonl beside it), or a promptfoo config's tests (as promptfoo's --tests)",
    )
    parser.add_argument(
        "--fields",
        type=_fields,
        metavar="ROLE=FIELD,...",
        help="which fields of sample rows are the input, target, id, choices and metadata, as an Inspect task's "
        "FieldSpec says (e.g. input=question,target=answer); default: `input` and `target`, else inferred",
    )


def reading_of(args: argparse.Namespace, paths: list[str], root: Path) -> Reading | None:
    """The `Reading` that `--data` / `--fields` ask for (None when neither is given).

    Raises:
        ValueError: the flags cannot apply to `paths` (not dataset files; `--data` with other than one); the
            message names the flag and the fix.
    """
    data: Path | None = getattr(args, "data", None)
    fields: tuple[tuple[str, str], ...] = getattr(args, "fields", None) or ()
    if data is None and not fields:
        return None
    from niceeval._eval.dataset_eval import is_dataset
    from niceeval._eval.reading import Reading

    flag = "--data" if data is not None else "--fields"
    named = [text.partition("::")[0] for text in paths]
    others = [text for text in named if not any(is_dataset(base / text) for base in (Path.cwd(), root))]
    if not named or others:
        what = f"{', '.join(others)} is not one" if others else "no file is named"
        raise ValueError(
            f"{flag} reads a dataset file named on the command line (e.g. `niceeval run capitals.json --data "
            f"items.jsonl`, `niceeval run qa.jsonl --fields input=question,target=answer`); {what}: run eval modules "
            f"and folders without {flag}"
        )
    if data is not None and len(named) != 1:
        raise ValueError(f"--data names the rows of one definition; name one file with it (got {len(named)})")
    if data is not None and not data.is_file():
        raise ValueError(f"--data {data} is not a file; pass the items' (or tests') file")
    return Reading(data=data.resolve() if data is not None else None, fields=fields)
