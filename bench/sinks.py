"""What each sink of a finished run costs per eval, in one thread, without the runner (issue 45).

Run by hand (pytest does not collect it): `python bench/sinks.py [--evals 20000] [--rounds 3]`. The runs are
`bench/scale.py`'s (one passed `includes` check of a case's answer, `--runs 1`), made as `RunResult`s up front; each
sink then takes all of them, as the suite hands them over, and its CPU time (process time) per eval is printed:

- `redaction`: the suite's check of each run for secrets (`Redactor.run`, environment secrets), made before the
  other sinks see the runs, as the suite does (the store then does not check them again);
- `summary`: each run added to its eval's tally, the tally folded into the suite's totals (the reporters below
  are handed tallies and a summary made before they are timed);
- `console`: the console reporter without a terminal (its line per eval, into a string);
- `json`: the JSON reporter (each run's record, each eval's entry, the document written at the end);
- `junit`: the JUnit reporter (each run's testcase, the file written at the end);
- `store`: the results store's sink on a fresh SQLite file (`start` writes the plan; the runs' rows; `finish`
  and the wait for its writer thread), in CPU of every thread of the process.

The smallest of `--rounds` is printed. To compare with another checkout, run it from outside any checkout (the
script's folder comes first on `sys.path`) as `PYTHONPATH=DIR python -S bench/sinks.py` with DIR holding the other
`niceeval/` and this environment's site-packages appended to `PYTHONPATH`.
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from niceeval._core.redact import Redactor
from niceeval._core.results import RunResult
from niceeval._core.suite_totals import SuiteTotals
from niceeval._core.summary import EvalTally, Plan, PlannedEval, SuiteSummary
from niceeval.report import ConsoleReporter, JsonReporter, JUnitReporter
from niceeval.store._recorder import Recorder
from niceeval.store._suite_run import SuiteRunStart


def _runs(count: int) -> list[RunResult]:
    check = {
        "name": "includes('answer')", "severity": "gate", "score": 1.0, "threshold": 1.0, "state": "passed",
        "expected": "includes 'answer'", "location": "evals/qa.py:7",
    }  # fmt: skip
    return [
        RunResult.model_validate(
            {
                "eval_id": f"evals/qa.py::qa[q{i}]",
                "file": "evals/qa.py",
                "line": 5,
                "run_index": 0,
                "outcome": "passed",
                "duration_s": 0.0004,
                "assertions": [check],
                "case_id": f"q{i}",
                "metadata": {"split": "golden" if i % 2 else "holdout", "source": "bench"},
            }  # fmt: skip
        )
        for i in range(count)
    ]


def _plan(runs: list[RunResult]) -> list[PlannedEval]:
    return [PlannedEval(id=r.eval_id, file=r.file, line=r.line) for r in runs]


def _summary(count: int) -> SuiteSummary:
    totals = SuiteTotals(strict=False, min_pass_rate=1.0, planned=count)
    return SuiteSummary(totals=totals, problems=[], duration_s=0.0, interrupted=True)


def summary(runs: list[RunResult], folder: Path) -> None:
    totals = _summary(len(runs)).totals
    for run, planned in zip(runs, _plan(runs), strict=True):
        tally = EvalTally(eval=planned)
        tally.add(run)
        totals.add(tally)
    totals.close()


def console(runs: list[RunResult], folder: Path) -> None:
    reporter = ConsoleReporter(Console(file=io.StringIO(), force_terminal=False, width=200))
    _drive(reporter, runs)


def json_report(runs: list[RunResult], folder: Path) -> None:
    _drive(JsonReporter(folder / "report.json"), runs)


def junit(runs: list[RunResult], folder: Path) -> None:
    _drive(JUnitReporter(folder / "report.xml"), runs)


def store(runs: list[RunResult], folder: Path) -> None:
    recorder = Recorder.open(str(folder / "results.db"), folder)
    sink = recorder.sink(SuiteRunStart(id=f"bench{time.monotonic_ns()}"))
    _drive(sink, runs)
    sink.close()


def _drive(reporter: ConsoleReporter | JsonReporter | JUnitReporter, runs: list[RunResult]) -> None:
    plan = _plan(runs)
    held = {p.id: p for p in plan}
    reporter.start(Plan(lambda: iter(plan), len(plan), held.get), [])
    finished = getattr(reporter, "eval_finished", None)
    for run, tally in zip(runs, _TALLIES, strict=True):
        reporter.run_finished(run)
        if finished is not None:
            finished(tally, _DONE)
    reporter.finish(_DONE)


_TALLIES: list[EvalTally] = []
"""Each run's eval tally, made before the sinks are timed (the suite makes them: `summary` times that)."""
_DONE = _summary(0)
"""The suite's summary, folded before the sinks are timed."""


def _fold(runs: list[RunResult]) -> None:
    _TALLIES.clear()
    for run, planned in zip(runs, _plan(runs), strict=True):
        tally = EvalTally(eval=planned)
        tally.add(run)
        _TALLIES.append(tally)
        _DONE.totals.add(tally)
    _DONE.totals.close()
    _DONE.interrupted = False


SINKS: dict[str, Callable[[list[RunResult], Path], None]] = {
    "summary": summary,
    "console": console,
    "json": json_report,
    "junit": junit,
    "store": store,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--evals", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    made = _runs(args.evals)
    redactor = Redactor.from_environment()
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.rounds):
            started = time.process_time()
            runs = [redactor.run(run) for run in made]
            spent = (time.process_time() - started) / args.evals * 1e6
            best["redaction"] = min(best.get("redaction", spent), spent)
            if not _TALLIES:
                _fold(runs)
            for name, sink in SINKS.items():
                started = time.process_time()
                sink(runs, Path(folder))
                spent = (time.process_time() - started) / args.evals * 1e6
                best[name] = min(best.get(name, spent), spent)
    print("  ".join(f"{name} {us:.1f} us" for name, us in best.items()), f"(CPU per eval, best of {args.rounds})")


if __name__ == "__main__":
    main()
