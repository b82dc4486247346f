"""The gate between two runs of a suite: which changes are evidence, which are noise.

Input is plain counts: for each eval, `(passes, runs)` on each side, already counted under one verdict rule by
the caller. Each shared eval gets Fisher's exact test on its runs; the suite gets a paired test over the shared
evals (McNemar when every eval ran once on both sides and no cluster groups several, else a paired t test on the
per-eval pass rates, clustered when keys are given). Scores, when given (per scored assertion, each case's mean
score on each side), get a paired t test per assertion over the cases both sides scored. The q-values of
Benjamini-Hochberg control the false discovery rate across the evals' and the scores' tests together. The run
regressed when an eval, a score or the suite dropped significantly at `alpha`, or the suite's pass rate or a mean
score dropped by more than `max_drop`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Mapping
from dataclasses import dataclass, field, replace
from statistics import fmean  # exactly rounded: the same mean on every Python (3.12 changed `sum`)
from typing import Literal

from ._intervals import clustered_rate
from ._results import Comparison, Estimate
from ._significance import benjamini_hochberg, compare_rates, mcnemar, paired_t

Change = Literal["regression", "improvement", "noise", "unchanged"]
Scores = Mapping[str, Mapping[str, float]]
"""Per scored assertion, per case: the case's mean score."""


@dataclass(frozen=True, kw_only=True)
class EvalChange:
    """One shared eval: its passes/runs on each side, the exact test, and its false-discovery-adjusted q-value."""

    eval_id: str
    before: tuple[int, int]
    after: tuple[int, int]
    comparison: Comparison
    q_value: float | None

    @property
    def change(self) -> Change:
        """`regression`/`improvement` when significant after false discovery control, `noise` when the rate moved
        without evidence, `unchanged` when it did not move."""
        if self.comparison.difference == 0:
            return "unchanged"
        if self.q_value is None or self.q_value >= self.comparison.alpha:
            return "noise"
        return "regression" if (self.comparison.difference or 0) < 0 else "improvement"


@dataclass(frozen=True, kw_only=True)
class ScoreTest:
    """One scored assertion over the cases both runs scored: its mean on each side and the paired t test of the
    change in the cases' mean scores, with its false-discovery-adjusted q-value."""

    assertion: str
    cases: int
    """The cases both sides scored (`comparison.n` counts their clusters, the independent units)."""
    before: float
    """The mean over the shared cases of each case's mean score (each case weighs the same)."""
    after: float
    comparison: Comparison
    q_value: float | None

    @property
    def change(self) -> Change:
        """As for an eval: `regression`/`improvement` when significant after false discovery control, `noise`
        when the mean moved without evidence, `unchanged` when it did not move."""
        if self.comparison.difference == 0:
            return "unchanged"
        if self.q_value is None or self.q_value >= self.comparison.alpha:
            return "noise"
        return "regression" if (self.comparison.difference or 0) < 0 else "improvement"

    def dropped_past(self, max_drop: float | None) -> bool:
        """The mean score dropped by more than `max_drop` (absolute, on the 0-1 score scale), significant or not."""
        drop = self.comparison.difference
        return max_drop is not None and drop is not None and -drop > max_drop + 1e-12


@dataclass(frozen=True, kw_only=True)
class RunComparison:
    """Two runs compared: per-eval changes sorted by evidence, the suite's paired test, and the gate's verdict."""

    evals: list[EvalChange]
    """Every shared eval, or the ones `compare_runs` was asked to list (`listed`)."""
    shared: int
    """The evals both runs counted a run of (each in the suite test and the q-values, listed or not)."""
    suite: Comparison
    before_rate: Estimate
    after_rate: Estimate
    alpha: float
    max_drop: float | None
    scores: list[ScoreTest] = field(default_factory=list)
    """One per scored assertion both sides scored, sorted by evidence."""

    @property
    def regressions(self) -> list[EvalChange]:
        return [change for change in self.evals if change.change == "regression"]

    @property
    def noise(self) -> list[EvalChange]:
        return [change for change in self.evals if change.change == "noise"]

    @property
    def reasons(self) -> list[str]:
        """Why the gate fails, in plain words (empty: it passes)."""
        reasons = [
            f"{change.eval_id}: {change.comparison} (q={change.q_value:.3g})"
            for change in self.regressions
            if change.q_value is not None
        ]
        if self.suite.regression:
            reasons.append(f"suite pass rate: {self.suite}")
        drop = self.suite.difference
        if self.max_drop is not None and drop is not None and -drop > self.max_drop + 1e-12:
            reasons.append(f"suite pass rate dropped by {-drop:.3f}, more than --max-drop {self.max_drop:g}")
        for score in self.scores:
            if score.change == "regression" and score.q_value is not None:
                reasons.append(f"score {score.assertion}: {score.comparison} (q={score.q_value:.3g})")
            elif score.dropped_past(self.max_drop):
                fell = -(score.comparison.difference or 0.0)
                reasons.append(
                    f"mean score {score.assertion} dropped by {fell:.3f}, more than --max-drop {self.max_drop:g}"
                )
        return reasons

    @property
    def regressed(self) -> bool:
        return bool(self.reasons)


