"""Inspect and pydantic-evals against niceeval on the same sample files and datasets, row by row, offline.

Run by hand (pytest does not collect it):

    python bench/peers_agreement.py --inspect DIR/biology_qa.jsonl:input=question,target=answer \\
        --inspect DIR/theory_of_mind.jsonl --pydantic-evals DIR/time_range_v2.yaml \\
        --pydantic-evals-python SCRATCH/bin/python

Each `--inspect FILE[:ROLE=FIELD,...]` is an Inspect sample file (JSONL, CSV, a JSON list), with the `FieldSpec`
its task maps it with, if any (given to Inspect as `FieldSpec(...)` and to niceeval as `--fields`). Inspect runs
it in process as the task niceeval's mapping stands for: `generate()` scored by `includes()`, or, for samples
with choices, `multiple_choice()` scored by `choice()`. Each `--pydantic-evals FILE` is a dataset file, run by
pydantic-evals itself in the interpreter `--pydantic-evals-python` names (a scratch venv with `pip install
pydantic-evals`: its pydantic-ai pin differs from niceeval's), with a task that sends the case's inputs to the
same server. The files are read where they are (Inspect's and pydantic-ai's own examples, from a checkout):
nothing is copied.

One `niceeval.testing` server answers all three: a multiple-choice prompt gets `ANSWER: B`, any other request its
last user message back followed by `ANSWER_WORDS` (so some targets are found and some not, the same for every
tool). A row's verdict is pass, fail, inconclusive (niceeval: every check undecided), error (the tool crashed on
it) or refused (the tool did not run it). Printed per file and in total: the rows, the rows both ran and how many
agreed, and the agreement over all rows, with every disagreement.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from niceeval.testing import LLMRequest, LLMServer, Reply

ANSWER_WORDS = "Skin. True. bathtub. [claim] Yes. Plants."
MODEL = "offline"


def answer(request: LLMRequest) -> Reply:
    """The one script every tool is answered from."""
    text = request.last_user_text
    if "ANSWER: $LETTER" in text:
        return Reply(text="ANSWER: B")
    return Reply(text=f"{text}\n{ANSWER_WORDS}")


@dataclass
class Rows:
    """One tool's verdict per row id."""

    verdicts: dict[str, str] = field(default_factory=dict)
    problem: str = ""


def _spec(text: str) -> tuple[Path, dict[str, str]]:
    path, _, fields = text.partition(":")
    pairs = [part.split("=", 1) for part in fields.split(",") if part]
    return Path(path), {role: name for role, name in pairs}


def run_inspect(path: Path, fields: dict[str, str], base_url: str, logs: Path) -> Rows:
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import FieldSpec, csv_dataset, json_dataset
    from inspect_ai.scorer import choice, includes
    from inspect_ai.solver import generate, multiple_choice

    rows = Rows()
    spec = FieldSpec(**fields) if fields else None  # type: ignore[arg-type]
    try:
        dataset = (csv_dataset if path.suffix == ".csv" else json_dataset)(str(path), spec)
    except Exception as exc:  # Inspect refuses the whole file
        rows.problem = f"Inspect: {type(exc).__name__}: {str(exc)[:160]}"
        return rows
    ids = [str(s.id) if s.id is not None else str(i) for i, s in enumerate(dataset)]
    for i, sample in enumerate(dataset):
        sample.id = ids[i]
    chosen = any(sample.choices for sample in dataset)
    task = Task(
        dataset=dataset,
        solver=multiple_choice() if chosen else generate(),
        scorer=choice() if chosen else includes(),
    )
    (log,) = inspect_eval(
        task, model=f"openai/{MODEL}", model_base_url=base_url, log_dir=str(logs), display="none", max_connections=4
    )
    for sample in log.samples or []:
        score = next(iter((sample.scores or {}).values()), None)
        verdict = "error" if sample.error or score is None else "pass" if score.value == "C" else "fail"
        rows.verdicts[str(sample.id)] = verdict
    return rows


PYDANTIC_EVALS = """
import json, sys, urllib.request
from pydantic_evals import Dataset

base_url, path = sys.argv[1], sys.argv[2]

def task(inputs):
    text = inputs if isinstance(inputs, str) else json.dumps(inputs)
    body = {"model": "offline", "messages": [{"role": "user", "content": text}]}
    request = urllib.request.Request(base_url + "/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json", "Authorization": "Bearer offline"})
    with urllib.request.urlopen(request) as response:
        return json.load(response)["choices"][0]["message"]["content"]

dataset = Dataset.from_file(path)
report = dataset.evaluate_sync(task, progress=False)
verdicts = {}
for case in report.cases:
    values = [a.value for a in case.assertions.values()]
    failed = not all(values) or (case.evaluator_failures and not values)
    verdicts[case.name] = "error" if case.evaluator_failures and all(values) else "fail" if failed else "pass"
for failure in report.failures:
    verdicts[failure.name] = "error"
print(json.dumps(verdicts))
"""


