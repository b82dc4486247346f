"""`niceeval judge compare RUN --judge MODEL`: what moving to another judge model would change, measured on a
stored suite run before the move.

Only argparse is imported at module level (`niceeval --help` stays fast).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from niceeval._core.wording import share, share_range
from niceeval.cli._common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    add_concurrency_flag,
    add_config_flag,
    add_selection_flags,
    add_store_flag,
    open_existing_store,
    project_config,
    rate,
)

if TYPE_CHECKING:
    from niceeval._core.summary import SuiteSummary
    from niceeval._eval.config import Config
    from niceeval._run.discovery import Discovery
    from niceeval._run.judge_swap import AssertionAgreement, JudgeComparison, LabelAgreement
    from niceeval.stats import Agreement
    from niceeval.store import Store


def add_judge_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`niceeval judge compare RUN --judge MODEL [--min-agreement RATE] [--json]`."""
    judge = commands.add_parser("judge", help="measure the judges: a stored run's judge against another model")
    actions = judge.add_subparsers(dest="judge_command", metavar="COMMAND", required=True)
    compare = actions.add_parser(
        "compare",
        help="rescore a stored suite run's judge assertions under another judge model (the agent is not called) "
        "and report per assertion the verdicts' agreement, Cohen's kappa, the flips each way and the change in "
        "mean score; with labelled cases, each judge's agreement with the labels",
    )
    compare.add_argument("run", metavar="RUN", help="suite run id (a unique prefix is enough), or `latest`")
    compare.add_argument("--judge", required=True, metavar="MODEL", help="the new judge model (provider/model)")
    compare.add_argument(
        "--min-agreement", type=rate("--min-agreement"), metavar="RATE",
        help="exit 1 when the verdicts of a judge assertion agree less often than RATE (0-1) across the two judges",
    )  # fmt: skip
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    compare.add_argument("paths", nargs="*", help="eval files or folders (default: config `evals`)")
    add_selection_flags(compare, tags=False)
    add_concurrency_flag(compare)
    compare.add_argument("--no-cache", action="store_true", help="always call the new judge (no verdict cache)")
    add_config_flag(compare)
    add_store_flag(compare)
    compare.set_defaults(handler=_compare)


def _compare(args: argparse.Namespace) -> int:
    """Rescore RUN under the new judge into a new suite run, then weigh the two judges' verdicts.

    Exit 0, 1 when `--min-agreement` fails, 2 for a usage or load problem (or no judge verdict to compare).
    """
    from niceeval.cli._calibrate import labelled_cases

    config = project_config(args)
    discovery = _evals(config, args)
    with open_existing_store(args) as store:
        run_id = store.resolve(args.run)
        _, labels = labelled_cases(discovery.evals, None)
        print(
            f"niceeval: rescoring suite run {run_id} under judge {args.judge} (the agent is not called)",
            file=sys.stderr,
        )
        rescore_id, summary = _rescore(store, config, args, discovery, run_id)
        comparison = _weigh(store, args, run_id, rescore_id, {e: label.expected for e, label in labels.items()})
    for problem in summary.problems:
        print(f"ERROR {problem.location}: {problem.message}", file=sys.stderr)
    if not comparison.every.agreement.items and not comparison.every.inconclusive:
        print(f"niceeval: suite run {run_id} has no judge verdict the rescore could pair: nothing to compare.",
              file=sys.stderr)  # fmt: skip
        return EXIT_USAGE
    if args.json:
        print(json.dumps(comparison.describe(), indent=2))
    else:
        for line in comparison_lines(comparison):
            print(line)
    if summary.problems:
        return EXIT_USAGE
    return EXIT_FAILED if comparison.reasons else EXIT_OK


def _evals(config: Config, args: argparse.Namespace) -> Discovery:
    """The evals the project defines now, as `niceeval rescore` finds them."""
    from niceeval._run.plan import expand
    from niceeval._run.suite import select
    from niceeval.cli._cases import discover_with_cases

    discovery = discover_with_cases(config, args)
    plan = expand(discovery.evals, root=config.root, suite_variants=config.variants)
    discovery.evals = list(select(plan.evals, keyword=args.keyword))
    discovery.errors.extend(plan.errors)
    return discovery


