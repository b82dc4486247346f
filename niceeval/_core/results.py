"""What one run of one eval produced: stored, streamed to reporters, never mutated after folding."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from niceeval._core.assertion import AssertionResult
from niceeval._core.errors import ErrorInfo
from niceeval._core.events import Event
from niceeval._core.failure import FailureClass
from niceeval._core.outcome import Outcome
from niceeval._core.spans import SpanRecord

Provenance = Literal["executed", "carried", "accepted"]


class Spend(BaseModel):
    """Model calls of one side of a run (the agent under test, or the judges): how many, tokens, USD."""

    calls: int = 0
    """Requests that reached a provider. A judge verdict read from the judge cache is not a call (see `cached`)."""
    tokens: int = 0
    """All tokens: `input_tokens + output_tokens + cache_read_tokens`."""
    input_tokens: int = 0
    """Input tokens not served from the provider's prompt cache."""
    output_tokens: int = 0
    cache_read_tokens: int = 0
    """Input tokens read from the provider's prompt cache (cheaper)."""
    cost: float | None = 0.0
    """USD; `None` when some model has no price (named in `unpriced`)."""
    cached: int = 0
    """Judge verdicts read from the judge cache (free): counted apart from `calls`, never a part of them."""
    unpriced: list[str] = Field(default_factory=list)

    def __add__(self, other: Spend) -> Spend:
        cost = None if self.cost is None or other.cost is None else self.cost + other.cost
        return Spend(
            calls=self.calls + other.calls,
            tokens=self.tokens + other.tokens,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cost=cost,
            cached=self.cached + other.cached,
            unpriced=list(dict.fromkeys(self.unpriced + other.unpriced)),
        )


class SandboxRecord(BaseModel):
    """The sandbox a sandbox eval's run worked in: its kind, and for Docker its container and image."""

    kind: str
    """`local`, `bwrap` or `docker`."""
    open_s: float | None = None
    """Seconds to open it: copy the fixture (after its setup, when that ran now) and start the containers, or reset
    a container kept for reuse."""
    container: str | None = None
    """The workspace container's id (12 characters)."""
    attempts: list[int] = Field(default_factory=list)
    """The runs (`run_index`) that used the container so far, this one included: several with `reuse=True`."""
    image: str | None = None
    image_size_bytes: int | None = None
    image_build_s: float | None = None
    """Seconds the image's build took, for an image niceeval built from a Dockerfile (whenever it was built)."""
    image_built_now: bool = False
    """This run's process built the image (else it was on the daemon already)."""


class RunResult(BaseModel):
    """One run of one eval: its outcome and everything needed to explain it."""

    eval_id: str
    """`path/to/file.py::function_name` (or the eval's `name=`)."""
    file: str
    line: int
    run_index: int = 0
    """0-based index among the `--runs N` repetitions."""
    outcome: Outcome
    duration_s: float
    error: ErrorInfo | None = None
    """The exception or timeout that ended the run, if any."""
    skip_reason: str | None = None
    assertions: list[AssertionResult] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)
    sandbox_path: str | None = None
    """Where the sandbox workspace was kept (`--keep-sandbox`)."""
    workspace_diff: str | None = None
    """A sandbox eval's workspace changes as a git-like unified diff (`None`: no sandbox, or nothing changed)."""
    agent_spend: Spend = Field(default_factory=Spend)
    """The agent's model calls (from `usage` events), priced by the price table."""
    judge_spend: Spend = Field(default_factory=Spend)
    """The judges' model calls, apart from the agent's."""
    case_id: str | None = None
    """The dataset case this run used (`define_eval(cases=...)`)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """The case's `metadata`, kept as it was in the dataset."""
    variant: dict[str, str] | None = None
    """The variant combination, as dimension -> value name (`{"prompt": "short"}`)."""
    group: str | None = None
    """The id the variants of one case share (`file.py::fn[case]`): the runs max-score and select-best compare."""
    warnings: list[str] = Field(default_factory=list)
    """What went wrong without changing the outcome, e.g. the run blocked the event loop for over a second."""
    spans: list[SpanRecord] = Field(default_factory=list)
    """The run's OpenTelemetry spans, in start order (traced agents and `traces=True` adapters)."""
    points: float | None = None
    """A score eval's (`define_eval(points=N)`) points earned in this run; None for a pass/fail eval."""
    points_possible: float | None = None
    """A score eval's points a run can earn (its `points=`); None for a pass/fail eval."""
    failure: FailureClass | None = None
    """Why a `failed` run failed: `agent`, `infra` (left out of pass rates) or `eval`; None when it did not fail."""
    attempts: int = 1
    """How many times this run was executed: more than 1 when an `infra` failure was retried."""
    identity: str | None = None
    """An experiment's slot: the digest this result stands for (eval source and case, the experiment's
    configuration, niceeval's major version); None outside experiments."""
    provenance: Provenance = "executed"
    """`executed` in this suite run, or `carried` / `accepted` from run `carried_index` of suite run
    `carried_from` (an experiment's slot recorded earlier under the same identity, or adopted by `niceeval accept`)."""
    carried_from: str | None = None
    carried_index: int | None = None
    sandbox: SandboxRecord | None = None
    """A sandbox eval's sandbox: its kind, and which container and image it ran in."""


FailureHook = Callable[[RunResult], FailureClass | None]
"""`classify_failure`: called with each failed run (its `failure` holds niceeval's class); returns the class to
record, or None to keep niceeval's."""
