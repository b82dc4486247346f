"""What one run of one eval produced: stored, streamed to reporters, never mutated after folding."""

from __future__ import annotations

from pydantic import BaseModel, Field

from niceeval._core.assertion import AssertionResult
from niceeval._core.errors import ErrorInfo
from niceeval._core.events import Event
from niceeval._core.outcome import Outcome


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
