"""Comparing two suite runs: both judged by one verdict rule, changes weighed against noise, and what the change
costs.

Each side's evals are tallied from the stored runs and judged by one rule (the head's `--strict` and
`--min-pass-rate`, or the one given), so a flip caused only by a rule change is never reported. The pass counts
and each case's mean score per assertion go to `niceeval.stats.compare_runs`: Fisher's exact test per eval and a
paired t test per scored assertion, with Benjamini-Hochberg q-values across both, and a paired test of the suite
over the shared evals. scipy is imported there, only when two runs are compared. Cost and latency are weighed in
`_costs`; the verdict line weighs every measure at once (`niceeval.stats.verdict`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import Connection, select

from niceeval._core.assertion import assertion_kind
from niceeval._core.errors import ConfigError
from niceeval._core.outcome import Outcome
from niceeval.stats import Dimension
from niceeval.store._costs import UsageLimits, case_usage, weigh_usage
from niceeval.store._kept_sums import CountRow, ScoreSums, kept_counts, score_sums
from niceeval.store._models import (
    MeanScoreChange,
    OutcomeChange,
    RunDiff,
    RunDifference,
    ScoreChange,
    SuiteChange,
)
from niceeval.store._schema import assertions, eval_runs, judge_calls, suite_evals, suite_runs, suite_tallies
from niceeval.store._tallies import Counts
from niceeval.store._verdicts import tallies

if TYPE_CHECKING:
    from niceeval.stats import Comparison, RunComparison

_RANK: dict[Outcome, int] = {"failed": 0, "scored": 1, "passed": 2}
CaseScores = dict[str, dict[str, float]]
"""Per assertion, per eval (a case): the eval's mean score."""


@dataclass(frozen=True, kw_only=True)
class DiffOptions:
    """How `niceeval diff` weighs two runs."""

    threshold: float = 0.1
    """Score moves up to this are not listed."""
    strict: bool | None = None
    """The verdict rule for both sides; None: the head's."""
    min_pass_rate: float | None = None
    alpha: float = 0.05
    max_drop: float | None = None
    max_cost_increase: float | None = None
    """Fail when cost per eval run rose by more than this fraction (0.1: 10%) even at its interval's low end."""
    max_latency_increase: float | None = None
    """Fail when p50 or p95 turn latency rose by more than this fraction even at its interval's low end."""


def run_counts(conn: Connection, suite_run_id: str) -> dict[str, Counts]:
    """Each eval's counts in a suite run: its kept tallies when it closed, else folded from its eval runs."""
    return {eval_id: Counts(*row) for eval_id, row in count_rows(conn, suite_run_id).items()}


def count_rows(conn: Connection, suite_run_id: str) -> dict[str, CountRow]:
    """`run_counts` as plain tuples (`diff` builds a `Counts` only for the evals whose runs ended otherwise)."""
    kept = kept_counts(conn, suite_run_id)
    if kept is not None:
        return kept
    plan = select(suite_evals.c.eval_id, suite_evals.c.runs, suite_evals.c.cluster).where(
        suite_evals.c.suite_run_id == suite_run_id
    )
    outcomes = select(eval_runs.c.eval_id, eval_runs.c.outcome, eval_runs.c.failure_class).where(
        eval_runs.c.suite_run_id == suite_run_id
    )
    return {
        eval_id: (
            t.counts["passed"],
            t.counts["scored"],
            t.counts["failed"],
            t.counts["skipped"],
            t.counted,
            t.eval.cluster,
        )
        for eval_id, t in tallies(conn.execute(plan), conn.execute(outcomes)).items()
    }


class _Identities(dict[tuple[str | None, str], tuple[str, str]]):
    """An assertion's two identities by its (key, name): by key or name (`[id]`, or its label: renaming the label of
    a keyed assertion keeps its history), and by key or kind (`similarity('Paris')` and `similarity('Rome')` are
    one). A suite repeats a few assertions over every eval: each is worked out once."""

    def __missing__(self, found: tuple[str | None, str]) -> tuple[str, str]:
        key, name = found
        self[found] = identities = (f"[{key}]", f"[{key}]") if key is not None else (name, assertion_kind(name))
        return identities


def _scores(sums: ScoreSums, identities: _Identities) -> dict[tuple[str, str], float]:
    """Per eval and assertion by key or name: its mean score."""
    means = {(eval_id, identities[key, name][0]): total / n for eval_id, key, name, total, n, _ in sums}
    if len(means) == len(sums):  # each eval's assertion on one row (no label renamed under one key): none to merge
        return means
    totals: dict[tuple[str, str], list[float]] = {}
    for eval_id, key, name, total, n, _ in sums:
        identity = (eval_id, identities[key, name][0])
        found = totals.get(identity)
        if found is None:
            totals[identity] = [total, n]
        else:
            found[0] += total
            found[1] += n
    return {identity: total / n for identity, (total, n) in totals.items()}


