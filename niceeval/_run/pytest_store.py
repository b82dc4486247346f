"""Recording a pytest session in the results store: one suite run (kind `pytest`) of its evals and fixture runs.

The pytest plugin opens the recording on the session's first eval or fixture run (a session without evals records
nothing), hands it every finished run, and finishes it at the end of the session with a summary of what ran.
Under pytest-xdist every worker writes into one suite run as one shard of a `--run-id` suite run: the id comes
from xdist's `testrunuid` (shared by the workers of one session), so the store's create-or-join lets the first
worker to start create it and the last to finish close it. The workers' split is xdist's, not `--shard`'s hash:
a shard here is "the runs this worker ran", which is all the store needs to know.

A store that cannot be opened or written never fails a test: the session runs unrecorded and `StoreNote` says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from niceeval._core.redact import Redactor
from niceeval._core.results import RunResult
from niceeval._core.summary import EvalTally, PlannedEval, Problem, SuiteSummary
from niceeval._run.storing import plan_digest, suite_start
from niceeval._run.suite import agent_secrets

if TYPE_CHECKING:
    from niceeval.store import SuiteRunStart
    from niceeval.store._recorder import Recorder, StoreSink


@dataclass(frozen=True, kw_only=True, slots=True)
class XdistWorker:
    """One pytest-xdist worker of a session, from its `config.workerinput`."""

    testrunuid: str
    """The same on every worker of one session (a uuid4 hex unless `--testrunuid` set it)."""
    workerid: str
    """`gw0`, `gw1`, ...; a worker that replaces a crashed one gets the next free number."""
    count: int
    """How many workers the session started with."""

    @property
    def run_id(self) -> str:
        """The suite run every worker of the session writes: 12 characters like a `niceeval run` id."""
        if re.fullmatch(r"[0-9a-f]{32}", self.testrunuid):
            return self.testrunuid[:12]
        return hashlib.blake2b(self.testrunuid.encode("utf-8"), digest_size=6).hexdigest()

    @property
    def shard(self) -> int:
        """This worker's shard number: `gw0` is 1."""
        return int(self.workerid.removeprefix("gw")) + 1


@dataclass(frozen=True, kw_only=True, slots=True)
class RecordingOptions:
    """Where and what to record."""

    location: str
    """The store URL or path (`store_location`)."""
    root: Path
    config_file: Path | None
    command: list[str]
    """The command line, as typed: `pytest evals/ -n 4`."""
    strict: bool
    """`--niceeval-strict`."""
    worker: XdistWorker | None = None


