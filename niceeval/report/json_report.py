"""The JSON reporter: one document per suite, its schema versioned.

Runs arrive in completion order. The runs of the eval the last run belongs to are held in memory; when a run of
another eval comes in, they are spooled to a temporary file (so an eval whose runs come one after the other, as a
stored run replays them, never touches the spool). When the suite says an eval is done (`eval_finished`), its
entry (the eval's figures, then its runs, as bytes) is written to a second spool and its runs' places are
forgotten, so memory holds only one eval's runs and the places of the evals under way. At the end the document is
written atomically: the summary, then the evals in the order they finished (the spool's bytes copied as they
are), then those that did not (an interrupted suite, or a reporter driven without `eval_finished`), in plan order.
"""

from __future__ import annotations

import functools
import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from niceeval._core.passk import pass_at_k, pass_hat_k
from niceeval._core.results import RunResult
from niceeval._core.summary import EvalTally, PlannedEval, Problem, SuiteSummary
from niceeval._core.text import scrub, without_surrogates
from niceeval.attacks import AttackTally
from niceeval.render import (
    VariantTable,
    estimate_json,
    eval_points,
    folded_points,
    folded_power,
    folded_rate,
    runs_rate,
)
from niceeval.report._variants import variant_records
from niceeval.stats import Estimate

JSON_SCHEMA_VERSION = 1
_RUN_FIELDS = {"eval_id", "file", "line"}
_SPOOL_BUFFER = 1 << 20
"""Bytes a spool gathers before it writes to its file: each write lets the threads running sync evals take the
interpreter lock, and with the default 8 KiB that was a write every dozen evals of a large suite."""


