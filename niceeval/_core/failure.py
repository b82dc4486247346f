"""Why a run failed: `agent`, `infra` or `eval`, and the errors an eval raises to stop more than itself.

- `agent`: the agent's answer or actions failed a check (an assertion missed, the agent raised or ran out of time).
- `infra`: something around the agent failed: the provider kept failing after its retries (5xx, 429, connection
  errors, timeouts, no API key), the sandbox or one of its services did not start, or a judge the run needed was
  unavailable. Such runs are retried, then left out of pass rates and reported apart.
- `eval`: the eval's own code raised (a `ValueError` in the eval function's body, API misuse).

A project may reclassify with a `classify_failure` hook (`define_config(classify_failure=...)`), a plain callable
`(RunResult) -> FailureClass | None`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from niceeval._core.results import RunResult

FailureClass = Literal["agent", "infra", "eval"]
FAILURE_CLASSES: tuple[FailureClass, ...] = ("agent", "infra", "eval")

FailureHook = Callable[["RunResult"], "FailureClass | None"]
"""`classify_failure`: called with each failed run (its `failure` holds niceeval's class); returns the class to
record, or None to keep niceeval's."""

INFRA_CAUSES = frozenset({"timeout", "provider_error", "rate_limited", "no_api_key"})
"""Why a judge gave no verdict when that is the infrastructure's doing (a `parse_error` is the judge model's)."""

DEFAULT_INFRA_RETRIES = 2
"""Times a run that failed for `infra` is run again before it is reported (`--infra-retries`)."""


class _FatalError(Exception):
    def __init__(self, message: str = "", *, failure: FailureClass | None = None) -> None:
        super().__init__(message)
        if failure is not None and failure not in FAILURE_CLASSES:
            raise ValueError(f"failure= is one of {', '.join(FAILURE_CLASSES)}, got {failure!r}")
        self.failure: FailureClass | None = failure
        """The run's failure class; None: classified like any exception (by where it was raised)."""


class EvalFatalError(_FatalError):
    """Raise it in an eval (or its agent) to fail the run and start none of this eval's remaining runs.

    `failure="infra"` (or `"agent"`, `"eval"`) says the run's class; without it the run is classified by where the
    error was raised. The other evals go on.
    """


class ExperimentFatalError(_FatalError):
    """Raise it in an eval (or its agent) to fail the run and stop the whole suite run (an experiment's run).

    Runs under way finish and are kept (reported and stored); no new run starts; the suite exits 1 and says why.
    """


def failure_of(result: RunResult) -> FailureClass | None:
    """niceeval's class for a run (before any `classify_failure` hook); None unless its outcome is `failed`.

    An error decides by where it was caught (`ErrorInfo.failure`; API misuse is the eval's, the rest the agent's);
    without one, the assertions that failed the run do: a check the agent missed is `agent`, a matcher that
    crashed is `eval`, and a run failed only by judges the infrastructure kept from a verdict is `infra`.
    """
    if result.outcome != "failed":
        return None
    if result.error is not None:
        if result.error.failure is not None:
            return result.error.failure
        return "eval" if result.error.kind == "usage" else "agent"
    failing = [
        a
        for a in result.assertions
        if (a.state == "failed" and a.severity == "gate") or (a.state == "inconclusive" and not a.optional)
    ]
    if any(a.state == "failed" and a.cause != "error" for a in failing):
        return "agent"
    if any(a.cause == "error" for a in failing):
        return "eval"
    if failing and all(a.cause in INFRA_CAUSES for a in failing):
        return "infra"
    return "agent"
