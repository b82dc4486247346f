"""Comparing setups (experiments, or suite runs named by id): each measured on its own with its intervals, each
pair on the cases both ran with the paired tests `niceeval diff` makes, and the Pareto front.

Every setup is judged by one verdict rule (the one given, else the first setup's). On its own, a setup's pass
rate is the suite's (the mean of its cases' rates, Wilson's interval at the effective sample size), each graded
assertion's mean score has a clustered t interval, and cost and latency a bootstrap interval over its cases
(`niceeval.stats.estimate_usage`). A pair is `Store.diff` of the two suite runs (kept once computed, as `niceeval
diff` keeps it): McNemar or a paired t test on the pass rate, a paired t test per mean score, a paired bootstrap of
cost and latency. Its quality (pass rate), cost (per eval run) and latency (p50) decide the dominance
(`niceeval.stats.dominance`); a pass-rate change counts only when its paired test rejects "no change" at alpha as
well (too few shared cases to tell is within noise, whatever the interval).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, select

from niceeval._core.errors import ConfigError
from niceeval._core.wording import share
from niceeval.stats import Dimension, Dominance, Estimate
from niceeval.store._compared import Measured, SetupComparison, SetupPair, SetupSummary
from niceeval.store._costs import amount, case_usage
from niceeval.store._diff import DiffOptions, case_scores, run_counts
from niceeval.store._models import RunDiff, SuiteChange
from niceeval.store._read import resolve
from niceeval.store._schema import suite_runs


@dataclass(frozen=True, kw_only=True)
class CompareOptions:
    """How `niceeval exp compare` judges its setups."""

    strict: bool | None = None
    """The verdict rule for every setup; None: the first setup's."""
    min_pass_rate: float | None = None
    alpha: float = 0.05


@dataclass(frozen=True, kw_only=True)
class Setup:
    """One setup to compare: the name it was asked for by, and the suite run that measures it."""

    name: str
    suite_run_id: str


def resolve_setup(conn: Connection, name: str) -> Setup:
    """The suite run that measures `name`: an experiment's latest finished suite run when `name` is an experiment
    id, else the suite run `name` names (an id, a unique prefix, or `latest`)."""
    runs = conn.execute(
        select(suite_runs.c.id, suite_runs.c.status)
        .where(suite_runs.c.experiment == name)
        .order_by(suite_runs.c.started_at.desc(), suite_runs.c.id)
    ).all()
    if not runs:
        return Setup(name=name, suite_run_id=resolve(conn, name))
    finished = next((run_id for run_id, status in runs if status == "finished"), None)
    if finished is None:
        raise ConfigError(
            f"experiment {name} has no finished suite run yet (its latest, {runs[0].id}, is {runs[0].status}); "
            f"run it to the end, or name one of its suite runs by id."
        )
    return Setup(name=name, suite_run_id=finished)


@dataclass(frozen=True, kw_only=True)
class MeasuredSetups:
    """The setups to compare, each measured on its own, and the verdict rule that judges them all."""

    setups: Sequence[Setup]
    summaries: dict[str, SetupSummary]
    strict: bool
    min_pass_rate: float
    alpha: float


DiffOf = Callable[[str, str, DiffOptions], RunDiff]
"""The diff of two suite runs (`Store.diff`: a closed pair's is kept and read back)."""


def measure_setups(conn: Connection, setups: Sequence[Setup], options: CompareOptions) -> MeasuredSetups:
    """Each setup on its own, under one verdict rule; ConfigError for fewer than two setups or one suite run named
    twice."""
    _check(setups)
    first = conn.execute(
        select(suite_runs.c.strict, suite_runs.c.min_pass_rate).where(suite_runs.c.id == setups[0].suite_run_id)
    ).one()
    strict = first.strict if options.strict is None else options.strict
    min_pass_rate = first.min_pass_rate if options.min_pass_rate is None else options.min_pass_rate
    graded = set().union(*(case_scores(conn, s.suite_run_id)[1] for s in setups))
    summaries = {s.name: _summary(conn, s, strict=strict, graded=graded) for s in setups}
    return MeasuredSetups(
        setups=setups, summaries=summaries, strict=strict, min_pass_rate=min_pass_rate, alpha=options.alpha
    )


