"""What the store takes in about a suite run, and what its read API gives back (pydantic: stored and loaded).

Full eval runs come back as the `RunResult` the runner produced; these models are the lighter rows around them:
a suite run's header and totals, an eval run's summary line, a diff of two suite runs.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from niceeval._core.events import Event
from niceeval._core.failure import FailureClass
from niceeval._core.outcome import Outcome
from niceeval._core.results import Provenance
from niceeval.store._suite_run import ShardStatus as ShardStatus
from niceeval.store._suite_run import SuiteKind as SuiteKind
from niceeval.store._suite_run import SuiteRunStart as SuiteRunStart
from niceeval.store._suite_run import SuiteStatus as SuiteStatus


class SuiteRunInfo(BaseModel):
    """One suite run's header and totals, as `niceeval runs` lists it."""

    model_config = ConfigDict(defer_build=True)

    id: str
    started_at: datetime
    finished_at: datetime | None
    status: SuiteStatus
    kind: SuiteKind
    parent_id: str | None
    command: list[str]
    root: str
    git_commit: str | None
    git_branch: str | None
    git_dirty: bool | None
    config_digest: str | None
    niceeval_version: str
    strict: bool
    min_pass_rate: float
    evals: int
    runs_planned: int
    runs_done: int
    """Eval runs stored (for a run still `running`, counted when read)."""
    passed: int
    """Evals (not runs) whose verdict over their runs is `passed`; likewise `scored`, `failed`, `skipped`."""
    scored: int
    failed: int
    skipped: int
    errors: list[dict[str, str]] = Field(default_factory=list)
    """Load and usage problems (`location`, `message`)."""
    exit_code: int | None
    duration_s: float | None
    agent_cost: float | None
    judge_cost: float | None
    agent_tokens: int
    judge_tokens: int
    shard_count: int | None = None
    """Shards writing this suite run (`--run-id`, with `--shard I/N`: N; without: 1); None without `--run-id`."""
    shards_done: int = 0
    """Shards that finished; the suite run is `finished` when all `shard_count` have."""
    stopped: str | None = None
    """Why it stopped starting runs early (`ExperimentFatalError`, `--stop-after-infra`, `--budget`, `-x`)."""
    experiment: str | None = None
    """The experiment (`experiments/<id>.py`) this suite run ran; None for a plain run."""

    @property
    def shards_pending(self) -> bool:
        """Some shard of this suite run has not finished (never started, still running, killed or interrupted)."""
        return self.shard_count is not None and self.shards_done < self.shard_count

    @property
    def pass_rate(self) -> float | None:
        """Share of the evals with a verdict (skipped aside) that passed or scored; None if none has one."""
        counted = self.passed + self.scored + self.failed
        return (self.passed + self.scored) / counted if counted else None

    @property
    def cost(self) -> float | None:
        """Agent plus judge USD; None when either side had an unpriced model."""
        if self.agent_cost is None or self.judge_cost is None:
            return None
        return self.agent_cost + self.judge_cost


class PlannedEvalInfo(BaseModel):
    """One eval a suite run planned, `runs` times."""

    model_config = ConfigDict(defer_build=True)

    eval_id: str
    file: str
    line: int
    tags: list[str]
    runs: int
    cluster: str | None = None
    """The independent unit of its runs for the suite's statistics (its case, or `define_eval(cluster=...)`); None
    in suite runs stored before niceeval recorded it."""


class EvalRunInfo(BaseModel):
    """One eval run's summary line (the full record: `Store.eval_run`)."""

    model_config = ConfigDict(defer_build=True)

    suite_run_id: str
    eval_id: str
    run_index: int
    outcome: Outcome
    finished_at: datetime
    duration_s: float
    error: str | None = None
    """`Type: message` of the error that ended the run, if any."""
    agent_cost: float | None
    judge_cost: float | None
    tokens: int
    """Agent and judge tokens together."""
    case_id: str | None = None
    """The dataset case the run used (`None`: no dataset, or stored before schema 0006)."""
    variant: dict[str, str] | None = None
    """The variant combination, as dimension -> value name (`None`: no variants, or stored before 0006)."""
    points: float | None = None
    """A score eval's points earned in this run (`None`: a pass/fail eval, or stored before 0012)."""
    points_possible: float | None = None
    """A score eval's points a run can earn (`None`: a pass/fail eval, or stored before 0012)."""
    failure: FailureClass | None = None
    """Why a failed run failed: `agent`, `infra` (left out of pass rates) or `eval` (`None`: stored before 0012)."""
    attempts: int = 1
    """How many times the run was executed (more than 1: an infra failure was retried)."""
    provenance: Provenance = "executed"
    """`executed` in this suite run, or `carried` / `accepted` from run `carried_index` of suite run
    `carried_from`."""
    carried_from: str | None = None
    carried_index: int | None = None
    identity: str | None = None
    """An experiment's slot: the identity its result stands for (None outside experiments)."""
    error_kind: str | None = None
    """The kind of the error that ended the run (`exception`, `timeout`, `usage`), if any."""


