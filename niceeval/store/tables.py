"""The store's tables, for read-only queries the `Store` API does not offer (the viewer's sums over a suite run).

Reading only: a `Recorder` (the runner's door, `_recorder.py`) writes them. `suite_runs_with` pages through the
suite runs holding an eval the way the store's own history does (no index leads with `eval_id`). A closed suite
run's evals are folded in `eval_tallies` (its own tally in `suite_tallies`); `folded_tallies` and `folded_judging`
fold a running one's; `run_judging` reads a suite run's judge use either way. `header` reads a suite run's header
and totals alone, `resolve` the id a reference names (an id, a unique prefix, `latest`), both on the caller's
connection.
"""

from niceeval.store._read import header, resolve, run_summary, suite_runs_with
from niceeval.store._schema import (
    assertions,
    eval_runs,
    eval_tallies,
    events,
    judge_calls,
    spans,
    suite_evals,
    suite_runs,
    suite_shards,
    suite_tallies,
    turns,
)
from niceeval.store._tallies import VERDICT_RANK, TallyRow, folded_judging, folded_tallies, run_judging

__all__ = [
    "VERDICT_RANK",
    "TallyRow",
    "assertions",
    "eval_runs",
    "eval_tallies",
    "events",
    "folded_judging",
    "folded_tallies",
    "header",
    "judge_calls",
    "resolve",
    "run_judging",
    "run_summary",
    "spans",
    "suite_evals",
    "suite_tallies",
    "suite_runs",
    "suite_runs_with",
    "suite_shards",
    "turns",
]