def compare_setups(measured: MeasuredSetups, diff_of: DiffOf) -> SetupComparison:
    """Each pair of measured setups on its shared cases (`diff_of`), and the front."""
    from niceeval.stats import dominance, pareto_front

    setups, summaries = measured.setups, measured.summaries
    rule = DiffOptions(strict=measured.strict, min_pass_rate=measured.min_pass_rate, alpha=measured.alpha)
    pairs, dominated = [], []
    for i, one in enumerate(setups):
        for other in setups[i + 1 :]:
            try:
                found = diff_of(one.suite_run_id, other.suite_run_id, rule)
            except ConfigError as exc:
                pairs.append(_unpaired(one, other, str(exc)))
                continue
            dimensions = _dimensions(found, summaries[one.name], summaries[other.name])
            judged = dominance(one.name, other.name, dimensions)
            pairs.append(_pair(one, other, found, judged))
            if judged.relation == "first dominates":
                dominated.append(other.name)
            elif judged.relation == "second dominates":
                dominated.append(one.name)
    front = pareto_front([s.name for s in setups], dominated)
    return SetupComparison(
        strict=measured.strict, min_pass_rate=measured.min_pass_rate, alpha=measured.alpha,
        setups=[summaries[s.name].model_copy(update={"on_front": s.name in front}) for s in setups],
        pairs=pairs, front=front,
    )  # fmt: skip


def _check(setups: Sequence[Setup]) -> None:
    if len(setups) < 2:
        raise ConfigError("a comparison needs at least two setups (experiments or suite runs); name another.")
    seen: dict[str, str] = {}
    for setup in setups:
        if setup.suite_run_id in seen:
            raise ConfigError(
                f"{seen[setup.suite_run_id]} and {setup.name} both name suite run {setup.suite_run_id}; "
                "compare each suite run once."
            )
        seen[setup.suite_run_id] = setup.name


def _summary(conn: Connection, setup: Setup, *, strict: bool, graded: set[str]) -> SetupSummary:
    from niceeval.stats import clustered_mean, clustered_rate, estimate_usage

    run_id = setup.suite_run_id
    tallies = {e: c for e, c in run_counts(conn, run_id).items() if c.counted}
    clusters = {e: c.cluster or e for e, c in tallies.items()}
    rate = clustered_rate([(c.passing(strict=strict), c.counted) for c in tallies.values()], list(clusters.values()))
    scores, _ = case_scores(conn, run_id)
    mean_scores = {
        name: _measured(
            clustered_mean(list(cases.values()), [clusters.get(e, e) for e in cases], bounds=(0.0, 1.0)), "score"
        )
        for name, cases in sorted(scores.items())
        if name in graded
    }
    usage = estimate_usage(case_usage(conn, run_id, strict=strict), clusters=clusters)
    row = conn.execute(select(suite_runs.c.started_at, suite_runs.c.experiment).where(suite_runs.c.id == run_id)).one()
    return SetupSummary(
        name=setup.name, suite_run_id=run_id, experiment=row.experiment, started_at=row.started_at, cases=len(tallies),
        runs=sum(t.counted for t in tallies.values()), pass_rate=_measured(rate, "rate"), mean_scores=mean_scores,
        cost_per_run=_optional(usage.cost_per_run, "usd"), cost_per_pass=_optional(usage.cost_per_pass, "usd"),
        latency_p50=_optional(usage.latency_p50, "s"), latency_p95=_optional(usage.latency_p95, "s"),
        notes=list(usage.notes),
    )  # fmt: skip


def _optional(estimate: Estimate | None, unit: str) -> Measured | None:
    return None if estimate is None else _measured(estimate, unit)


def _measured(estimate: Estimate, unit: str) -> Measured:
    """`estimate` with its words: `80%` and `95% CI 49%-94%` (or the note saying why there is no interval)."""
    text = "n/a" if estimate.value is None else _unit(estimate.value, unit)
    if estimate.low is not None and estimate.high is not None:
        spread = f"95% CI {_unit(estimate.low, unit)}-{_unit(estimate.high, unit)}"
    else:
        spread = estimate.note or ""
    if estimate.value is None:
        text, spread = spread or text, ""
    return Measured(
        value=estimate.value, low=estimate.low, high=estimate.high, note=estimate.note, text=text, spread=spread,
        shown=f"{text} ({spread})" if spread else text,
    )  # fmt: skip