class AcceptanceInfo(BaseModel):
    """`niceeval accept`: a recorded eval run an experiment adopted for a slot identity."""

    model_config = ConfigDict(defer_build=True)

    experiment: str
    eval_id: str
    identity: str
    suite_run_id: str
    run_index: int
    accepted_at: datetime


class ShardInfo(BaseModel):
    """One shard of a suite run that has reported (started at least once)."""

    model_config = ConfigDict(defer_build=True)

    shard: int
    """From 1 to the suite run's `shard_count`."""
    status: ShardStatus
    started_at: datetime
    finished_at: datetime | None
    attempts: int
    """How many times it started (a retry after a crash or cancel is the second)."""
    exit_code: int | None
    duration_s: float | None
    """Summed over its attempts."""


class SuiteRunDetail(BaseModel):
    """A suite run with its plan and the summary of every eval run stored in it."""

    model_config = ConfigDict(defer_build=True)

    run: SuiteRunInfo
    evals: list[PlannedEvalInfo]
    eval_runs: list[EvalRunInfo]
    """In plan order, then run index."""
    shards: list[ShardInfo] = Field(default_factory=list)
    """The shards that have reported (`--run-id` suite runs only), by number."""

    @property
    def missing_shards(self) -> list[str]:
        """The shards that have not finished, in words: `2 (running)`, `3 (not started)`."""
        seen = {s.shard: s for s in self.shards}
        return [
            f"{n} ({seen[n].status})" if n in seen else f"{n} (not started)"
            for n in range(1, (self.run.shard_count or 0) + 1)
            if n not in seen or seen[n].status != "finished"
        ]


class OutcomeChange(BaseModel):
    """An eval whose verdict or pass rate differs between the two suite runs of a diff, with the evidence."""

    model_config = ConfigDict(defer_build=True)

    eval_id: str
    base: Outcome
    head: Outcome
    regressed: bool
    """A significant drop in pass rate (false-discovery-adjusted q-value under the diff's alpha): the gate's
    regression. A worse verdict within noise is not one (`worse` says the verdict got worse)."""
    worse: bool = False
    """The head verdict is worse: passed or scored -> failed, or passed -> scored."""
    base_passes: int = 0
    base_runs: int = 0
    head_passes: int = 0
    head_runs: int = 0
    p_value: float | None = None
    """Fisher's exact test on the eval's runs (None: not enough runs to tell)."""
    q_value: float | None = None
    """The p-value adjusted for the number of evals compared (Benjamini-Hochberg)."""
    evidence: str = ""
    """The change in words: `-0.75 (95% -0.92 to -0.44), p=0.0004 (fisher)` or `3 vs 3 runs: not enough to tell`."""
    change: Literal["regression", "improvement", "noise", "unchanged"] = "noise"


class ScoreChange(BaseModel):
    """One eval's assertion whose mean score moved by more than the diff's threshold (listed; the gate weighs each
    assertion over all shared cases: `MeanScoreChange`)."""

    model_config = ConfigDict(defer_build=True)

    eval_id: str
    assertion: str
    base: float
    head: float

    @property
    def delta(self) -> float:
        return self.head - self.base


class SuiteChange(BaseModel):
    """The suite's pass rate over the shared evals, before and after, and the paired test of its change."""

    model_config = ConfigDict(defer_build=True)

    test: str
    """`mcnemar` when every shared eval ran once on both sides (and no cluster groups several), else `paired t` on
    per-eval pass rates."""
    cases: int
    """The shared evals."""
    clusters: int = 0
    """The independent units the test counts: `cases`, unless stored clusters group them."""
    base_rate: float | None
    head_rate: float | None
    difference: float | None
    low: float | None
    high: float | None
    p_value: float | None
    note: str | None
    evidence: str
    unchanged: bool = False
    """Every shared eval came out the same on both sides (`stats.Comparison.unchanged`)."""

    @property
    def over(self) -> str:
        """`12 shared evals`, or `12 shared evals in 3 clusters`."""
        return _over(self.cases, "shared eval", self.clusters)


def _over(count: int, unit: str, clusters: int) -> str:
    shown = f"{count} {unit}{'s' * (count != 1)}"
    return shown if clusters in (0, count) else f"{shown} in {clusters} cluster{'s' * (clusters != 1)}"