def case_scores(conn: Connection, suite_run_id: str) -> tuple[CaseScores, set[str]]:
    """Per assertion (its `[key]`, else its kind: `similarity('Paris')` and `similarity('Rome')` are one), per
    eval: the mean of its scores over the eval's runs (inconclusive verdicts have no score and are left out); and
    which assertions are graded: soft, or scoring between 0 and 1 at least once."""
    sums, identities = score_sums(conn, suite_run_id), _Identities()
    graded = _graded(sums, identities)
    return _case_scores(sums, identities, None), graded


def _graded(sums: ScoreSums, identities: _Identities) -> set[str]:
    """The assertions (by key or kind) graded on this side: soft, or scoring between 0 and 1 at least once."""
    return {identities[key, name][1] for _, key, name, _, _, soft in sums if soft}


def _case_scores(sums: ScoreSums, identities: _Identities, kept: set[str] | None) -> CaseScores:
    """Per assertion by key or kind (only the `kept` ones; None: all), per eval: its mean score."""
    totals: dict[str, dict[str, list[float]]] = {}
    for eval_id, key, name, total, n, _ in sums:
        identity = identities[key, name][1]
        if kept is not None and identity not in kept:
            continue
        cases = totals.get(identity)
        if cases is None:
            cases = totals[identity] = {}
        found = cases.get(eval_id)
        if found is None:
            cases[eval_id] = [total, n]
        else:
            found[0] += total
            found[1] += n
    return {name: {e: s / n for e, (s, n) in cases.items()} for name, cases in totals.items()}


@dataclass(frozen=True, kw_only=True)
class _SideScores:
    """One side's scores: per eval and assertion by key or name its mean (`_scores`), per assertion by key or kind
    its cases' means (`_case_scores`), and the assertions graded on this side (`_graded`)."""

    by_name: dict[tuple[str, str], float]
    by_kind: CaseScores
    graded: set[str]


def _side_scores(sums: ScoreSums, identities: _Identities) -> _SideScores:
    """`_scores`, `_case_scores` and `_graded` of one side in one pass over its rows, when no eval has two rows of
    one identity (no label renamed under one key, no two `similarity(...)` of one eval); else each on its own."""
    by_name: dict[tuple[str, str], float] = {}
    by_kind: CaseScores = {}
    graded: set[str] = set()
    for eval_id, key, name, total, n, soft in sums:
        named, kind = identities[key, name]
        mean = total / n
        by_name[eval_id, named] = mean
        cases = by_kind.get(kind)
        if cases is None:
            cases = by_kind[kind] = {}
        cases[eval_id] = mean
        if soft:
            graded.add(kind)
    if len(by_name) < len(sums) or sum(map(len, by_kind.values())) < len(sums):  # rows to merge: sum them first
        return _SideScores(
            by_name=_scores(sums, identities), by_kind=_case_scores(sums, identities, None), graded=graded
        )
    return _SideScores(by_name=by_name, by_kind=by_kind, graded=graded)


def _graded_scores(before: _SideScores, after: _SideScores) -> tuple[CaseScores, CaseScores]:
    """Both sides' case scores of the graded assertions. An assertion that is only ever a gate scoring 0 or 1
    (`includes`) on both sides is left out: its score is its eval's pass or fail, which the tests of pass rates
    weigh already."""
    graded = before.graded | after.graded
    return (
        {kind: cases for kind, cases in before.by_kind.items() if kind in graded},
        {kind: cases for kind, cases in after.by_kind.items() if kind in graded},
    )


def _score_changes(before: _SideScores, after: _SideScores, threshold: float) -> list[ScoreChange]:
    """Each eval's assertions (by key or name) whose mean score moved by more than `threshold`, by eval and name."""
    old = before.by_name
    moved = [
        ScoreChange(eval_id=identity[0], assertion=identity[1], base=base, head=head)
        for identity, head in after.by_name.items()
        if (base := old.get(identity)) is not None and abs(head - base) > threshold + 1e-9
    ]
    return sorted(moved, key=lambda change: (change.eval_id, change.assertion))


