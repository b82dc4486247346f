"""What one run's context `t` is built from (`RunInputs`) and what the run accumulates (`RunState`).

The runner (or the pytest fixture) makes both before the eval starts and hands them to the context's constructor;
nothing sets the context's attributes afterwards. The runner folds the state into a `RunResult` once the eval
returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from niceeval._core.assertion import AssertionResult
from niceeval._core.awaits import AwaitTracker
from niceeval._core.errors import ErrorInfo
from niceeval._core.events import EventLog
from niceeval._core.results import SandboxRecord
from niceeval._core.settings import Price
from niceeval._eval.checks import Check
from niceeval._eval.compare import Comparison
from niceeval._eval.observe import Scoped

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from niceeval._core.threads import Portal
    from niceeval._eval.cases import Case
    from niceeval._eval.experiment import ExperimentView
    from niceeval._eval.run_judge import JudgeOpener
    from niceeval._eval.simulate import UserModelOpener
    from niceeval._eval.variants import Variant
    from niceeval.sandbox import Sandbox
    from niceeval.tracing import Trace


@dataclass(frozen=True, kw_only=True, slots=True)
class RunInputs:
    """Everything one run of an eval is given when its context `t` is built."""

    eval_id: str
    """The run's eval id (sessions are named after it)."""
    task_group: TaskGroup
    """The run's task group: async matchers and judge calls settle on it while the eval goes on."""
    agent: object = None
    """The agent under test: an adapter, or a function (wrapped as a function agent when first sent to)."""
    case: Case | None = None
    """The dataset row of an eval with cases (`t.case`, `t.check_case()`)."""
    variant: Variant | None = None
    """The variant combination of an eval with variants (`t.variant`)."""
    sandbox: Sandbox | None = None
    """The workspace of a sandbox eval (`t.sandbox`)."""
    judge: JudgeOpener | None = None
    """How the run's judge is opened on the eval's first `t.judge`; None outside a run (`t.judge` says so)."""
    pricing: Mapping[str, Price] = field(default_factory=dict)
    """The config's price overrides (usage, `max_cost`, `max_tokens`)."""
    followup_model: str | None = None
    """The model that detects clarification questions (`t.send(followups=N)`)."""
    users: UserModelOpener | None = None
    """How `t.simulate` gets the run's user model (the runner's `JudgeSlot`); None outside a run."""
    portal: Portal | None = None
    """A plain `def` eval's way back into the event loop from its thread (required by `SyncEvalContext`)."""
    experiment: ExperimentView | None = None
    """The experiment the run is part of (`niceeval exp`): `t.experiment`, `t.model`, `t.flags`."""
    trace: Trace | None = None
    """The finished production trace an online eval scores (`t.trace`, `t.input`)."""


@dataclass(kw_only=True)
class RunState:
    """Everything one run accumulates; the runner folds it into a `RunResult`."""

    assertions: list[AssertionResult] = field(default_factory=list)
    log: EventLog = field(default_factory=EventLog)
    pending_requires: list[Check] = field(default_factory=list)
    skip_reason: str | None = None
    scoped: list[Scoped] = field(default_factory=list)
    diff_scoped: list[Scoped] = field(default_factory=list)
    span_scoped: list[Scoped] = field(default_factory=list)
    """`t.span(...)` and the other span assertions, scored over the run's trace (`log.spans`)."""
    usage_error: ErrorInfo | None = None
    """An author bug found inside a background check (it cannot raise into the eval function)."""
    workspace_diff: str | None = None
    """A sandbox eval's workspace diff as text, kept for the record."""
    sandbox: SandboxRecord | None = None
    """A sandbox eval's sandbox (kind, container, image), kept for the record."""
    warnings: list[str] = field(default_factory=list)
    """Problems that did not change the outcome but deserve attention (the loop watchdog's, for one)."""
    awaits: AwaitTracker = field(default_factory=AwaitTracker)
    """Coroutines the API handed to the eval, checked for an `await` once it returns."""
    comparisons: list[Comparison] = field(default_factory=list)
    """`t.max_score` / `t.select_best`: resolved by the runner once every variant of the case has run."""
    points_possible: float | None = None
    """The eval's `define_eval(points=N)`: what its checks and `t.score` may earn; None: not a score eval."""
