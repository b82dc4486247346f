"""Suite-level gates: `--min-suite-pass-rate R` (over cases), `--min-mean NAME=R` (an assertion's mean score) and
`--min-mean-points R` (score evals' mean share of their points).

Runs that failed for `infra` are left out (`EvalTally.counted`), and so is a case with no other run.

Next to the per-eval rules (`--min-pass-rate` over an eval's runs), these judge the suite as a whole, as a
promptfoo or pydantic-evals user expects ("90% of the cases pass", "the mean helpfulness is at least 0.8"). With
`--min-suite-pass-rate` a failing case no longer fails the suite by itself: the rate over cases decides. Each
verdict is reported with its interval (`niceeval.stats`): Wilson over cases for the pass rate (clustered when
`cluster=` groups them), a clustered mean (runs of one case form a cluster) for a mean. The gate compares the
point estimate; the interval says how sure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from niceeval._core.assertion import assertion_kind
from niceeval._core.errors import UsageError
from niceeval._core.results import RunResult
from niceeval._core.summary import PlannedEval, Problem, SuiteSummary
from niceeval.render import folded_case_rate, folded_points
from niceeval.stats import Estimate, clustered_mean


@dataclass(frozen=True, kw_only=True, slots=True)
class SuiteGates:
    """The suite-level gates asked for (command line over config)."""

    min_pass_rate: float | None = None
    """Over cases: the share of planned evals (case x variant) whose verdict is not `failed`."""
    min_means: tuple[tuple[str, float], ...] = ()
    """`(name, threshold)`: the mean score of the assertions with that name, or that kind (`rubric`)."""
    min_mean_points: float | None = None
    """The least mean share of points possible over the score evals' runs (`--min-mean-points R`)."""

    @property
    def active(self) -> bool:
        return self.min_pass_rate is not None or bool(self.min_means) or self.min_mean_points is not None


def parse_min_mean(text: str) -> tuple[str, float]:
    """`NAME=R`: an assertion name or kind, and a threshold in [0, 1]."""
    name, sep, value = text.rpartition("=")
    try:
        threshold = float(value)
    except ValueError:
        threshold = -1.0
    if not sep or not name.strip() or not 0.0 <= threshold <= 1.0:
        raise UsageError(
            f"--min-mean takes NAME=R, an assertion name or kind and a mean score in [0, 1] "
            f"(e.g. rubric=0.8 or helpful=0.75), got {text!r}"
        )
    return name.strip(), threshold


@dataclass(frozen=True, kw_only=True, slots=True)
class GateVerdict:
    """One suite gate's outcome."""

    name: str
    estimate: Estimate
    threshold: float
    passed: bool

    def describe(self) -> str:
        verdict = "met" if self.passed else "MISSED"
        if self.estimate.value is None:
            return f"{self.name}: {self.estimate.note or 'nothing to measure'} (needs >= {self.threshold:g}): {verdict}"
        return f"{self.name} {self.estimate} {'>=' if self.passed else '<'} {self.threshold:g}: {verdict}"


@dataclass(kw_only=True)
class GateCollector:
    """A reporter that gathers what the suite gates need: the score of each gated assertion, by case."""

    gates: SuiteGates
    _clusters: dict[str, str] = field(default_factory=dict)
    _scores: dict[str, tuple[list[float], list[str]]] = field(default_factory=dict)
    verdicts: list[GateVerdict] = field(default_factory=list)

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        if self.gates.min_means:  # only a mean's gate reads an eval's cluster (a dict per eval otherwise idle)
            self._clusters = {p.id: p.cluster or p.id for p in plan}

    def run_finished(self, result: RunResult) -> None:
        for name, _ in self.gates.min_means:
            values, clusters = self._scores.setdefault(name, ([], []))
            for assertion in result.assertions:
                if assertion.score is not None and name in (assertion.name, assertion_kind(assertion.name)):
                    values.append(assertion.score)
                    clusters.append(self._clusters.get(result.eval_id, result.eval_id))

    def finish(self, summary: SuiteSummary) -> None:
        self.verdicts = []
        if self.gates.min_pass_rate is not None:
            # a case whose every run failed for infra measured nothing: left out, as its runs are from its rate
            estimate = folded_case_rate(summary.totals)
            wanted = self.gates.min_pass_rate
            passed = estimate.value is not None and estimate.value + 1e-9 >= wanted
            verdict = GateVerdict(name="suite pass rate", estimate=estimate, threshold=wanted, passed=passed)
            self.verdicts.append(verdict)
        for name, threshold in self.gates.min_means:
            values, clusters = self._scores.get(name, ([], []))
            if values:
                estimate = clustered_mean(values, clusters, bounds=(0.0, 1.0))
            else:
                estimate = Estimate(value=None, note=f"no assertion named {name!r} has a score")
            passed = estimate.value is not None and estimate.value + 1e-9 >= threshold
            verdict = GateVerdict(name=f"mean {name}", estimate=estimate, threshold=threshold, passed=passed)
            self.verdicts.append(verdict)
        if self.gates.min_mean_points is not None:
            self.verdicts.append(_points_verdict(summary, self.gates.min_mean_points))


def _points_verdict(summary: SuiteSummary, threshold: float) -> GateVerdict:
    """`--min-mean-points R`: the score evals' mean share of their points, clustered by case, against R."""
    estimate = folded_points(summary.totals)
    if estimate.value is None:
        estimate = Estimate(value=None, note="no score eval ran (define_eval(points=N))")
    passed = estimate.value is not None and estimate.value + 1e-9 >= threshold
    return GateVerdict(name="mean points", estimate=estimate, threshold=threshold, passed=passed)


def gated_exit_code(summary: SuiteSummary, gates: SuiteGates, verdicts: Sequence[GateVerdict]) -> int:
    """The exit code with the suite gates: with `--min-suite-pass-rate` the rate over cases replaces the
    every-eval rule; a missed gate exits 1; problems (2) and interrupts (130) win as always."""
    code = summary.exit_code
    if code in (2, 130) or not gates.active:
        return code
    missed = any(not v.passed for v in verdicts)
    if gates.min_pass_rate is not None:
        return 1 if missed or summary.stopped is not None else 0
    return 1 if missed else code
