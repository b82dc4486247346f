"""Per-eval records: what the suite plans for an eval (`PlannedEval`) and its running totals (`EvalTally`).

Kept apart from the suite's summary (`summary.py`), which folds tallies (`suite_totals.py`) and re-exports these.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from niceeval._core.events import latencies
from niceeval._core.failure import FailureClass
from niceeval._core.outcome import Outcome
from niceeval._core.passk import pass_at_k, pass_hat_k
from niceeval._core.results import RunResult, Spend


@dataclass(kw_only=True, slots=True)
class PlannedEval:
    """One eval the suite will run, `runs` times (with `--runs LOW..HIGH`, raised as the suite decides to repeat it:
    reporters that wait for an eval's last run see the new count before they see the run)."""

    id: str
    file: str
    line: int
    tags: tuple[str, ...] = ()
    runs: int = 1
    cluster: str | None = None
    """The independent unit for the suite's standard errors (its case unless `define_eval(cluster=...)`); None:
    the eval itself."""
    first_runs: int | None = None
    """With `--runs LOW..HIGH`: LOW, the runs made whatever the eval showed, which the suite's pass rate counts
    (how many more it got depended on what these showed, and would bias its rate); None: every run counts."""


def percentile(values: list[float], quantile: float) -> float | None:
    """The `quantile` of `values` by linear interpolation between the closest ranks (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * quantile
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def latency_text(values: list[float]) -> str:
    """`p50 1.20s p95 2.31s` for turn durations; "" when none was measured."""
    p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
    return "" if p50 is None or p95 is None else f"p50 {p50:.2f}s p95 {p95:.2f}s"


LATENCY_SAMPLE = 1024
"""Turn durations a tally keeps (see `LatencySample`)."""


@dataclass(kw_only=True, slots=True)
class LatencySample:
    """Turn durations for the p50 / p95 the reports show, in bounded memory.

    Every value is kept while there are at most `LATENCY_SAMPLE` (the percentiles are exact, as with a list);
    past that, a uniform random sample of that many (reservoir sampling, Vitter's algorithm R, seeded: the same
    durations in the same order give the same figures). A percentile of 1,024 sampled values has the rank of the
    true one within about 3 points at p50 and 1.3 points at p95, 95 times in 100 (the binomial standard error
    sqrt(q(1-q)/1024): 1.6 and 0.7 points).
    """

    values: list[float] = field(default_factory=list)
    seen: int = 0
    _random: Any = field(default=None, repr=False)

    def extend(self, durations: Iterable[float]) -> None:
        for duration in durations:
            self.seen += 1
            if len(self.values) < LATENCY_SAMPLE:
                self.values.append(duration)
                continue
            if self._random is None:
                import random

                self._random = random.Random(LATENCY_SAMPLE)
            slot = self._random.randrange(self.seen)
            if slot < LATENCY_SAMPLE:
                self.values[slot] = duration


_Packed = tuple[int, int, int, int, int, float | None, int, tuple[str, ...]]
_SPEND_FIELDS = ("calls", "tokens", "input_tokens", "output_tokens", "cache_read_tokens", "cost", "cached")


def _packed(spend: Spend) -> _Packed:
    return (
        spend.calls,
        spend.tokens,
        spend.input_tokens,
        spend.output_tokens,
        spend.cache_read_tokens,
        spend.cost,
        spend.cached,
        tuple(spend.unpriced),
    )


def _unpacked(packed: _Packed) -> Spend:
    *numbers, unpriced = packed
    return Spend.model_validate({**dict(zip(_SPEND_FIELDS, numbers, strict=True)), "unpriced": list(unpriced)})


def _summed(total: _Packed | None, more: _Packed) -> _Packed:
    """`total + more` as `Spend.__add__` adds them (the cost unknown once either is), without a model per sum."""
    if total is None:
        return more
    cost = None if total[5] is None or more[5] is None else total[5] + more[5]
    return (
        total[0] + more[0],
        total[1] + more[1],
        total[2] + more[2],
        total[3] + more[3],
        total[4] + more[4],
        cost,
        total[6] + more[6],
        tuple(dict.fromkeys(total[7] + more[7])),
    )


_NOTHING: _Packed = (0, 0, 0, 0, 0, 0.0, 0, ())


@dataclass(slots=True)
class SpendSum:
    """A running sum of `Spend`s kept as plain numbers, from `Spend()`: adding one builds no model (a suite adds
    one per eval)."""

    _total: _Packed = _NOTHING

    def fold(self, packed: _Packed | None) -> None:
        """Add an eval's packed spend (`EvalTally.spend_into`); None: it spent nothing."""
        if packed is not None:
            self._total = _summed(self._total, packed)

    @property
    def spend(self) -> Spend:
        return _unpacked(self._total)


@dataclass(kw_only=True, slots=True)
class EvalTally:
    """Running totals for one eval across its runs: small and constant in size."""

    eval: PlannedEval
    passed: int = 0
    scored: int = 0
    failed: int = 0
    skipped: int = 0
    """Runs by outcome (`counts` reads them as a dict): four fields, not a dict each (a suite holds a tally per
    eval, and a dict of four counts is larger than the rest of its tally)."""
    total_duration_s: float = 0.0
    inconclusive: int = 0
    unstable: int = 0
    """Sampled judge verdicts their samples did not settle (`AssertionResult.unstable`)."""
    _agent: _Packed | None = field(default=None, repr=False)
    """The agent's spend so far, packed (a `Spend` model is four times the size, and every reporter keeps a tally
    per eval); None until a run of this eval spent something."""
    _judge: _Packed | None = field(default=None, repr=False)
    turns: LatencySample | None = None
    """Each turn's duration over every run, or a bounded sample of them (for the p50 / p95 the reports show); None
    until a run timed a turn (most tallies of a large suite time none: a sample each would double their size)."""
    first_counts: tuple[int, int, int] = (0, 0, 0)
    """With `eval.first_runs`: the passed, scored and counted runs among them."""
    points_possible: float | None = None
    """A score eval's points a run can earn (`define_eval(points=N)`); None for a pass/fail eval."""
    _earned: list[float] | None = field(default=None, repr=False)
    """`points_earned`; None until a run earned points (most tallies never do)."""
    infra: int = 0
    """Runs that failed for `infra` (after their retries): in `counts` as `failed`, left out of the pass rate."""

    @property
    def counts(self) -> Mapping[Outcome, int]:
        """Runs by outcome, read-only (counting goes through `count_run`)."""
        return MappingProxyType(
            {"passed": self.passed, "scored": self.scored, "failed": self.failed, "skipped": self.skipped}
        )

    @property
    def points_earned(self) -> list[float]:
        """A score eval's points earned by each run that was not skipped, in the order they finished."""
        return [] if self._earned is None else self._earned

    @property
    def done(self) -> int:
        return self.passed + self.scored + self.failed + self.skipped

    def count_run(self, outcome: Outcome, failure: FailureClass | None = None, *, run_index: int = 0) -> None:
        """Count one run's outcome (an `infra` failure apart: it is not counted in the pass rate)."""
        if outcome == "passed":
            self.passed += 1
        elif outcome == "scored":
            self.scored += 1
        elif outcome == "failed":
            self.failed += 1
        else:
            self.skipped += 1
        infra = outcome == "failed" and failure == "infra"
        self.infra += infra
        if self.eval.first_runs is not None and run_index < self.eval.first_runs:
            passed, scored, counted = self.first_counts
            self.first_counts = (
                passed + (outcome == "passed"),
                scored + (outcome == "scored"),
                counted + (outcome != "skipped" and not infra),
            )

    def add(self, result: RunResult) -> None:
        outcome = result.outcome
        self.count_run(outcome, result.failure, run_index=result.run_index)
        self.total_duration_s += result.duration_s
        if outcome != "skipped" and result.points is not None:
            self.add_points(result.points, result.points_possible)
        if result.events:
            self.add_turns(latencies(result.events))
        for assertion in result.assertions:  # one pass over a run's assertions (a suite adds one run per eval)
            self.inconclusive += assertion.state == "inconclusive"
            self.unstable += assertion.unstable
        if result.provenance != "executed":  # an experiment's carried attempt: paid for by the run that made it
            return
        if result.agent_spend.calls:
            self._agent = _summed(self._agent, _packed(result.agent_spend))
        if result.judge_spend.calls or result.judge_spend.cached:
            self._judge = _summed(self._judge, _packed(result.judge_spend))

    def add_points(self, earned: float | None, possible: float | None) -> None:
        """Count a non-skipped run's points (nothing for a run of a pass/fail eval)."""
        if earned is not None and possible:
            self.points_possible = possible
            if self._earned is None:
                self._earned = []
            self._earned.append(earned)

    @property
    def agent_spend(self) -> Spend | None:
        """What the agent spent over this eval's runs; None when no run called a model."""
        return None if self._agent is None else _unpacked(self._agent)

    @property
    def judge_spend(self) -> Spend | None:
        """What the judges spent over this eval's runs (calls or cached verdicts); None when none judged."""
        return None if self._judge is None else _unpacked(self._judge)

    def spend_into(self, agent: SpendSum, judge: SpendSum) -> None:
        """Add what the agent and the judges spent over this eval's runs to the suite's sums."""
        agent.fold(self._agent)
        judge.fold(self._judge)

    def passing(self, *, strict: bool) -> int:
        """Runs that count as passes: `passed`, and `scored` unless strict."""
        return self.passed + (0 if strict else self.scored)

    @property
    def counted(self) -> int:
        """Runs the pass rate is taken over: every run that was not skipped and did not fail for `infra`."""
        return self.passed + self.scored + self.failed - self.infra

    def case_counts(self, *, strict: bool) -> tuple[int, int]:
        """`(passes, runs)` as the suite's pass rate counts them: every run, or the first runs (`eval.first_runs`)."""
        if self.eval.first_runs is None:
            return self.passing(strict=strict), self.counted
        passed, scored, counted = self.first_counts
        return passed + (0 if strict else scored), counted

    def pass_rate(self, *, strict: bool) -> float | None:
        """Share of non-skipped runs that count as passes (see `passing`); None if every run was skipped."""
        return self.passing(strict=strict) / self.counted if self.counted else None

    def pass_at_k(self, *, strict: bool) -> dict[int, float]:
        """pass@k for k from 1 to the number of non-skipped runs (empty when every run was skipped)."""
        n, c = self.counted, self.passing(strict=strict)
        return {k: pass_at_k(n, c, k) for k in range(1, n + 1)}

    def pass_hat_k(self, *, strict: bool) -> dict[int, float]:
        """pass^k (all k sampled runs pass) for k from 1 to the number of non-skipped runs."""
        n, c = self.counted, self.passing(strict=strict)
        return {k: pass_hat_k(n, c, k) for k in range(1, n + 1)}

    @property
    def points_fractions(self) -> list[float]:
        """Each counted run's points earned as a share of the points possible (empty for a pass/fail eval)."""
        possible = self.points_possible
        return [earned / possible for earned in self.points_earned] if possible else []

    def add_turns(self, durations: list[float]) -> None:
        """Count turn durations (kept in the tally's `LatencySample`)."""
        if durations:
            if self.turns is None:
                self.turns = LatencySample()
            self.turns.extend(durations)

    @property
    def latencies(self) -> list[float]:
        """The turn durations the percentiles are taken over: all of them, or a sample (`LatencySample`)."""
        return [] if self.turns is None else self.turns.values

    @property
    def mean_duration_s(self) -> float:
        return self.total_duration_s / self.done if self.done else 0.0

    def latency(self, quantile: float) -> float | None:
        """The turn duration at `quantile` (0.5: p50, 0.95: p95) over every run; None when no turn was measured."""
        return percentile(self.latencies, quantile)

    def status(self, *, strict: bool, min_pass_rate: float, min_pass_at_k: tuple[int, float] | None = None) -> Outcome:
        """The eval's verdict over all its runs: one rule, read by every reporter and by the exit code.

        A run counts as a pass when its outcome is `passed`, or `scored` without `--strict`. Then:

        - `skipped`: every run was skipped (or none has finished);
        - `failed` too when no run is counted because every one that was not skipped failed for `infra`: an outage
          measures nothing, and never lets the suite pass;
        - `failed`: the pass rate is under `min_pass_rate` (1.0 unless `--min-pass-rate`: every run must pass),
          or pass@k is under the rate of `min_pass_at_k` (`(k, rate)`, `--min-pass-at-k K:RATE`);
        - `scored`: the rate is met, but some run was not a clean `passed` (a soft miss, or a failure the pass
          rate tolerates);
        - `passed`: every run that was not skipped passed.

        Only `failed` fails the suite, so the status shown is always the verdict the exit code acts on.
        """
        counted = self.counted  # read once: a suite asks each eval's status a few times
        if not counted:
            return "failed" if self.infra else "skipped"
        passing = self.passing(strict=strict)
        if passing / counted + 1e-9 < min_pass_rate:
            return "failed"
        if min_pass_at_k is not None:
            k, wanted = min_pass_at_k
            if pass_at_k(counted, passing, min(k, counted)) + 1e-9 < wanted:
                return "failed"
        return "passed" if self.passed == counted else "scored"

    def succeeded(self, *, strict: bool, min_pass_rate: float, min_pass_at_k: tuple[int, float] | None = None) -> bool:
        """Whether this eval lets the suite pass (its status is not `failed`)."""
        return self.status(strict=strict, min_pass_rate=min_pass_rate, min_pass_at_k=min_pass_at_k) != "failed"


def points_by_cluster(tallies: Iterable[EvalTally]) -> list[tuple[float, float]]:
    """Score evals' runs as `(sum of shares of points possible, runs)` per cluster (a case, or `cluster=`): what
    the suite's mean points and its clustered interval are computed from."""
    sums: dict[str, tuple[float, float]] = {}
    for tally in tallies:
        fractions = tally.points_fractions
        if fractions:
            key = tally.eval.cluster or tally.eval.id
            total, count = sums.get(key, (0.0, 0.0))
            sums[key] = (total + math.fsum(fractions), count + len(fractions))
    return list(sums.values())
