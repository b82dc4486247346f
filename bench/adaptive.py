"""Adaptive repeats (`--runs LOW..HIGH`) against a fixed `--runs HIGH`: calls made and decisions that agree.

Run by hand: `python bench/adaptive.py [--evals 200] [--gate 0.8] [--repeat 50] [--bounds 3..10]`. An in-process
simulation of the decision rule (`niceeval.stats.AdaptiveRuns.wants_more`), not of the runner: each eval is a coin
with its own pass probability, drawn from a mix of flake rates (most evals always pass, some flake a little, a few
a lot, some always fail). An eval's decision is the runner's rule: its observed pass rate meets the gate
(`--min-pass-rate`). Printed: eval runs made by each, how often the adaptive decision equals the fixed one, how
often each equals the truth (the eval's pass probability meets the gate), and the bias of three suite pass rates
under adaptive repeats: the mean of each eval's rate over its first LOW runs (what niceeval reports), over all its
runs, and the runs pooled.
"""

from __future__ import annotations

import argparse
import random

from niceeval.stats import AdaptiveRuns, parse_runs

MIX = [(0.55, 1.0), (0.15, 0.97), (0.1, 0.9), (0.08, 0.75), (0.07, 0.5), (0.05, 0.0)]
"""(share of evals, pass probability)."""


def _evals(count: int, rng: random.Random) -> list[float]:
    rates = [p for share, p in MIX for _ in range(round(share * count))]
    rng.shuffle(rates)
    return rates[:count]


def _fixed(p: float, runs: int, rng: random.Random) -> tuple[int, int]:
    return sum(rng.random() < p for _ in range(runs)), runs


def _adaptive(p: float, policy: AdaptiveRuns, gate: float, rng: random.Random) -> tuple[int, int, int]:
    """Passes, runs, and passes among the first `policy.least` runs."""
    passes = runs = first = 0
    while policy.wants_more(passes, runs, gate=gate):
        passed = rng.random() < p
        passes += passed
        first += passed and runs < policy.least
        runs += 1
    return passes, runs, first


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--evals", type=int, default=200)
    parser.add_argument("--gate", type=float, default=0.8)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--bounds", default="3..10", help="LOW..HIGH, or auto; the fixed count is HIGH")
    args = parser.parse_args()
    policy = parse_runs(args.bounds)
    assert isinstance(policy, AdaptiveRuns), "--bounds takes LOW..HIGH"
    totals = {"fixed calls": 0, "adaptive calls": 0, "agree": 0, "fixed right": 0, "adaptive right": 0}
    bias = {"first runs": 0.0, "all runs": 0.0, "pooled": 0.0}
    for seed in range(args.repeat):
        rng = random.Random(seed)
        rates = _evals(args.evals, rng)
        made = []
        for p in rates:
            fk, fn = _fixed(p, policy.most, rng)
            ak, an, first = _adaptive(p, policy, args.gate, rng)
            made.append((ak, an, first))
            fixed, adaptive, truth = fk / fn >= args.gate, ak / an >= args.gate, p >= args.gate
            totals["fixed calls"] += fn
            totals["adaptive calls"] += an
            totals["agree"] += fixed == adaptive
            totals["fixed right"] += fixed == truth
            totals["adaptive right"] += adaptive == truth
        truth_mean = sum(rates) / len(rates)
        bias["first runs"] += sum(first / policy.least for _, _, first in made) / len(made) - truth_mean
        bias["all runs"] += sum(k / n for k, n, _ in made) / len(made) - truth_mean
        bias["pooled"] += sum(k for k, _, _ in made) / sum(n for _, n, _ in made) - truth_mean
    decisions = args.evals * args.repeat
    saved = 1 - totals["adaptive calls"] / totals["fixed calls"]
    print(f"{args.evals} evals x {args.repeat} seeds, gate {args.gate:g}, --runs {policy.most} vs --runs {policy}")
    print(
        f"eval runs per suite: fixed {totals['fixed calls'] / args.repeat:.0f}, "
        f"adaptive {totals['adaptive calls'] / args.repeat:.0f} ({saved:.0%} saved)"
    )
    print(f"decisions that agree: {totals['agree'] / decisions:.1%}")
    print(
        f"decisions equal to the truth: fixed {totals['fixed right'] / decisions:.1%}, "
        f"adaptive {totals['adaptive right'] / decisions:.1%}"
    )
    print("suite pass rate bias: " + ", ".join(f"{name} {total / args.repeat:+.4f}" for name, total in bias.items()))


if __name__ == "__main__":
    main()
