"""Each framework's floor: cases with one cheap check and no agent call, niceeval beside its peers (issue 45).

Run by hand (pytest does not collect it):

    python bench/floor_peers.py [--cases 10000] [--rounds 2] \\
        [--promptfoo SCRATCH/node_modules/.bin/promptfoo] [--pydantic-evals-python SCRATCH/pe/bin/python]

Issue 45 asks a run of cases with one cheap check each to take within 1.5x the wall time of a plain Python loop
writing the same JSON report (`bench/scale.py` measures niceeval against that loop). This bench puts the same
question to the peers: one dataset (`bench/scale.py`'s rows: ~150 bytes, an id, a question, an answer, metadata),
no model call, the check "the answer contains `answer`", each tool in its own idiom, writing what it writes by
default:

- `loop`: `bench/scale.py`'s yardstick, a plain loop that writes the JSON report with `json.dump`;
- `niceeval`: `niceeval run --json report.json` on `bench/scale.py`'s eval (`cases=`, the agent an identity
  function, `t.check(..., includes("answer"))`), store on (SQLite), and again with `--no-store`;
- `promptfoo`: `promptfoo eval -o out.json` with its `echo` provider (the prompt is the answer), a `contains`
  assertion, tests from a CSV of the answers (its results database on, in a scratch config dir);
- `Inspect`: `inspect eval task.py --model mockllm/model` with a solver that sets the output to the answer
  (no `generate()`: no model is called), `includes()` as scorer, its log written;
- `niceeval records`: niceeval's own records without its machinery, a plain loop that makes each case's
  `AssertionResult` and `RunResult`, writes the run's record in the JSON report (`run_json`) and two rows a case
  (the run's, the assertion's) to a SQLite file with `executemany`, 1,000 cases a statement: what the results cost
  by themselves, the floor under niceeval's per-eval machinery (a task, a worker thread for a sync body, the
  reporters, the redaction check, the store's sink and the suite's tallies);
- `pydantic-evals`: `Dataset.evaluate_sync` of an identity task with a `Contains` evaluator, in its own
  interpreter (`--pydantic-evals-python`: its pydantic-ai pin differs from ours).

`--only niceeval,pydantic-evals` runs those (and the loop). Each tool runs once on 100 cases untimed first, then
`--rounds` rounds, the order rotating. Columns (medians): wall time and CPU time (user + sys of the process tree)
in seconds, each over the loop's in the same round, the CPU per case in microseconds, the peak RSS of the tree,
and the passes the tool reported (each must be `--cases`).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peers_10k import Measured, measure  # noqa: E402
from scale import EVAL, LOOP  # noqa: E402

WARM_UP = 100

PROMPTFOO_CONFIG = """\
prompts:
  - "{{answer}}"
providers:
  - echo
tests: file://cases.csv
defaultTest:
  assert:
    - type: contains
      value: "answer"
"""

INSPECT_TASK = """\
from inspect_ai import Task, task
from inspect_ai.dataset import FieldSpec, json_dataset
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import includes
from inspect_ai.solver import solver


@solver
def answered():
    async def solve(state, generate):
        state.output = ModelOutput.from_content(model="none", content=state.input_text)
        return state

    return solve


@task
def floor():
    dataset = json_dataset("cases.jsonl", FieldSpec(input="answer", target="target", id="id"))
    return Task(dataset=dataset, solver=answered(), scorer=includes())
"""

PYDANTIC_EVALS = """
import json, sys
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import Contains

with open(sys.argv[1]) as rows:
    cases = [Case(name=row["id"], inputs=row["answer"], metadata=row["metadata"]) for row in map(json.loads, rows)]
dataset = Dataset(name="floor", cases=cases, evaluators=[Contains(value="answer")])

async def answered(answer: str) -> str:
    return answer

report = dataset.evaluate_sync(answered, progress=False)
passed = sum(all(r.value for r in case.assertions.values()) for case in report.cases)
print(f"passed {passed} failed {len(report.failures)}")
"""


RECORDS = """
import json, os, sqlite3, sys
from niceeval._core.assertion import AssertionResult
from niceeval._core.results import RunResult
from niceeval.report.json_report import run_json

if os.path.exists("records.db"):  # the last round's
    os.remove("records.db")
db = sqlite3.connect("records.db")
db.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, eval_id TEXT, run_index INT, outcome TEXT, case_id TEXT)")
db.execute("CREATE TABLE checks (id INTEGER PRIMARY KEY, run INT, name TEXT, severity TEXT, score REAL, "
           "threshold REAL, state TEXT, reason TEXT, location TEXT)")
