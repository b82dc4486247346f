"""Under `--runs auto` the suite's pass rate is unbiased: a seeded simulation of the rule and the tallies (issue 41).

An eval's later runs are made or not on what its first ones showed (one that missed stops, one that passed goes
on), so a rate over all of an eval's runs is biased low, and pooling runs across evals is biased high (the evals
that passed ran longest). The suite's rate counts each eval's first LOW runs, made whatever they showed, and
weighs every eval the same.
"""

from __future__ import annotations

import math
import random
import statistics

from niceeval._core.results import RunResult
from niceeval._core.summary import EvalTally, PlannedEval
from niceeval.render import suite_rate
from niceeval.stats import AdaptiveRuns, parse_runs

RATES = [1.0] * 12 + [0.97] * 4 + [0.9] * 4 + [0.75] * 4 + [0.5] * 3 + [0.0] * 3
"""Each eval's true pass rate: most always pass, some flake a little, some a lot, a few always fail."""
SUITES = 250


def _results() -> dict[tuple[int, bool], RunResult]:
    return {
        (index, passed): RunResult(
            eval_id="x.py::e", file="x.py", line=1, run_index=index, outcome="passed" if passed else "failed",
            duration_s=0.0,
        )
        for index in range(20)
        for passed in (True, False)
    }  # fmt: skip


def _suite(policy: AdaptiveRuns, rng: random.Random, results: dict[tuple[int, bool], RunResult]) -> list[EvalTally]:
    tallies = []
    for number, rate in enumerate(RATES):
        tally = EvalTally(eval=PlannedEval(id=f"x.py::e{number}", file="x.py", line=1, first_runs=policy.least))
        while policy.wants_more(tally.passing(strict=False), tally.counted, gate=1.0):
            tally.add(results[(tally.done, rng.random() < rate)])
        tallies.append(tally)
    return tallies


def test_the_suite_rate_under_adaptive_repeats_is_unbiased() -> None:
    policy = parse_runs("auto")
    assert isinstance(policy, AdaptiveRuns)
    rng, results = random.Random(41), _results()
    truth = statistics.fmean(RATES)
    ours, over_all_runs, pooled = [], [], []
    for _ in range(SUITES):
        tallies = _suite(policy, rng, results)
        value = suite_rate(tallies, strict=False).value
        assert value is not None
        ours.append(value)
        over_all_runs.append(statistics.fmean(t.passing(strict=False) / t.counted for t in tallies))
        pooled.append(sum(t.passing(strict=False) for t in tallies) / sum(t.counted for t in tallies))
    error = statistics.stdev(ours) / math.sqrt(SUITES)
    assert abs(statistics.fmean(ours) - truth) < 3 * error and error < 0.003
    # what the suite rate would be without the first runs rule, or pooled as before issue 41
    assert statistics.fmean(over_all_runs) - truth < -0.01
    assert statistics.fmean(pooled) - truth > 0.02


def test_an_eval_under_adaptive_repeats_counts_its_first_runs_in_the_suite_rate() -> None:
    results = _results()
    tally = EvalTally(eval=PlannedEval(id="x.py::e", file="x.py", line=1, first_runs=3))
    for index, passed in enumerate([True, True, True, True, False]):
        tally.add(results[(index, passed)])
    assert tally.case_counts(strict=False) == (3, 3) and (tally.passing(strict=False), tally.counted) == (4, 5)
    fixed = EvalTally(eval=PlannedEval(id="x.py::f", file="x.py", line=1))
    for index, passed in enumerate([True, False, True, True]):
        fixed.add(results[(index, passed)])
    assert fixed.case_counts(strict=False) == (3, 4)
    assert suite_rate([tally, fixed], strict=False).value == (1 + 0.75) / 2