def diff(conn: Connection, base: str, head: str, options: DiffOptions) -> RunDiff:
    """What changed from suite run `base` to `head`; ConfigError for a run compared with itself or with no eval
    in common."""
    from niceeval.stats import compare_runs, verdict

    if base == head:
        raise ConfigError(f"diff compares two different suite runs; both name {base}. Pick another BASE.")
    row = conn.execute(select(suite_runs.c.strict, suite_runs.c.min_pass_rate).where(suite_runs.c.id == head)).one()
    strict = row.strict if options.strict is None else options.strict
    min_pass_rate = row.min_pass_rate if options.min_pass_rate is None else options.min_pass_rate
    before, after = count_rows(conn, base), count_rows(conn, head)
    identities = _Identities()
    scores_before = _side_scores(score_sums(conn, base), identities)
    scores_after = _side_scores(score_sums(conn, head), identities)
    clusters = _clusters(before, after)
    moved = _moved(before, after)
    try:
        gate = compare_runs(
            _tables(before, strict=strict),
            _tables(after, strict=strict),
            alpha=options.alpha,
            max_drop=options.max_drop,
            clusters=clusters,
            scores=_graded_scores(scores_before, scores_after),
            listed=moved,
        )
    except ValueError as exc:
        raise ConfigError(f"runs {base} and {head} cannot be compared: {exc}.") from None
    usage = weigh_usage(
        case_usage(conn, base, strict=strict),
        case_usage(conn, head, strict=strict),
        clusters=clusters,
        limits=UsageLimits(
            max_cost_increase=options.max_cost_increase, max_latency_increase=options.max_latency_increase
        ),
    )
    scores = _score_changes(scores_before, scores_after, options.threshold)
    mean_scores = _mean_score_changes(gate, options.max_drop)
    judged = verdict([*_quality(gate.suite, mean_scores), *usage.dimensions])
    return RunDiff(
        base=base, head=head, threshold=options.threshold, strict=strict, min_pass_rate=min_pass_rate,
        alpha=options.alpha, max_drop=options.max_drop,
        changed=_outcome_changes(gate, moved, strict=strict, min_pass_rate=min_pass_rate),
        new=sorted(after.keys() - before.keys()), gone=sorted(before.keys() - after.keys()), scores=scores,
        mean_scores=mean_scores, suite=_suite_change(gate), differences=_differences(conn, base, head),
        reasons=gate.reasons + usage.reasons, max_cost_increase=options.max_cost_increase,
        max_latency_increase=options.max_latency_increase, usage=usage.changes, usage_notes=usage.notes,
        verdict=judged.kind, verdict_line=judged.text,
    )  # fmt: skip


def _tables(counts: dict[str, CountRow], *, strict: bool) -> dict[str, tuple[int, int]]:
    """Each eval's passing and counted runs (`Counts.passing`, `Counts.counted`), as `compare_runs` weighs them."""
    if strict:
        return {e: (passed, counted) for e, (passed, _, _, _, counted, _) in counts.items()}
    return {e: (passed + scored, counted) for e, (passed, scored, _, _, counted, _) in counts.items()}


def _moved(before: dict[str, CountRow], after: dict[str, CountRow]) -> dict[str, tuple[Counts, Counts]]:
    """The shared evals whose runs ended otherwise on the two sides, with their counts: the only ones whose verdict
    or pass rate can have changed; the others weigh in the suite test and the q-values unlisted."""
    return {
        e: (Counts(*old), Counts(*new))
        for e, new in after.items()
        if (old := before.get(e)) is not None and old[:5] != new[:5]
    }


def _outcome_changes(
    gate: RunComparison, moved: dict[str, tuple[Counts, Counts]], *, strict: bool, min_pass_rate: float
) -> list[OutcomeChange]:
    """The evals whose verdict changed, or whose pass rate changed beyond noise, strongest evidence first (an eval
    whose runs ended alike on both sides has neither: its verdict is only judged when they did not)."""
    changed = []
    for change in gate.evals:
        old_counts, new_counts = moved[change.eval_id]
        old = old_counts.tally(change.eval_id).status(strict=strict, min_pass_rate=min_pass_rate)
        new = new_counts.tally(change.eval_id).status(strict=strict, min_pass_rate=min_pass_rate)
        if old == new and change.change != "regression" and change.change != "improvement":
            continue
        comparison = change.comparison
        changed.append(
            OutcomeChange(
                eval_id=change.eval_id, base=old, head=new, regressed=change.change == "regression",
                worse=old in _RANK and new in _RANK and _RANK[new] < _RANK[old],
                base_passes=change.before[0], base_runs=change.before[1],
                head_passes=change.after[0], head_runs=change.after[1],
                p_value=comparison.p_value, q_value=change.q_value, evidence=str(comparison), change=change.change,
            )
        )  # fmt: skip
    return changed


def _mean_score_changes(gate: RunComparison, max_drop: float | None) -> list[MeanScoreChange]:
    return [
        MeanScoreChange(
            assertion=t.assertion, cases=t.cases, clusters=t.comparison.n, base_mean=t.before, head_mean=t.after,
            difference=t.comparison.difference, low=t.comparison.low, high=t.comparison.high,
            p_value=t.comparison.p_value, q_value=t.q_value, note=t.comparison.note, evidence=str(t.comparison),
            change=t.change, regressed=t.change == "regression" or t.dropped_past(max_drop),
        )
        for t in gate.scores
    ]  # fmt: skip