class MeanScoreChange(BaseModel):
    """A scored assertion over the cases both runs scored: its mean on each side and the paired test of its change."""

    model_config = ConfigDict(defer_build=True)

    assertion: str
    """Its key as `[key]` when it has one, else its kind (the name before its arguments: `similarity`)."""
    cases: int
    """The shared cases (evals) the assertion scored on both sides."""
    clusters: int
    """The independent units the test counts: `cases`, unless stored clusters group them (`define_eval(cluster=)`)."""
    base_mean: float
    """The mean over those cases of each case's mean score (over its runs)."""
    head_mean: float
    difference: float | None
    low: float | None
    high: float | None
    p_value: float | None
    """The paired t test over the cases (None: too few shared cases to tell)."""
    q_value: float | None
    """The p-value adjusted with the evals' tests (Benjamini-Hochberg)."""
    note: str | None
    evidence: str
    """The change in words: `-0.10 (95% -0.14 to -0.06), p=2.1e-05 (paired t)`."""
    change: Literal["regression", "improvement", "noise", "unchanged"]
    regressed: bool
    """A gate failure: a significant drop (q under alpha), or a drop larger than `--max-drop`."""

    @property
    def over(self) -> str:
        """`12 shared cases`, or `12 shared cases in 3 clusters`."""
        return _over(self.cases, "shared case", self.clusters)


class UsageChange(BaseModel):
    """Cost or latency over the shared evals on each side, and the paired bootstrap interval of its change."""

    model_config = ConfigDict(defer_build=True)

    measure: Literal["cost per eval run", "cost per passed run", "p50 latency", "p95 latency"]
    unit: Literal["usd", "s"]
    cases: int
    """The independent units resampled: the shared evals (for latency, those with a measured turn on both
    sides), or their clusters."""
    base: float | None
    head: float | None
    difference: float | None
    """Head minus base, in `unit`; `low`..`high` is its 95% interval."""
    low: float | None
    high: float | None
    relative: float | None
    """Head / base - 1 (`1.0`: doubled); None when the base is 0. `relative_low`..`relative_high`: its interval."""
    relative_low: float | None
    relative_high: float | None
    note: str | None
    change: Literal["better", "worse", "noise", "unchanged"]
    """`worse` when the whole interval lies above 0 (more cost or time), `better` below, `unchanged` when it is 0
    itself, else `noise`."""
    evidence: str
    """The change in words: `+100% (95% CI +90% to +110%)`."""
    base_text: str
    """`base` as the reports show it: `$0.0012`, `1.20s`."""
    head_text: str
    method: str = "paired bootstrap"
    """How the interval was found: `paired bootstrap`, or `normal approximation` over more than 5,000 cases."""


class RunDifference(BaseModel):
    """Something that differed between the two suite runs besides the code under test."""

    model_config = ConfigDict(defer_build=True)

    what: str
    base: str
    head: str


class RunDiff(BaseModel):
    """What changed from suite run `base` to suite run `head`, both judged by one verdict rule."""

    model_config = ConfigDict(defer_build=True)

    base: str
    head: str
    threshold: float
    strict: bool = False
    """The verdict rule both sides were judged by (the head's unless given)."""
    min_pass_rate: float = 1.0
    alpha: float = 0.05
    max_drop: float | None = None
    changed: list[OutcomeChange] = Field(default_factory=list)
    """Sorted by evidence: the smallest q-value first."""
    new: list[str] = Field(default_factory=list)
    """Evals in head only."""
    gone: list[str] = Field(default_factory=list)
    """Evals in base only."""
    scores: list[ScoreChange] = Field(default_factory=list)
    mean_scores: list[MeanScoreChange] = Field(default_factory=list)
    """Each scored assertion's paired test over the shared cases, sorted by evidence (the smallest q-value first)."""
    suite: SuiteChange | None = None
    differences: list[RunDifference] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    """Why the gate fails (empty: it passes)."""
    max_cost_increase: float | None = None
    """The gate on cost per eval run, as a fraction (0.1: 10%): fails when the interval's low end is above it."""
    max_latency_increase: float | None = None
    """The gate on p50 and p95 latency, as a fraction, read like `max_cost_increase`."""
    usage: list[UsageChange] = Field(default_factory=list)
    """Cost per eval run and per passed run, p50 and p95 latency, over the shared evals (those measured)."""
    usage_notes: list[str] = Field(default_factory=list)
    """Why a measure is missing or narrowed (an unpriced model, no latency measured)."""
    verdict: Literal["better", "worse", "a trade-off", "within noise"] | None = None
    """Every measure weighed at once (pass rate, mean scores, cost, latency); None for a diff stored without it."""
    verdict_line: str = ""
    """The verdict in words: `worse on cost (+100%, 95% CI +90% to +110%); within noise: pass rate`."""

    @property
    def regressed(self) -> bool:
        """A drop significant at `alpha` (an eval or a mean score, after false discovery control, or the suite), or
        a drop of the suite's pass rate or of a mean score larger than `max_drop`."""
        return bool(self.reasons)

    def describe(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {**self.model_dump(), "regressed": self.regressed}


class TurnRecord(BaseModel):
    """One recorded exchange with the agent, with the events it spans (for `niceeval rescore`)."""

    model_config = ConfigDict(defer_build=True)

    sent: str
    reply: str | None
    """None when the agent gave no reply (it raised)."""
    data: Any = None
    events: list[Event] = Field(default_factory=list)