runs, checks, passes = [], [], 0
with open(sys.argv[1], "rb") as rows, open(sys.argv[2], "wb") as out:
    out.write(b'{"evals": [')
    for n, line in enumerate(rows):
        row = json.loads(line)
        passed = "answer" in row["answer"]
        check = AssertionResult(name="includes('answer')", severity="gate", score=1.0 if passed else 0.0,
                                threshold=1.0, state="passed" if passed else "failed", location="evals/qa.py:7")
        run = RunResult(eval_id="evals/qa.py::qa[" + row["id"] + "]", file="evals/qa.py", line=6,
                        outcome="passed" if passed else "failed", duration_s=0.0, assertions=[check],
                        case_id=row["id"])
        out.write(b"," if n else b"")
        out.write(run_json(run))
        passes += passed
        runs.append((n, run.eval_id, 0, run.outcome, run.case_id))
        checks.append((n, n, check.name, check.severity, check.score, check.threshold, check.state, check.reason,
                       check.location))
        if len(runs) == 1000:
            db.executemany("INSERT INTO runs VALUES (?, ?, ?, ?, ?)", runs)
            db.executemany("INSERT INTO checks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", checks)
            runs, checks = [], []
    db.executemany("INSERT INTO runs VALUES (?, ?, ?, ?, ?)", runs)
    db.executemany("INSERT INTO checks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", checks)
    db.commit()
    out.write(b'], "summary": {"passed": %d}}' % passes)