def _suite_change(gate: RunComparison) -> SuiteChange:
    suite = gate.suite
    return SuiteChange(
        test=suite.test, cases=gate.shared, clusters=suite.n, base_rate=gate.before_rate.value,
        head_rate=gate.after_rate.value, difference=suite.difference, low=suite.low, high=suite.high,
        p_value=suite.p_value, note=suite.note, evidence=str(suite), unchanged=suite.unchanged,
    )  # fmt: skip


def _quality(suite: Comparison, mean_scores: list[MeanScoreChange]) -> list[Dimension]:
    """The pass rate and each graded assertion's mean score, as the verdict weighs them."""
    dimensions = []
    if suite.difference is not None:
        points = f"{suite.difference * 100:+.0f} pts"
        if suite.low is not None and suite.high is not None:
            points += f", 95% CI {suite.low * 100:+.0f} to {suite.high * 100:+.0f} pts"
        dimensions.append(Dimension(
            name="pass rate", low=suite.low, high=suite.high, worse_when="down", shown=points,
            unchanged=suite.unchanged,
        ))  # fmt: skip
    for score in mean_scores:
        if score.difference is None:
            continue
        shown = f"{score.difference:+.2f}"
        if score.low is not None and score.high is not None:
            shown += f", 95% CI {score.low:+.2f} to {score.high:+.2f}"
        name = f"mean score {score.assertion}"
        dimensions.append(Dimension(name=name, low=score.low, high=score.high, worse_when="down", shown=shown))
    return dimensions


def _clusters(before: dict[str, CountRow], after: dict[str, CountRow]) -> dict[str, str] | None:
    """The head's cluster of each shared eval, when both runs recorded one for every shared eval (suite runs stored
    before clusters were have none: their evals are then paired one by one, as independent cases)."""
    shared = before.keys() & after.keys()
    if any(before[e][5] is None or after[e][5] is None for e in shared):
        return None
    return {e: str(after[e][5]) for e in shared}


def _differences(conn: Connection, base: str, head: str) -> list[RunDifference]:
    """What differed between the runs besides the code: flags, config, commit, niceeval version, judge models."""
    columns = (
        suite_runs.c.command, suite_runs.c.config_digest, suite_runs.c.git_commit, suite_runs.c.git_dirty,
        suite_runs.c.niceeval_version, suite_runs.c.strict, suite_runs.c.min_pass_rate,
    )  # fmt: skip
    rows = {r.id: r for r in conn.execute(select(suite_runs.c.id, *columns).where(suite_runs.c.id.in_([base, head])))}
    old, new = rows[base], rows[head]
    pairs = {
        "flags": (" ".join(old.command[1:]), " ".join(new.command[1:])),
        "verdict rule": (_rule(old.strict, old.min_pass_rate), _rule(new.strict, new.min_pass_rate)),
        "config digest": ((old.config_digest or "none")[:12], (new.config_digest or "none")[:12]),
        "commit": (_commit(old.git_commit, old.git_dirty), _commit(new.git_commit, new.git_dirty)),
        "niceeval version": (old.niceeval_version, new.niceeval_version),
        "judge models": (_judge_models(conn, base), _judge_models(conn, head)),
    }
    return [RunDifference(what=what, base=b, head=h) for what, (b, h) in pairs.items() if b != h]


def _rule(strict: bool, min_pass_rate: float) -> str:
    return f"{'--strict ' if strict else ''}--min-pass-rate {min_pass_rate:g}"


def _commit(commit: str | None, dirty: bool | None) -> str:
    return "unknown" if commit is None else commit[:12] + (" (uncommitted changes)" if dirty else "")


def _judge_models(conn: Connection, suite_run_id: str) -> str:
    """The judge models a suite run called, sorted: from its kept tally's judging once closed (one row), else from
    its judge calls."""
    judging = conn.execute(
        select(suite_tallies.c.judging).where(suite_tallies.c.suite_run_id == suite_run_id)
    ).scalar_one_or_none()
    if judging is not None:
        return ", ".join(sorted(str(model) for model, *_ in judging["models"])) or "none"
    query = (
        select(judge_calls.c.model)
        .distinct()
        .join(assertions, judge_calls.c.assertion_id == assertions.c.id)
        .join(eval_runs, assertions.c.eval_run_id == eval_runs.c.id)
        .where(eval_runs.c.suite_run_id == suite_run_id)
    )
    return ", ".join(sorted(str(model) for (model,) in conn.execute(query))) or "none"
