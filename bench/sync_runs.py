"""What one run costs in `execute_run` alone: a plain `def` eval (on a pool thread) against an `async def` one.

Run by hand (pytest does not collect it): `python bench/sync_runs.py [--runs 5000]`. Each eval is `bench/scale.py`'s
(one `includes` check of the case's answer); the runs go one after the other in one event loop, with the suite's
judges, no reporter and no store, alternating sync and async twice. Prints CPU (process time) and wall per run, and
the load average.
To compare with another checkout, put its `niceeval/` first on `PYTHONPATH`.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import anyio

from niceeval import define_eval
from niceeval._eval.cases import Case
from niceeval._eval.spec import EvalSpec
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute_run
from niceeval._run.judging import SuiteJudges
from niceeval.expect import includes


@define_eval(agent=lambda message: message)
def sync_qa(t: Any) -> None:
    t.check(t.case["answer"], includes("answer"))


@define_eval(agent=lambda message: message)
async def async_qa(t: Any) -> None:
    t.check(t.case["answer"], includes("answer"))


async def _per_run(spec: EvalSpec, runs: int, options: ExecOptions) -> tuple[float, float]:
    cases = [Case(id=f"q{i}", data={"answer": f"answer {i}"}) for i in range(runs)]
    entries = [EvalEntry(id=f"evals/qa.py::{spec.name}[{case.id}]", spec=spec, case=case) for case in cases]
    cpu, wall = time.process_time(), time.perf_counter()
    for entry in entries:
        await execute_run(entry, 0, options)
    return (time.process_time() - cpu) / runs, (time.perf_counter() - wall) / runs


async def _main(runs: int) -> None:
    judges = SuiteJudges(Path.cwd(), no_cache=True)
    options = ExecOptions(timeout=30, judges=judges)
    try:
        for spec in (sync_qa, async_qa, sync_qa, async_qa):
            cpu, wall = await _per_run(spec, runs, options)
            print(f"{spec.name:>8}: {cpu * 1e6:6.1f} us CPU, {wall * 1e6:6.1f} us wall per run", flush=True)
        print(f"load average {os.getloadavg()[0]:.1f}")
    finally:
        await judges.aclose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5000)
    anyio.run(_main, parser.parse_args().runs)


if __name__ == "__main__":
    main()