def compare_runs(
    before: Mapping[str, tuple[int, int]],
    after: Mapping[str, tuple[int, int]],
    *,
    alpha: float = 0.05,
    max_drop: float | None = None,
    clusters: Mapping[str, Hashable] | None = None,
    scores: tuple[Scores, Scores] | None = None,
    listed: Collection[str] | None = None,
) -> RunComparison:
    """Compare the evals two runs share; raises ValueError when they share none (nothing to compare).

    `scores` is `(before, after)`, each `{assertion: {case: mean score}}`; each assertion scored on both sides
    gets a paired t test over the cases it scored on both (clustered like the suite test when `clusters` is given).
    `listed` names the evals to return an `EvalChange` for (None: every shared eval): the others still weigh in
    the suite test and the q-values, so a caller that only shows what changed need not build 100,000 of them.
    """
    shared = sorted(e for e in before.keys() & after.keys() if before[e][1] > 0 and after[e][1] > 0)
    if not shared:
        raise ValueError("the two runs share no eval with a counted run: nothing to compare")
    olds, news = list(map(before.__getitem__, shared)), list(map(after.__getitem__, shared))
    tables = list(zip(olds, news, strict=True))
    # a suite repeats a few count tables: each is tested once, and its pass rates worked out once
    by_table = {table: compare_rates(*table, alpha=alpha) for table in dict.fromkeys(tables)}
    comparisons = list(map(by_table.__getitem__, tables))
    p_values = {table: comparison.p_value for table, comparison in by_table.items()}
    score_tests = _score_tests(scores, clusters, alpha) if scores is not None else []
    q_values = benjamini_hochberg([*map(p_values.__getitem__, tables), *(t.comparison.p_value for t in score_tests)])
    changes = [
        EvalChange(eval_id=e, before=before[e], after=after[e], comparison=c, q_value=q)
        for e, c, q in zip(shared, comparisons, q_values[: len(comparisons)], strict=True)
        if listed is None or e in listed
    ]
    changes.sort(key=_evidence)
    tested = [replace(t, q_value=q) for t, q in zip(score_tests, q_values[len(comparisons) :], strict=True)]
    tested.sort(key=_score_evidence)
    rate = {counts: counts[0] / counts[1] for counts in {*olds, *news}}
    rates_before, rates_after = list(map(rate.__getitem__, olds)), list(map(rate.__getitem__, news))
    keys = [clusters.get(e, e) for e in shared] if clusters is not None else None
    each_its_own = keys is None or len(set(keys)) == len(keys)  # clusters of one eval each change nothing
    if each_its_own and all(old[1] == 1 and new[1] == 1 for old, new in by_table):
        suite = mcnemar([r == 1 for r in rates_before], [r == 1 for r in rates_after], alpha=alpha)
    else:
        suite = paired_t(rates_before, rates_after, keys, alpha=alpha)
    before_rate, after_rate = clustered_rate(olds, keys), clustered_rate(news, keys)
    if suite.test == "paired t" and suite.low is not None and suite.low == suite.high:
        wider = _square_and_add(before_rate, after_rate)
        suite = suite if wider is None else replace(suite, low=wider[0], high=wider[1])
    if suite.low is not None and suite.high is not None:  # a change in pass rate lies within -1..1
        suite = replace(suite, low=max(-1.0, suite.low), high=min(1.0, suite.high))
    return RunComparison(
        evals=changes,
        shared=len(shared),
        suite=suite,
        before_rate=before_rate,
        after_rate=after_rate,
        alpha=alpha,
        max_drop=max_drop,
        scores=tested,
    )


def _square_and_add(before: Estimate, after: Estimate) -> tuple[float, float] | None:
    """The interval of `after - before` from each side's interval (Newcombe's square and add, their correlation
    taken as none): for a paired t test whose differences have no spread (every eval's pass rate the same on both
    sides, or every one moved alike), whose interval has no width however few the evals."""
    p1, l1, u1, p2, l2, u2 = before.value, before.low, before.high, after.value, after.low, after.high
    if p1 is None or l1 is None or u1 is None or p2 is None or l2 is None or u2 is None:
        return None
    return p2 - p1 - math.hypot(p2 - l2, u1 - p1), p2 - p1 + math.hypot(u2 - p2, p1 - l1)


def _score_tests(
    scores: tuple[Scores, Scores], clusters: Mapping[str, Hashable] | None, alpha: float
) -> list[ScoreTest]:
    """A paired t test per assertion scored on both sides, over the cases it scored on both (q-values to come)."""
    before, after = scores
    tests = []
    for assertion in sorted(before.keys() & after.keys()):
        cases = sorted(before[assertion].keys() & after[assertion].keys())
        if not cases:
            continue
        old, new = [before[assertion][c] for c in cases], [after[assertion][c] for c in cases]
        keys = [clusters.get(c, c) for c in cases] if clusters is not None else None
        comparison = paired_t(old, new, keys, alpha=alpha)
        if comparison.low is not None and comparison.high is not None:  # a change in a 0-1 score lies within -1..1
            comparison = replace(comparison, low=max(-1.0, comparison.low), high=min(1.0, comparison.high))
        tests.append(
            ScoreTest(
                assertion=assertion, cases=len(cases), before=fmean(old), after=fmean(new),
                comparison=comparison, q_value=None,
            )
        )  # fmt: skip
    return tests


def _score_evidence(test: ScoreTest) -> tuple[float, float, str]:
    q = test.q_value if test.q_value is not None else 2.0
    return (q, -abs(test.comparison.difference or 0.0), test.assertion)


def _evidence(change: EvalChange) -> tuple[float, float, str]:
    """Strongest evidence first: smallest q-value, then the largest move, then by id."""
    q = change.q_value if change.q_value is not None else 2.0
    return (q, -abs(change.comparison.difference or 0.0), change.eval_id)