@dataclass(kw_only=True)
class StoreNote:
    """What became of the recording, for the end of pytest's report (plain data: xdist workers send it over)."""

    run_id: str | None = None
    url: str | None = None
    problems: list[str] = field(default_factory=list)
    """Why the session could not be recorded at all (the store did not open, or refused the suite run)."""
    received: int = 0
    unstored: int = 0
    """Runs the store did not take (it went away mid-session)."""
    error: str | None = None
    """The first write error, in words."""

    def as_data(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> StoreNote:
        return cls(**data)

    @classmethod
    def combine(cls, notes: Iterable[StoreNote]) -> StoreNote:
        """The notes of every xdist worker as one: one suite run, its problems once each, the losses summed."""
        total = cls()
        for note in notes:
            total.run_id = total.run_id or note.run_id
            total.url = total.url or note.url
            total.problems += [p for p in note.problems if p not in total.problems]
            total.received += note.received
            total.unstored += note.unstored
            total.error = total.error or note.error
        return total

    def lines(self) -> list[str]:
        """What to print: where the session was stored, or warnings saying what was not and what to do."""
        lines = [f"niceeval: warning: {problem}" for problem in self.problems]
        if self.unstored:
            lines.append(
                f"niceeval: warning: {self.unstored} of {self.received} eval runs of this pytest session were not "
                f"stored in the results store {self.url} ({self.error}). The test outcomes above are complete; run "
                "pytest again once the store is back to record them."
            )
        elif self.error is not None:
            lines.append(
                f"niceeval: warning: the results store {self.url} failed at the end of the session ({self.error}): "
                f"suite run {self.run_id} holds every eval run, but may still read `running`."
            )
        elif self.run_id is not None and not self.problems:
            lines.append(f"niceeval: stored as run {self.run_id} in {self.url} (niceeval show {self.run_id})")
        return lines


class SessionRecording:
    """One pytest session (or one xdist worker's part of it) written to the results store.

    `open(plan)` once, on the first run (failures become a `StoreNote` problem); `record(result)` for each
    finished run; `finish()` at the end of the session.
    """

    def __init__(self, options: RecordingOptions) -> None:
        self.options = options
        self.note = StoreNote()
        self.attempted = False
        """`open` was called (whether or not the store opened)."""
        self._sink: StoreSink | None = None
        self._tallies: dict[str, EvalTally] = {}
        self._problems: list[Problem] = []
        self._runs: Counter[str] = Counter()
        self._redactor = Redactor({})
        self._started = 0.0

    def open(self, plan: Sequence[PlannedEval], *, agents: Iterable[object] = ()) -> None:
        """Open the store and create (or, as an xdist worker, join) the suite run of `plan`; once."""
        if self.attempted:
            return
        self.attempted = True
        self._started = time.perf_counter()
        self._redactor = Redactor.from_environment(
            extra=[secret for agent in agents for secret in agent_secrets(agent)]
        )
        self._tallies = {p.id: EvalTally(eval=p) for p in plan}
        from niceeval.store._recorder import Recorder

        try:
            recorder = Recorder.open(self.options.location, self.options.root)
        except Exception as exc:
            self.note.problems.append(_not_opened(self.options.location, exc))
            return
        try:
            self._sink = self._join(recorder, plan)
        except Exception as exc:
            recorder.close()
            self.note.problems.append(f"{_pytest_flags(_first_line(exc))} This pytest session is not recorded.")
            return
        self._sink.start(plan, [])  # a store failing here is counted by the sink, like one failing later
        self.note.run_id, self.note.url = self._sink.run_id, recorder.url

    def _join(self, recorder: Recorder, plan: Sequence[PlannedEval]) -> StoreSink:
        options, worker = self.options, self.options.worker
        start = self._start()
        if worker is None:
            return recorder.sink(start, warnings=io.StringIO())  # its warning speaks of `niceeval run`: ours below
        start = start.model_copy(update={"id": worker.run_id})
        digest = plan_digest(plan, strict=options.strict, min_pass_rate=start.min_pass_rate)
        recorder.join_shard(start, plan, shard=worker.shard, count=worker.count, digest=digest)
        return recorder.sink(start, shard=worker.shard, warnings=io.StringIO())

    def _start(self) -> SuiteRunStart:
        options = self.options
        start = suite_start(
            options.root, options.config_file, strict=options.strict, min_pass_rate=1.0, command=options.command
        )
        return start.model_copy(update={"kind": "pytest"})

    def record(self, result: RunResult) -> None:
        """Hand one finished run to the store (a second run of one id, as with pytest-rerunfailures, is run 1)."""
        if self._sink is None:
            return
        index = self._runs[result.eval_id]
        self._runs[result.eval_id] += 1
        result = self._redactor.run(result.model_copy(update={"run_index": index}) if index else result)
        tally = self._tallies.get(result.eval_id)
        if tally is None or index >= tally.eval.runs:
            tally = self._plan_more(result, runs=index + 1)
        tally.add(result)
        if result.error is not None and result.error.kind == "usage":
            self.problem(result.error.location or result.file, result.error.message, kind="usage")
        self._sink.run_finished(result)

    def _plan_more(self, result: RunResult, *, runs: int) -> EvalTally:
        """Plan a run the session's plan did not hold (a test asking for the fixture by name, a rerun)."""
        assert self._sink is not None
        tally = self._tallies.get(result.eval_id)
        tags = tally.eval.tags if tally is not None else ()
        planned = PlannedEval(id=result.eval_id, file=result.file, line=result.line, tags=tags, runs=runs)
        if tally is None:
            tally = self._tallies[result.eval_id] = EvalTally(eval=planned)
        tally.eval = planned
        with contextlib.suppress(Exception):  # the run is written anyway; a store that went away is counted by the sink
            self._sink.recorder.extend(self._sink.run_id, [planned])
        return tally

    def problem(self, location: str, message: str, *, kind: Literal["load", "usage"] = "load") -> None:
        """A problem the suite run records (an eval file that did not import, API misuse): its exit code is 2."""
        found = Problem(location=location, message=self._redactor.text(message), kind=kind)
        if found not in self._problems:
            self._problems.append(found)

    def finish(self, *, interrupted: bool) -> StoreNote:
        """Close the suite run (or this worker's shard of it) and the store; say what became of the recording."""
        sink, self._sink = self._sink, None
        if sink is None:
            return self.note
        summary = SuiteSummary.of(
            self._tallies.values(),
            problems=self._problems,
            duration_s=time.perf_counter() - self._started,
            strict=self.options.strict,
            min_pass_rate=1.0,
            interrupted=interrupted,
        )
        try:
            sink.finish(summary)
        finally:
            sink.close()
        self.note.received, self.note.unstored, self.note.error = sink.received, sink.unstored, sink.error
        return self.note


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _pytest_flags(text: str) -> str:
    """A store message with `niceeval run`'s flags given as the pytest plugin's."""
    return re.sub(r"(?<![\w-])--(no-)?store\b", r"--niceeval-\1store", text)


def _not_opened(location: str, exc: Exception) -> str:
    from niceeval.store import StoreError
    from niceeval.store._recorder import masked

    if isinstance(exc, StoreError):  # its message names the store (password masked) and what to do
        reason = _pytest_flags(_first_line(exc))
    else:
        reason = f"cannot open the results store {masked(location)}: {type(exc).__name__}: {_first_line(exc)}"
    off = "" if "--niceeval-no-store" in reason else "; --niceeval-no-store turns it off"
    return (
        f"{reason} This pytest session is not recorded; the tests ran as usual. The store comes from "
        f"--niceeval-store URL, NICEEVAL_STORE or store= in niceeval.config.py{off}."
    )
