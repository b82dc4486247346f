"""Why a run failed: `agent`, `infra` or `eval`, and the errors an eval raises to stop more than itself.

- `agent`: the agent's answer or actions failed a check (an assertion missed, the agent raised or ran out of time).
- `infra`: something around the agent failed: the provider kept failing after its retries (5xx, 429, connection
  errors, timeouts, no API key), the sandbox or one of its services did not start, or a judge the run needed was
  unavailable. Such runs are retried, then left out of pass rates and reported apart.
- `eval`: the eval's own code raised (a `ValueError` in the eval function's body, API misuse).

A project may reclassify with a `classify_failure` hook (`define_config(classify_failure=...)`), a plain callable
`(RunResult) -> FailureClass | None` (`results.FailureHook`).
"""

from __future__ import annotations

from typing import ClassVar, Literal

FailureClass = Literal["agent", "infra", "eval"]
FAILURE_CLASSES: tuple[FailureClass, ...] = ("agent", "infra", "eval")

INFRA_CAUSES = frozenset({"timeout", "provider_error", "rate_limited", "no_api_key"})
"""Why a judge gave no verdict when that is the infrastructure's doing (a `parse_error` is the judge model's)."""

DEFAULT_INFRA_RETRIES = 2
"""Times a run that failed for `infra` is run again before it is reported (`--infra-retries`)."""


class InfraUnavailable(Exception):
    """Base of errors that say a part the run needs was unavailable (a simulated user's model, say): a run they
    end is `infra`, wherever they were raised, so it is retried, then left out of pass rates."""

    failure: ClassVar[FailureClass] = "infra"


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
