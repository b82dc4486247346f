"""What `Store.compare` gives back: each setup's measures with their intervals, each pair's paired tests, the
Pareto front (pydantic: printed as JSON and rendered by the viewer)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from niceeval.store._models import MeanScoreChange, SuiteChange, UsageChange


class Measured(BaseModel):
    """One setup's measure: its value and 95% interval (None, with `note` saying why, when there is none)."""

    model_config = ConfigDict(defer_build=True)

    value: float | None
    low: float | None = None
    high: float | None = None
    note: str | None = None
    text: str
    """The value in words: `80%`, `$0.0012`, `1.20s` (the note when there is no value)."""
    spread: str
    """Its interval in words, `95% CI 49%-94%`, or the note saying why there is none (empty: no note)."""
    shown: str
    """Both: `80% (95% CI 49%-94%)`."""


class SetupSummary(BaseModel):
    """One setup (an experiment's suite run, or a suite run named by id) measured on its own."""

    model_config = ConfigDict(defer_build=True)

    name: str
    """As the comparison was asked for it: the experiment id, or the suite run reference."""
    suite_run_id: str
    experiment: str | None = None
    """The experiment its suite run ran; None for a plain run."""
    started_at: datetime
    cases: int
    """Evals (eval x case) with a counted run."""
    runs: int
    """Counted eval runs (skipped runs are not)."""
    pass_rate: Measured
    """The mean of the cases' pass rates, with Wilson's interval at the effective sample size (as `niceeval run`
    shows it)."""
    mean_scores: dict[str, Measured] = Field(default_factory=dict)
    """Per graded assertion (its `[key]`, else its kind): the mean over cases of each case's mean score, with a
    clustered t interval."""
    cost_per_run: Measured | None = None
    """The agent's USD per counted eval run (bootstrap interval over the cases); None: not estimated (`notes`)."""
    cost_per_pass: Measured | None = None
    latency_p50: Measured | None = None
    """The median turn latency in seconds, over every measured turn (bootstrap interval over the cases)."""
    latency_p95: Measured | None = None
    notes: list[str] = Field(default_factory=list)
    on_front: bool = False
    """No other setup of the comparison dominates it."""


class SetupPair(BaseModel):
    """Two setups compared on the cases both ran, with the paired tests `niceeval diff` makes (`second` relative to
    `first`)."""

    model_config = ConfigDict(defer_build=True)

    first: str
    second: str
    first_run: str
    """The suite run measuring `first`."""
    second_run: str
    shared_cases: int
    suite: SuiteChange | None = None
    """The pass rate over the shared cases on each side and its paired test (McNemar or a paired t test)."""
    mean_scores: list[MeanScoreChange] = Field(default_factory=list)
    usage: list[UsageChange] = Field(default_factory=list)
    """Cost per eval run and per passed run, p50 and p95 latency: paired bootstrap over the shared cases."""
    notes: list[str] = Field(default_factory=list)
    verdict_line: str = ""
    """Every measure weighed at once, as `niceeval diff` says it (`second` against `first`)."""
    relation: Literal["first dominates", "second dominates", "a trade-off", "not separable"]
    """On quality (pass rate), cost (per eval run) and latency (p50), each beyond noise or not."""
    relation_line: str


class SetupComparison(BaseModel):
    """Several setups side by side: each on its own, each pair on its shared cases, and the Pareto front."""

    model_config = ConfigDict(defer_build=True)

    strict: bool
    """The verdict rule every setup was judged by."""
    min_pass_rate: float
    alpha: float
    setups: list[SetupSummary]
    pairs: list[SetupPair]
    front: list[str]
    """The setups no other dominates on quality, cost and latency at once, in the order asked."""

    @property
    def score_names(self) -> list[str]:
        """The graded assertions any setup has a mean score for, sorted."""
        return sorted({name for setup in self.setups for name in setup.mean_scores})

    def describe(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return self.model_dump(mode="json")
