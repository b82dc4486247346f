"""The coverage table of docs/statistics.md: how often the suite's 95% pass-rate interval holds the true rate.

Run by hand: `python bench/coverage.py [--replicates 20000] [--heterogeneity 1.0] [--runs 5] [--seed 41]`.
The simulation is tests/stats/_coverage.py (the test runs it seeded with fewer replicates): suites of 5 to 500
cases drawn from a population with a mean pass rate of 0.05 to 0.95, each case with its own rate (Beta with
concentration `--heterogeneity`: 1 makes most cases nearly always pass or nearly always fail; a large value makes
them alike). One run per case is exact; `--runs` per case is simulated. Prints two markdown tables.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "stats"))

from _coverage import CASES, RATES, one_run_coverage, repeated_run_coverage  # noqa: E402


def table(title: str, rows: dict[int, list[float]]) -> str:
    head = "| cases | " + " | ".join(f"{rate:g}" for rate in RATES) + " | mean |"
    rule = "|" + "---|" * (len(RATES) + 2)
    lines = [title, "", head, rule]
    for cases, coverage in rows.items():
        cells = " | ".join(f"{c:.1%}" for c in coverage)
        lines.append(f"| {cases} | {cells} | {np.mean(coverage):.1%} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicates", type=int, default=20000)
    parser.add_argument("--heterogeneity", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=41)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(table("One run per case (exact):", {cases: one_run_coverage(cases) for cases in CASES}))
    print()
    repeated = {
        cases: repeated_run_coverage(cases, args.runs, args.replicates, rng, args.heterogeneity) for cases in CASES
    }
    print(
        table(
            f"{args.runs} runs per case, heterogeneity {args.heterogeneity:g}, {args.replicates} suites per cell:",
            repeated,
        )
    )


if __name__ == "__main__":
    main()
