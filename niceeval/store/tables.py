"""The store's tables, for read-only queries the `Store` API does not offer (the viewer's sums over a suite run).

Reading only: a `Recorder` (the runner's door, `_recorder.py`) writes them. `suite_runs_with` pages through the
suite runs holding an eval the way the store's own history does (no index leads with `eval_id`).
"""

from niceeval.store._read import suite_runs_with
from niceeval.store._schema import (
    assertions,
    eval_runs,
    events,
    judge_calls,
    spans,
    suite_evals,
    suite_runs,
    suite_shards,
    turns,
)

__all__ = [
    "assertions",
    "eval_runs",
    "events",
    "judge_calls",
    "spans",
    "suite_evals",
    "suite_runs",
    "suite_runs_with",
    "suite_shards",
    "turns",
]
