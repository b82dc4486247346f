"""Planning a dataset: N cases x 3 variants from a JSONL file, discovery time and peak memory.

Run by hand (pytest does not collect it): `python bench/datasets_plan.py [--sizes 1000,10000,20000] [--run]`.

Each size runs in a fresh interpreter: it writes a JSONL dataset of N rows (a question, an expected answer and
metadata, ~150 bytes each), an eval file with `cases=` and 3 variants, then times `discover` + `expand` (the
table read once, 3N planned evals) and reports the peak RSS (ru_maxrss). The planned evals share the case
rows and the variant objects, so memory should grow by the table plus one small record per planned eval, and no
more: the figure to watch is the KiB per case between sizes. `--run` also runs the planned evals through the
real runner (a trivial agent and one check each) to show the peak while executing.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

EVAL = """\
from niceeval import define_eval
from niceeval.expect import includes


@define_eval(cases="qa.jsonl", variants={"prompt": ["a", "b", "c"]}, agent=lambda message: message)
def qa(t):
    t.check(t.case["answer"], includes("answer"))
"""


def _write_project(root: Path, size: int) -> None:
    (root / "evals").mkdir()
    (root / "evals" / "qa.py").write_text(EVAL)
    with (root / "evals" / "qa.jsonl").open("w") as out:
        for i in range(size):
            row = {
                "id": f"q{i}",
                "question": f"What is {i} + {i}?",
                "answer": f"answer {2 * i}",
                "metadata": {"split": "golden" if i % 2 else "holdout", "source": "bench"},
            }
            out.write(json.dumps(row) + "\n")


def child(root: Path, run: bool) -> None:
    import anyio

    from niceeval._run.discovery import discover
    from niceeval._run.execute import ExecOptions
    from niceeval._run.plan import expand
    from niceeval._run.suite import SuiteOptions, run_suite

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    found = discover(root, ["evals"])
    plan = expand(found.evals, root=root)
    elapsed = time.perf_counter() - started
    planned = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = {
        "planned": len(plan.evals),
        "errors": len(plan.errors),
        "plan_s": elapsed,
        "rss_before_kib": before,
        "rss_planned_kib": planned,
    }
    if run:
        options = SuiteOptions(concurrency=8, exec=ExecOptions(timeout=30, root=root, no_cache=True))
        started = time.perf_counter()
        summary = anyio.run(run_suite, plan.evals, [], options, [])
        result["run_s"] = time.perf_counter() - started
        result["runs"] = summary.runs_done
        result["rss_run_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,20000")
    parser.add_argument("--run", action="store_true")
    parser.add_argument("--child", type=Path)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.run)
        return
    rows = []
    for size in map(int, args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            _write_project(root, size)
            command = [sys.executable, __file__, "--child", str(root)] + (["--run"] if args.run else [])
            done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=root)
            data = json.loads(done.stdout.strip().splitlines()[-1])
            data["cases"] = size
            data["jsonl_kib"] = (root / "evals" / "qa.jsonl").stat().st_size // 1024
            rows.append(data)
            print(json.dumps(data))
    first, last = rows[0], rows[-1]
    per_case = (last["rss_planned_kib"] - first["rss_planned_kib"]) / (last["cases"] - first["cases"])
    print(
        textwrap.dedent(f"""
        planned {last["planned"]:,} evals from {last["cases"]:,} cases in {last["plan_s"]:.2f} s;
        peak RSS grows {per_case:.2f} KiB per case (3 planned evals each) between {first["cases"]:,} and
        {last["cases"]:,} cases; the JSONL row is {last["jsonl_kib"] * 1024 / last["cases"]:.0f} bytes.""")
    )


if __name__ == "__main__":
    main()