def _unit(value: float, unit: str) -> str:
    if unit == "rate":
        return share(value)
    if unit == "score":
        return f"{value:.2f}"
    return amount(value, unit, sign=False)


def _dimensions(found: RunDiff, first: SetupSummary, second: SetupSummary) -> list[Dimension]:
    """Quality, cost and latency of the change from `first` to `second`, for the dominance."""
    dimensions = [] if found.suite is None else _quality(found.suite, found.alpha)
    usage = {u.measure: u for u in found.usage}
    for change, name, sides in (
        (usage.get("cost per eval run"), "cost", (first.cost_per_run, second.cost_per_run)),
        (usage.get("p50 latency"), "p50 latency", (first.latency_p50, second.latency_p50)),
    ):
        if change is not None:
            dimensions.append(Dimension(
                name=name, low=change.low, high=change.high, worse_when="up", shown=_inline(change.evidence),
                estimate=change.difference,
            ))  # fmt: skip
            continue
        uncompared = _uncompared(name, *sides)
        dimensions += [uncompared] if uncompared is not None else []
    return dimensions


def _inline(evidence: str) -> str:
    """`+100% (95% CI +90% to +110%)` as a measure inside a sentence's parentheses: `+100%, 95% CI +90% to +110%`."""
    return evidence.replace(" (95% CI ", ", 95% CI ", 1).removesuffix(")")


def _quality(suite: SuiteChange, alpha: float) -> list[Dimension]:
    """The pass rate's change, counted beyond noise only when its paired test rejects "no change" at `alpha`
    too: an interval clear of zero beside McNemar's p of 0.06 is no evidence to claim on, nor are three shared
    cases that all flipped (a zero-width interval, too few cases to tell)."""
    if suite.difference is None:
        return []
    shown = f"{suite.difference * 100:+.0f} pts"
    if suite.low is not None and suite.high is not None:
        shown += f", 95% CI {suite.low * 100:+.0f} to {suite.high * 100:+.0f} pts"
    if suite.p_value is not None:
        shown += f", {suite.test} p={suite.p_value:.3g}"
    shown += f", {suite.note}" if suite.note else ""
    tested = suite.p_value is not None and (suite.p_value < alpha or suite.difference == 0)
    low, high = (suite.low, suite.high) if tested else (None, None)
    return [Dimension(
        name="pass rate", low=low, high=high, worse_when="down", shown=shown, estimate=suite.difference,
        unchanged=suite.unchanged,
    )]  # fmt: skip


def _uncompared(name: str, first: Measured | None, second: Measured | None) -> Dimension | None:
    """A measure the pair's paired test could not weigh: unchanged when both sides measured it as nothing (no
    spend), left out when neither side has it at all (no turn latency), else unknown (within noise: a model with
    no price, or no shared case with a measured turn)."""
    if first is None and second is None and name != "cost":
        return None
    if first is not None and second is not None and first.value == second.value == 0:
        return Dimension(name=name, low=0.0, high=0.0, worse_when="up", shown="none on either side")
    return Dimension(name=name, low=None, high=None, worse_when="up", shown="not compared")


def _pair(first: Setup, second: Setup, found: RunDiff, judged: Dominance) -> SetupPair:
    return SetupPair(
        first=first.name, second=second.name, first_run=first.suite_run_id, second_run=second.suite_run_id,
        shared_cases=found.suite.cases if found.suite is not None else 0,
        suite=found.suite, mean_scores=found.mean_scores, usage=found.usage, notes=found.usage_notes,
        verdict_line=found.verdict_line, relation=judged.relation, relation_line=judged.text,
    )  # fmt: skip


def _unpaired(first: Setup, second: Setup, why: str) -> SetupPair:
    """A pair `diff` cannot compare: no case with a counted run on both sides."""
    return SetupPair(
        first=first.name, second=second.name, first_run=first.suite_run_id, second_run=second.suite_run_id,
        shared_cases=0, notes=[why], relation="not separable",
        relation_line="not separable: no shared case with a counted run",
    )  # fmt: skip