class JsonReporter:
    """Writes the suite's results to `path` as one JSON document (see docs/json-report.md)."""

    def __init__(
        self, path: Path, *, run_id: str | None = None, record: Callable[[RunResult], bytes] | None = None
    ) -> None:
        """Write to `path`; `record`: how a run becomes its JSON (default `run_json`).

        `niceeval report` hands the record it made from the run's stored rows (the same bytes).
        """
        self.path = path
        self.run_id = run_id
        """The suite run's id in the results store (None: not stored)."""
        self._record = record or run_json
        self._spool: IO[bytes] | None = None
        self._offsets: dict[str, list[tuple[int, int, int]]] = {}
        """Per eval: (run index, position, length) of each run's JSON in the spool."""
        self._held_id: str | None = None
        self._held: list[tuple[int, bytes]] = []
        """The runs (run index, JSON) of the eval `_held_id`, the one the last run belongs to: not spooled yet."""
        self._plan: Sequence[PlannedEval] = ()
        """The plan as the suite gave it (the suite's is read again when walked: only for the evals not done)."""
        self._done: IO[bytes] | None = None
        """The entries of the evals done, in the order they finished."""
        self._streamed = False
        """Whether the suite said any eval was done: then every eval not done has runs left (see `finish`)."""
        self._problems: list[Problem] = []
        self._started_at = ""
        self._variants = VariantTable()
        self._attacks = AttackTally()

    def start(self, plan: Sequence[PlannedEval], problems: Sequence[Problem]) -> None:
        """Take the plan and the problems found while loading it."""
        self._plan = plan
        self._problems = list(problems)
        self._started_at = datetime.now(UTC).isoformat()
        self._spool = tempfile.TemporaryFile(buffering=_SPOOL_BUFFER)
        self._done = tempfile.TemporaryFile(buffering=_SPOOL_BUFFER)

    def run_finished(self, result: RunResult) -> None:
        """Take one finished run."""
        assert self._spool is not None
        self._variants.add(result)
        self._attacks.add(result)
        data = self._record(result)
        if result.eval_id != self._held_id:
            self._spill()
            self._held_id = result.eval_id
        self._held.append((result.run_index, data))

    def _spill(self) -> None:
        """Spool the held runs (a run of another eval came in)."""
        if not self._held:
            return
        assert self._spool is not None and self._held_id is not None
        position = self._spool.seek(0, os.SEEK_END)
        places = self._offsets.setdefault(self._held_id, [])
        for run_index, data in self._held:
            places.append((run_index, position, len(data)))
            position += len(data)
        self._spool.write(b"".join(data for _, data in self._held))
        self._held = []

    def eval_finished(self, tally: EvalTally, summary: SuiteSummary) -> None:
        """Write a done eval's entry, with its runs, and forget where its runs were."""
        assert self._done is not None
        if self._streamed:
            self._done.write(b",")
        self._done.write(self._entry(tally.eval, tally, summary))
        self._streamed = True
        self._offsets.pop(tally.eval.id, None)

    def finish(self, summary: SuiteSummary) -> None:
        """Finish the report from the suite's summary."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        try:
            with partial.open("wb") as out:
                self._write(out, summary)
            os.replace(partial, self.path)
        finally:
            partial.unlink(missing_ok=True)
            for spool in (self._spool, self._done):
                if spool is not None:
                    spool.close()

    def _write(self, out: IO[bytes], summary: SuiteSummary) -> None:
        counts = summary.eval_counts()
        head: dict[str, Any] = {
            "schema_version": JSON_SCHEMA_VERSION,
            "run_id": self.run_id,
            "started_at": self._started_at,
            "finished_at": datetime.now(UTC).isoformat(),
            "duration_s": round(summary.duration_s, 6),
            "strict": summary.strict,
            "min_pass_rate": summary.min_pass_rate,
            "min_pass_at_k": list(summary.min_pass_at_k) if summary.min_pass_at_k else None,
            "interrupted": summary.interrupted,
            "stopped": summary.stopped,
            "not_started": summary.not_started,
            "halted": summary.halted,
            "missing_runs": summary.missing_runs,
            "exit_code": summary.exit_code,
            "summary": {
                "evals": summary.evals,
                "runs": summary.runs_done,
                "runs_high": summary.adaptive_most,
                "runs_saved": summary.runs_saved,
                **counts,
                "not_counted": {"infra": summary.infra},
                "inconclusive_assertions": summary.inconclusive,
                "unstable_assertions": summary.unstable,
                "agent_spend": summary.agent_spend.model_dump(),
                "judge_spend": summary.judge_spend.model_dump(),
                "errors": len(summary.problems),
                "pass_rate": estimate_json(folded_rate(summary.totals)),
                "detectable_drop": folded_power(summary.totals).detectable_drop,
                "mean_points": estimate_json(folded_points(summary.totals)),
            },
            "errors": [{"location": p.location, "message": p.message} for p in summary.problems],
            "variants": variant_records(self._variants, strict=summary.strict),
        }
        attacks = self._attacks.rates()
        if attacks is not None:
            head["attacks"] = attacks.describe()
        out.write((json.dumps(scrub(head))[:-1] + ', "evals": [').encode())
        assert self._done is not None
        self._done.seek(0)
        shutil.copyfileobj(self._done, out)
        tallies = {t.eval.id: t for t in summary.unfinished if not (self._streamed and t.done == t.eval.runs)}
        written = self._streamed
        for planned in self._plan if tallies else ():
            tally = tallies.get(planned.id)
            if tally is not None:
                if written:
                    out.write(b",")
                out.write(self._entry(planned, tally, summary))
                written = True
        out.write(b"]}\n")

    def _entry(self, planned: PlannedEval, tally: EvalTally, summary: SuiteSummary) -> bytes:
        """One eval's entry (UTF-8): its figures, then its runs in run order.

        Written as `json.dumps` writes the entry's dict (ASCII, `", "` and `": "`), each value by the encoder's own
        parts (`_text`, `_number`): a report of 100,000 evals wrote a dict per eval through the whole encoder.
        """
        status = summary.status_of(tally) if tally.done else None
        strict = summary.strict
        # its only text from outside is the eval's id, file and tags: scrubbed, the rest is niceeval's
        tags = ", ".join(_text(without_surrogates(tag)) for tag in planned.tags)
        head = (
            f'{{"id": {_text(without_surrogates(planned.id))}, "file": {_text(without_surrogates(planned.file))}, '
            f'"line": {planned.line:d}, "tags": [{tags}], "status": {"null" if status is None else _text(status)}, '
            f'"pass_rate": {_number(tally.pass_rate(strict=strict))}, "not_counted": {{"infra": {tally.infra:d}}}, '
            f"{_rate_figures(tally.passing(strict=strict), tally.counted)}, "
            f'"mean_duration_s": {_number(round(tally.mean_duration_s, 6))}, '
            f'"latency_p50_s": {_number(_rounded(tally.latency(0.5)))}, '
            f'"latency_p95_s": {_number(_rounded(tally.latency(0.95)))}, "points": {_points_text(tally)}, '
            '"runs": ['
        )
        runs = b",".join(self._read_runs(planned.id))
        return b"".join((head.encode(), runs, b"]}"))

    def _read_runs(self, eval_id: str) -> list[bytes]:
        """The eval's runs in run order, as the JSON pydantic wrote (copied as is: no parse and re-dump).

        Its held runs, if any, are let go.
        """
        assert self._spool is not None
        runs = []
        for run_index, position, length in self._offsets.get(eval_id, []):
            self._spool.seek(position)
            runs.append((run_index, self._spool.read(length)))
        if eval_id == self._held_id:
            runs.extend(self._held)
            self._held_id, self._held = None, []
        runs.sort(key=lambda run: run[0])
        return [data for _, data in runs]


@functools.lru_cache(maxsize=1024)
def _rate_figures(passing: int, counted: int) -> str:
    """An eval's rate interval, pass@k and pass^k, worked out and written once per pair of passing and counted runs.

    Its entry's members as JSON text (`"pass_rate_interval": ..., "pass_at_k": ..., "pass_hat_k": ...`): they depend
    on that pair alone, and a suite of 100,000 evals has a handful of pairs.
    """
    figures = {
        "pass_rate_interval": _interval(runs_rate(passing, counted)),
        "pass_at_k": {str(k): round(pass_at_k(counted, passing, k), 6) for k in range(1, counted + 1)},
        "pass_hat_k": {str(k): round(pass_hat_k(counted, passing, k), 6) for k in range(1, counted + 1)},
    }
    return json.dumps(figures)[1:-1]


_text: Callable[[str], str] = json.encoder.encode_basestring_ascii
"""A string as `json.dumps` writes it (ASCII: the encoder's own C function)."""


def _number(value: float | None) -> str:
    """A number (or None) as `json.dumps` writes it (`NaN` and `Infinity` as it spells them)."""
    if value is None:
        return "null"
    return repr(value) if math.isfinite(value) else json.dumps(value)


def _points_text(tally: EvalTally) -> str:
    """`_points` as `json.dumps` writes it (`null` for a pass/fail eval, most of a suite's, without the encoder)."""
    return "null" if tally.points_possible is None else json.dumps(_points(tally))


def _points(tally: EvalTally) -> dict[str, Any] | None:
    """A score eval's points over its counted runs: possible, each run's earned, the mean share with its interval."""
    if tally.points_possible is None:
        return None
    return {
        "possible": tally.points_possible,
        "earned": tally.points_earned,
        "mean": estimate_json(eval_points(tally)),
    }


def _interval(estimate: Estimate) -> dict[str, float] | None:
    if estimate.low is None or estimate.high is None:
        return None
    return {"low": estimate.low, "high": estimate.high, "confidence": estimate.confidence}


def _unknown(value: Any) -> str:
    """How a value JSON cannot hold (an object an agent put in an event's `data`) appears in the report."""
    try:
        shown = repr(value)
    except Exception:
        shown = f"<{type(value).__name__}>"
    return shown if len(shown) <= 2000 else shown[:2000] + f"... ({len(shown) - 2000} more chars)"


def run_json(result: RunResult) -> bytes:
    """One run as JSON, whatever text and values it holds: a run is never dropped from the report.

    Lone surrogates become U+FFFD; values JSON cannot hold become their `repr`; if the run still cannot be written,
    a record with its id, outcome, duration and error stands in, saying why.
    """
    try:
        return result.model_dump_json(exclude=_RUN_FIELDS, fallback=_unknown).encode()
    except Exception:  # lone surrogates: pydantic's encoder refuses them
        pass
    try:
        data = result.model_dump(mode="json", exclude=_RUN_FIELDS, fallback=_unknown)
        return json.dumps(scrub(data), ensure_ascii=False).encode()
    except Exception as exc:
        stand_in = {
            "run_index": result.run_index,
            "outcome": result.outcome,
            "duration_s": result.duration_s,
            "error": None if result.error is None else scrub(result.error.model_dump(mode="json")),
            "report_error": f"this run could not be written in full: {type(exc).__name__}: {exc}",
        }
        return json.dumps(scrub(stand_in), ensure_ascii=False).encode()


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