def run_pydantic_evals(python: str, path: Path, base_url: str, env: dict[str, str]) -> Rows:
    rows = Rows()
    done = subprocess.run(
        [python, "-c", PYDANTIC_EVALS, base_url, str(path)], env=env, capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        said = [line.strip(" |") for line in done.stderr.splitlines() if "Error:" in line]
        rows.problem = f"pydantic-evals: {(said or [done.stderr.strip()[-200:]])[-1][:200]}"
        return rows
    rows.verdicts = json.loads(done.stdout.strip().splitlines()[-1])
    return rows


async def _suite(entries: Any, problems: Any, options: Any, kept: list[Any]) -> None:
    from niceeval._run.suite import run_suite

    class Keep:
        def start(self, plan: Any, problems: Any) -> None:
            kept.extend(("problem", p) for p in problems)

        def run_finished(self, result: Any) -> None:
            kept.append(("result", result))

        def finish(self, summary: Any) -> None:
            return None

    await run_suite(entries, problems, options, [Keep()])


def run_niceeval(path: Path, fields: dict[str, str], root: Path) -> Rows:
    from niceeval._eval.reading import Reading
    from niceeval._run.discovery import discover
    from niceeval._run.execute import ExecOptions
    from niceeval._run.plan import expand
    from niceeval._run.suite import SuiteOptions
    from niceeval.agents import openai_agent

    rows = Rows()
    reading = Reading(fields=tuple(fields.items())) if fields else None
    found = discover(root, [str(path)], reading)
    plan = expand(found.evals, root=root)
    options = SuiteOptions(
        runs=1, concurrency=4, exec=ExecOptions(timeout=120, agent=openai_agent(f"openai/{MODEL}"), root=root)
    )
    kept: list[Any] = []
    anyio.run(_suite, plan.evals, [*found.errors, *plan.errors], options, kept)
    for kind, item in kept:
        if kind == "problem":
            rows.problem = (rows.problem + "; " if rows.problem else "") + str(item.message)[:200]
            continue
        case_id = item.eval_id.rsplit("[", 1)[1].rstrip("]")
        undecided = bool(item.assertions) and all(a.state == "inconclusive" for a in item.assertions)
        errored = item.error is not None and not item.assertions
        passed = item.outcome in ("passed", "scored")
        rows.verdicts[case_id] = "error" if errored else "inconclusive" if undecided else "pass" if passed else "fail"
    return rows


def compare(name: str, theirs: Rows, ours: Rows) -> tuple[int, int, int, list[str]]:
    """All rows, rows both gave a pass/fail verdict on, rows that agree, and the disagreements."""
    keys = sorted(set(theirs.verdicts) | set(ours.verdicts))
    both = agreed = 0
    differences = []
    for key in keys:
        tool, niceeval = theirs.verdicts.get(key, "refused"), ours.verdicts.get(key, "refused")
        if tool in ("pass", "fail") and niceeval in ("pass", "fail"):
            both += 1
            agreed += tool == niceeval
        if tool != niceeval:
            differences.append(f"  {name} [{key}]: the tool {tool}, niceeval {niceeval}")
    return len(keys), both, agreed, differences


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--inspect", action="append", default=[], metavar="FILE[:ROLE=FIELD,...]")
    parser.add_argument("--pydantic-evals", action="append", default=[], metavar="FILE")
    parser.add_argument("--pydantic-evals-python", help="a Python with pydantic-evals installed")
    args = parser.parse_args(argv)
    totals = [0, 0, 0]
    with LLMServer(answer) as server, tempfile.TemporaryDirectory() as project:
        root = Path(project)
        env = {**os.environ, "OPENAI_API_KEY": "offline", "OPENAI_BASE_URL": server.base_url}
        os.environ.update({k: v for k, v in env.items() if k.startswith("OPENAI")})
        runs: list[tuple[str, Rows, Rows]] = []
        for text in args.inspect:
            path, fields = _spec(text)
            theirs = run_inspect(path.resolve(), fields, server.base_url, root / "logs")
            runs.append((path.name, theirs, run_niceeval(path.resolve(), fields, root)))
        for text in args.pydantic_evals:
            path = Path(text).resolve()
            if not args.pydantic_evals_python:
                parser.error("--pydantic-evals needs --pydantic-evals-python")
            theirs = run_pydantic_evals(args.pydantic_evals_python, path, server.base_url, env)
            runs.append((path.name, theirs, run_niceeval(path, {}, root)))
        for name, theirs, ours in runs:
            rows, both, agreed, differences = compare(name, theirs, ours)
            totals = [totals[0] + rows, totals[1] + both, totals[2] + agreed]
            passed = sum(v == "pass" for v in theirs.verdicts.values())
            print(f"{name}: {agreed}/{rows} rows agree ({both} run by both; the tool passed {passed})")
            for problem in (theirs.problem, ours.problem):
                if problem:
                    print(f"  note: {problem}")
            if differences:
                print("\n".join(differences))
    rows, both, agreed = totals
    print(f"total: {agreed}/{rows} rows agree ({agreed / max(rows, 1):.0%}); {both} rows run by both")
    return 0


if __name__ == "__main__":
    sys.exit(main())