"""


def write_rows(path: Path, cases: int) -> None:
    """`bench/scale.py`'s rows (and a `target` field Inspect's `includes()` reads), as JSONL."""
    with path.open("w") as out:
        for i in range(cases):
            row = {
                "id": f"q{i}",
                "question": f"What is {i} plus {i}, written out in words?",
                "answer": f"answer {2 * i}",
                "metadata": {"split": "golden" if i % 2 else "holdout", "source": "bench"},
                "target": "answer",
            }
            out.write(json.dumps(row) + "\n")


def _report_passes(folder: Path, _output: str) -> int:
    return int(json.loads((folder / "report.json").read_text())["summary"]["passed"])


def _promptfoo_passes(folder: Path, _output: str) -> int:
    return int(json.loads((folder / "out.json").read_text())["results"]["stats"]["successes"])


def _inspect_passes(folder: Path, output: str) -> int:
    found = re.search(r"accuracy\s*[:=]?\s*([\d.]+)", output)
    with (folder / "cases.jsonl").open() as rows:
        total = sum(1 for _ in rows)
    return round(float(found.group(1)) * total) if found else -1


def _printed_passes(_folder: Path, output: str) -> int:
    found = re.search(r"^passed (\d+)", output, re.M)
    return int(found.group(1)) if found else -1


@dataclass
class Tool:
    name: str
    command: list[str]
    cwd: Path
    env: dict[str, str]
    passed: Callable[[Path, str], int]


def tools(args: argparse.Namespace, root: Path, cases: int) -> list[Tool]:
    env = {
        **os.environ,
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_CONFIG_DIR": str(root / "promptfoo-home"),
        "INSPECT_DISPLAY": "plain",
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    made: list[Tool] = []
    folder = root / f"loop-{cases}"
    folder.mkdir()
    write_rows(folder / "cases.jsonl", cases)
    made.append(Tool("loop", [sys.executable, "-c", LOOP, "cases.jsonl", "report.json"], folder, env, _report_passes))

    niceeval = [sys.executable, "-m", "niceeval.cli", "run", "--runs", "1", "--json", "report.json"]
    for name, extra in (("niceeval", []), ("niceeval --no-store", ["--no-store"])):
        folder = root / f"{name.replace(' ', '')}-{cases}"
        (folder / "evals").mkdir(parents=True)
        write_rows(folder / "evals" / "qa.jsonl", cases)
        (folder / "evals" / "qa.py").write_text(EVAL)
        made.append(Tool(name, [*niceeval, *extra], folder, env, _report_passes))
    folder = root / f"records-{cases}"
    folder.mkdir()
    write_rows(folder / "cases.jsonl", cases)
    command = [sys.executable, "-c", RECORDS, "cases.jsonl", "report.json"]
    made.append(Tool("niceeval records", command, folder, env, _report_passes))

    if args.promptfoo is not None:
        folder = root / f"promptfoo-{cases}"
        folder.mkdir()
        write_rows(folder / "cases.jsonl", cases)
        with (folder / "cases.jsonl").open() as rows, (folder / "cases.csv").open("w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(["answer"])
            writer.writerows([json.loads(line)["answer"]] for line in rows)
        (folder / "promptfooconfig.yaml").write_text(PROMPTFOO_CONFIG)
        command = [str(args.promptfoo.resolve()), "eval", "-c", "promptfooconfig.yaml", "--no-cache"]
        command += ["--no-table", "--no-progress-bar", "-o", "out.json"]
        made.append(Tool("promptfoo", command, folder, env, _promptfoo_passes))

    folder = root / f"inspect-{cases}"
    folder.mkdir()
    write_rows(folder / "cases.jsonl", cases)
    (folder / "task.py").write_text(INSPECT_TASK)
    inspect = str(Path(sys.executable).with_name("inspect"))
    command = [inspect, "eval", "task.py", "--model", "mockllm/model", "--log-dir", "logs", "--display", "plain"]
    made.append(Tool("Inspect", command, folder, env, _inspect_passes))

    if args.pydantic_evals_python is not None:
        folder = root / f"pydantic-evals-{cases}"
        folder.mkdir()
        write_rows(folder / "cases.jsonl", cases)
        command = [str(args.pydantic_evals_python), "-c", PYDANTIC_EVALS, "cases.jsonl"]
        made.append(Tool("pydantic-evals", command, folder, env, _printed_passes))
    chosen = None if args.only is None else {"loop", *args.only.split(",")}
    return [tool for tool in made if chosen is None or tool.name in chosen]


def rounds(args: argparse.Namespace, made: list[Tool]) -> dict[str, list[tuple[Measured, int]]]:
    runs: dict[str, list[tuple[Measured, int]]] = {tool.name: [] for tool in made}
    for round_ in range(args.rounds):
        shift = round_ % len(made)
        for tool in made[shift:] + made[:shift]:
            done = measure(tool.command, tool.cwd, tool.env)
            if done.returncode not in (0, 1):
                raise SystemExit(f"{tool.name} failed ({done.returncode}):\n{done.output[-3000:]}")
            runs[tool.name].append((done, tool.passed(tool.cwd, done.output)))
            print(f"  round {round_ + 1}: {tool.name} {done.wall_s:.1f} s, {done.cpu_s:.1f} s CPU", file=sys.stderr)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--promptfoo", type=Path, help="promptfoo's bin (node_modules/.bin/promptfoo)")
    parser.add_argument("--pydantic-evals-python", type=Path, help="a Python with pydantic-evals")
    parser.add_argument("--only", help="a comma-separated list of the tools to run (the loop always runs)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="floor-peers-") as tmp:
        root = Path(tmp)
        (root / "warm").mkdir()
        for tool in tools(args, root / "warm", WARM_UP):
            done = measure(tool.command, tool.cwd, tool.env)
            if done.returncode not in (0, 1) or tool.passed(tool.cwd, done.output) != WARM_UP:
                raise SystemExit(f"{tool.name} failed its warm-up ({done.returncode}):\n{done.output[-3000:]}")
        load_before = " ".join(f"{x:.1f}" for x in os.getloadavg())
        (root / "timed").mkdir()
        runs = rounds(args, tools(args, root / "timed", args.cases))
    load_after = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"{args.cases} cases x 1 cheap check, no model call; {os.cpu_count()} CPUs, {args.rounds} round(s), "
        f"medians; load average before {load_before}, after {load_after}"
    )
    print(
        f"{'tool':20} {'wall s':>7} {'x loop':>7} {'CPU s':>7} {'x loop':>7} {'us/case':>8} {'RSS MB':>7} {'passed':>7}"
    )
    loop = runs["loop"]
    for name, measured in runs.items():
        pairs = list(zip(measured, loop, strict=True))
        wall_x = statistics.median(r.wall_s / b.wall_s for (r, _), (b, _) in pairs)
        cpu_x = statistics.median(r.cpu_s / b.cpu_s for (r, _), (b, _) in pairs)
        wall, cpu, rss = (
            statistics.median(getattr(r, f) for r, _ in measured) for f in ("wall_s", "cpu_s", "peak_rss_mb")
        )
        per_case, passed = cpu / args.cases * 1e6, measured[-1][1]
        print(f"{name:20} {wall:7.1f} {wall_x:7.2f} {cpu:7.1f} {cpu_x:7.2f} {per_case:8.0f} {rss:7.0f} {passed:7d}")


if __name__ == "__main__":
    main()
