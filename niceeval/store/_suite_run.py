"""What the store takes in about a suite run: who started it and where (`SuiteRunStart`), how it ended (`SuiteEnd`),
and what a shard joining it found (`ShardJoin`).

A light module: the recorder needs only this of the models.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

SuiteStatus = Literal["running", "finished", "interrupted", "incomplete"]
"""`running`: being written, or its process was killed (`--resume` finishes it); `interrupted`: Ctrl-C or SIGTERM;
`incomplete`: it ran to the end but the store could not take some of its runs (`--resume` runs them again)."""
SuiteKind = Literal["run", "rerun", "rescore", "calibrate", "pytest", "import", "online"]
"""`pytest`: a pytest session's evals and `niceeval` fixture runs (the pytest plugin); `import`: a run of another
tool, read from its log (`niceeval store import`); `online`: the online evals one `niceeval watch` session scored
on production traces in one UTC day."""
ShardStatus = Literal["running", "finished", "interrupted", "incomplete"]
"""`running`: being written, or its process was killed (running the shard again completes it); `incomplete`: the
store could not take some of its runs (running it again completes them)."""


class SuiteRunStart(BaseModel):
    """What the runner knows about a suite run before it starts: who ran what, where, on which commit."""

    id: str
    kind: SuiteKind = "run"
    parent_id: str | None = None
    """The suite run this one reruns or rescores."""
    command: list[str] = Field(default_factory=list)
    root: str = ""
    """The project root the suite ran in."""
    git_commit: str | None = None
    git_branch: str | None = None
    git_dirty: bool | None = None
    config_digest: str | None = None
    """SHA-256 of the config file, when there is one."""
    strict: bool = False
    min_pass_rate: float = 1.0
    experiment: str | None = None
    """The experiment (`experiments/<id>.py`) the suite run runs; None for a plain run."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SuiteEnd:
    """How a suite run (or one shard of it) ended, as the store records it when it closes it."""

    status: SuiteStatus
    exit_code: int | None
    """The exit code the run's command ended with (None: not known, e.g. a pytest session)."""
    duration_s: float
    """How long this process ran it (a resume or a shard's retry adds its own time to what is stored)."""
    errors: tuple[Mapping[str, str], ...] = ()
    """The suite's problems (`{"location": ..., "message": ...}`): eval files that did not load, API misuse."""
    stopped: str | None = None
    """Why it stopped starting runs early (`ExperimentFatalError`, `--stop-after-infra`, `--budget`, `-x`)."""


@dataclass(frozen=True, slots=True)
class ShardJoin:
    """What joining a suite run as one shard found."""

    created: bool
    """This shard created the suite run (it was the first to start)."""
    attempt: int
    """1 on the shard's first start; more when it started before and did not finish (a retry)."""
