"""`Store.diff` lists only the evals whose runs ended otherwise and weighs the rest unlisted: on a seeded pair of
runs (changed, unchanged, gone and new evals; several runs each; gate, soft and keyed assertions) it gives what the
whole per-eval pass gives, eval by eval (SQLite and PostgreSQL)."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from niceeval import AssertionResult, RunResult
from niceeval._core.assertion import assertion_kind
from niceeval._core.outcome import Outcome
from niceeval._core.summary import PlannedEval
from niceeval.stats import compare_runs
from niceeval.store import DiffOptions, Store, SuiteRunStart
from niceeval.store._diff import run_counts
from niceeval.store._kept_sums import score_sums
from niceeval.store._recorder import Recorder, SuiteEnd

EVALS = 300


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with Store.open(store_url) as opened:
        yield opened


def run(rng: random.Random, eval_id: str, index: int, *, good: float) -> RunResult:
    """One run: an `includes` gate, a soft rubric, a keyed judge whose label the head renames."""
    rubric = round(rng.random(), 2)
    outcome: Outcome = rng.choices(["passed", "scored", "failed", "skipped"], [good, 0.2, 0.8 - good, 0.05])[0]
    assertions = [
        AssertionResult(name="includes('x')", severity="gate", score=float(outcome == "passed"), threshold=1.0,
                        state="passed" if outcome == "passed" else "failed", location="evals/a.py:5"),
        AssertionResult(name=f"similarity({eval_id[-1]!r})", severity="soft", score=rubric, threshold=0.5,
                        state="passed" if rubric >= 0.5 else "failed", location="evals/a.py:6"),
        AssertionResult(name="polite?" if good > 0.5 else "is it polite?", key="tone", severity="soft",
                        score=round(rng.random(), 1), threshold=0.5, state="passed", location="evals/a.py:7"),
    ]  # fmt: skip
    return RunResult(eval_id=eval_id, file="evals/a.py", line=3, run_index=index, outcome=outcome, duration_s=0.25,
                     assertions=[] if outcome == "skipped" else assertions)  # fmt: skip


def record(store: Store, run_id: str, ids: range, seed: int, good: float) -> None:
    rng = random.Random(seed)
    plan, results = [], []
    for n in ids:
        eval_id, runs = f"evals/a.py::case_{n:03d}", 1 + n % 3
        plan.append(PlannedEval(id=eval_id, file="evals/a.py", line=n + 1, runs=runs, cluster=f"doc{n // 4}"))
        steady = random.Random(n)  # evals below 120 end alike on both sides: the unchanged
        for i in range(runs):
            results.append(run(steady if n < 120 else rng, eval_id, i, good=0.6 if n < 120 else good))
    recorder = Recorder.of(store)
    try:
        recorder.begin(SuiteRunStart(id=run_id, command=["niceeval", "run"]), plan)
        recorder.add(run_id, results)
        recorder.finish(run_id, SuiteEnd(status="finished", exit_code=1, duration_s=1.0))
    finally:
        recorder.close()


def whole_pass(store: Store, base: str, head: str, options: DiffOptions) -> tuple[list[tuple[object, ...]], ...]:
    """What `diff` lists, worked out the long way: every shared eval through `compare_runs`, every score."""
    with store.engine.connect() as conn:
        before, after = run_counts(conn, base), run_counts(conn, head)
        sums = score_sums(conn, base), score_sums(conn, head)
    graded = {f"[{k}]" if k else assertion_kind(name) for side in sums for _, k, name, _, _, soft in side if soft}
    cases: tuple[dict[str, dict[str, list[float]]], ...] = ({}, {})
    means: tuple[dict[tuple[str, str], list[float]], ...] = ({}, {})
    for side, found in enumerate(sums):
        for eval_id, key, name, total, n, _ in found:
            kind = f"[{key}]" if key else assertion_kind(name)
            if kind in graded:
                summed = cases[side].setdefault(kind, {}).setdefault(eval_id, [0.0, 0.0])
                summed[0], summed[1] = summed[0] + total, summed[1] + n
            named = means[side].setdefault((eval_id, f"[{key}]" if key else name), [0.0, 0.0])
            named[0], named[1] = named[0] + total, named[1] + n
    scores = tuple({k: {e: s / n for e, (s, n) in v.items()} for k, v in side.items()} for side in cases)
    gate = compare_runs(
        {e: (c.passing(strict=False), c.counted) for e, c in before.items()},
        {e: (c.passing(strict=False), c.counted) for e, c in after.items()},
        clusters={e: str(after[e].cluster) for e in before.keys() & after.keys()}, scores=(scores[0], scores[1]),
    )  # fmt: skip
    changed = []
    for change in gate.evals:
        old, new = (side[change.eval_id].tally(change.eval_id).status(strict=False, min_pass_rate=1.0)
                    for side in (before, after))  # fmt: skip
        if before[change.eval_id][:5] != after[change.eval_id][:5] and (old != new or change.change in
                                                                         ("regression", "improvement")):  # fmt: skip
            changed.append((change.eval_id, old, new, change.q_value, change.change, str(change.comparison)))
    old_means, new_means = ({k: s / n for k, (s, n) in side.items()} for side in means)
    moved = [(k[0], k[1], old_means[k], new_means[k]) for k in sorted(old_means.keys() & new_means.keys())
             if abs(new_means[k] - old_means[k]) > options.threshold + 1e-9]  # fmt: skip
    tests = [(t.assertion, t.cases, t.q_value, str(t.comparison)) for t in gate.scores]
    return changed, moved, tests, [(len(gate.evals), str(gate.suite))]


def test_diff_lists_what_the_whole_per_eval_pass_lists(store: Store) -> None:
    record(store, "base", range(0, EVALS - 20), seed=1, good=0.7)
    record(store, "head", range(20, EVALS), seed=2, good=0.4)
    options = DiffOptions(threshold=0.2)
    diff = store.diff("base", "head", options)
    changed, moved, tests, suite = whole_pass(store, "base", "head", options)
    assert [(c.eval_id, c.base, c.head, c.q_value, c.change, c.evidence) for c in diff.changed] == changed
    listed = [(s.eval_id, s.assertion, s.base, s.head) for s in diff.scores]
    assert [row[:2] for row in listed] == [row[:2] for row in moved]
    # the database sums in its plan's order: a mean may differ from the whole pass's in its last bit
    assert [m for row in listed for m in row[2:]] == pytest.approx([m for row in moved for m in row[2:]], rel=1e-12)
    assert [(m.assertion, m.cases, m.q_value, m.evidence) for m in diff.mean_scores] == tests
    assert diff.suite is not None and [(diff.suite.cases, diff.suite.evidence)] == suite
    assert diff.gone == [f"evals/a.py::case_{n:03d}" for n in range(20)]
    assert diff.new == [f"evals/a.py::case_{n:03d}" for n in range(EVALS - 20, EVALS)]
    unchanged = {f"evals/a.py::case_{n:03d}" for n in range(20, 120)}
    assert not unchanged & {c.eval_id for c in diff.changed} and len(diff.changed) > 40 and len(diff.scores) > 100
    assert {m.assertion for m in diff.mean_scores} == {"[tone]", "similarity"}