def _rescore(
    store: Store, config: Config, args: argparse.Namespace, discovery: Discovery, run_id: str
) -> tuple[str, SuiteSummary]:
    """`niceeval rescore RUN --grader MODEL`, quietly: the new suite run's id and its summary."""
    import anyio

    from niceeval._eval.config import CONFIG_FILE
    from niceeval._run.execute import ExecOptions
    from niceeval._run.rescore import plan_rescore
    from niceeval._run.storing import suite_start
    from niceeval._run.suite import SuiteOptions, run_suite
    from niceeval.store._recorder import Recorder

    info = store.run(run_id).run
    config_file = args.config.resolve() if args.config else config.root / CONFIG_FILE
    start = suite_start(config.root, config_file, strict=info.strict, min_pass_rate=info.min_pass_rate)
    stored = plan_rescore(Recorder.of(store), start, discovery.evals, run_id)
    for note in stored.notes:
        print(f"niceeval: {note}", file=sys.stderr)
    options = SuiteOptions(
        runs=stored.runs,
        concurrency=args.concurrency or config.concurrency,
        strict=info.strict,
        min_pass_rate=info.min_pass_rate,
        exec=ExecOptions(
            timeout=config.timeout,
            agent=config.agent,
            pricing=config.pricing,
            root=config.root,
            sandbox=config.sandbox,
            judge=config.judge,
            grader=args.judge,
            no_cache=args.no_cache,
            agent_for_run=stored.agent_for_run,
        ),  # fmt: skip
        done=stored.done,
    )
    try:
        summary = anyio.run(run_suite, stored.entries, discovery.errors, options, [stored.sink])
    finally:
        stored.sink.close()
    return stored.sink.run_id, summary


def _weigh(
    store: Store, args: argparse.Namespace, run_id: str, rescore_id: str, labels: dict[str, str]
) -> JudgeComparison:
    from niceeval._run.judge_swap import compare_judges, pair_verdicts

    rescored = list(store.results(rescore_id))
    pairs = pair_verdicts(store.results(run_id), rescored)
    return compare_judges(
        pairs, run_id=run_id, rescore_id=rescore_id, judge=args.judge, labels=labels, min_agreement=args.min_agreement
    )


def comparison_lines(comparison: JudgeComparison) -> list[str]:
    """`niceeval judge compare` as text: each judge assertion, every one pooled, the labels, the gate."""
    from niceeval._core.text import clean

    stored = ", ".join(comparison.every.before_models) or "no judge"
    lines = [
        f"judge compare: suite run {comparison.run_id} (judged by {clean(stored, 200)}) rescored as "
        f"{comparison.rescore_id} under {clean(comparison.judge, 200)}"
    ]
    rows = comparison.assertions + ([comparison.every] if len(comparison.assertions) > 1 else [])
    lines += [f"  {clean(row.assertion, 200)}: {_assertion_text(row)}" for row in rows]
    if comparison.labels:
        labelled = comparison.labels[0]
        cases = labelled.agreement.items + labelled.inconclusive
        lines.append(f"against the human labels ({cases} labelled verdicts):")
        lines += [f"  {_label_text(row)}" for row in comparison.labels]
    if comparison.reasons:
        lines.append(f"FAILED: {'; '.join(clean(r, 300) for r in comparison.reasons)}")
    elif comparison.min_agreement is not None:
        lines.append(f"every judge assertion agrees at least --min-agreement {comparison.min_agreement:.0%}")
    return lines


def _assertion_text(row: AssertionAgreement) -> str:
    verdicts = row.agreement
    text = f"{_agreement_text(verdicts)}, {verdicts.pass_to_fail} pass->fail, {verdicts.fail_to_pass} fail->pass" + (
        f", {row.inconclusive} inconclusive" if row.inconclusive else ""
    )
    if row.scores is not None and row.before_mean is not None and row.after_mean is not None:
        text += f"; mean score {row.before_mean:.2f} -> {row.after_mean:.2f}, {row.scores}"
    return text


def _label_text(row: LabelAgreement) -> str:
    from niceeval._core.text import clean

    models = ", ".join(row.models) or "no judge"
    inconclusive = f", {row.inconclusive} inconclusive" if row.inconclusive else ""
    return f"{row.judge} judge ({clean(models, 200)}): {_agreement_text(row.agreement)}{inconclusive}"


def _agreement_text(verdicts: Agreement) -> str:
    """`agreement 70% (95% CI 40%-89%) over 10 verdicts, kappa 0.40`."""
    rate = verdicts.rate
    if rate.value is None or rate.low is None or rate.high is None:
        return "no verdict both decided"
    kappa = "n/a (one verdict throughout)" if verdicts.kappa is None else f"{verdicts.kappa:.2f}"
    return (
        f"agreement {share(rate.value)} (95% CI {share_range(rate.low, rate.high)}) over {verdicts.items} verdicts, "
        f"kappa {kappa}"
    )
